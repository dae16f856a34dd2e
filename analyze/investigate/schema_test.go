package investigate

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// The trainer's ServiceAccount creates Checkpoints (ml.example.com) every
// few seconds, accepted until 20 s and refused as invalid from 30 s. Of
// the writes to CustomResourceDefinitions around it, only an update or a
// patch of the one that serves checkpoints (checkpoints.ml.example.com),
// between its last accepted create (less schemaPropagation) and its first
// refusal, can have refused it: not another CRD's, not its creation, not
// a write refused, not one before the last accepted create, not a status
// write (the apiserver's own), not one after.
func TestSchemaSuspects(t *testing.T) {
	const sa = "system:serviceaccount:ml:trainer"
	status := request(22, "system:apiserver", "update", "customresourcedefinitions", "", "checkpoints.ml.example.com", 200)
	status.Object.Subresource = "status"
	s := (&timelinetest.Mem{}).Add([]*timeline.Record{
		request(5, sa, "create", "checkpoints", "ml", "", 201),
		request(10, "alice", "patch", "customresourcedefinitions", "", "checkpoints.ml.example.com", 200), // well before the last accepted create
		request(20, sa, "create", "checkpoints", "ml", "", 201),
		status,
		request(23, "bob", "patch", "customresourcedefinitions", "", "checkpoints.ml.example.com", 422), // not done
		request(24, "alice", "patch", "customresourcedefinitions", "", "datasets.ml.example.com", 200),  // another resource's
		request(24.5, "alice", "create", "customresourcedefinitions", "", "checkpoints.ml.example.com", 409),
		request(25, "alice", "patch", "customresourcedefinitions", "", "checkpoints.ml.example.com", 200), // the one
		request(25.2, sa, "create", "checkpoints", "ml", "", 201),                                         // not yet in force
		request(30, sa, "create", "checkpoints", "ml", "", 422),
		request(31, sa, "create", "checkpoints", "ml", "", 422),
		request(35, "alice", "update", "customresourcedefinitions", "", "checkpoints.ml.example.com", 200), // after the first refusal
	}...)
	units, ids, cons, reached := trainers()
	got, err := crdSuspects(context.Background(), s, units, ids, cons, map[string]string{"owner/Job": "trainer"}, at(0), at(40))
	if err != nil {
		t.Fatal(err)
	}
	want := []brief{{"CustomResourceDefinition/checkpoints.ml.example.com", "spec", "alice", reached}}
	if diff := cmp.Diff(want, briefsOf(got, units)); diff != "" {
		t.Errorf("schema suspects (-want +got)\n%s", diff)
	}
	in := scoring{units: units, ids: ids, pop: populationOf(units, "ml"), firstBad: at(30)}
	sps := scoreSuspects(got, in)
	if len(sps) != 1 || sps[0].Confidence < Confident {
		t.Fatalf("scored: %+v, want the CRD's patch, confident", sps)
	}
	if diff := cmp.Diff(Action{Action: "rollback", Target: "CustomResourceDefinition/checkpoints.ml.example.com",
		Why: "undo the write, so the refused writes are valid again under the schema it had " +
			"(its previous schema is not in the evidence: compare what it requires now with what the refused writes send)",
		Verify: "kubectl get customresourcedefinition/checkpoints.ml.example.com"}, undo(&Report{}, sps[0])[0]); diff != "" {
		t.Errorf("mitigation (-want +got)\n%s", diff)
	}
}

// A refusal alone names no write: with no write to the resource's CRD in
// the window (a client that began sending what its schema always
// refused, or a built-in resource, which no CRD serves), there is no
// schema suspect; nor is there without a refusal, nor for a refusal
// that is no write's (a 400 to a GET).
func TestSchemaSuspectsNeedBoth(t *testing.T) {
	const sa = "system:serviceaccount:ml:trainer"
	units := []*outcome.Unit{badUnit("ml", "trainer-0", 0, 32)}
	ids := []map[string]identity.Dimension{idOf("owner/Job", "trainer")}
	cons := constraints{units[0]: {"serviceAccount": "trainer"}}
	crdPatch := request(25, "alice", "patch", "customresourcedefinitions", "", "checkpoints.ml.example.com", 200)
	get := request(30, sa, "get", "checkpoints", "ml", "c-1", 400)
	for name, recs := range map[string][]*timeline.Record{
		"no refusal":       {crdPatch, request(30, sa, "create", "checkpoints", "ml", "", 201)},
		"no write":         {request(25, sa, "create", "checkpoints", "ml", "", 201), request(30, sa, "create", "checkpoints", "ml", "", 422)},
		"a built-in":       {crdPatch, request(30, sa, "create", "configmaps", "ml", "", 422)},
		"a read refused":   {crdPatch, get},
		"another's schema": {request(25, "alice", "patch", "customresourcedefinitions", "", "datasets.ml.example.com", 200), request(30, sa, "create", "checkpoints", "ml", "", 422)},
	} {
		got, err := crdSuspects(context.Background(), (&timelinetest.Mem{}).Add(recs...), units, ids, cons,
			map[string]string{"owner/Job": "trainer"}, at(0), at(40))
		if err != nil || len(got) != 0 {
			t.Errorf("%s: crdSuspects = %v, %v; want none", name, got, err)
		}
	}
}

// The trainer's Checkpoints are refused as the CRD that serves them is
// deleted: its creates forbidden while it terminates (403), then not found
// (404) once it is gone. Of the deletes of CRDs, only that one's, between
// the last accepted create (less schemaPropagation) and the first refusal,
// can have done it: not another CRD's, not a delete refused, not a patch
// of it (which refuses as invalid, not as not served).
func TestServedSuspects(t *testing.T) {
	const sa = "system:serviceaccount:ml:trainer"
	s := (&timelinetest.Mem{}).Add([]*timeline.Record{
		request(20, sa, "create", "checkpoints", "ml", "", 201),
		request(23, "bob", "delete", "customresourcedefinitions", "", "checkpoints.ml.example.com", 403),    // not done
		request(24, "alice", "delete", "customresourcedefinitions", "", "sweeps.ml.example.com", 200),       // another resource's
		request(24.5, "alice", "patch", "customresourcedefinitions", "", "checkpoints.ml.example.com", 200), // not a delete
		request(25, "alice", "delete", "customresourcedefinitions", "", "checkpoints.ml.example.com", 200),  // the one
		request(30, sa, "create", "checkpoints", "ml", "", 403),
		request(31, sa, "create", "checkpoints", "ml", "", 404),
	}...)
	units, ids, cons, reached := trainers()
	got, err := crdSuspects(context.Background(), s, units, ids, cons, map[string]string{"owner/Job": "trainer"}, at(0), at(40))
	if err != nil {
		t.Fatal(err)
	}
	want := []brief{{"CustomResourceDefinition/checkpoints.ml.example.com", "deleted", "alice", reached}}
	if diff := cmp.Diff(want, briefsOf(got, units)); diff != "" {
		t.Errorf("served suspects (-want +got)\n%s", diff)
	}
	in := scoring{units: units, ids: ids, pop: populationOf(units, "ml"), firstBad: at(30)}
	if sps := scoreSuspects(got, in); len(sps) != 1 || sps[0].Confidence < Confident || undo(&Report{}, sps[0])[0].Target != want[0].Ref {
		t.Fatalf("scored: %+v, want the CRD's delete, confident, recreated", sps)
	}
	// A 404 to a named object's GET says that object is missing, not that
	// the resource is not served: no suspect.
	s = (&timelinetest.Mem{}).Add(request(20, sa, "get", "checkpoints", "ml", "c-1", 200),
		request(25, "alice", "delete", "customresourcedefinitions", "", "checkpoints.ml.example.com", 200),
		request(30, sa, "get", "checkpoints", "ml", "c-1", 404))
	if got, err := crdSuspects(context.Background(), s, units, ids, cons, map[string]string{"owner/Job": "trainer"}, at(0), at(40)); err != nil || len(got) != 0 {
		t.Errorf("a named object's 404: crdSuspects = %v, %v; want none", got, err)
	}
}

// trainers are the units of the schema tests: ten of the trainer Job,
// bad from 30 s, running as ServiceAccount trainer (reached: their refs),
// and ten of the eval Job, good, running as eval.
func trainers() (units []*outcome.Unit, ids []map[string]identity.Dimension, cons constraints, reached []string) {
	cons = constraints{}
	for i := range 10 {
		bad := badUnit("ml", fmt.Sprintf("trainer-%d", i), 0, 30+float64(i)/10)
		good := goodUnit("ml", fmt.Sprintf("eval-%d", i), 0, 40)
		units, ids = append(units, bad, good), append(ids, idOf("owner/Job", "trainer"), idOf("owner/Job", "eval"))
		cons[bad], cons[good] = map[string]string{"serviceAccount": "trainer"}, map[string]string{"serviceAccount": "eval"}
		reached = append(reached, bad.Ref)
	}
	return units, ids, cons, reached
}
