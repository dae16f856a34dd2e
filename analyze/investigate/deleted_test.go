package investigate

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
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
		Why: "deleted; 6 pods started after it and read it"}
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

// Pods evicted from the nodes of one pool when those nodes reported
// DiskPressure: the pool's labels (its GPU driver) are where it happened,
// and do not compete with what happened to those nodes.
func TestNodeConditionOverNodeProperties(t *testing.T) {
	var units []*outcome.Unit
	var ids []map[string]identity.Dimension
	var refs []string
	for i := range 8 {
		units = append(units, badUnit("ml", fmt.Sprintf("api-%d", i), 0, 30))
		node := fmt.Sprintf("gpu-%d", i)
		refs = append(refs, "Node/"+node)
		ids = append(ids, idOf("node", node, "node.pool", "a100", "node.label/nvidia.com/cuda.driver.major", "535"))
	}
	for i := range 20 {
		units = append(units, goodUnit("ml", fmt.Sprintf("web-%d", i), 0, 40))
		ids = append(ids, idOf("node", fmt.Sprintf("gpu-%d", 100+i), "node.pool", "h100", "node.label/nvidia.com/cuda.driver.major", "550"))
	}
	health := []NodeHealth{{Reason: "DiskPressure", Nodes: 8, First: at(25), refs: refs, condition: true},
		{Reason: "Xid", Nodes: 1, First: at(26), refs: refs[:1]}} // a node's log: the host suspects' own
	cond := nodeSuspects(health)
	if len(cond) != 1 || cond[0].Dimension != "node.condition/DiskPressure" || cond[0].From != "False" || cond[0].To != "True" {
		t.Fatalf("node suspects %+v, want node.condition/DiskPressure False -> True", cond)
	}
	driver := &Suspect{Ref: "Deployment/ml/api", Dimension: "node.label/nvidia.com/cuda.driver.major", From: "550", To: "535", At: at(0), Kind: "difference"}
	got := scoreSuspects([]*Suspect{driver, cond[0]}, scoring{units: units, ids: ids, pop: populationOf(units, "ml"), firstBad: at(30)})
	type row struct {
		Dimension string
		Confident bool
	}
	var rows []row
	for _, sp := range got {
		rows = append(rows, row{sp.Dimension, sp.Confidence >= Confident})
	}
	want := []row{{"node.condition/DiskPressure", true}, {"node.label/nvidia.com/cuda.driver.major", false}}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("ranked (-want +got)\n%s", diff)
	}
}
