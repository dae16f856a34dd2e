package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// TestHistogramAgreesWithCEL: timelinetest.CheckHistogram.
func TestHistogramAgreesWithCEL(t *testing.T) {
	s := openWhereStore(t)
	timelinetest.CheckHistogram(t, s, timelinetest.ReadAll(t, s))
}

func TestHistogramRefusesBadQueries(t *testing.T) {
	s := openTest(t)
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	for _, q := range []timeline.HistogramQuery{
		{Since: t0, Until: t0, Buckets: 1},
		{Since: t0, Until: t0.Add(time.Second), Buckets: 0},
		{Until: t0, Buckets: 1},
	} {
		if _, err := s.Histogram(context.Background(), q); err == nil {
			t.Errorf("Histogram(%+v) = nil error", q)
		}
	}
}
