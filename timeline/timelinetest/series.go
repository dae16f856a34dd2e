package timelinetest

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/faultline/faultline/timeline"
)

// SeriesStore is what CheckSeries needs of a store.
type SeriesStore interface {
	timeline.Appender
	timeline.SeriesReader
}

// seriesFixture is three series of two metrics, with NaN and infinities.
func seriesFixture(t0 time.Time) ([]*timeline.Series, [][]timeline.Sample) {
	mk := func(metric string, kv ...string) *timeline.Series {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return timeline.NewSeries(metric, timeline.NewLabels(m))
	}
	series := []*timeline.Series{
		mk("up", "job", "apiserver", "instance", "10.0.0.1:6443"),
		mk("up", "job", "coredns", "instance", "10.0.0.2:9153"),
		mk("coredns_dns_requests_total", "job", "coredns", "instance", "10.0.0.2:9153", "type", "A"),
	}
	at := func(sec int, v float64) timeline.Sample {
		return timeline.Sample{Time: t0.Add(time.Duration(sec) * time.Second), Value: v}
	}
	samples := [][]timeline.Sample{
		{at(0, 1), at(15, 1), at(30, 0)},
		{at(0, 1), at(15, math.NaN()), at(30, math.Inf(1))},
		{at(30, 100), at(45, math.Inf(-1))},
	}
	return series, samples
}

// WriteSeries writes series and their samples (samples[i] those of
// series[i]) into s in one metrics run, and returns the run as committed.
func WriteSeries(t testing.TB, s timeline.Appender, series []*timeline.Series, samples [][]timeline.Sample) *timeline.IngestRun {
	t.Helper()
	return writeSeries(t, s, series, samples, nil)
}

// addSeries writes the fixture in one run, its first sample again in the
// same batch, and returns the run as committed.
func addSeries(t *testing.T, s SeriesStore, series []*timeline.Series, samples [][]timeline.Sample) *timeline.IngestRun {
	t.Helper()
	// Given twice in one batch: nothing more.
	return writeSeries(t, s, series, samples, func(b timeline.Batch, run *timeline.IngestRun) {
		n, err := b.AddSamples(context.Background(), series[0], samples[0][:1])
		if err != nil {
			t.Fatal(err)
		}
		run.Records += int64(n)
		run.Duplicates += int64(1 - n)
	})
}

// writeSeries writes series in one run, calls more (if not nil) before
// the batch commits, and returns the run as committed.
func writeSeries(t testing.TB, s timeline.Appender, series []*timeline.Series, samples [][]timeline.Sample, more func(timeline.Batch, *timeline.IngestRun)) *timeline.IngestRun {
	t.Helper()
	ctx := context.Background()
	run := &timeline.IngestRun{Source: timeline.SourceMetrics, Path: "fixture"}
	if err := s.BeginRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	b, err := s.Batch(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i, sr := range series {
		n, err := b.AddSamples(ctx, sr, samples[i])
		if err != nil {
			t.Fatal(err)
		}
		run.Records += int64(n)
		run.Duplicates += int64(len(samples[i]) - n)
	}
	if more != nil {
		more(b, run)
	}
	if err := b.Commit(ctx, run); err != nil {
		t.Fatal(err)
	}
	run.Status = timeline.RunDone
	if err := s.FinishRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	return run
}

// CheckSeries writes series and samples into s, reads them back by
// metric, matchers and span, and checks that writing them again adds
// nothing.
func CheckSeries(t *testing.T, s SeriesStore) {
	ctx := context.Background()
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	series, samples := seriesFixture(t0)
	run := addSeries(t, s, series, samples)
	if run.Records != 8 || run.Duplicates != 1 {
		t.Errorf("first run: %d samples added, %d held; want 8 and 1", run.Records, run.Duplicates)
	}
	again := addSeries(t, s, series, samples)
	if again.Records != 0 || again.Duplicates != 9 {
		t.Errorf("the same samples again: %d added, %d held; want 0 and 9", again.Records, again.Duplicates)
	}
	re := func(name string, op timeline.MatchOp, v string) *timeline.Matcher {
		m, err := timeline.NewMatcher(name, op, v)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, tc := range []struct {
		name string
		q    timeline.SeriesQuery
		want []*timeline.Series
	}{
		{"all", timeline.SeriesQuery{}, []*timeline.Series{series[2], series[0], series[1]}},
		{"metric", timeline.SeriesQuery{Metric: "up"}, []*timeline.Series{series[0], series[1]}},
		{"unknown metric", timeline.SeriesQuery{Metric: "nope"}, nil},
		{"matcher", timeline.SeriesQuery{Matchers: []*timeline.Matcher{re("job", timeline.MatchEqual, "coredns")}}, []*timeline.Series{series[2], series[1]}},
		{"regexp is anchored", timeline.SeriesQuery{Matchers: []*timeline.Matcher{re("job", timeline.MatchRegexp, "core")}}, nil},
		{"missing label", timeline.SeriesQuery{Matchers: []*timeline.Matcher{re("type", timeline.MatchEqual, "")}}, []*timeline.Series{series[0], series[1]}},
		{"__name__", timeline.SeriesQuery{Matchers: []*timeline.Matcher{re("__name__", timeline.MatchNotEqual, "up")}}, []*timeline.Series{series[2]}},
		{"span", timeline.SeriesQuery{Since: t0.Add(40 * time.Second), Until: t0.Add(time.Minute)}, []*timeline.Series{series[2]}},
		{"span before", timeline.SeriesQuery{Until: t0.Add(time.Second)}, []*timeline.Series{series[0], series[1]}},
		{"span in a gap", timeline.SeriesQuery{Since: t0.Add(31 * time.Second), Until: t0.Add(44 * time.Second)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []*timeline.Series
			for sr, err := range s.Series(ctx, tc.q) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, sr)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("series (-want +got):\n%s", diff)
			}
		})
	}
	checkPresentSeries(t, s, t0)
	var want, got []timeline.Sample
	for _, i := range []int{1, 2} {
		for _, sm := range samples[i] {
			if !sm.Time.Before(t0.Add(15 * time.Second)) {
				sm.Series = series[i].ID
				want = append(want, sm)
			}
		}
	}
	for sm, err := range s.Samples(ctx, []int64{series[1].ID, series[2].ID}, t0.Add(15*time.Second), time.Time{}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, sm)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
}

// presenceReader is the store's read of the series present in a few
// spans at once, where it has one.
type presenceReader interface {
	PresentSeries(ctx context.Context, q timeline.PresenceQuery) (*timeline.SeriesTable, error)
}

// checkPresentSeries checks that PresentSeries answers as Series does
// span by span, for the fixture CheckSeries wrote.
func checkPresentSeries(t *testing.T, s SeriesStore, t0 time.Time) {
	pr, ok := s.(presenceReader)
	if !ok {
		return
	}
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	for _, tc := range []struct {
		name string
		q    timeline.PresenceQuery
	}{
		{"every series", timeline.PresenceQuery{Spans: []timeline.Span{{}}}},
		{"two spans", timeline.PresenceQuery{Spans: []timeline.Span{{Since: sec(40), Until: sec(60)}, {Until: sec(1)}}}},
		{"a gap and its edges", timeline.PresenceQuery{Spans: []timeline.Span{{Since: sec(31), Until: sec(44)}, {Since: sec(30), Until: sec(31)}, {Since: sec(16), Until: sec(30)}}}},
		{"one metric", timeline.PresenceQuery{Metric: "up", Spans: []timeline.Span{{Since: sec(15)}}}},
		{"unknown metric", timeline.PresenceQuery{Metric: "nope", Spans: []timeline.Span{{}}}},
	} {
		t.Run("present/"+tc.name, func(t *testing.T) {
			ctx := context.Background()
			want := map[int64]string{}
			for i, sp := range tc.q.Spans {
				for sr, err := range s.Series(ctx, timeline.SeriesQuery{Metric: tc.q.Metric, Since: sp.Since, Until: sp.Until}) {
					if err != nil {
						t.Fatal(err)
					}
					want[sr.ID] += fmt.Sprintf("%s in %d;", sr, i)
				}
			}
			tab, err := pr.PresentSeries(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			got := map[int64]string{}
			for i, r := range tab.Rows {
				for b := range len(tc.q.Spans) {
					if r.In&(1<<b) != 0 {
						got[r.ID] += fmt.Sprintf("%s in %d;", tab.Series(i), b)
					}
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("series by id (-Series +PresentSeries):\n%s", diff)
			}
		})
	}
}
