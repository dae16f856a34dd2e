package investigate

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
)

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

// A DaemonSet's new image, rolled to one pool's nodes: the pods started
// there afterwards hold it as their node's agent and went bad. The write
// is named as the DaemonSet's own image change (its twin, the same write
// seen as an image tag, is not a second suspect), counted by the pods of
// its nodes; the pool's driver label, which those nodes had all along,
// does not compete with it.
func TestAgentRollout(t *testing.T) {
	const agent = "node.agent/gpu/device-plugin-a/plugin"
	var units []*outcome.Unit
	var ids []map[string]identity.Dimension
	for i := range 8 {
		units = append(units, badUnit("ml", fmt.Sprintf("train-new-%d", i), 40, 45))
		ids = append(ids, idOf("owner/Deployment", "train", "node.pool", "a", agent, "plugin:v2", "node.label/nvidia.com/cuda.driver.major", "535"))
	}
	for i := range 20 {
		units = append(units, goodUnit("ml", fmt.Sprintf("train-b-%d", i), 40, 60))
		ids = append(ids, idOf("owner/Deployment", "train", "node.pool", "b", "node.agent/gpu/device-plugin-b/plugin", "plugin:v1",
			"node.label/nvidia.com/cuda.driver.major", "550"))
	}
	cs := &candidates{byKey: map[candidateKey]*Suspect{}}
	cs.addChanges([]identity.ObjectChange{
		{Ref: "DaemonSet/gpu/device-plugin-a", Change: identity.Change{Dimension: "image.tag/plugin", From: "plugin:v1", To: "plugin:v2", When: at(10)}},
		{Ref: "DaemonSet/gpu/device-plugin-a", Change: identity.Change{Dimension: agent, From: "plugin:v1", To: "plugin:v2", When: at(10)}},
	})
	driver := &Suspect{Ref: "Deployment/ml/train", Dimension: "node.label/nvidia.com/cuda.driver.major", From: "550", To: "535", At: at(0), Kind: "difference"}
	got := scoreSuspects(append(cs.list(), driver), scoring{units: units, ids: ids, pop: populationOf(units, "ml"), firstBad: at(45)})
	type row struct {
		Ref, Dimension string
		Confident      bool
	}
	var rows []row
	for _, sp := range got {
		rows = append(rows, row{sp.Ref, sp.Dimension, sp.Confidence >= Confident})
	}
	want := []row{{"DaemonSet/gpu/device-plugin-a", "image.tag/plugin", true}, {"Deployment/ml/train", "node.label/nvidia.com/cuda.driver.major", false}}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("ranked (-want +got)\n%s", diff)
	}
}
