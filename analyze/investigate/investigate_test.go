package investigate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/gang"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// A rank dies 4 s before its peers; an unrelated pod failed a minute
// earlier. The boundary moves to the rank, never to the stranger.
func TestPrecursor(t *testing.T) {
	unit := func(name, owner string, bad float64) *outcome.Unit {
		return &outcome.Unit{Ref: "Pod/ml/" + name, Namespace: "ml", Name: name, Owner: owner, BadAt: at(bad)}
	}
	out := &outcome.Outcomes{Units: []*outcome.Unit{
		unit("stranger", "Job/other", 40),
		unit("rank-7", "Job/train", 96),
		unit("rank-1", "Job/train", 100),
		unit("rank-2", "Job/train", 100.5),
	}}
	for _, u := range out.Units {
		out.Bad = append(out.Bad, outcome.Observation{Time: u.BadAt, Object: timeline.ObjectRef{Kind: "Pod", Namespace: "ml", Name: u.Name}})
	}
	// The change point found the avalanche at index 2 (rank-1).
	if got := precursor(out, 2, at(100)); got != 1 {
		t.Errorf("precursor = %d, want 1 (rank-7)", got)
	}
	// Without a failure of the same job before it, nothing moves.
	if got := precursor(out, 1, at(96)); got != 1 {
		t.Errorf("precursor = %d, want 1 (the stranger is not the job's)", got)
	}
}

func TestAdvise(t *testing.T) {
	tests := []struct {
		name string
		rep  Report
		want []Action
	}{
		// Only the hash of the previous value was stored: a placeholder
		// kubectl refuses stands for it.
		{"config key", Report{Changes: []Suspect{{Ref: "ConfigMap/ml/env", Dimension: "configmap/env/LR", From: "sha256:a", To: "sha256:b", Confidence: 0.9}},
			Slice: &Slice{}},
			[]Action{{Action: "rollback", Target: "ConfigMap/ml/env", To: "sha256:a",
				Command: `kubectl patch configmap env -n ml --type merge -p '{"data":{"LR":"<previous value of LR>"}}'`,
				Verify:  `kubectl get configmap env -n ml -o 'jsonpath={.data.LR}'`}}},
		{"config key in clear", Report{Changes: []Suspect{{Ref: "ConfigMap/ml/env", Dimension: "configmap/env/LR", From: "0.06", To: "0.6", Confidence: 0.9}},
			Slice: &Slice{}},
			[]Action{{Action: "rollback", Target: "ConfigMap/ml/env", To: "0.06",
				Command: `kubectl patch configmap env -n ml --type merge -p '{"data":{"LR":"0.06"}}'`,
				Verify:  `kubectl get configmap env -n ml -o 'jsonpath={.data.LR}'`}}},
		// A fleet change is undone on its selector, never on one member.
		{"node driver", Report{Changes: []Suspect{{Ref: "Node/gpu-1", Dimension: "node.label/nvidia.com/cuda.driver.major", From: "550", To: "560", Confidence: 0.9, Selector: "pool=h100-b", Objects: 40}},
			Slice: &Slice{}},
			[]Action{{Action: "cordon", Target: "pool=h100-b", Command: "kubectl cordon -l pool=h100-b", Verify: "kubectl get nodes -l pool=h100-b"},
				{Action: "set", Target: "pool=h100-b nvidia.com/cuda.driver.major", To: "550",
					Command: "kubectl label nodes -l pool=h100-b nvidia.com/cuda.driver.major=550 --overwrite",
					Verify:  "kubectl get nodes -l pool=h100-b -L nvidia.com/cuda.driver.major"}}},
		// Without a selector, every node that made the change, by name.
		{"nodes without a selector", Report{Changes: []Suspect{{Ref: "Node/gpu-2", Dimension: "node.ready", From: "True", To: "False", Confidence: 0.9, Objects: 2,
			refs: []string{"Node/gpu-2", "Node/gpu-1", "Node/gpu-2"}}}, Slice: &Slice{}},
			[]Action{{Action: "cordon", Target: "Node/gpu-2", Command: "kubectl cordon gpu-1 gpu-2", Verify: "kubectl get nodes gpu-1 gpu-2"}}},
		{"taint", Report{Changes: []Suspect{{Ref: "Node/n1", Dimension: "node.taints", From: "a:NoSchedule", To: "a:NoSchedule,drain=now:NoExecute", Confidence: 0.9,
			Selector: "topology.kubernetes.io/zone=b", Objects: 30}}, Slice: &Slice{}},
			[]Action{{Action: "rollback", Target: "topology.kubernetes.io/zone=b", To: "a:NoSchedule",
				Command: "kubectl taint nodes -l topology.kubernetes.io/zone=b drain:NoExecute-",
				Verify:  "kubectl get nodes -l topology.kubernetes.io/zone=b -o 'custom-columns=NAME:.metadata.name,TAINTS:.spec.taints[*].key'"}}},
		{"cordoned", Report{Changes: []Suspect{{Ref: "Node/n1", Dimension: "node.unschedulable", To: "true", Confidence: 0.9, Selector: "rack=r7", Objects: 8}}, Slice: &Slice{}},
			[]Action{{Action: "rollback", Target: "rack=r7", Command: "kubectl uncordon -l rack=r7", Verify: "kubectl get nodes -l rack=r7"}}},
		{"a suspect short of confident: no mitigation", Report{Changes: []Suspect{{Ref: "ConfigMap/ml/env", Dimension: "configmap/env/LR", From: "sha256:a", To: "sha256:b", Confidence: 0.3}},
			Slice: &Slice{}}, []Action{}},
		{"digest", Report{Changes: []Suspect{{Ref: "Deployment/web/api", Dimension: "image.digest/server", From: "sha256:a", To: "sha256:b", Confidence: 0.9}},
			Slice: &Slice{}, typical: map[string]string{"image.tag/server": "registry.example/api:1.0"}},
			[]Action{{Action: "set", Target: "Deployment/web/api image", To: "registry.example/api@sha256:a",
				Command: "kubectl set image deployment/api -n web server=registry.example/api@sha256:a", Verify: "kubectl rollout status deployment/api -n web"}}},
		{"image tag, revision known", Report{Changes: []Suspect{{Ref: "Deployment/web/api", Dimension: "image.tag/server", From: "api:1.0", To: "api:1.1", Confidence: 0.9}},
			Slice: &Slice{}, undoRev: 3},
			[]Action{{Action: "rollback", Target: "Deployment/web/api", To: "api:1.0",
				Command: "kubectl rollout undo deployment/api -n web --to-revision=3", Verify: "kubectl rollout status deployment/api -n web"}}},
		{"image tag, revision unknown", Report{Changes: []Suspect{{Ref: "StatefulSet/db/pg", Dimension: "image.tag/pg", From: "pg:16", To: "pg:17", Confidence: 0.9}},
			Slice: &Slice{}},
			[]Action{{Action: "rollback", Target: "StatefulSet/db/pg", To: "pg:16",
				Command: "kubectl rollout undo statefulset/pg -n db", Verify: "kubectl rollout status statefulset/pg -n db"}}},
		{"a job's arrival", Report{Changes: []Suspect{{Ref: "Job/ml/trainer", Dimension: "created", To: "Job", Confidence: 0.9}}, Slice: &Slice{}},
			[]Action{{Action: "set", Target: "Job/ml/trainer start",
				Command: `kubectl patch job trainer -n ml --type merge -p '{"spec":{"suspend":true}}'`, Verify: "faultline controlplane"},
				{Action: "set", Target: "Job/ml/trainer reads"}}},
		{"a gang's first rank outranks the job's arrival", Report{Changes: []Suspect{{Ref: "Job/ml/train", Dimension: "created", To: "Job", Confidence: 0.9}},
			Gangs: []gang.Finding{{Owner: "Job/train", First: gang.Rank{Ref: "Pod/ml/train-7", Rank: "7", Reason: "OOMKilled", ExitCode: 137}, Cascade: 40, Distinct: true}}},
			[]Action{{Action: "set", Target: "Job/ml/train rank 7 memory"}}},
		{"no suspect, no gang", Report{}, []Action{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := advise(&tt.rep)
			for i := range got {
				got[i].Why = ""
				if i < len(tt.want) && tt.want[i].To == "" {
					got[i].To = ""
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("advise (-want +got):\n%s", diff)
			}
		})
	}
}
