package investigate

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// TestLastGoodRecordInWindows: read in growing windows, the last good
// record before a time is the one a single read of the last lastGoodReach
// records finds, within the first window, across windows, and past the
// reach (none).
func TestLastGoodRecordInWindows(t *testing.T) {
	ctx := context.Background()
	before := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	req := func(id int64, ago time.Duration, code int) *timeline.Record {
		return &timeline.Record{ID: id, Key: fmt.Sprint(id), Time: before.Add(-ago), Source: timeline.SourceAudit,
			Verb: "get", Code: code, Object: timeline.ObjectRef{Resource: "pods", Namespace: "ml", Name: fmt.Sprint("p", id)}}
	}
	bad := func(from int64, n int, ago time.Duration) []*timeline.Record {
		var out []*timeline.Record
		for i := range n {
			out = append(out, req(from+int64(i), ago+time.Duration(i)*time.Millisecond, 500))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		recs []*timeline.Record
		want int64 // record ID; 0 for none
	}{
		{"in the first minute", append(bad(1, 3, time.Second), req(100, 10*time.Second, 200)), 100},
		{"across windows", append(append(bad(1, 3, 30*time.Second), bad(10, 3, 30*time.Minute)...), req(100, 2*time.Hour, 200)), 100},
		{"at the reach", append(bad(1, lastGoodReach-1, time.Second), req(5000, 30*time.Minute, 200)), 5000},
		{"past the reach", append(bad(1, lastGoodReach, time.Second), req(5000, 30*time.Minute, 200)), 0},
		{"at the boundary of a window", append(bad(1, 3, time.Second), req(100, time.Minute, 200), req(101, time.Hour, 200)), 100},
		{"none before", bad(1, 3, time.Second), 0},
		{"after the time only", []*timeline.Record{req(1, -time.Second, 200)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := (&timelinetest.Mem{}).Add(tc.recs...)
			out, err := outcome.Read(ctx, s, outcome.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := lastGoodRecord(ctx, s, out, before)
			if err != nil {
				t.Fatal(err)
			}
			// The oracle: one read of the last lastGoodReach records.
			var want int64
			for r, err := range s.Records(ctx, timeline.Query{Until: before, Desc: true, Limit: lastGoodReach}) {
				if err != nil {
					t.Fatal(err)
				}
				if b, _ := out.IsBad(r); !b && r.Code < 400 {
					want = r.ID
					break
				}
			}
			if want != tc.want {
				t.Fatalf("the oracle found %d, the case expects %d", want, tc.want)
			}
			var gotID int64
			if got != nil {
				gotID = got.RecordID
			}
			if diff := cmp.Diff(want, gotID); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}
