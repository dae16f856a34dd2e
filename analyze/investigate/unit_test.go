package investigate

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
)

func TestReportUnit(t *testing.T) {
	r := &Report{
		units: []*outcome.Unit{
			{Ref: "Pod/ml/train-0", Namespace: "ml", Name: "train-0", BadAt: at(10)},
			{Ref: "Pod/ml/eval-0", Namespace: "ml", Name: "eval-0", LastGood: at(12)},
		},
		ids: []map[string]identity.Dimension{
			{"owner/Job": {Name: "owner/Job", Value: "train"}},
			{"owner/Job": {Name: "owner/Job", Value: "eval"}},
		},
	}
	got, ok := r.Unit("Pod/ml/eval-0")
	want := UnitInfo{Ref: "Pod/ml/eval-0", Namespace: "ml", Good: true, Identity: map[string]string{"owner/Job": "eval"}}
	if diff := cmp.Diff(want, got); !ok || diff != "" {
		t.Errorf("Unit(eval-0) ok=%v (-want +got)\n%s", ok, diff)
	}
	if got, _ := r.Unit("Pod/ml/train-0"); !got.Bad || got.Good {
		t.Errorf("Unit(train-0) = %+v, want bad", got)
	}
	if _, ok := r.Unit("Pod/ml/ghost"); ok {
		t.Error("Unit(ghost): found a unit not in scope")
	}
	if refs, bad := r.Matching(map[string]string{"owner/Job": "train"}); len(refs) != 1 || bad != 1 {
		t.Errorf("Matching(owner/Job=train) = %v, %d", refs, bad)
	}
}
