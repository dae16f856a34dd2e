package gang

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/outcome"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func TestFind(t *testing.T) {
	var units []*outcome.Unit
	for i := range 16 {
		u := &outcome.Unit{Ref: fmt.Sprintf("Pod/ml/train-%d", i), Namespace: "ml", Owner: "Job/train"}
		switch {
		case i == 5: // the first to die
			u.BadAt, u.Reason, u.ExitCode = t0, "OOMKilled", 137
		case i == 3: // shed before the first death: refused, not dead
			u.BadAt, u.Reason, u.Refused, u.LastGood = t0.Add(-time.Second), "HTTP 429", true, t0.Add(-time.Minute)
		case i == 4: // its eviction refused before the first death: not dead either
			u.BadAt, u.Reason, u.Target, u.LastGood = t0.Add(-2*time.Second), "HTTP 429", outcome.Operation{Verb: "create", Subresource: "eviction", User: "ops"}, t0.Add(-time.Minute)
		case i < 12: // the cascade
			u.BadAt, u.Reason, u.ExitCode = t0.Add(time.Duration(2+i)*time.Second), "Error", 1
		default: // torn down by the controller
			u.LastGood, u.Deleted = t0.Add(-time.Minute), t0.Add(30*time.Second)
		}
		units = append(units, u)
	}
	// A Deployment's replicas are no gang, whatever fails among them.
	for i := range 10 {
		units = append(units, &outcome.Unit{Ref: fmt.Sprintf("Pod/web/api-%d", i), Namespace: "web", Owner: "ReplicaSet/api-1",
			BadAt: t0.Add(time.Duration(i) * time.Second), Reason: "CrashLoopBackOff"})
	}
	got := Find(units, func(u *outcome.Unit) string { return u.Ref[len("Pod/ml/train-"):] })
	want := []Finding{{
		Owner: "Job/train", Ranks: 16,
		First: Rank{Ref: "Pod/ml/train-5", Rank: "5", At: t0, Reason: "OOMKilled", ExitCode: 137},
		Lead:  2 * time.Second, Cascade: 9, CascadeReasons: map[string]int{"Error": 9}, Terminated: 4, Distinct: true,
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Find (-want +got):\n%s", diff)
	}
}

func TestFindSmallOrHealthy(t *testing.T) {
	units := []*outcome.Unit{
		{Ref: "Pod/ml/a", Namespace: "ml", Owner: "Job/small", BadAt: t0, Reason: "Error"},
		{Ref: "Pod/ml/b", Namespace: "ml", Owner: "Job/small", BadAt: t0, Reason: "Error"},
	}
	if got := Find(units, nil); len(got) != 0 {
		t.Errorf("a two-pod job is no gang: %+v", got)
	}
}
