package cardinality

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/clickhouse"
	"github.com/faultline/faultline/timeline/sqlite"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
	"github.com/faultline/faultline/timeline/timelinetest"
)

var (
	_ PresenceReader = (*sqlite.Store)(nil)
	_ PresenceReader = (*clickhouse.Store)(nil)
)

// listerOnly hides a store's PresentSeries: Run then reads it span by
// span through Series.
type listerOnly struct{ SeriesLister }

// randomSeries are n series of a few metrics and labels, each with
// samples around vs and at: on the lookback's edges, inside, outside, and
// in a gap between its first and last sample (where a store must look at
// the samples themselves).
func randomSeries(rng *rand.Rand, n int) ([]*timeline.Series, [][]timeline.Sample) {
	names := []string{"job", "instance", "pod", "path", "le", "code"}
	offsets := []time.Duration{-DefaultLookback, -DefaultLookback + time.Nanosecond, -time.Minute, 0, time.Nanosecond, -20 * time.Minute, 20 * time.Minute}
	var series []*timeline.Series
	var samples [][]timeline.Sample
	for range n {
		kv := map[string]string{}
		for _, name := range names {
			if rng.IntN(3) > 0 {
				kv[name] = fmt.Sprintf("%s-%d", name, rng.IntN(1+rng.IntN(8)))
			}
		}
		series = append(series, timeline.NewSeries(fmt.Sprintf("metric_%d_total", rng.IntN(4)), timeline.NewLabels(kv)))
		var sm []timeline.Sample
		for range 1 + rng.IntN(4) {
			base := []time.Time{vs, at}[rng.IntN(2)]
			sm = append(sm, timeline.Sample{Time: base.Add(offsets[rng.IntN(len(offsets))]), Value: 1})
		}
		samples = append(samples, sm)
	}
	return series, samples
}

// randomStores writes the same random series into a SQLite timeline and
// into memory.
func randomStores(t *testing.T, seed uint64) (*sqlite.Store, *timelinetest.MemSeries) {
	series, samples := randomSeries(rand.New(rand.NewPCG(seed, 20)), 400)
	s, m := sqlitetest.New(t), &timelinetest.MemSeries{}
	timelinetest.WriteSeries(t, s, series, samples)
	for i, sr := range series {
		m.AddSeries(sr, samples[i]...)
	}
	return s, m
}

// TestCardinalityFastPathAgrees runs the analysis on random stores three
// ways: through SQLite's PresentSeries (one query), through its Series
// span by span, and over memory, and checks the counts against a
// straightforward count over the series listed at each instant.
func TestCardinalityFastPathAgrees(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(4) {
		s, mem := randomStores(t, seed)
		for _, o := range []Options{
			{At: at, Vs: vs}, {At: at}, {}, {At: vs, Vs: at}, {At: at, Vs: vs, Metric: "metric_1_total"},
			{At: at, Vs: vs, Lookback: 20 * time.Minute}, {At: at.Add(time.Hour), Vs: vs},
		} {
			o.Top = -1
			t.Run(fmt.Sprintf("seed %d at %s vs %s %s %s", seed, o.At.Format(time.Kitchen), o.Vs.Format(time.Kitchen), o.Metric, o.Lookback), func(t *testing.T) {
				fast, errFast := Run(ctx, s, o)
				slow, errSlow := Run(ctx, listerOnly{s}, o)
				inMem, errMem := Run(ctx, mem, o)
				if !errors.Is(errFast, ErrNoSeries) || !errors.Is(errSlow, ErrNoSeries) || !errors.Is(errMem, ErrNoSeries) {
					for _, err := range []error{errFast, errSlow, errMem} {
						if err != nil {
							t.Fatal(err)
						}
					}
				}
				if diff := cmp.Diff(slow, fast); diff != "" {
					t.Errorf("span by span (-) and in one query (+):\n%s", diff)
				}
				if diff := cmp.Diff(inMem, fast); diff != "" {
					t.Errorf("in memory (-) and in one query (+):\n%s", diff)
				}
				if fast != nil {
					var then []*timeline.Series
					if !o.Vs.IsZero() {
						then = listAt(t, mem, o, o.Vs)
					}
					checkCounts(t, fast, listAt(t, mem, o, o.At), then)
				}
			})
		}
	}
}

// listAt lists the series of o's metric present at instant (every series
// for a zero one).
func listAt(t *testing.T, m *timelinetest.MemSeries, o Options, instant time.Time) []*timeline.Series {
	q := timeline.SeriesQuery{Metric: o.Metric}
	if !instant.IsZero() {
		q.Since, q.Until = instant.Add(-o.lookback()+time.Nanosecond), instant.Add(time.Nanosecond)
	}
	var out []*timeline.Series
	for sr, err := range m.Series(context.Background(), q) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sr)
	}
	return out
}

// checkCounts counts what a report says straightforwardly, by strings:
// series, per metric, label and pair, each label's multiplier, and the
// churn.
func checkCounts(t *testing.T, rep *Report, now, then []*timeline.Series) {
	t.Helper()
	type count struct{ series, values, metrics, saves int }
	wantLabels, gotLabels := map[string]count{}, map[string]count{}
	wantPairs, gotPairs := map[string]int{}, map[string]int{}
	wantMetrics, gotMetrics := map[string]int{}, map[string]int{}
	values := map[string]map[string]bool{}
	byMetric := map[string][]*timeline.Series{}
	for _, s := range now {
		wantMetrics[s.Metric]++
		byMetric[s.Metric] = append(byMetric[s.Metric], s)
		for _, l := range s.Labels {
			if values[l.Name] == nil {
				values[l.Name] = map[string]bool{}
			}
			values[l.Name][l.Value] = true
			wantPairs[l.Name+"="+l.Value]++
			c := wantLabels[l.Name]
			c.series++
			wantLabels[l.Name] = c
		}
	}
	wantMult, gotMult := map[string]MetricLabel{}, map[string]MetricLabel{}
	for metric, list := range byMetric {
		for name, ml := range multipliers(list) {
			wantMult[metric+"/"+name] = ml
			c := wantLabels[name]
			c.metrics++
			c.saves += ml.Saves
			wantLabels[name] = c
		}
	}
	for name, vals := range values {
		c := wantLabels[name]
		c.values = len(vals)
		wantLabels[name] = c
	}
	for _, m := range rep.Metrics {
		gotMetrics[m.Name] = m.Series
		for _, l := range m.Labels {
			gotMult[m.Name+"/"+l.Name] = l
		}
	}
	for _, l := range rep.Labels {
		gotLabels[l.Name] = count{l.Series, l.Values, l.Metrics, l.Saves}
	}
	for _, p := range rep.Pairs {
		gotPairs[p.Name+"="+p.Value] = p.Series
	}
	for _, c := range []struct{ what, diff string }{
		{"series", cmp.Diff(len(now), rep.Series)},
		{"metrics", cmp.Diff(wantMetrics, gotMetrics, cmp.AllowUnexported(count{}))},
		{"labels", cmp.Diff(wantLabels, gotLabels, cmp.AllowUnexported(count{}))},
		{"pairs", cmp.Diff(wantPairs, gotPairs)},
		{"multipliers", cmp.Diff(wantMult, gotMult)},
		{"churn", checkChurn(rep.Churn, now, then)},
	} {
		if c.diff != "" {
			t.Errorf("%s (-counted +reported):\n%s", c.what, c.diff)
		}
	}
}

// multipliers is each label's values and saving over one metric's
// series, by label sets written out without the label.
func multipliers(list []*timeline.Series) map[string]MetricLabel {
	names := map[string]bool{}
	for _, s := range list {
		for _, l := range s.Labels {
			names[l.Name] = true
		}
	}
	out := map[string]MetricLabel{}
	for name := range names {
		vals, without := map[string]bool{}, map[string]bool{}
		for _, s := range list {
			var b strings.Builder
			for _, l := range s.Labels {
				if l.Name == name {
					vals[l.Value] = true
					continue
				}
				fmt.Fprintf(&b, "%q=%q,", l.Name, l.Value)
			}
			without[b.String()] = true
		}
		out[name] = MetricLabel{Name: name, Values: len(vals), Multiplier: float64(len(list)) / float64(len(without)), Saves: len(list) - len(without)}
	}
	return out
}

// checkChurn compares a churn's totals with the series listed at each
// instant.
func checkChurn(c *Churn, now, then []*timeline.Series) string {
	if c == nil {
		return cmp.Diff(0, len(then))
	}
	inThen := map[int64]bool{}
	for _, s := range then {
		inThen[s.ID] = true
	}
	want := Churn{SeriesVs: len(then)}
	for _, s := range now {
		if inThen[s.ID] {
			want.Kept++
		} else {
			want.Appeared++
		}
	}
	want.Disappeared = len(then) - want.Kept
	got := Churn{SeriesVs: c.SeriesVs, Appeared: c.Appeared, Disappeared: c.Disappeared, Kept: c.Kept}
	return cmp.Diff(want, got)
}
