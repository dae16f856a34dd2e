package nodehealth

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

var t0 = time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)

func at(min float64) time.Time { return t0.Add(time.Duration(min * float64(time.Minute))) }

// node is a version of node name in pool at min, Ready or not.
func node(min float64, name, pool string, ready bool) timeline.ObjectVersion {
	status := "False"
	if ready {
		status = "True"
	}
	b, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"name": name, "labels": map[string]string{"pool": pool, "topology.kubernetes.io/zone": "z1"}},
		"status":   map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": status}}},
	})
	return timeline.ObjectVersion{Time: at(min), Content: b, Object: timeline.ObjectRef{Resource: "nodes", Kind: "Node", Name: name}}
}

func fault(min float64, name, reason string, code int, typ string) *timeline.Record {
	return &timeline.Record{ID: int64(min*100) + int64(code), Time: at(min), Source: timeline.SourceNode, Reason: reason, Code: code, Type: typ,
		Object: timeline.ObjectRef{Kind: "Node", Resource: "nodes", Name: name}}
}

// Budgets by pool over an hour: faults per node-hour, NotReady minutes
// after a node was seen Ready (not while it registered), a fault of a node
// no version names, and "Normal" lines (a link up) left out.
func TestRun(t *testing.T) {
	m := &timelinetest.Mem{Vers: []timeline.ObjectVersion{
		node(0, "a1", "h100", true), node(0, "a2", "h100", true), node(0, "b1", "a100", true), node(0, "b2", "a100", true),
		node(10, "a1", "h100", false), node(25, "a1", "h100", true), // 15 minutes NotReady
		node(0, "b3", "a100", false), node(5, "b3", "a100", true), // registering: not counted
		node(50, "b2", "a100", false), // NotReady to the end: 10 minutes
	}}
	m.Add(fault(5, "a1", timeline.NodeXid, 79, "Warning"), fault(6, "a1", timeline.NodeXid, 79, "Warning"),
		fault(20, "a2", timeline.NodeOOMKill, 0, "Warning"), fault(30, "b1", timeline.NodeLinkDown, 0, "Warning"),
		fault(30.1, "b1", timeline.NodeLinkUp, 0, "Normal"), fault(40, "x9", timeline.NodeConntrackFull, 0, "Warning"),
		&timeline.Record{ID: 9999, Time: at(60), Source: timeline.SourceEvent, Reason: "Pulled"})
	rep, err := Run(context.Background(), m, Options{Since: at(0), Until: at(60)})
	if err != nil {
		t.Fatal(err)
	}
	wantPools := []Pool{
		{Pool: "h100", Nodes: 2, NodeHours: 2, Faults: map[string]int{"Xid 79": 2, "OOMKill": 1}, PerNodeHour: 1.5, NotReadyMinutes: 15, Affected: 2},
		{Pool: "", Nodes: 1, NodeHours: 1, Faults: map[string]int{"ConntrackFull": 1}, PerNodeHour: 1, Affected: 1},
		{Pool: "a100", Nodes: 3, NodeHours: 3, Faults: map[string]int{"LinkDown": 1}, PerNodeHour: 0.333, NotReadyMinutes: 10, Affected: 2},
	}
	if diff := cmp.Diff(wantPools, rep.Pools); diff != "" {
		t.Errorf("pools (-want +got):\n%s", diff)
	}
	var names []string
	for _, n := range rep.Nodes {
		names = append(names, n.Name)
	}
	if diff := cmp.Diff([]string{"a1", "a2", "b1", "x9", "b2"}, names); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"Xid 79": 2, "OOMKill": 1, "LinkDown": 1, "ConntrackFull": 1}, rep.Faults); diff != "" {
		t.Errorf("faults (-want +got):\n%s", diff)
	}
}
