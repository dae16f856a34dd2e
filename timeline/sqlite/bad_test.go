package sqlite

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

// TestBadKeySet: the store never decides what is bad; it marks the records
// of the classifier's key set (Query.Bad), and the filter field bad reads
// that mark, alone (pushed to SQL as the key set) or with other terms.
func TestBadKeySet(t *testing.T) {
	s := openWhereStore(t)
	all := allRecords(t, s)
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
			if diff := cmp.Diff(want, labels(timeline.Query{Where: mustFilter(t, expr), Bad: bad})); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
	if got := labels(timeline.Query{Where: mustFilter(t, "bad")}); len(got) != 0 {
		t.Errorf("with no key set, bad matched %v", got)
	}
	if got := labels(timeline.Query{Bad: bad}); len(got) != len(all) {
		t.Errorf("with no filter, %d records, want %d", len(got), len(all))
	}
}
