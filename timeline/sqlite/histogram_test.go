package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

// TestHistogramAgreesWithCEL counts the filter test records into buckets
// with Filter.Match and compares with the store's histogram, for filters
// with a complete SQL form, with a residual part (annotations), and none.
func TestHistogramAgreesWithCEL(t *testing.T) {
	s := openWhereStore(t)
	all := allRecords(t, s)
	i := 0
	for all[i].Time.IsZero() { // no time: in no span
		i++
	}
	since, until := all[i].Time, all[len(all)-1].Time.Add(time.Nanosecond)
	for _, tc := range []struct{ name, where, bad string }{
		{"no filter", "", "code >= 400"},
		{"where and bad", `verb == "get"`, "code == 404 || code >= 500"},
		{"bad as a union of indexed parts", "", `(code >= 400 && code == 404) || reason in ["BackOff", "Failed"]`},
		{"residual bad", "", `annotations["authorization.k8s.io/decision"] == "forbid"`},
		{"residual where", `stage == "ResponseComplete"`, `user == "bob"`},
		{"nothing bad", `ns == "default"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range []int{1, 3, 7} {
				q := timeline.HistogramQuery{Since: since, Until: until, Buckets: n}
				if tc.where != "" {
					q.Where = mustFilter(t, tc.where)
				}
				if tc.bad != "" {
					q.Bad = mustFilter(t, tc.bad)
				}
				got, err := s.Histogram(context.Background(), q)
				if err != nil {
					t.Fatal(err)
				}
				want := make([]timeline.Bucket, n)
				for i := range want {
					want[i].Start, want[i].End = got[i].Start, got[i].End
				}
				for _, r := range all {
					i := -1
					for j, b := range got {
						if !r.Time.Before(b.Start) && r.Time.Before(b.End) {
							i = j
						}
					}
					if i < 0 || (q.Where != nil && !match(q.Where, r)) {
						continue
					}
					want[i].All++
					if q.Bad != nil && match(q.Bad, r) {
						want[i].Bad++
					}
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%d buckets (-want +got)\n%s", n, diff)
				}
				if !got[0].Start.Equal(since) || !got[n-1].End.Equal(until) {
					t.Errorf("%d buckets span %s .. %s, want %s .. %s", n, got[0].Start, got[n-1].End, since, until)
				}
			}
		})
	}
}

func match(f *timeline.Filter, r *timeline.Record) bool {
	ok, _ := f.Match(r)
	return ok
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
