package cardinality

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

var (
	vs = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	at = vs.Add(time.Hour)
)

func series(metric string, kv ...string) *timeline.Series {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return timeline.NewSeries(metric, timeline.NewLabels(m))
}

func sampleAt(ts ...time.Time) []timeline.Sample {
	var out []timeline.Sample
	for _, t := range ts {
		out = append(out, timeline.Sample{Time: t, Value: 1})
	}
	return out
}

// fixture: at Vs, two up series and one request series of pod p1; at At,
// the up series still, four request series of pods p2 and p3 over two
// paths (pod and path each double them), and a worker's queue.
func fixture() *timelinetest.MemSeries {
	m := &timelinetest.MemSeries{}
	both, then, now := sampleAt(vs.Add(-time.Minute), at.Add(-time.Minute)), sampleAt(vs.Add(-time.Minute)), sampleAt(at.Add(-4*time.Minute))
	m.AddSeries(series("up", "job", "api", "instance", "a:1"), both...)
	m.AddSeries(series("up", "job", "api", "instance", "b:1"), both...)
	m.AddSeries(series("http_requests_total", "job", "api", "instance", "a:1", "path", "/x", "pod", "p1"), then...)
	for _, pod := range []string{"p2", "p3"} {
		for _, path := range []string{"/x", "/y"} {
			m.AddSeries(series("http_requests_total", "job", "api", "instance", "a:1", "path", path, "pod", pod), now...)
		}
	}
	m.AddSeries(series("queue_depth", "job", "worker", "instance", "w:1", "pod", "p2"), now...)
	// Five minutes before At exactly: out of At's left-open lookback.
	m.AddSeries(series("stale", "job", "api", "instance", "a:1"), sampleAt(at.Add(-DefaultLookback))...)
	return m
}

func wantAtVs() *Report {
	return &Report{
		Source: "timeline", At: at, Vs: vs, LookbackSeconds: 300,
		Series: 7, MetricCount: 3, LabelCount: 4,
		Metrics: []Metric{
			{Name: "http_requests_total", Series: 4, Labels: []MetricLabel{
				{Name: "path", Values: 2, Multiplier: 2, Saves: 2},
				{Name: "pod", Values: 2, Multiplier: 2, Saves: 2},
				{Name: "instance", Values: 1, Multiplier: 1},
				{Name: "job", Values: 1, Multiplier: 1},
			}},
			{Name: "up", Series: 2, Labels: []MetricLabel{
				{Name: "instance", Values: 2, Multiplier: 2, Saves: 1},
				{Name: "job", Values: 1, Multiplier: 1},
			}},
			{Name: "queue_depth", Series: 1, Labels: []MetricLabel{
				{Name: "instance", Values: 1, Multiplier: 1},
				{Name: "job", Values: 1, Multiplier: 1},
				{Name: "pod", Values: 1, Multiplier: 1},
			}},
		},
		Labels: []Label{
			{Name: "pod", Values: 2, Series: 5, Metrics: 2, Saves: 2},
			{Name: "path", Values: 2, Series: 4, Metrics: 1, Saves: 2},
			{Name: "instance", Values: 3, Series: 7, Metrics: 3, Saves: 1},
			{Name: "job", Values: 2, Series: 7, Metrics: 3},
		},
		Pairs: []Pair{
			{"job", "api", 6}, {"instance", "a:1", 5}, {"pod", "p2", 3}, {"path", "/x", 2}, {"path", "/y", 2},
			{"pod", "p3", 2}, {"instance", "b:1", 1}, {"instance", "w:1", 1}, {"job", "worker", 1},
		},
		Targets: []Target{
			{Job: "api", Instance: "a:1", Series: 5, SeriesVs: 2, Growth: 3},
			{Job: "worker", Instance: "w:1", Series: 1, Growth: 1},
			{Job: "api", Instance: "b:1", Series: 1, SeriesVs: 1},
		},
		Churn: &Churn{
			SeriesVs: 3, Appeared: 5, Disappeared: 1, Kept: 2,
			Metrics: []MetricChurn{
				{Name: "http_requests_total", Series: 4, SeriesVs: 1, Appeared: 4, Disappeared: 1},
				{Name: "queue_depth", Series: 1, Appeared: 1},
			},
			Labels: []LabelChurn{
				{Name: "pod", NewValues: 2, GoneValues: 1, Appeared: 5, Disappeared: 1, Examples: []string{"p2", "p3"}},
				{Name: "path", NewValues: 1, Appeared: 2, Examples: []string{"/y"}},
				{Name: "instance", NewValues: 1, Appeared: 1, Examples: []string{"w:1"}},
				{Name: "job", NewValues: 1, Appeared: 1, Examples: []string{"worker"}},
			},
		},
		Worst: &Worst{Label: "pod", Saves: 2, Fixes: []Fix{
			{Kind: FixDrop, Metrics: []string{"http_requests_total"}, Saves: 2,
				YAML: "# in each scrape_config whose series carry pod\nmetric_relabel_configs:\n  - action: labeldrop\n    regex: \"pod\"\n"},
			{Kind: FixAggregate, Metrics: []string{"http_requests_total"}, Saves: 2,
				YAML: "groups:\n  - name: \"cardinality-without-pod\"\n    rules:\n" +
					"      - record: \"without_pod:http_requests:rate5m\"\n        expr: \"sum without (pod) (rate(http_requests_total[5m]))\"\n"},
		}},
	}
}

// ignoreTradeoffs leaves the fixes' prose to the docs.
var ignoreTradeoffs = cmpopts.IgnoreFields(Fix{}, "Tradeoff")

func TestCardinalityRun(t *testing.T) {
	ctx := context.Background()
	full := wantAtVs()
	tests := []struct {
		name string
		opt  Options
		want func() *Report
	}{
		{"at vs", Options{At: at, Vs: vs}, wantAtVs},
		{"top 1", Options{At: at, Vs: vs, Top: 1}, func() *Report {
			r := wantAtVs()
			r.Metrics, r.Labels, r.Pairs, r.Targets = r.Metrics[:1], r.Labels[:1], r.Pairs[:1], r.Targets[:1]
			r.Metrics[0].Labels = r.Metrics[0].Labels[:1]
			r.Churn.Metrics, r.Churn.Labels = r.Churn.Metrics[:1], r.Churn.Labels[:1]
			return r
		}},
		{"one metric", Options{At: at, Vs: vs, Metric: "up"}, func() *Report {
			return &Report{Source: "timeline", At: at, Vs: vs, LookbackSeconds: 300, Metric: "up",
				Series: 2, MetricCount: 1, LabelCount: 2, Metrics: full.Metrics[1:2],
				Labels: []Label{{Name: "instance", Values: 2, Series: 2, Metrics: 1, Saves: 1}, {Name: "job", Values: 1, Series: 2, Metrics: 1}},
				Pairs:  []Pair{{"job", "api", 2}, {"instance", "a:1", 1}, {"instance", "b:1", 1}},
				Targets: []Target{{Job: "api", Instance: "a:1", Series: 1, SeriesVs: 1},
					{Job: "api", Instance: "b:1", Series: 1, SeriesVs: 1}},
				Churn: &Churn{SeriesVs: 2, Kept: 2, Metrics: []MetricChurn{}, Labels: []LabelChurn{}},
			}
		}},
		{"every series held", Options{Metric: "stale"}, func() *Report {
			return &Report{Source: "timeline", Metric: "stale", Series: 1, MetricCount: 1, LabelCount: 2,
				Metrics: []Metric{{Name: "stale", Series: 1, Labels: []MetricLabel{{Name: "instance", Values: 1, Multiplier: 1}, {Name: "job", Values: 1, Multiplier: 1}}}},
				Labels:  []Label{{Name: "instance", Values: 1, Series: 1, Metrics: 1}, {Name: "job", Values: 1, Series: 1, Metrics: 1}},
				Pairs:   []Pair{{"instance", "a:1", 1}, {"job", "api", 1}},
				Targets: []Target{{Job: "api", Instance: "a:1", Series: 1}},
			}
		}},
		{"lookback is left-open", Options{At: at, Metric: "stale"}, func() *Report {
			return &Report{Source: "timeline", At: at, LookbackSeconds: 300, Metric: "stale",
				Metrics: []Metric{}, Labels: []Label{}, Pairs: []Pair{}, Targets: []Target{}}
		}},
		{"a longer lookback", Options{At: at, Metric: "stale", Lookback: 6 * time.Minute, Top: -1}, func() *Report {
			return &Report{Source: "timeline", At: at, LookbackSeconds: 360, Metric: "stale", Series: 1, MetricCount: 1, LabelCount: 2,
				Metrics: []Metric{{Name: "stale", Series: 1, Labels: []MetricLabel{{Name: "instance", Values: 1, Multiplier: 1}, {Name: "job", Values: 1, Multiplier: 1}}}},
				Labels:  []Label{{Name: "instance", Values: 1, Series: 1, Metrics: 1}, {Name: "job", Values: 1, Series: 1, Metrics: 1}},
				Pairs:   []Pair{{"instance", "a:1", 1}, {"job", "api", 1}},
				Targets: []Target{{Job: "api", Instance: "a:1", Series: 1}},
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Run(ctx, fixture(), tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want(), got, ignoreTradeoffs); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestCardinalityErrors(t *testing.T) {
	ctx := context.Background()
	var opt *OptionError
	tests := []struct {
		name  string
		store *timelinetest.MemSeries
		opt   Options
		is    func(error) bool
	}{
		{"no series", &timelinetest.MemSeries{}, Options{}, func(err error) bool { return errors.Is(err, ErrNoSeries) }},
		{"no series at an instant", &timelinetest.MemSeries{}, Options{At: at}, func(err error) bool { return errors.Is(err, ErrNoSeries) }},
		{"unknown metric", fixture(), Options{Metric: "nope"}, func(err error) bool { return errors.Is(err, ErrNoSeries) }},
		{"vs without at", fixture(), Options{Vs: vs}, func(err error) bool { return errors.As(err, &opt) && opt.Field == "Vs" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Run(ctx, tt.store, tt.opt); !tt.is(err) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

// A histogram over three targets: what multiplies it are labels a fix
// never removes, so there is no worst label.
func TestCardinalityNoFixForTargetLabels(t *testing.T) {
	m := &timelinetest.MemSeries{}
	for _, inst := range []string{"a", "b", "c"} {
		for _, le := range []string{"0.1", "1", "+Inf"} {
			m.AddSeries(series("rpc_seconds_bucket", "job", "rpc", "instance", inst, "le", le), sampleAt(at)...)
		}
	}
	rep, err := Run(context.Background(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Worst != nil {
		t.Errorf("worst = %+v, want none: job, instance and le are kept", rep.Worst)
	}
	want := []MetricLabel{{Name: "instance", Values: 3, Multiplier: 3, Saves: 6}, {Name: "le", Values: 3, Multiplier: 3, Saves: 6}, {Name: "job", Values: 1, Multiplier: 1}}
	if diff := cmp.Diff(want, rep.Metrics[0].Labels); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestCardinalityRule(t *testing.T) {
	tests := []struct{ metric, label, record, expr string }{
		{"http_requests_total", "pod", "without_pod:http_requests:rate5m", "sum without (pod) (rate(http_requests_total[5m]))"},
		{"rpc_seconds_bucket", "pod", "without_pod:rpc_seconds_bucket:rate5m", "sum without (pod) (rate(rpc_seconds_bucket[5m]))"},
		{"queue_depth", "pod", "without_pod:queue_depth:sum", "sum without (pod) (queue_depth)"},
		{"job:x:rate5m", "pod", "without_pod:job_x_rate5m:sum", "sum without (pod) (job:x:rate5m)"},
		{"my.metric", "k8s.pod", "without_k8s_pod:my_metric:sum", `sum without ("k8s.pod") ({"my.metric"})`},
	}
	for _, tt := range tests {
		t.Run(tt.metric, func(t *testing.T) {
			record, expr := rule(tt.metric, tt.label)
			if diff := cmp.Diff([]string{tt.record, tt.expr}, []string{record, expr}); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}
