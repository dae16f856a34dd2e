// Package promtest holds series and samples in memory beside
// timelinetest.Mem's records and versions, for tests of the analyses that
// read both. (timeline/timelinetest has no store of series yet; this one
// answers as timeline.SeriesReader says a store does.)
package promtest

import (
	"context"
	"iter"
	"slices"
	"time"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// Store is records, versions and series in memory.
type Store struct {
	timelinetest.Mem
	series  []*timeline.Series
	samples map[int64][]timeline.Sample
}

// AddSeries adds a series of metric with labels given as name, value
// pairs, and its samples (kept in time order, the first value at a time
// kept). It returns the series.
func (s *Store) AddSeries(metric string, samples []timeline.Sample, kv ...string) *timeline.Series {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	sr := timeline.NewSeries(metric, timeline.NewLabels(m))
	if s.samples == nil {
		s.samples = map[int64][]timeline.Sample{}
	}
	if _, ok := s.samples[sr.ID]; !ok {
		s.series = append(s.series, sr)
		slices.SortFunc(s.series, timeline.CompareSeries)
	}
	for _, sm := range samples {
		sm.Series = sr.ID
		have := s.samples[sr.ID]
		i, found := slices.BinarySearchFunc(have, sm.Time, func(x timeline.Sample, t time.Time) int { return x.Time.Compare(t) })
		if !found {
			s.samples[sr.ID] = slices.Insert(have, i, sm)
		}
	}
	return sr
}

// Series yields the series q selects, in CompareSeries order.
func (s *Store) Series(_ context.Context, q timeline.SeriesQuery) iter.Seq2[*timeline.Series, error] {
	return func(yield func(*timeline.Series, error) bool) {
		for _, sr := range s.series {
			if !q.Match(sr) || !s.sampled(sr.ID, q.Since, q.Until) {
				continue
			}
			if !yield(sr, nil) {
				return
			}
		}
	}
}

// sampled says whether the series has a sample in [since, until).
func (s *Store) sampled(id int64, since, until time.Time) bool {
	if since.IsZero() && until.IsZero() {
		return true
	}
	for _, sm := range s.samples[id] {
		if in(sm.Time, since, until) {
			return true
		}
	}
	return false
}

func in(t, since, until time.Time) bool {
	return (since.IsZero() || !t.Before(since)) && (until.IsZero() || t.Before(until))
}

// Samples yields the samples of the series in [since, until), by series
// in the order given, then time.
func (s *Store) Samples(_ context.Context, series []int64, since, until time.Time) iter.Seq2[timeline.Sample, error] {
	return func(yield func(timeline.Sample, error) bool) {
		for _, id := range series {
			for _, sm := range s.samples[id] {
				if in(sm.Time, since, until) && !yield(sm, nil) {
					return
				}
			}
		}
	}
}

// Counter is a counter scraped every step seconds from t0 over [0, span]
// seconds, rising by rate(s) in each second s from 1000 (a counter older
// than the evidence); it restarts from zero a step before resetAt (if
// > 0), so the scrape at resetAt sees the reset.
func Counter(t0 time.Time, span, step, resetAt int, rate func(s int) float64) []timeline.Sample {
	var out []timeline.Sample
	v := 1000.0
	for s := 0; s <= span; s += step {
		for x := max(s-step, 0); x < s; x++ {
			if resetAt > 0 && x == resetAt-step {
				v = 0
			}
			v += rate(x)
		}
		out = append(out, timeline.Sample{Time: t0.Add(time.Duration(s) * time.Second), Value: v})
	}
	return out
}

// Gauge is a gauge scraped every step seconds from t0 over [0, span]
// seconds, at v(s) at second s.
func Gauge(t0 time.Time, span, step int, v func(s int) float64) []timeline.Sample {
	var out []timeline.Sample
	for s := 0; s <= span; s += step {
		out = append(out, timeline.Sample{Time: t0.Add(time.Duration(s) * time.Second), Value: v(s)})
	}
	return out
}
