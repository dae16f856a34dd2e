package dns

import (
	"context"
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

// counter is a counter scraped every 15 s over [0, 1200] s, rising at
// rate(s) in each second s; it restarts from zero at resetAt (if > 0).
func counter(rate func(s int) float64, resetAt int) []timeline.Sample {
	return promtest.Counter(t0, 1200, 15, resetAt, rate)
}

func steady(r float64) func(int) float64 { return func(int) float64 { return r } }

// storm is base a second, and peak in [600, 660).
func storm(base, peak float64) func(int) float64 {
	return func(s int) float64 {
		if s >= 600 && s < 660 {
			return peak
		}
		return base
	}
}

func f(v float64) *float64 { return &v }

// fleet is two clients (views): ml, whose A and AAAA queries storm at
// 600 s, most of them NXDOMAIN, and web, steady, whose CoreDNS restarted
// at 900 s; the cache and latency metrics name no client.
func fleet(only ...string) *promtest.Store {
	s := &promtest.Store{}
	keep := func(m string) bool {
		for _, o := range only {
			if o == m {
				return true
			}
		}
		return len(only) == 0
	}
	add := func(m string, samples []timeline.Sample, kv ...string) {
		if keep(m) {
			s.AddSeries(m, samples, append(kv, "server", "dns://:53", "zone", ".")...)
		}
	}
	add(Requests, counter(storm(2, 200), 0), "view", "ml", "type", "A")
	add(Requests, counter(storm(2, 200), 0), "view", "ml", "type", "AAAA")
	add(Requests, counter(steady(5), 900), "view", "web", "type", "A")
	add(Responses, counter(storm(4, 100), 0), "view", "ml", "rcode", "NOERROR")
	add(Responses, counter(storm(0, 300), 0), "view", "ml", "rcode", "NXDOMAIN")
	add(Responses, counter(steady(5), 0), "view", "web", "rcode", "NOERROR")
	add(Responses, counter(func(s int) float64 { return map[bool]float64{true: 1}[s >= 300 && s < 360] }, 0), "view", "web", "rcode", "SERVFAIL")
	add(CacheHits, counter(steady(3), 0), "type", "success")
	add(CacheMisses, counter(steady(1), 0))
	add(Latency, counter(steady(90), 0), "le", "0.001")
	add(Latency, counter(steady(99), 0), "le", "0.01")
	add(Latency, counter(steady(100), 0), "le", "+Inf")
	return s
}

func TestRun(t *testing.T) {
	stormFixes := func(sh *float64, removes int64, peak float64) []Fix {
		return []Fix{{Kind: "autopath", RemovesShare: sh, RemovesQueries: removes, SimulatedPeakRps: peak},
			{Kind: "ndots", RemovesShare: sh, RemovesQueries: removes, SimulatedPeakRps: peak},
			{Kind: "nodelocaldns", RemovesShare: sh, RemovesQueries: removes, SimulatedPeakRps: peak, UpperBound: sh != nil}}
	}
	tests := []struct {
		name  string
		store *promtest.Store
		opt   Options
		want  *Report
	}{{
		name:  "a burst and its client, a counter reset",
		store: fleet(),
		want: &Report{By: "view", Labelled: true, PeakRps: 405, PeakAt: at(600), CounterResets: 1, Missing: nil,
			Summary: Stats{Requests: 34560, Rps: 28.8, P99Ms: f(10), ServfailShare: f(0.0017), NxdomainShare: f(0.5199), CacheHitRatio: f(0.75)},
			Types:   map[string]int64{"A": 20280, "AAAA": 14280},
			Clients: []Client{
				{Value: "ml", Share: 0.8264, PeakRps: 400, PeakAt: at(600), Stats: Stats{Requests: 28560, Rps: 23.8, NxdomainShare: f(0.6303), ServfailShare: f(0)}},
				{Value: "web", Share: 0.1736, PeakRps: 5, PeakAt: at(0), Stats: Stats{Requests: 6000, Rps: 5, NxdomainShare: f(0), ServfailShare: f(0.0099)}},
			},
			Bursts: []Burst{{Start: at(600), End: at(660), Client: "ml", PeakRps: 400, BaselineRps: 4,
				Stats: Stats{Requests: 24000, Rps: 400, NxdomainShare: f(0.75), ServfailShare: f(0)},
				Types: map[string]int64{"A": 12000, "AAAA": 12000},
				Fixes: stormFixes(f(0.75), 18000, 100)}},
		},
	}, {
		name:  "absent metrics: their figures are null",
		store: fleet(Requests),
		want: &Report{By: "view", Labelled: true, PeakRps: 405, PeakAt: at(600), CounterResets: 1,
			Missing: []string{Responses, Latency, CacheHits, CacheMisses},
			Summary: Stats{Requests: 34560, Rps: 28.8},
			Types:   map[string]int64{"A": 20280, "AAAA": 14280},
			Clients: []Client{
				{Value: "ml", Share: 0.8264, PeakRps: 400, PeakAt: at(600), Stats: Stats{Requests: 28560, Rps: 23.8}},
				{Value: "web", Share: 0.1736, PeakRps: 5, PeakAt: at(0), Stats: Stats{Requests: 6000, Rps: 5}},
			},
			Bursts: []Burst{{Start: at(600), End: at(660), Client: "ml", PeakRps: 400, BaselineRps: 4,
				Stats: Stats{Requests: 24000, Rps: 400}, Types: map[string]int64{"A": 12000, "AAAA": 12000},
				Fixes: stormFixes(nil, 0, 400)}},
		},
	}, {
		name:  "not labelled by --by: bursts of all queries",
		store: fleet(Requests),
		opt:   Options{By: "namespace", Since: at(300), Until: at(900)},
		want: &Report{By: "namespace", PeakRps: 405, PeakAt: at(600), CounterResets: 1,
			Missing: []string{Responses, Latency, CacheHits, CacheMisses},
			Summary: Stats{Requests: 29160, Rps: 48.6},
			Types:   map[string]int64{"A": 16080, "AAAA": 13080},
			Clients: []Client{},
			Bursts: []Burst{{Start: at(600), End: at(660), Client: "", PeakRps: 405, BaselineRps: 9,
				Stats: Stats{Requests: 24300, Rps: 405}, Types: map[string]int64{"A": 12300, "AAAA": 12000},
				Fixes: stormFixes(nil, 0, 405)}},
		},
	}}
	ignore := cmpopts.IgnoreFields(Report{}, "Window", "StepSeconds", "Over", "Fixes")
	noText := cmpopts.IgnoreFields(Fix{}, "Detail", "Evidence", "Tradeoff")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Run(context.Background(), tt.store, tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, ignore, noText, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// The rate over time: a point a step, the storm in its minute.
func TestRunOverTime(t *testing.T) {
	got, err := Run(context.Background(), fleet(Requests), Options{Since: at(540), Until: at(720)})
	if err != nil {
		t.Fatal(err)
	}
	want := []Point{
		{Time: at(540), Stats: Stats{Requests: 540, Rps: 9}},
		{Time: at(600), Stats: Stats{Requests: 24300, Rps: 405}},
		{Time: at(660), Stats: Stats{Requests: 540, Rps: 9}},
	}
	if diff := cmp.Diff(want, got.Over); diff != "" {
		t.Errorf("over (-want +got)\n%s", diff)
	}
	if got.Window.Start != at(540) || got.Window.End != at(720) || got.StepSeconds != 60 {
		t.Errorf("window %v, step %gs; want [540 s, 720 s], 60 s", got.Window, got.StepSeconds)
	}
}

func TestRunWithoutSeries(t *testing.T) {
	one := &promtest.Store{}
	one.AddSeries(Requests, []timeline.Sample{{Time: at(0), Value: 1523}}, "type", "A")
	for _, tt := range []struct {
		name  string
		store *promtest.Store
		want  prom.NoSeriesError
	}{
		{"none", &promtest.Store{}, prom.NoSeriesError{What: "DNS pressure", Metrics: []string{Requests}, Selector: Selector}},
		{"a snapshot: one sample", one, prom.NoSeriesError{What: "DNS pressure", Metrics: []string{Requests}, Selector: Selector, Single: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(context.Background(), tt.store, Options{})
			var ns *prom.NoSeriesError
			if !errors.As(err, &ns) {
				t.Fatalf("err = %v, want a NoSeriesError", err)
			}
			if diff := cmp.Diff(tt.want, *ns); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// A window that opens before the first sample does not make the evidence's
// start a storm: the seconds before it are unseen, not quiet. The one
// storm is still found.
func TestRunWindowBeforeTheData(t *testing.T) {
	got, err := Run(context.Background(), fleet(Requests), Options{Since: at(-600), Until: at(1200)})
	if err != nil {
		t.Fatal(err)
	}
	var starts []time.Time
	for _, b := range got.Bursts {
		starts = append(starts, b.Start)
	}
	if len(starts) != 1 || starts[0].Before(at(585)) || starts[0].After(at(600)) {
		t.Errorf("bursts start at %v; want one, the storm at 600 s (within a scrape before)", starts)
	}
}
