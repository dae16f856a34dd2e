package timelinetest

import (
	"context"
	"iter"
	"slices"
	"time"

	"github.com/faultline/faultline/timeline"
)

// MemSeries holds series and their samples in memory, as the
// timeline.SeriesReader role answers them: for tests of analyses of
// Prometheus evidence. Embed it beside Mem for a store of both.
type MemSeries struct {
	List   []*timeline.Series          // kept in CompareSeries order by AddSeries
	Points map[int64][]timeline.Sample // by series ID, in time order
}

var _ timeline.SeriesReader = (*MemSeries)(nil)

// AddSeries adds s (if new) and its samples; a sample at a time the
// series holds already is not added, as in the stores.
func (m *MemSeries) AddSeries(s *timeline.Series, samples ...timeline.Sample) *MemSeries {
	if m.Points == nil {
		m.Points = map[int64][]timeline.Sample{}
	}
	if _, ok := m.Points[s.ID]; !ok {
		m.List = append(m.List, s)
		slices.SortFunc(m.List, timeline.CompareSeries)
		m.Points[s.ID] = []timeline.Sample{}
	}
	held := m.Points[s.ID]
	for _, sm := range samples {
		sm.Series = s.ID
		if !slices.ContainsFunc(held, func(h timeline.Sample) bool { return h.Time.Equal(sm.Time) }) {
			held = append(held, sm)
		}
	}
	slices.SortStableFunc(held, func(a, b timeline.Sample) int { return a.Time.Compare(b.Time) })
	m.Points[s.ID] = held
	return m
}

// Series yields the series q selects, in CompareSeries order.
func (m *MemSeries) Series(_ context.Context, q timeline.SeriesQuery) iter.Seq2[*timeline.Series, error] {
	return func(yield func(*timeline.Series, error) bool) {
		for _, s := range m.List {
			if !q.Match(s) || !m.hasSampleIn(s.ID, q.Since, q.Until) {
				continue
			}
			if !yield(s, nil) {
				return
			}
		}
	}
}

// hasSampleIn reports whether series id has a sample in [since, until)
// (zero: unbounded; both zero: true).
func (m *MemSeries) hasSampleIn(id int64, since, until time.Time) bool {
	if since.IsZero() && until.IsZero() {
		return true
	}
	return slices.ContainsFunc(m.Points[id], func(sm timeline.Sample) bool { return inSpan(sm.Time, since, until) })
}

func inSpan(t, since, until time.Time) bool {
	return (since.IsZero() || !t.Before(since)) && (until.IsZero() || t.Before(until))
}

// Samples yields the samples of the given series in [since, until), by
// series in the order given, then time.
func (m *MemSeries) Samples(_ context.Context, series []int64, since, until time.Time) iter.Seq2[timeline.Sample, error] {
	return func(yield func(timeline.Sample, error) bool) {
		for _, id := range series {
			for _, sm := range m.Points[id] {
				if inSpan(sm.Time, since, until) && !yield(sm, nil) {
					return
				}
			}
		}
	}
}
