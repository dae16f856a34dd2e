package alerts_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/alerts"
	"github.com/faultline/faultline/analyze/controlplane"
	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/analyze/prom/promtest"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// seriesStore is node versions (timelinetest.Mem) and series
// (timelinetest.MemSeries) in memory.
type seriesStore struct {
	timelinetest.Mem
	timelinetest.MemSeries
}

// The evidence of the pressure tests: 40 minutes scraped every 15 s, known
// good up to 20 m, the first bad observation at 20 m 30 s.
var (
	p0       = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	span     = 40 * 60
	lastGood = 20 * 60
	firstBad = lastGood + 30
)

// add adds a series of metric with labels given as name, value pairs.
func (s *seriesStore) add(metric string, samples []timeline.Sample, kv ...string) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	s.AddSeries(timeline.NewSeries(metric, timeline.NewLabels(m)), samples...)
}

// node adds a node version with its labels and address.
func (s *seriesStore) node(t *testing.T, name, addr string, labels map[string]string) {
	t.Helper()
	content, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"name": name, "labels": labels},
		"status":   map[string]any{"addresses": []map[string]string{{"type": "InternalIP", "address": addr}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Vers = append(s.Vers, timeline.ObjectVersion{Object: timeline.ObjectRef{Resource: "nodes", Kind: "Node", Name: name},
		Time: p0, Content: content})
}

func counter(rate func(s int) float64) []timeline.Sample {
	return promtest.Counter(p0, span, 15, 0, rate)
}
func gauge(v func(s int) float64) []timeline.Sample { return promtest.Gauge(p0, span, 15, v) }

// from is base a second, and then from second at on.
func from(at int, base, then float64) func(int) float64 {
	return func(s int) float64 {
		if s >= at {
			return then
		}
		return base
	}
}

// stormAt is base a second, and peak for five minutes from second at.
func stormAt(at int, base, peak float64) func(int) float64 {
	return func(s int) float64 {
		if s >= at && s < at+300 {
			return peak
		}
		return base
	}
}

// coredns holds CoreDNS's series: two client views, ml and web, five
// queries a second each, answered NOERROR within 4 ms, half of them from
// the cache. With a storm, ml sends 295 a second for five minutes from the
// last known-good instant, three in four tries of the search path that
// end in NXDOMAIN, and a third of the storm's answers take over 64 ms.
func coredns(storm bool) *seriesStore {
	s := &seriesStore{}
	ml, slow := func(int) float64 { return 5 }, func(int) float64 { return 0 }
	if storm {
		ml, slow = stormAt(lastGood, 5, 295), stormAt(lastGood, 0, 100)
	}
	five := func(int) float64 { return 5 }
	all := func(x int) float64 { return ml(x) + 5 }
	fast := func(x int) float64 { return all(x) - slow(x) }
	half := func(x int) float64 { return all(x) / 2 }
	nx := func(x int) float64 { return (ml(x) - 5) * 3 / 4 }
	s.add("coredns_dns_requests_total", counter(ml), "view", "ml", "type", "A", "server", "dns://:53")
	s.add("coredns_dns_requests_total", counter(five), "view", "web", "type", "A", "server", "dns://:53")
	s.add("coredns_dns_responses_total", counter(func(x int) float64 { return ml(x) - nx(x) }), "view", "ml", "rcode", "NOERROR", "server", "dns://:53")
	s.add("coredns_dns_responses_total", counter(nx), "view", "ml", "rcode", "NXDOMAIN", "server", "dns://:53")
	s.add("coredns_dns_responses_total", counter(five), "view", "web", "rcode", "NOERROR", "server", "dns://:53")
	s.add("coredns_cache_hits_total", counter(half), "type", "success", "server", "dns://:53")
	s.add("coredns_cache_misses_total", counter(half), "server", "dns://:53")
	for _, le := range []string{"0.004", "0.016", "0.064"} {
		s.add("coredns_dns_request_duration_seconds_bucket", counter(fast), "le", le, "server", "dns://:53")
	}
	for _, le := range []string{"0.256", "+Inf"} {
		s.add("coredns_dns_request_duration_seconds_bucket", counter(all), "le", le, "server", "dns://:53")
	}
	return s
}

// conntrack holds node_exporter's conntrack series of pool h100's nodes
// n1 and n2 (by their node label) and of n3, of no pool (by its
// instance). With a flood, n1's table is at 95 % of its limit from the
// first scrape after the last known-good instant, and conntrack drops 50
// packets a second.
func conntrack(t *testing.T, flood bool) *seriesStore {
	s := &seriesStore{}
	s.node(t, "n1", "10.0.0.1", map[string]string{"node.kubernetes.io/pool": "h100"})
	s.node(t, "n2", "10.0.0.2", map[string]string{"node.kubernetes.io/pool": "h100"})
	s.node(t, "n3", "10.0.0.3", nil)
	const limit = 262144
	n1, drops := from(0, 30000, 30000), from(0, 0, 0)
	if flood {
		n1, drops = from(lastGood+15, 30000, 0.95*limit), from(lastGood, 0, 50)
	}
	for _, n := range []struct {
		label, value string
		entries      func(int) float64
		drops        func(int) float64
	}{{"node", "n1", n1, drops}, {"node", "n2", from(0, 20000, 20000), from(0, 0, 0)}, {"instance", "10.0.0.3:9100", from(0, 1000, 1000), from(0, 0, 0)}} {
		s.add("node_nf_conntrack_entries", gauge(n.entries), n.label, n.value, "job", "node-exporter")
		s.add("node_nf_conntrack_entries_limit", gauge(func(int) float64 { return limit }), n.label, n.value, "job", "node-exporter")
		s.add("node_nf_conntrack_stat_drop", counter(n.drops), n.label, n.value, "job", "node-exporter")
	}
	return s
}

// suggested is what the tests compare of a definition.
type suggested struct {
	Name, Kind, Team, Severity string
	Slice                      map[string]string
	Max                        float64
	For                        time.Duration
}

func pressureEvidence(t *testing.T, s *seriesStore) *alerts.Evidence {
	t.Helper()
	at := func(sec int) time.Time { return p0.Add(time.Duration(sec) * time.Second) }
	ev := &alerts.Evidence{Start: at(0), End: at(span), LastGood: at(lastGood), FirstBad: at(firstBad), IncidentEnd: at(span),
		Investigation: &investigate.Report{}, ControlPlane: &controlplane.Report{}}
	if err := ev.ReadSeries(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return ev
}

// noRecords is the record candidate an evidence of series alone drops.
var noRecords = alerts.Dropped{Name: "PodStartupP99", Reason: "no value in the known-good window to learn a normal range from"}

// TestSuggestPressure: DNS and network budgets are learned from their
// series' own known-good values; a storm or a table filling up over a
// quiet known-good window gives the alert, a quiet incident drops it with
// the reason, and a metric that was not ingested gives no candidate.
func TestSuggestPressure(t *testing.T) {
	tests := []struct {
		name        string
		store       func(t *testing.T) *seriesStore
		want        []suggested
		wantDropped []alerts.Dropped
	}{{
		name:  "dns-storm",
		store: func(*testing.T) *seriesStore { return coredns(true) },
		want: []suggested{
			{Name: "CoreDNSRequestRate", Kind: alerts.KindMetricRate, Team: "platform", Severity: "page", Max: 15},
			{Name: "CoreDNSViewMlRequestRate", Kind: alerts.KindMetricRate, Team: "ml", Severity: "page", Slice: map[string]string{"view": "ml"}, Max: 7.5},
			{Name: "CoreDNSLatencyP99", Kind: alerts.KindMetricQuantile, Team: "platform", Severity: "ticket", Max: 0.01396},
		},
		wantDropped: []alerts.Dropped{noRecords,
			{Name: "CoreDNSServfailShare", Reason: "would not have fired (peak 0 after the boundary, normal up to 0.01)"}},
	}, {
		name:  "dns-quiet",
		store: func(*testing.T) *seriesStore { return coredns(false) },
		want:  []suggested{},
		wantDropped: []alerts.Dropped{noRecords,
			{Name: "CoreDNSRequestRate", Reason: "would not have fired (peak 10 after the boundary, normal up to 15)"},
			{Name: "CoreDNSLatencyP99", Reason: "would not have fired (peak 0.00396 after the boundary, normal up to 0.01396)"},
			{Name: "CoreDNSServfailShare", Reason: "would not have fired (peak 0 after the boundary, normal up to 0.01)"}},
	}, {
		name:  "conntrack-near-limit",
		store: func(t *testing.T) *seriesStore { return conntrack(t, true) },
		want: []suggested{
			{Name: "PoolH100ConntrackUsage", Kind: alerts.KindMetricUsage, Team: "platform", Severity: "page", Slice: map[string]string{"pool": "h100"}, Max: 0.1717},
			{Name: "PoolH100ConntrackDrops", Kind: alerts.KindMetricRate, Team: "platform", Severity: "page", Slice: map[string]string{"pool": "h100"}, Max: 0.03333},
		},
		wantDropped: []alerts.Dropped{noRecords,
			{Name: "NodeN3ConntrackUsage", Reason: "would not have fired (peak 0.003815 after the boundary, normal up to 0.05381)"},
			{Name: "NodeN3ConntrackDrops", Reason: "would not have fired (peak 0 after the boundary, normal up to 0.03333)"}},
	}, {
		name:        "no-series",
		store:       func(*testing.T) *seriesStore { return &seriesStore{} },
		want:        []suggested{},
		wantDropped: []alerts.Dropped{noRecords},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := pressureEvidence(t, tt.store(t))
			f, dropped, err := ev.Suggest(alerts.SuggestOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := []suggested{}
			for _, d := range f.Alerts {
				got = append(got, suggested{Name: d.Name, Kind: d.Signal.Kind, Team: d.Owner.Team, Severity: d.Severity,
					Slice: d.Slice, Max: d.Normal.Max, For: d.For.D()})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("suggested (-want +got)\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDropped, dropped); diff != "" {
				t.Errorf("dropped (-want +got)\n%s", diff)
			}
			if len(f.Alerts) > 0 {
				checkRoundTrip(t, ev, f)
				checkRulesGolden(t, f, "faultline-"+tt.name, filepath.Join("testdata", t.Name()+".golden"))
			}
		})
	}
}

// checkRoundTrip writes the file, reads it back and backtests it: every
// alert fires in time with no false positive.
func checkRoundTrip(t *testing.T, ev *alerts.Evidence, f *alerts.File) {
	t.Helper()
	for _, a := range replayWritten(t, ev, f).Alerts {
		if !a.OK() {
			t.Errorf("%s: verdict %s with %d false positive(s)", a.Name, a.Verdict, len(a.FalsePositives))
		}
	}
}

// TestPressureRulesPassPromtool: every DNS and network rule's PromQL, by
// pool and by node, exports to rules promtool accepts.
func TestPressureRulesPassPromtool(t *testing.T) {
	promtool(t)
	w := 2 * time.Minute
	pool := func(m string) string { return alerts.NodeCounterPromQL(m)("node.kubernetes.io/pool", "h100", w) }
	checkExprRules(t, "faultline-pressure", alerts.Signal{Kind: alerts.KindMetricRate, Window: alerts.Duration(w), Series: &alerts.Selector{Metric: "x"}},
		map[string]string{
			"CoreDNSRequestRate":         alerts.DNSRequestRatePromQL(nil, w),
			"CoreDNSViewMlRequestRate":   alerts.DNSRequestRatePromQL(map[string]string{"view": "ml"}, w),
			"CoreDNSLatencyP99":          alerts.DNSLatencyPromQL(0.99, nil, w),
			"CoreDNSServfailShare":       alerts.DNSServfailSharePromQL(nil, w),
			"CoreDNSViewMlServfailShare": alerts.DNSServfailSharePromQL(map[string]string{"view": "ml"}, w),
			"PoolH100ConntrackUsage":     alerts.ConntrackUsagePromQL("node.kubernetes.io/pool", "h100"),
			"NodeN3ConntrackUsage":       alerts.NodeConntrackUsagePromQL("instance", "10.0.0.3:9100"),
			"NodeN3ConntrackDrops":       alerts.NodeSeriesCounterPromQL("node_nf_conntrack_stat_drop", "instance", "10.0.0.3:9100", w),
			"PoolH100TCPRetransmits":     pool("node_netstat_Tcp_RetransSegs") + " / " + pool("node_netstat_Tcp_OutSegs"),
			"PoolH100LinkFlaps":          pool("node_network_carrier_changes_total"),
		})
}

// TestParseMetricSignal: a metric signal names its series, not records,
// and an error names the field.
func TestParseMetricSignal(t *testing.T) {
	good := `schemaVersion: 1
interval: 15s
alerts:
  - name: CoreDNSServfailShare
    summary: s
    signal:
      kind: metricRatio
      series: {metric: coredns_dns_responses_total, match: {rcode: SERVFAIL}}
      per: {metric: coredns_dns_responses_total}
      window: 1m
      promql: 'sum(up)'
    normal: {max: 0.01}
    for: 0s
    severity: page
    owner: {team: platform}
    mitigation: run NodeLocal DNSCache
`
	f, err := alerts.Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"coredns_dns_responses_total"}, f.Metrics()); diff != "" {
		t.Errorf("metrics (-want +got)\n%s", diff)
	}
	tests := []struct{ from, to, want string }{
		{"      per: {metric: coredns_dns_responses_total}\n", "", "signal.per: missing"},
		{"kind: metricRatio", "kind: metricRate", "signal.per: only a metricRatio or metricUsage"},
		{"kind: metricRatio", "kind: ratio", "signal.count: invalid filter"},
		{"      window: 1m", "      count: 'source == \"node\"'\n      window: 1m", "signal.count: a metricRatio signal reads series"},
		{"{metric: coredns_dns_responses_total, match", "{metric: coredns-dns, match", `signal.series.metric: "coredns-dns" is not a Prometheus metric name`},
		{"kind: metricRatio\n      series: {metric: coredns_dns_responses_total, match: {rcode: SERVFAIL}}\n      per: {metric: coredns_dns_responses_total}",
			"kind: metricQuantile\n      quantile: 0.99\n      series: {metric: coredns_dns_request_duration_seconds}",
			`signal.series.metric: "coredns_dns_request_duration_seconds": a metricQuantile reads a histogram's _bucket series`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := alerts.Parse([]byte(strings.Replace(good, tt.from, tt.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// A backtest of a metric the evidence did not read says which, rather
// than replaying it as silent.
func TestEvaluateMetricNotRead(t *testing.T) {
	ev := pressureEvidence(t, &seriesStore{})
	d := &alerts.Definition{Name: "A", Signal: alerts.Signal{Kind: alerts.KindMetricRate, Window: alerts.Duration(time.Minute),
		Series: &alerts.Selector{Metric: "node_vmstat_oom_kill"}}}
	_, err := ev.Evaluate(d, 15*time.Second)
	want := &alerts.NotReadError{Alert: "A", Metric: "node_vmstat_oom_kill"}
	if diff := cmp.Diff(want, err); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}
