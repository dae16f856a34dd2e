package network

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/faultline/faultline/analyze/prom"
	"github.com/faultline/faultline/analyze/prom/promtest"
	"github.com/faultline/faultline/timeline"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func counter(resetAt int, rate func(s int) float64) []timeline.Sample {
	return promtest.Counter(t0, 1200, 15, resetAt, rate)
}

func gauge(v func(s int) float64) []timeline.Sample { return promtest.Gauge(t0, 1200, 15, v) }

func steady(r float64) func(int) float64 { return func(int) float64 { return r } }

// during is r a second in [from, to), else 0.
func during(from, to int, r float64) func(int) float64 {
	return func(s int) float64 {
		if s >= from && s < to {
			return r
		}
		return 0
	}
}

func node(name, pool, addr string) timeline.ObjectVersion {
	b, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"name": name, "labels": map[string]string{"pool": pool, "topology.kubernetes.io/zone": "z1"}},
		"status":   map[string]any{"addresses": []any{map[string]string{"type": "InternalIP", "address": addr}}},
	})
	return timeline.ObjectVersion{Time: t0, Content: b, Object: timeline.ObjectRef{Resource: "nodes", Kind: "Node", Name: name}}
}

func logged(sec int, name, reason, iface string) *timeline.Record {
	typ := "Warning"
	if reason == timeline.NodeLinkUp {
		typ = "Normal"
	}
	var extra json.RawMessage
	if iface != "" {
		extra, _ = json.Marshal(map[string]string{"component": "kernel", "iface": iface})
	}
	return &timeline.Record{ID: int64(sec)*10 + int64(len(reason)), Time: at(sec), Source: timeline.SourceNode, Reason: reason, Type: typ,
		Object: timeline.ObjectRef{Kind: "Node", Resource: "nodes", Name: name}, Extra: extra}
}

// testFleet is three nodes of two pools: gpu-a's conntrack near its limit
// (by instance address) and full in its log, gpu-b's eth0 flapping (by
// node label, a receive-drop counter reset), cpu-a quiet (by nodename);
// and a series naming no node.
func testFleet(series, logs bool) *promtest.Store {
	s := &promtest.Store{}
	s.Vers = []timeline.ObjectVersion{node("gpu-a", "h100", "10.0.0.1"), node("gpu-b", "h100", "10.0.0.2"), node("cpu-a", "cpu", "10.0.1.1")}
	if series {
		s.AddSeries(ConntrackEntries, gauge(func(sec int) float64 { return 100000 + float64(sec)*125 }), "instance", "10.0.0.1:9100")
		s.AddSeries(ConntrackLimit, gauge(steady(262144)), "instance", "10.0.0.1:9100")
		s.AddSeries("node_nf_conntrack_stat_insert_failed", counter(0, during(600, 660, 3)), "instance", "10.0.0.1:9100")
		s.AddSeries(CarrierChanges, counter(0, during(300, 306, 1)), "node", "gpu-b", "device", "eth0")
		s.AddSeries(CarrierChanges, counter(0, steady(0)), "node", "gpu-b", "device", "eth1")
		s.AddSeries("node_network_receive_drop_total", counter(900, steady(2)), "node", "gpu-b", "device", "eth0")
		s.AddSeries(ConntrackEntries, gauge(steady(1000)), "nodename", "cpu-a")
		s.AddSeries(ConntrackLimit, gauge(steady(262144)), "nodename", "cpu-a")
		s.AddSeries(RetransSegs, counter(0, steady(1)), "nodename", "cpu-a")
		s.AddSeries(OutSegs, counter(0, steady(1000)), "nodename", "cpu-a")
		s.AddSeries(ConntrackEntries, gauge(steady(5)), "job", "lost")
	}
	if logs {
		s.Add(logged(1100, "gpu-a", timeline.NodeConntrackFull, ""), logged(1110, "gpu-a", timeline.NodeConntrackFull, ""))
		for _, sec := range []int{300, 302, 304} {
			s.Add(logged(sec, "gpu-b", timeline.NodeLinkDown, "eth0"), logged(sec+1, "gpu-b", timeline.NodeLinkUp, "eth0"))
		}
	}
	return s
}

// runCase is a window of the test fleet and what Run should find in it.
type runCase struct {
	name         string
	store        *promtest.Store
	opt          Options
	nodes        []Node
	findings     []int // per node
	pools        []Pool
	missing      int
	resets       int
	start, end   time.Time
	wantFindings []string // gpu-a's
}

func runCases() []runCase {
	gpuA := Node{Name: "gpu-a", Pool: "h100", Zone: "z1", ConntrackFull: 2,
		Conntrack: &Conntrack{PeakEntries: 250000, Limit: 262144, PeakUsage: f64(0.9537), PeakAt: at(1200)},
		Counters:  map[string]int64{"node_nf_conntrack_stat_insert_failed": 180}}
	flaps := []Link{{Device: "eth0", CarrierChanges: 6, Down: 3, Up: 3, Flaps: 3}}
	gpuB := Node{Name: "gpu-b", Pool: "h100", Zone: "z1", Counters: map[string]int64{"node_network_receive_drop_total": 2400}, Links: flaps}
	cpuA := Node{Name: "cpu-a", Pool: "cpu", Zone: "z1", Counters: map[string]int64{RetransSegs: 1200},
		Conntrack: &Conntrack{PeakEntries: 1000, Limit: 262144, PeakUsage: f64(0.0038), PeakAt: at(0)}, RetransmitShare: f64(0.001)}
	return []runCase{{
		name: "series and logs", store: testFleet(true, true),
		nodes: []Node{gpuA, gpuB, cpuA}, findings: []int{3, 2, 0}, missing: 9, resets: 1, start: at(0), end: at(1200),
		pools: []Pool{
			{Pool: "h100", Nodes: 2, Pressed: 2, PeakConntrack: f64(0.9537), ConntrackFull: 2, Flaps: 3,
				Counters: map[string]int64{"node_nf_conntrack_stat_insert_failed": 180, "node_network_receive_drop_total": 2400}},
			{Pool: "cpu", Nodes: 1, PeakConntrack: f64(0.0038), Counters: map[string]int64{RetransSegs: 1200}, RetransmitShare: f64(0.001)},
		},
		wantFindings: []string{
			"conntrack at 95% of its limit (250000 of 262144 entries) at 2026-05-01T10:20:00Z",
			"conntrack table full 2 times in its log: new connections dropped",
			"conntrack dropped or failed to insert 180 packets (insert_failed: 180, the UDP race that delays DNS by 5 s)",
		},
	}, {
		name: "logs only: metrics missing", store: testFleet(false, true),
		nodes: []Node{
			{Name: "gpu-a", Pool: "h100", Zone: "z1", ConntrackFull: 2, Counters: map[string]int64{}},
			{Name: "gpu-b", Pool: "h100", Zone: "z1", Counters: map[string]int64{}, Links: []Link{{Device: "eth0", Down: 3, Up: 3, Flaps: 3}}},
		},
		findings: []int{1, 1}, missing: len(Metrics), start: at(300), end: at(1110),
		pools:        []Pool{{Pool: "h100", Nodes: 2, Pressed: 2, ConntrackFull: 2, Flaps: 3, Counters: map[string]int64{}}},
		wantFindings: []string{"conntrack table full 2 times in its log: new connections dropped"},
	}, {
		name: "a window before the conntrack filled", store: testFleet(true, true), opt: Options{Since: at(0), Until: at(600)},
		nodes: []Node{
			{Name: "gpu-b", Pool: "h100", Zone: "z1", Counters: map[string]int64{"node_network_receive_drop_total": 1200}, Links: flaps},
			{Name: "gpu-a", Pool: "h100", Zone: "z1", Counters: map[string]int64{},
				Conntrack: &Conntrack{PeakEntries: 175000, Limit: 262144, PeakUsage: f64(0.6676), PeakAt: at(600)}},
			{Name: "cpu-a", Pool: "cpu", Zone: "z1", Counters: map[string]int64{RetransSegs: 600},
				Conntrack: &Conntrack{PeakEntries: 1000, Limit: 262144, PeakUsage: f64(0.0038), PeakAt: at(0)}, RetransmitShare: f64(0.001)},
		},
		findings: []int{2, 0, 0}, missing: 9, resets: 0, start: at(0), end: at(600),
		pools: []Pool{
			{Pool: "h100", Nodes: 2, Pressed: 1, PeakConntrack: f64(0.6676), Flaps: 3, Counters: map[string]int64{"node_network_receive_drop_total": 1200}},
			{Pool: "cpu", Nodes: 1, PeakConntrack: f64(0.0038), Counters: map[string]int64{RetransSegs: 600}, RetransmitShare: f64(0.001)},
		},
		wantFindings: []string{},
	}}
}

func TestRun(t *testing.T) {
	for _, tt := range runCases() {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Run(context.Background(), tt.store, tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			check(t, tt, got)
		})
	}
}

// check compares a report with what the case wants.
func check(t *testing.T, tt runCase, got *Report) {
	t.Helper()
	var counts []int
	for _, n := range got.Nodes {
		counts = append(counts, len(n.Findings))
	}
	if diff := cmp.Diff(tt.findings, counts); diff != "" {
		t.Errorf("findings per node (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff(tt.nodes, got.Nodes, cmpopts.IgnoreFields(Node{}, "Findings"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("nodes (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff(tt.pools, got.Pools, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("pools (-want +got)\n%s", diff)
	}
	for _, n := range got.Nodes {
		if n.Name == "gpu-a" {
			if diff := cmp.Diff(tt.wantFindings, n.Findings, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("gpu-a's findings (-want +got)\n%s", diff)
			}
		}
	}
	if len(got.Missing) != tt.missing || got.CounterResets != tt.resets {
		t.Errorf("missing %v, resets %d; want %d missing, %d resets", got.Missing, got.CounterResets, tt.missing, tt.resets)
	}
	if !got.Window.Start.Equal(tt.start) || !got.Window.End.Equal(tt.end) {
		t.Errorf("window %v; want [%v, %v]", got.Window, tt.start, tt.end)
	}
}

func TestRunWithoutEvidence(t *testing.T) {
	_, err := Run(context.Background(), testFleet(false, false), Options{})
	var ns *prom.NoSeriesError
	if !errors.As(err, &ns) || ns.What != "network pressure" {
		t.Fatalf("err = %v, want a NoSeriesError of network pressure", err)
	}
}
