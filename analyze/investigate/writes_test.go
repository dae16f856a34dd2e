package investigate

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// A ConfigMap deleted while a service still read it: the service's pods
// started afterwards read it deleted and went bad; its older pods, and a
// neighbour's, are good. The deletion is the suspect, reaching exactly
// the pods that read it deleted, with the delete as its evidence; the
// difference "configmap/api-config: sha -> (deleted)" is not a second
// change competing with it.
func TestDeletionSuspects(t *testing.T) {
	deleted := identity.Dimension{Name: "configmap/api-config", Value: identity.Deleted,
		Evidence: identity.Evidence{Ref: "ConfigMap/ml/api-config", Time: at(10), Run: 3, Line: 77}}
	var units []*outcome.Unit
	var ids []map[string]identity.Dimension
	for i := range 6 {
		units = append(units, badUnit("ml", fmt.Sprintf("api-new-%d", i), 20, 30))
		id := idOf("owner/Deployment", "api", "owner.podTemplateHash", "h2")
		id["configmap/api-config"] = deleted
		ids = append(ids, id)
	}
	for i := range 10 {
		units = append(units, goodUnit("ml", fmt.Sprintf("api-old-%d", i), 0, 40))
		ids = append(ids, idOf("owner/Deployment", "api", "owner.podTemplateHash", "h1", "configmap/api-config", "sha256:aa"))
		units = append(units, goodUnit("ml", fmt.Sprintf("web-%d", i), 25, 40))
		ids = append(ids, idOf("owner/Deployment", "web", "owner.podTemplateHash", "w1", "configmap/web-config", "sha256:bb"))
	}
	sps := deletionSuspects(units, ids, map[string]string{"owner.podTemplateHash": "h2"})
	if len(sps) != 1 {
		t.Fatalf("%d suspects, want 1: %+v", len(sps), sps)
	}
	sp := sps[0]
	want := Suspect{Ref: "ConfigMap/ml/api-config", Dimension: "deleted", To: "deleted", At: at(10), Kind: "change", Objects: 1, Run: 3, Line: 77,
		Why: "deleted; 6 pods started after it and used it"}
	if diff := cmp.Diff(want, *sp, cmpopts.IgnoreUnexported(Suspect{})); diff != "" {
		t.Errorf("suspect (-want +got)\n%s", diff)
	}
	if len(sp.reached) != 6 {
		t.Errorf("reached %d units, want the 6 that read it deleted", len(sp.reached))
	}

	ce := &Counterexample{Differs: []Differ{{Dimension: "configmap/api-config", Bad: identity.Deleted, Good: "sha256:aa"}}}
	cs := &candidates{byKey: map[candidateKey]*Suspect{}}
	cs.addDifferences(ce, units, ids, "Deployment/ml/api")
	if len(cs.order) != 0 {
		t.Errorf("differences %v: a deleted object's difference is its deletion, not a change of the Deployment", cs.order)
	}
	got := scoreSuspects([]*Suspect{sp}, scoring{units: units, ids: ids, pop: populationOf(units, "ml"), firstBad: at(30)})
	if len(got) != 1 || got[0].Confidence < Confident {
		t.Errorf("scored %+v, want the deletion confident", got)
	}
}

// Pods refused because the ServiceAccount they run as was deleted: the
// failure names it as not found, and the audit log holds its delete.
// The delete is the suspect, reaching the units that name it; a delete
// that failed, one in another namespace, or one after the first bad is
// not; an object already a suspect is not named twice.
func TestMissingSuspects(t *testing.T) {
	del := func(secs float64, ns, resource, name string, code int, user string) *timeline.Record {
		return &timeline.Record{Time: at(secs), Source: timeline.SourceAudit, Verb: "delete", Code: code, User: user,
			Object:   timeline.ObjectRef{Resource: resource, Namespace: ns, Name: name},
			Evidence: timeline.Evidence{Run: 1, Line: int64(secs)}}
	}
	s := (&timelinetest.Mem{}).Add(
		del(14, "ml", "serviceaccounts", "trainer", 404, "carol"), // already gone
		del(10, "ml", "serviceaccounts", "trainer", 200, "alice"),
		del(12, "other", "serviceaccounts", "runner", 200, "bob"),
		del(15, "ml", "configmaps", "env", 200, "bob"),
		del(50, "ml", "persistentvolumeclaims", "data", 200, "bob"), // after the first bad
		del(16, "", "priorityclasses", "batch-high", 200, "dave"),   // cluster-wide
		del(17, "ml", "networkpolicies", "allow-dns", 200, "erin"),
		del(18, "", "priorityclasses", "serving-critical", 200, "frank"),
		del(19, "", "runtimeclasses", "gvisor", 200, "grace"),
	)
	var units []*outcome.Unit
	var ids []map[string]identity.Dimension
	for i := range 5 {
		u := badUnit("ml", fmt.Sprintf("train-rs/%d", i), 20, 30)
		u.Message = `Error creating: pods "train-rs-" is forbidden: error looking up service account ml/trainer: serviceaccount "trainer" not found`
		units = append(units, u)
		ids = append(ids, idOf("owner/ReplicaSet", "train-rs"))
	}
	for _, msg := range []string{`MountVolume.SetUp failed for volume "cfg" : configmap "env" not found`,
		`0/40 nodes are available: persistentvolumeclaim "data" not found`, `serviceaccount "runner" not found`,
		`pods "x" is forbidden: priorityclasses.scheduling.k8s.io "batch-high" not found`, `networkpolicy "allow-dns" not found`,
		`Error creating: pods "web-7f9-" is forbidden: no PriorityClass with name serving-critical was found`,
		`Error creating: pods "web-7f9-" is forbidden: pod rejected: RuntimeClass "gvisor" not found`} {
		u := badUnit("ml", fmt.Sprintf("other-%d", len(units)), 20, 31)
		u.Message = msg
		units = append(units, u)
		ids = append(ids, idOf("owner/ReplicaSet", "train-rs"))
	}
	for i := range 10 {
		units = append(units, goodUnit("ml", fmt.Sprintf("web-%d", i), 0, 40))
		ids = append(ids, idOf("owner/ReplicaSet", "web"))
	}
	have := []*Suspect{{Ref: "ConfigMap/ml/env", Dimension: "deleted"}}
	sps, err := missingSuspects(context.Background(), s, units, ids, map[string]string{"owner/ReplicaSet": "train-rs"}, have, at(0), at(30))
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Ref, By string
		At      float64
		Reached int
	}
	var got []row
	for _, sp := range sps {
		got = append(got, row{sp.Ref, sp.By, sp.At.Sub(t0).Seconds(), len(sp.reached)})
	}
	want := []row{{"ServiceAccount/ml/trainer", "alice", 10, 5}, {"PriorityClass/batch-high", "dave", 16, 1}, {"NetworkPolicy/ml/allow-dns", "erin", 17, 1},
		{"PriorityClass/serving-critical", "frank", 18, 1}, {"RuntimeClass/gvisor", "grace", 19, 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("suspects (-want +got)\n%s", diff)
	}
}
