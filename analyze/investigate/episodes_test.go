package investigate

import (
	"context"
	"fmt"
	"iter"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/analyze/slice"
	"github.com/faultline/faultline/timeline"
)

// emptyStore holds no versions and no records: episodes are judged on the
// units alone.
type emptyStore struct{}

func (emptyStore) Versions(context.Context, timeline.VersionQuery) ([]timeline.ObjectVersion, error) {
	return nil, nil
}
func (emptyStore) Records(context.Context, timeline.Query) iter.Seq2[*timeline.Record, error] {
	return func(func(*timeline.Record, error) bool) {}
}
func (emptyStore) Bounds(context.Context) (time.Time, time.Time, error) {
	return time.Time{}, time.Time{}, nil
}

// twoFaults: the pods of job train in namespace ml fail from 100 s (their
// config), the pods on rack r7 of job serve fail from startAt s; forty
// pods elsewhere stay good.
func twoFaults(startAt float64) ([]*outcome.Unit, []map[string]identity.Dimension) {
	var units []*outcome.Unit
	var ids []map[string]identity.Dimension
	for i := range 8 {
		units = append(units, badUnit("ml", fmt.Sprintf("train-%d", i), 10, 100+float64(i)))
		ids = append(ids, idOf("owner/Job", "train", "node.zone", "a", "node", fmt.Sprintf("n%d", i)))
	}
	for i := range 6 {
		units = append(units, badUnit("web", fmt.Sprintf("serve-%d", i), 10, startAt+float64(i)))
		ids = append(ids, idOf("owner/Deployment", "serve", "node.zone", "b", "node", fmt.Sprintf("r7-%d", i)))
	}
	for i := range 40 {
		job, zone := "serve", "b"
		if i%2 == 0 {
			job, zone = "eval", "a"
		}
		units = append(units, goodUnit("web", fmt.Sprintf("good-%d", i), 10, 200))
		ids = append(ids, idOf("owner/Deployment", job, "node.zone", zone, "node", fmt.Sprintf("g%d", i)))
	}
	return units, ids
}

// Two clusters of failures, told apart by the slice search, are two
// episodes, each with its own first bad; the one that went bad first is
// the main one. (The second cluster is named by its Deployment: every pod
// of serve runs in zone b, so both name the same units, and the workload
// reads better.)
func TestEpisodes(t *testing.T) {
	type ep struct {
		Where    map[string]string
		FirstBad time.Time
	}
	tests := []struct {
		name      string
		startAt   float64
		wantOther ep
		wantMain  bool // the other episode went bad first: it takes the main one's place
	}{
		{"the second fault after the first", 130, ep{map[string]string{"owner/Deployment": "serve"}, at(130)}, false},
		{"the second fault before the first", 60, ep{map[string]string{"owner/Deployment": "serve"}, at(60)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			units, ids := twoFaults(tt.startAt)
			rep := &Report{Slice: &Slice{Where: map[string]string{"owner/Job": "train"}, Bad: 8, Total: 8,
				Others: []slice.Cause{{Where: slice.Element{"node.zone": "b", "owner/Deployment": "serve"}, Bad: 6, Total: 26}}}}
			eps, earlier, mainFirst, err := episodes(context.Background(), emptyStore{}, &outcome.Outcomes{}, units, ids, rep, at(0))
			if err != nil {
				t.Fatal(err)
			}
			if !mainFirst.Equal(at(100)) {
				t.Errorf("main first bad %s, want %s", mainFirst, at(100))
			}
			var got ep
			switch {
			case tt.wantMain && earlier != nil:
				got = ep{earlier.Slice.Where, earlier.Boundary.FirstBad}
				if len(eps) != 0 {
					t.Errorf("%d further episodes, want none beside the earlier", len(eps))
				}
			case !tt.wantMain && earlier == nil && len(eps) == 1:
				got = ep{eps[0].Slice.Where, eps[0].Boundary.FirstBad}
			default:
				t.Fatalf("earlier %v, %d episodes", earlier != nil, len(eps))
			}
			if diff := cmp.Diff(tt.wantOther, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// A further cause with a single bad unit of its own is no episode.
func TestEpisodesNeedTwoUnits(t *testing.T) {
	units, ids := twoFaults(130)
	rep := &Report{Slice: &Slice{Where: map[string]string{"owner/Job": "train"}}}
	rep.Slice.Others = []slice.Cause{{Where: slice.Element{"node": "r7-0"}, Bad: 1, Total: 1}}
	eps, earlier, _, err := episodes(context.Background(), emptyStore{}, &outcome.Outcomes{}, units, ids, rep, at(0))
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != 0 || earlier != nil {
		t.Errorf("got %d episodes (earlier %v), want none", len(eps), earlier != nil)
	}
}
