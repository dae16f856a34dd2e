package investigate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/faultline/faultline/analyze/controlplane"
	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// rollout is a namespace where Deployment api rolled out (template hash
// h2, ConfigMap env's keys LR and BATCH at their new values) and its ten
// new pods went bad with reason and msg; Deployment web's thirty pods,
// started before, stayed good. ConfigMap env's key LOG is a decoy: half
// of each side holds its new value.
func rollout(reason, msg string) ([]*outcome.Unit, []map[string]identity.Dimension) {
	var units []*outcome.Unit
	var ids []map[string]identity.Dimension
	log := func(i, half int) string {
		if i < half {
			return "y"
		}
		return "x"
	}
	for i := range 10 {
		u := badUnit("ml", fmt.Sprintf("api-%d", i), 20+float64(i), 100+float64(i))
		u.Reason, u.Message = reason, msg
		units = append(units, u)
		ids = append(ids, idOf("owner/Deployment", "api", "owner.podTemplateHash", "h2",
			"configmap/env/LR", "b", "configmap/env/BATCH", "b2", "configmap/env/LOG", log(i, 5)))
	}
	for i := range 30 {
		units = append(units, goodUnit("ml", fmt.Sprintf("web-%d", i), 0, 110))
		ids = append(ids, idOf("owner/Deployment", "web", "owner.podTemplateHash", "w1",
			"configmap/env/LR", "a", "configmap/env/BATCH", "a2", "configmap/env/LOG", log(i, 15)))
	}
	return units, ids
}

func TestSuspectsScore(t *testing.T) {
	change := func(dim, from, to string, sec float64) *Suspect {
		return &Suspect{Ref: "ConfigMap/ml/env", Dimension: dim, From: from, To: to, At: at(sec), Kind: "change", Objects: 1}
	}
	lr := change("configmap/env/LR", "a", "b", 10)
	batch := change("configmap/env/BATCH", "a2", "b2", 10)
	decoy := change("configmap/env/LOG", "x", "y", -5)
	late := change("configmap/env/LATE", "p", "q", 101) // after the first bad (100 s)
	hash := &Suspect{Ref: "Deployment/ml/api", Dimension: "owner.podTemplateHash", From: "h1", To: "h2", At: at(12), Kind: "change", Objects: 1}
	created := &Suspect{Ref: "Deployment/ml/api", Dimension: "created", To: "Deployment", At: at(5), Kind: "change", Objects: 1}
	stranger := &Suspect{Ref: "Deployment/ml/other", Dimension: "created", To: "Deployment", At: at(6), Kind: "change", Objects: 1}
	owners := map[string]bool{"Deployment/api": true}

	clean := support{badHold: 10, bad: 10, good: 30}.confidence(0)                  // 0.909
	halfDecoy := support{badHold: 5, bad: 10, goodHold: 15, good: 30}.confidence(1) // ~0.041: LR or the arrival outdoes it
	const oom, throttled = "OOMKilled", "Error"
	const tooMany = "listing pods: the server has received too many requests and has asked us to try again later (429)"
	type row struct {
		Dimension  string
		Confidence float64
	}
	tests := []struct {
		name        string
		reason, msg string
		cands       []*Suspect
		want        []row // in rank order
	}{
		// The carrier shares the content's discount: never surer than what
		// it carried.
		{"content over its carrier; decoy near nothing; late and stranger dropped", oom, "",
			[]*Suspect{hash, decoy, late, created, stranger, lr},
			[]row{{"configmap/env/LR", clean}, {"owner.podTemplateHash", clean / 2}, {"configmap/env/LOG", halfDecoy}, {"created", 0}}},
		{"throttled and nothing in identity explains: the arrival", throttled, tooMany,
			[]*Suspect{hash, decoy, created},
			[]row{{"created", clean}, {"owner.podTemplateHash", clean}, {"configmap/env/LOG", support{badHold: 5, bad: 10, goodHold: 15, good: 30}.confidence(0)}}},
		{"throttled, but a content change explains: not the arrival", throttled, tooMany,
			[]*Suspect{created, lr},
			[]row{{"configmap/env/LR", clean}, {"created", 0}}},
		{"not load-shaped: not the arrival", oom, "",
			[]*Suspect{created, hash},
			[]row{{"owner.podTemplateHash", clean}, {"created", 0}}},
		{"two content changes at once share the confidence", oom, "",
			[]*Suspect{lr, batch},
			[]row{{"configmap/env/LR", clean / 2}, {"configmap/env/BATCH", clean / 2}}},
		{"only a change after the first bad: nothing", oom, "",
			[]*Suspect{late},
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			units, ids := rollout(tt.reason, tt.msg)
			sps := scoreSuspects(tt.cands, scoring{units: units, ids: ids, pop: populationOf(units, "ml"), owners: owners, firstBad: at(100)})
			var got []row
			for i, sp := range sps {
				if sp.Rank != i+1 {
					t.Errorf("%s: rank %d at position %d", sp.Dimension, sp.Rank, i+1)
				}
				if sp.ConfidenceWhy == "" {
					t.Errorf("%s: no ConfidenceWhy", sp.Dimension)
				}
				got = append(got, row{sp.Dimension, sp.Confidence})
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 0.0006), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("scoreSuspects (-want +got)\n%s", diff)
			}
		})
	}
}

// One ConfigMap edit changes two keys (LR and BATCH) and a reloader rolls
// the Deployment (a new template hash). Neither key can be told from the
// other, so each has half the confidence; the template hash, a carrier,
// is never discounted for competitors and so outranks both with full
// confidence. "A carrier yields to the content it carried" (suspects.go):
// the carrier should not lead, nor be confident where its content is not.
func TestSuspectsCarrierYieldsToAmbiguousContent(t *testing.T) {
	units, ids := rollout("OOMKilled", "")
	cands := []*Suspect{
		{Ref: "ConfigMap/ml/env", Dimension: "configmap/env/LR", From: "a", To: "b", At: at(10), Kind: "change", Objects: 1},
		{Ref: "ConfigMap/ml/env", Dimension: "configmap/env/BATCH", From: "a2", To: "b2", At: at(10), Kind: "change", Objects: 1},
		{Ref: "Deployment/ml/api", Dimension: "owner.podTemplateHash", From: "h1", To: "h2", At: at(12), Kind: "change", Objects: 1},
	}
	sps := scoreSuspects(cands, scoring{units: units, ids: ids, pop: populationOf(units, "ml"), firstBad: at(100)})
	if len(sps) == 0 {
		t.Fatal("no suspect")
	}
	if top := sps[0]; carrier(top.Dimension) && confidentChange(top) {
		t.Errorf("the carrier %s leads with confidence %.3f (a cause: rollback %s to %s) while the content it carried, %s and %s, has %.3f each",
			top.Dimension, top.Confidence, top.Ref, top.From, sps[1].Dimension, sps[2].Dimension, sps[1].Confidence)
	}
}

// The counterexample stayed good and lies outside the slice: a good unit
// inside the slice contradicts the slice, it does not confirm it.
func TestCounterexample(t *testing.T) {
	type unit struct {
		u  *outcome.Unit
		id map[string]identity.Dimension
	}
	train := func(name string, good bool, pool string) unit {
		u := badUnit("ml", name, 0, 100)
		if good {
			u = goodUnit("ml", name, 0, 110)
		}
		return unit{u, idOf("owner/Job", "train", "configmap/train-env/LR", "b", "node.pool", pool, "node", name+"-node")}
	}
	eval := func(name string, created float64, pool string) unit {
		return unit{goodUnit("ml", name, created, 110), idOf("owner/Job", "eval", "configmap/eval-env/LR", "e", "node.pool", pool, "node", name+"-node")}
	}
	tests := []struct {
		name  string
		units []unit
		where map[string]string
		want  *Counterexample
	}{
		{"the good unit inside the slice is passed over", []unit{
			train("train-0", false, "a100"), train("train-1", false, "a100"), train("train-2", false, "a100"),
			train("train-3", true, "a100"), // matches everything: inside the slice
			eval("eval-0", 0, "a100"), eval("eval-1", 0, "h100"),
		}, map[string]string{"owner/Job": "train"},
			&Counterexample{Ref: "Pod/ml/eval-0", Matches: 1, Differs: []Differ{
				{Dimension: "owner/Job", Bad: "train", Good: "eval"},
				{Dimension: "configmap/train-env/LR", Bad: "b", Good: ""},
			}}},
		{"ties go to the unit started nearest the first bad", []unit{
			train("train-0", false, "a100"), train("train-1", false, "a100"),
			eval("eval-0", 10, "a100"), eval("eval-1", 90, "a100"), eval("eval-2", 50, "a100"),
		}, map[string]string{"owner/Job": "train"},
			&Counterexample{Ref: "Pod/ml/eval-1", Matches: 1, Differs: []Differ{
				{Dimension: "owner/Job", Bad: "train", Good: "eval"},
				{Dimension: "configmap/train-env/LR", Bad: "b", Good: ""},
			}}},
		{"a conjunction: a good unit matching part of it is outside", []unit{
			train("train-0", false, "a100"), train("train-1", false, "a100"),
			train("train-2", true, "a100"), // inside
			train("train-3", true, "h100"), // outside: another pool
			eval("eval-0", 0, "a100"),
		}, map[string]string{"owner/Job": "train", "node.pool": "a100"},
			&Counterexample{Ref: "Pod/ml/train-3", Matches: 2, Differs: []Differ{
				{Dimension: "node.pool", Bad: "a100", Good: "h100"},
			}}},
		{"the population before a closer match in another namespace", []unit{
			train("train-0", false, "a100"), train("train-1", false, "a100"),
			{goodUnit("web", "web-0", 90, 110), idOf("owner/Job", "web", "configmap/train-env/LR", "b", "node.pool", "a100", "node", "web-0-node")},
			eval("eval-0", 10, "h100"),
		}, map[string]string{"owner/Job": "train"},
			&Counterexample{Ref: "Pod/ml/eval-0", Matches: 0, Differs: []Differ{
				{Dimension: "owner/Job", Bad: "train", Good: "eval"},
				{Dimension: "configmap/train-env/LR", Bad: "b", Good: ""},
				{Dimension: "node.pool", Bad: "a100", Good: "h100"},
			}}},
		{"every good unit inside: none", []unit{
			train("train-0", false, "a100"), train("train-1", false, "a100"),
			train("train-2", true, "a100"), train("train-3", true, "a100"),
		}, map[string]string{"owner/Job": "train"}, nil},
		{"no good unit: none", []unit{
			train("train-0", false, "a100"), train("train-1", false, "a100"),
		}, map[string]string{"owner/Job": "train"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var units []*outcome.Unit
			var ids []map[string]identity.Dimension
			for _, x := range tt.units {
				units = append(units, x.u)
				ids = append(ids, x.id)
			}
			typ := typical(units, ids, tt.where)
			got := counterexample(units, ids, typ, tt.where, "ml", at(100))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("counterexample (-want +got)\n%s", diff)
			}
			if got != nil {
				for i, u := range units {
					if u.Ref == got.Ref && (!u.Good() || matches(ids[i], tt.where)) {
						t.Errorf("counterexample %s is not a good unit outside the slice", got.Ref)
					}
				}
			}
		})
	}
}

func TestSuspectsSystemTaintsOnly(t *testing.T) {
	tests := []struct {
		name     string
		from, to string
		want     bool
	}{
		{"not-ready added", "", "node.kubernetes.io/not-ready:NoSchedule", true},
		{"unreachable added, then not-ready", "node.kubernetes.io/unreachable:NoExecute",
			"node.kubernetes.io/not-ready:NoExecute,node.kubernetes.io/not-ready:NoSchedule", true},
		{"system taints removed", "node.kubernetes.io/not-ready:NoExecute,node.kubernetes.io/not-ready:NoSchedule", "", true},
		{"a user's taint stays while a system one is added", "gpu=broken:NoSchedule",
			"gpu=broken:NoSchedule,node.kubernetes.io/unschedulable:NoSchedule", true},
		{"nothing changed", "", "", true},
		{"a user's taint added", "", "gpu=broken:NoSchedule", false},
		{"a user's taint added beside a system one", "node.kubernetes.io/unreachable:NoExecute",
			"gpu=broken:NoSchedule,node.kubernetes.io/unreachable:NoExecute", false},
		{"a user's taint removed", "maintenance:NoExecute", "", false},
		{"a lookalike prefix is not the controller's", "", "node.kubernetes.io.example.com/x:NoSchedule", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := systemTaintsOnly(tt.from, tt.to); got != tt.want {
				t.Errorf("systemTaintsOnly(%q, %q) = %v, want %v", tt.from, tt.to, got, tt.want)
			}
		})
	}
}

func TestSuspectsContentDim(t *testing.T) {
	dims := []string{
		// Where a unit ran, or names that tell units apart: not content.
		"node", "rank", "run", "node.zone", "node.pool", "node.label/topology.kubernetes.io/zone",
		"node.label/topology.kubernetes.io/region", "owner/Job", "owner/Deployment", "owner/Deployment.generation",
		// What a unit ran with.
		"image.digest/server", "image.tag/server", "configmap/env/LR", "configmap/env", "secret/creds/token",
		"node.kernel", "node.containerRuntime", "node.label/nvidia.com/cuda.driver.major",
		"owner.podTemplateHash", "owner.controllerRevision",
	}
	got := map[string]bool{}
	for _, d := range dims {
		got[d] = contentDim(d)
	}
	want := map[string]bool{
		"node": false, "rank": false, "run": false, "node.zone": false, "node.pool": false,
		"node.label/topology.kubernetes.io/zone": false, "node.label/topology.kubernetes.io/region": false,
		"owner/Job": false, "owner/Deployment": false, "owner/Deployment.generation": false,
		"image.digest/server": true, "image.tag/server": true, "configmap/env/LR": true, "configmap/env": true,
		"secret/creds/token": true, "node.kernel": true, "node.containerRuntime": true,
		"node.label/nvidia.com/cuda.driver.major": true, "owner.podTemplateHash": true, "owner.controllerRevision": true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("contentDim (-want +got)\n%s", diff)
	}
}

func TestSuspectsSelectorOf(t *testing.T) {
	node := func(name string, labels map[string]string) timeline.ObjectVersion {
		l := map[string]string{"kubernetes.io/hostname": name}
		for k, v := range labels {
			l[k] = v
		}
		content, err := json.Marshal(map[string]any{"metadata": map[string]any{"name": name, "labels": l}})
		if err != nil {
			t.Fatal(err)
		}
		return timeline.ObjectVersion{Object: timeline.ObjectRef{Kind: "Node", Name: name}, Content: content}
	}
	fleet := []timeline.ObjectVersion{
		node("gpu-1", map[string]string{"pool": "h100-b", "cloud.google.com/gke-nodepool": "h100-b", "nvidia.com/gpu.product": "H100", "rack": "r1"}),
		node("gpu-2", map[string]string{"pool": "h100-b", "cloud.google.com/gke-nodepool": "h100-b", "nvidia.com/gpu.product": "H100", "rack": "r2"}),
		node("gpu-3", map[string]string{"pool": "h100-a", "cloud.google.com/gke-nodepool": "h100-a", "nvidia.com/gpu.product": "H100", "rack": "r1"}),
		{Object: timeline.ObjectRef{Kind: "Node", Name: "broken"}, Content: []byte("{not json")},
	}
	// Two labels name rack-b's nodes exactly: a short key with a long
	// value, and a long key with a short value.
	racks := []timeline.ObjectVersion{
		node("n-1", map[string]string{"rack": "rack-b-row-12-us-central1-a", "example.com/g": "b"}),
		node("n-2", map[string]string{"rack": "rack-b-row-12-us-central1-a", "example.com/g": "b"}),
		node("n-3", map[string]string{"rack": "rack-a-row-11-us-central1-a", "example.com/g": "a"}),
	}
	tests := []struct {
		name  string
		refs  []string
		nodes []timeline.ObjectVersion
		want  string
	}{
		{"the pool, by the shorter of its two labels", []string{"Node/gpu-1", "Node/gpu-2"}, fleet, "pool=h100-b"},
		{"a label also held elsewhere is not the set", []string{"Node/gpu-1", "Node/gpu-3"}, fleet, "rack=r1"},
		{"no label names the set", []string{"Node/gpu-2", "Node/gpu-3"}, fleet, ""},
		{"the hostname is not a selector", []string{"Node/gpu-1"}, fleet, ""},
		{"every node: the shared label", []string{"Node/gpu-1", "Node/gpu-2", "Node/gpu-3"}, fleet[:3], "nvidia.com/gpu.product=H100"},
		{"a node not in the list", []string{"Node/gpu-1", "Node/gone"}, fleet, ""},
		{"the shortest key, not the shortest label", []string{"Node/n-1", "Node/n-2"}, racks, "rack=rack-b-row-12-us-central1-a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 20 { // map order must not matter
				if got := selectorOf(tt.refs, tt.nodes); got != tt.want {
					t.Fatalf("selectorOf(%v) = %q, want %q", tt.refs, got, tt.want)
				}
			}
		})
	}
}

// A counterexample of another workload runs its own images from its own
// template: those differences are no change. The same image under another
// digest (a tag pushed again), or another node, still is one.
func TestDifferencesFromAnotherWorkload(t *testing.T) {
	tests := []struct {
		name   string
		differ []Differ
		want   []string
	}{
		{"another workload", []Differ{{"owner/Job", "train", "eval"}, {"image.tag/main", "trainer:2", "evaluator:1"},
			{"image.digest/main", "sha256:a", "sha256:b"}, {"owner.podTemplateHash", "7d9f", "55bb"}, {"node.kernel", "6.8", "6.5"}},
			[]string{"node.kernel"}},
		{"another workload, the same image under another digest", []Differ{{"owner/Deployment", "api", "web"},
			{"image.digest/main", "sha256:a", "sha256:b"}}, []string{"image.digest/main"}},
		{"the same workload, rolled", []Differ{{"owner/ReplicaSet", "api-7d9f", "api-55bb"}, {"image.tag/main", "api:2", "api:1"},
			{"owner.podTemplateHash", "7d9f", "55bb"}}, []string{"image.tag/main", "owner.podTemplateHash"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := &candidates{byKey: map[candidateKey]*Suspect{}}
			cs.addDifferences(&Counterexample{Differs: tt.differ}, nil, nil, "")
			var got []string
			for _, c := range cs.list() {
				got = append(got, c.Dimension)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("difference candidates (-want +got)\n%s", diff)
			}
		})
	}
}

// A template that changed only to restart its pods (the restartedAt
// annotation) changed nothing they run with: no cause. One that changed
// its image is one.
func TestRestartOnly(t *testing.T) {
	rs := func(name, ann, image string) timeline.ObjectVersion {
		return timeline.ObjectVersion{Object: timeline.ObjectRef{Group: "apps", Resource: "replicasets", Kind: "ReplicaSet", Namespace: "ml", Name: name},
			Content: json.RawMessage(`{"spec":{"template":{"metadata":{"labels":{"app":"api","pod-template-hash":"` + name + `"},"annotations":{` + ann + `}},` +
				`"spec":{"containers":[{"name":"main","image":"` + image + `"}]}}}}`)}
	}
	s := &timelinetest.Mem{Vers: []timeline.ObjectVersion{rs("api-a", ``, "api:1"),
		rs("api-b", `"kubectl.kubernetes.io/restartedAt":"2026-12-05T08:00:00Z"`, "api:1"),
		rs("api-c", `"kubectl.kubernetes.io/restartedAt":"2026-12-05T09:00:00Z"`, "api:2")}}
	restart := &Suspect{Ref: "Deployment/ml/api", Dimension: "owner.podTemplateHash", From: "a", To: "b"}
	rollout := &Suspect{Ref: "Deployment/ml/api", Dimension: "owner.podTemplateHash", From: "b", To: "c"}
	unknown := &Suspect{Ref: "Deployment/ml/api", Dimension: "owner.podTemplateHash", From: "a", To: "gone"}
	if err := markRestarts(context.Background(), s, []*Suspect{restart, rollout, unknown}, "ml"); err != nil {
		t.Fatal(err)
	}
	if !restart.restartOnly || rollout.restartOnly || unknown.restartOnly {
		t.Errorf("restartOnly: restart %v, rollout %v, unknown %v; want true, false, false", restart.restartOnly, rollout.restartOnly, unknown.restartOnly)
	}
}

// Words that sound like load are not load. Throttled units whose
// workload arrived: where the apiserver's requests were measured, the
// arrival is a cause only if a burst of the namespace's clients ran after
// it; with nothing measured, the words stand.
func TestArrivalNeedsMeasuredLoad(t *testing.T) {
	const tooMany = "listing pods: the server has received too many requests and has asked us to try again later (429)"
	created := &Suspect{Ref: "Deployment/ml/api", Dimension: "created", To: "Deployment", At: at(5), Kind: "change", Objects: 1}
	clean := support{badHold: 10, bad: 10, good: 30}.confidence(0)
	burst := []controlplane.Burst{{Start: at(6), End: at(110)}}
	// perSecond is a namespace's requests per second in [from, to] seconds.
	perSecond := func(from, to float64, n func(sec int64) int64) map[int64]int64 {
		m := map[int64]int64{}
		for s := at(from).Unix(); s <= at(to).Unix(); s++ {
			m[s] = n(s - at(0).Unix())
		}
		return m
	}
	for _, tt := range []struct {
		name string
		load *apiLoad
		want float64
	}{
		{"nothing measured", nil, clean},
		{"a burst after it", &apiLoad{bursts: []controlplane.Burst{{Start: at(6), End: at(40)}}}, clean},
		{"a burst that ended before it", &apiLoad{bursts: []controlplane.Burst{{Start: at(1), End: at(4)}}}, 0},
		{"measured, no burst", &apiLoad{}, 0},
		// The load held its level, with no failure, long before the
		// failures: it did not rise into them.
		{"held flat before the failures", &apiLoad{bursts: burst, seconds: perSecond(6, 100, func(int64) int64 { return 30 })}, 0},
		{"rose into the failures, in the second of the first", &apiLoad{bursts: burst, seconds: perSecond(6, 100, func(s int64) int64 { return map[bool]int64{true: 300, false: 3}[s >= 100] })}, clean},
		{"shed from the start", &apiLoad{bursts: burst, seconds: perSecond(6, 100, func(int64) int64 { return 30 }),
			refusedAfter: map[int64]time.Time{at(5).UnixNano(): at(8)}}, clean},
	} {
		units, ids := rollout("Error", tooMany)
		sps := scoreSuspects([]*Suspect{created}, scoring{units: units, ids: ids, pop: populationOf(units, "ml"),
			owners: map[string]bool{"Deployment/api": true}, firstBad: at(100), apiLoad: tt.load})
		if len(sps) != 1 || math.Abs(sps[0].Confidence-tt.want) > 0.0006 {
			t.Errorf("%s: %+v, want confidence %.3f", tt.name, sps, tt.want)
		}
	}
}
