package investigate

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// A training Job's deadline is cut at 20 s, while its pods run; they fail
// at 21 s. Its parallelism changed too (how many run, not how they fare),
// its template's image later (after the first bad). Only the deadline is
// a suspect, reaching the pods alive at the write: the three that failed
// after it, not the one created after it nor the one deleted before.
func TestOwnerSpecSuspects(t *testing.T) {
	job := func(sec float64, deadline, parallelism int, image string) timeline.ObjectVersion {
		c, _ := json.Marshal(map[string]any{"spec": map[string]any{"activeDeadlineSeconds": deadline, "parallelism": parallelism,
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"image": image}}}}}})
		return timeline.ObjectVersion{Object: timeline.ObjectRef{Group: "batch", Resource: "jobs", Namespace: "ml", Name: "train"},
			Time: at(sec), Content: c, Evidence: timeline.Evidence{Run: 1, Line: int64(sec)}}
	}
	s := &timelinetest.Mem{Vers: []timeline.ObjectVersion{
		job(0, 86400, 4, "a"), job(10, 86400, 8, "a"), job(20, 11, 8, "a"), job(30, 11, 8, "b"),
	}}
	var units []*outcome.Unit
	for i := range 3 {
		u := badUnit("ml", fmt.Sprintf("train-%d", i), 1, 21)
		u.Owner = "Job/train"
		units = append(units, u)
	}
	late := badUnit("ml", "train-late", 25, 26)
	gone := badUnit("ml", "train-gone", 1, 15)
	gone.Deleted = at(16)
	late.Owner, gone.Owner = "Job/train", "Job/train"
	units = append(units, late, gone)
	ids := make([]map[string]identity.Dimension, len(units))
	for i := range ids {
		ids[i] = idOf("owner/Job", "train")
	}
	got, err := ownerSpecSuspects(context.Background(), s, units, ids, map[string]string{"owner/Job": "train"}, at(0), at(21))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("got %d suspects, want the deadline's: %+v", len(got), got)
	}
	sp := got[0]
	if diff := cmp.Diff([]string{"Job/ml/train", "spec.activeDeadlineSeconds", "86400", "11"}, []string{sp.Ref, sp.Dimension, sp.From, sp.To}); diff != "" {
		t.Errorf("suspect (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]brief{{"Job/ml/train", "spec.activeDeadlineSeconds", "", []string{"Pod/ml/train-0", "Pod/ml/train-1", "Pod/ml/train-2"}}},
		briefsOf(got, units)); diff != "" {
		t.Errorf("reached (-want +got)\n%s", diff)
	}
	a := undoOwnerSpec(*sp)
	if a.Command != `kubectl patch job/train -n ml --type merge -p '{"spec":{"activeDeadlineSeconds":86400}}'` {
		t.Errorf("mitigation command %q", a.Command)
	}
}

func TestJSONValue(t *testing.T) {
	for in, want := range map[string]string{"86400": "86400", "true": "true", "OnDelete": `"OnDelete"`, `{"a":1}`: `{"a":1}`, "1.5": "1.5"} {
		if got := jsonValue(in); got != want {
			t.Errorf("jsonValue(%q) = %q, want %q", in, got, want)
		}
	}
}
