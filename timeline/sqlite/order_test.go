package sqlite

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

// TestOrderVersions: a dump's snapshot, whose time is only a lower bound
// read from its own metadata, is ordered after the audited versions with a
// smaller resourceVersion, never first ("first version seen" at the last
// resourceVersion, then "generation: 2 -> 1" diffs backwards).
func TestOrderVersions(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	v := func(name, rv string, at time.Duration, seen timeline.Sighting) timeline.ObjectVersion {
		return timeline.ObjectVersion{Object: timeline.ObjectRef{Resource: "deployments", Namespace: "ml", Name: name, UID: "u-" + name},
			ResourceVersion: rv, Time: t0.Add(at), Seen: seen}
	}
	rvs := func(vs []timeline.ObjectVersion) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.Object.Name+"@"+v.ResourceVersion)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   []timeline.ObjectVersion // as the query returns them: by time
		want []string
	}{
		{"snapshot with an earlier inferred time goes after the writes before it", []timeline.ObjectVersion{
			v("a", "30", 0, timeline.SeenInferred),
			v("a", "10", 200*time.Millisecond, timeline.SeenWritten),
			v("a", "20", 400*time.Millisecond, timeline.SeenWritten),
		}, []string{"a@10", "a@20", "a@30"}},
		{"snapshot older than a later write stays before it", []timeline.ObjectVersion{
			v("a", "10", 0, timeline.SeenWritten),
			v("a", "20", time.Second, timeline.SeenInferred),
			v("a", "30", 2*time.Second, timeline.SeenWritten),
		}, []string{"a@10", "a@20", "a@30"}},
		{"same time: resourceVersion numerically", []timeline.ObjectVersion{
			v("a", "100", 0, timeline.SeenInferred),
			v("a", "99", 0, timeline.SeenWritten),
		}, []string{"a@99", "a@100"}},
		{"objects stay apart", []timeline.ObjectVersion{
			v("a", "30", 0, timeline.SeenInferred),
			v("a", "10", time.Second, timeline.SeenWritten),
			v("b", "5", 0, timeline.SeenInferred),
			v("b", "4", time.Second, timeline.SeenWritten),
		}, []string{"a@10", "a@30", "b@4", "b@5"}},
		{"unparsed resourceVersions keep time order", []timeline.ObjectVersion{
			v("a", "x", 0, timeline.SeenInferred),
			v("a", "y", time.Second, timeline.SeenWritten),
		}, []string{"a@x", "a@y"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := append([]timeline.ObjectVersion(nil), tc.in...)
			timeline.OrderVersions(got)
			if diff := cmp.Diff(tc.want, rvs(got)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}
