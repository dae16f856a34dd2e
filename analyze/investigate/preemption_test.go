package investigate

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// preemptedEvent is the scheduler's event on a victim.
func preemptedEvent(s float64, ns, name, msg string) *timeline.Record {
	return &timeline.Record{Time: at(s), Source: timeline.SourceEvent, Reason: "Preempted", Type: "Normal", Message: msg,
		Object: timeline.ObjectRef{Kind: "Pod", Resource: "pods", Namespace: ns, Name: name}}
}

// Job train (created at 20 s) preempts two pods of Deployment score at
// 21.3 s; their replacements, created after (stamped to the second:
// 21 s), find no room. A third pod of
// score was preempted by a pod the evidence does not hold, and a pod of
// score that kept its room stayed good.
func TestPreemptionSuspects(t *testing.T) {
	const uid = "2e4307da-343b-4b93-8e41-da03b6e050b4"
	job := request(20, "bob", "create", "jobs", "training", "train", 201)
	job.Object.Group = "batch"
	s := (&timelinetest.Mem{}).Add([]*timeline.Record{
		job,
		preemptedEvent(21.1, "inference", "score-a", "Preempted by pod "+uid+" on node gpu-1"),
		preemptedEvent(21.2, "inference", "score-b", "Preempted by training/train-1 on node gpu-2"), // an older scheduler's words
		preemptedEvent(21.3, "inference", "score-c", "Preempted by pod 00000000-0000-0000-0000-000000000000 on node gpu-3"),
	}...)
	victim := func(name string) *outcome.Unit {
		u := badUnit("inference", name, 0, 21.3)
		u.Reason, u.Owner = "Preempted", "ReplicaSet/score-5f6d"
		return u
	}
	replacement := func(name string, created float64) *outcome.Unit {
		u := badUnit("inference", name, created, 22)
		u.Reason, u.Owner = "FailedScheduling", "ReplicaSet/score-5f6d"
		return u
	}
	train0 := goodUnit("training", "train-0", 20.5, 40)
	train0.UID, train0.Owner = uid, "Job/train"
	train1 := goodUnit("training", "train-1", 20.5, 40)
	train1.Owner = "Job/train"
	kept := goodUnit("inference", "score-d", 0, 40)
	kept.Owner = "ReplicaSet/score-5f6d"
	units := []*outcome.Unit{victim("score-a"), victim("score-b"), victim("score-c"),
		replacement("score-e", 21), replacement("score-old", 10), train0, train1, kept}
	ids := make([]map[string]identity.Dimension, len(units))
	for i, u := range units {
		ids[i] = idOf("owner/Deployment", "score")
		if u.Namespace == "training" {
			ids[i] = idOf("owner/Job", "train")
		}
	}
	got, err := preemptionSuspects(context.Background(), s, units, ids, map[string]string{"owner/Deployment": "score"}, at(0), at(40))
	if err != nil {
		t.Fatal(err)
	}
	want := []brief{{"Job/training/train", "created", "bob", []string{
		"Pod/inference/score-a", "Pod/inference/score-b", "Pod/inference/score-e"}}}
	if diff := cmp.Diff(want, briefsOf(got, units)); diff != "" {
		t.Errorf("preemption suspects (-want +got)\n%s", diff)
	}
	if a := undo(&Report{}, *got[0]); len(a) != 1 || a[0].Command != `kubectl patch job/train -n training --type=merge -p '{"spec":{"suspend":true}}'` {
		t.Errorf("mitigation %+v: want the Job suspended", a)
	}
}
