package timelinetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

// CheckHistogram counts the records all (WhereRecords, as s read them)
// into buckets with Filter.Match and compares with s's histogram, for
// filters that a store translates to SQL, in full and in part (annotations,
// stage), and none.
func CheckHistogram(t *testing.T, s timeline.Reader, all []*timeline.Record) {
	t.Helper()
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
		{"residual where and bad", `annotations["x"] == "y" || code >= 400`, `size(name) > 5`},
		{"nothing bad", `ns == "default"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range []int{1, 3, 7} {
				q := timeline.HistogramQuery{Since: since, Until: until, Buckets: n}
				if tc.where != "" {
					q.Where = MustFilter(t, tc.where)
				}
				if tc.bad != "" {
					q.Bad = MustFilter(t, tc.bad)
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

// CheckBadKeySet: a store never decides what is bad; it marks the records
// of the classifier's key set (Query.Bad), and the filter field bad reads
// that mark, alone (which a store may push to SQL as the key set) or with
// other terms. all is WhereRecords as s read them.
func CheckBadKeySet(t *testing.T, s timeline.Reader, all []*timeline.Record) {
	t.Helper()
	if len(all) < 4 {
		t.Fatalf("%d records", len(all))
	}
	bad := map[int64]bool{all[0].ID: true, all[2].ID: true, all[len(all)-1].ID: true}
	var want []string
	for _, r := range all {
		if bad[r.ID] {
			want = append(want, r.AuditID)
		}
	}
	labels := func(q timeline.Query) []string {
		var out []string
		for r, err := range s.Records(context.Background(), q) {
			if err != nil {
				t.Fatal(err)
			}
			if r.Bad != bad[r.ID] {
				t.Errorf("record %d: Bad = %v, want %v", r.ID, r.Bad, bad[r.ID])
			}
			out = append(out, r.AuditID)
		}
		return out
	}
	for _, expr := range []string{"bad", "bad && code >= 0", "!(!bad)", "bad || false"} {
		t.Run(expr, func(t *testing.T) {
			if diff := cmp.Diff(want, labels(timeline.Query{Where: MustFilter(t, expr), Bad: bad})); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
	if got := labels(timeline.Query{Where: MustFilter(t, "bad")}); len(got) != 0 {
		t.Errorf("with no key set, bad matched %v", got)
	}
	if got := labels(timeline.Query{Bad: bad}); len(got) != len(all) {
		t.Errorf("with no filter, %d records, want %d", len(got), len(all))
	}
}

// CheckFields: a read that names its fields (Query.Fields, and
// Query.FieldsWhere for some records) yields the records of a read of
// every field, in the same order, with the fields left out at their zero
// values, whether the store evaluates its filters whole (in SQL) or in
// part row by row, with a limit or without, in either order; and the
// classifier's mark (Query.Bad) is set before a FieldsWhere filter that
// reads it is matched. all is WhereRecords as s read them.
func CheckFields(t *testing.T, s timeline.Reader, all []*timeline.Record) {
	t.Helper()
	checkFields(t, s, all, nil)
	for _, where := range []string{"code >= 400", `verb == "get" && code != 200`, `stage == "ResponseComplete"`,
		`annotations["x"] == "y" || code == 404`, "bad"} {
		for _, fields := range []timeline.FieldSet{timeline.FieldExtra, timeline.FieldExtra | timeline.FieldURI | timeline.FieldCode} {
			checkFields(t, s, all, &timeline.FieldsWhere{Fields: fields, Where: MustFilter(t, where)})
		}
	}
}

func checkFields(t *testing.T, s timeline.Reader, all []*timeline.Record, more *timeline.FieldsWhere) {
	t.Helper()
	// Marked bad: the first and last records, which a read with a limit
	// of 2 yields in one order or the other, and the records with extra.
	bad := map[int64]bool{all[0].ID: true, all[len(all)-1].ID: true}
	for _, r := range all {
		if len(r.Extra) > 0 {
			bad[r.ID] = true
		}
	}
	moreText := "none"
	if more != nil {
		moreText = fmt.Sprintf("%014b where %q", more.Fields, more.Where.String())
	}
	sets := []timeline.FieldSet{
		timeline.FieldCode,
		timeline.FieldReason | timeline.FieldMessage | timeline.FieldCode,
		timeline.FieldExtra | timeline.FieldURI | timeline.FieldAuditID,
		timeline.FieldVerb | timeline.FieldUser | timeline.FieldUserAgent | timeline.FieldSourceIP,
		timeline.FieldType | timeline.FieldLevel | timeline.FieldLatency | timeline.FieldStages,
		timeline.AllFields &^ timeline.FieldExtra,
	}
	for _, where := range []string{"", "code >= 400", `verb == "get" || reason != ""`,
		`stage == "ResponseComplete"`, `annotations["x"] == "y" || code >= 0`} {
		var f *timeline.Filter
		if where != "" {
			f = MustFilter(t, where)
		}
		var want []*timeline.Record
		for _, r := range all {
			if f == nil || match(f, r) {
				want = append(want, r)
			}
		}
		for _, fields := range sets {
			for _, desc := range []bool{false, true} {
				for _, limit := range []int{0, 2} {
					q := timeline.Query{Where: f, Fields: fields, FieldsWhere: more, Desc: desc, Limit: limit, Bad: bad}
					var exp []timeline.Record
					for _, r := range want {
						c := *r
						c.Bad = bad[c.ID]
						keep := fields
						if more != nil && match(more.Where, &c) {
							keep |= more.Fields
						}
						keep.Keep(&c)
						exp = append(exp, c)
					}
					if desc {
						slices.Reverse(exp)
					}
					if limit > 0 && len(exp) > limit {
						exp = exp[:limit]
					}
					var got []timeline.Record
					for r, err := range s.Records(context.Background(), q) {
						if err != nil {
							t.Fatal(err)
						}
						got = append(got, *r)
					}
					if diff := cmp.Diff(exp, got); diff != "" {
						t.Errorf("where %q, fields %014b, more %s, desc %v, limit %d (-want +got)\n%s", where, fields, moreText, desc, limit, diff)
					}
				}
			}
		}
	}
}
