package investigate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// A synthetic timeline: a handful of nodes, ConfigMaps and pods, with the
// versions an ingest of them would store, for tests of the whole method
// (Run) on incidents small enough to read.

// synthPod is one pod of a synthetic incident: its job, the ConfigMaps it
// reads (envFrom), the node it runs on, when it was created (seconds after
// t0) and when it went bad (CrashLoopBackOff; 0: it stayed Ready).
type synthPod struct {
	ns, name, job string
	digest        string // the image's; "" for sha256:v1
	configMaps    []string
	node          string
	created, bad  float64
	message       string // the crash's; "" for a plain back-off
}

// synthObject is one version of a node or a ConfigMap at sec.
type synthObject struct {
	sec        float64
	kind, name string
	ns         string
	labels     map[string]string // a node's
	data       map[string]string // a ConfigMap's
}

// poolNode is a node of pool at t0.
func poolNode(name, pool string) synthObject {
	return synthObject{kind: "Node", name: name, labels: map[string]string{"pool": pool}}
}

// configMap is ConfigMap ns/name holding data from sec on.
func configMap(sec float64, ns, name string, data map[string]string) synthObject {
	return synthObject{sec: sec, kind: "ConfigMap", ns: ns, name: name, data: data}
}

// job is Job ns/name created at sec.
func job(sec float64, ns, name string) synthObject {
	return synthObject{sec: sec, kind: "Job", ns: ns, name: name}
}

// synthetic is the timeline of objs and pods: each pod seen Ready 5 s
// after its creation and, when it goes bad, in CrashLoopBackOff then;
// records at 0 s and 300 s bound the evidence.
func synthetic(t *testing.T, objs []synthObject, pods []synthPod) *timelinetest.Mem {
	t.Helper()
	m := &timelinetest.Mem{}
	add := func(sec float64, resource, kind, ns, name string, content any) {
		b, err := json.Marshal(content)
		if err != nil {
			t.Fatal(err)
		}
		m.Vers = append(m.Vers, timeline.ObjectVersion{Time: at(sec), Content: b,
			Object:   timeline.ObjectRef{Resource: resource, Kind: kind, Namespace: ns, Name: name, UID: "uid-" + ns + "-" + name},
			Evidence: timeline.Evidence{Run: 1, Line: int64(len(m.Vers) + 1)}})
	}
	for _, o := range objs {
		meta := map[string]any{"name": o.name, "uid": "uid-" + o.ns + "-" + o.name, "creationTimestamp": at(0).Format("2006-01-02T15:04:05Z")}
		switch o.kind {
		case "Node":
			meta["labels"] = o.labels
			add(o.sec, "nodes", "Node", "", o.name, map[string]any{"metadata": meta,
				"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}})
		case "ConfigMap":
			meta["namespace"] = o.ns
			add(o.sec, "configmaps", "ConfigMap", o.ns, o.name, map[string]any{"metadata": meta, "data": o.data})
		case "Job":
			meta["namespace"], meta["creationTimestamp"], meta["generation"] = o.ns, at(o.sec).Format("2006-01-02T15:04:05Z"), 1
			add(o.sec, "jobs", "Job", o.ns, o.name, map[string]any{"metadata": meta})
		}
	}
	for _, p := range pods {
		var envFrom []any
		for _, cm := range p.configMaps {
			envFrom = append(envFrom, map[string]any{"configMapRef": map[string]any{"name": cm}})
		}
		digest := p.digest
		if digest == "" {
			digest = "sha256:v1"
		}
		message := p.message
		if message == "" {
			message = "back-off restarting failed container"
		}
		pod := func(state map[string]any, ready string) map[string]any {
			return map[string]any{
				"metadata": map[string]any{"name": p.name, "namespace": p.ns, "uid": "uid-" + p.ns + "-" + p.name,
					"creationTimestamp": at(p.created).Format("2006-01-02T15:04:05Z"),
					"ownerReferences":   []any{map[string]any{"kind": "Job", "name": p.job, "uid": "uid-" + p.ns + "-" + p.job, "controller": true}}},
				"spec": map[string]any{"nodeName": p.node,
					"containers": []any{map[string]any{"name": "main", "image": "trainer:v1", "envFrom": envFrom}}},
				"status": map[string]any{"phase": "Running",
					"conditions":        []any{map[string]any{"type": "Ready", "status": ready}},
					"containerStatuses": []any{map[string]any{"name": "main", "imageID": "docker-pullable://trainer@" + digest, "state": state}}},
			}
		}
		add(p.created+5, "pods", "Pod", p.ns, p.name, pod(map[string]any{"running": map[string]any{}}, "True"))
		if p.bad > 0 {
			add(p.bad, "pods", "Pod", p.ns, p.name, pod(map[string]any{"waiting": map[string]any{"reason": "CrashLoopBackOff", "message": message}}, "False"))
		}
	}
	event := func(sec float64) *timeline.Record {
		return &timeline.Record{ID: int64(sec) + 1, Time: at(sec), Source: timeline.SourceEvent, Type: "Normal", Reason: "Pulled",
			Object: timeline.ObjectRef{Kind: "Pod", Namespace: "ml", Name: "bystander"}}
	}
	return m.Add(event(0), event(300))
}

// pods are n pods ns/job-i of job, reading configMaps, created at created+i
// seconds on nodes[i%len(nodes)], bad at bad+i (0: never).
func pods(ns, job string, n int, configMaps []string, nodes []string, created, bad float64) []synthPod {
	var out []synthPod
	for i := range n {
		p := synthPod{ns: ns, name: fmt.Sprintf("%s-%d", job, i), job: job, configMaps: configMaps,
			node: nodes[i%len(nodes)], created: created + float64(i)}
		if bad > 0 {
			p.bad = bad + float64(i)
		}
		out = append(out, p)
	}
	return out
}

// runSynthetic investigates the synthetic incident of objs and ps.
func runSynthetic(t *testing.T, objs []synthObject, ps []synthPod) *Report {
	t.Helper()
	rep, err := Run(context.Background(), synthetic(t, objs, ps), Options{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

// An incident in namespace ml: ConfigMap train-env's LR changes from 0.1
// to 0.3 at 50 s; ConfigMap common's LOG from info to debug at 40 s. Job
// train's six pods start at 60 s and crash from 100 s; job eval's six
// start at 55 s and old's four at 10 s, and stay good. Every job runs on
// both pools (a100, h100), so the pool is incidental. What the cases
// change is said in each.
func incident() ([]synthObject, []synthPod) {
	objs := []synthObject{poolNode("a1", "a100"), poolNode("a2", "a100"), poolNode("h1", "h100"), poolNode("h2", "h100"),
		configMap(0, "ml", "train-env", map[string]string{"LR": "0.1"}),
		configMap(50, "ml", "train-env", map[string]string{"LR": "0.3"}),
		configMap(0, "ml", "eval-env", map[string]string{"LR": "0.01"}),
		configMap(0, "ml", "common", map[string]string{"LOG": "info"}),
		configMap(40, "ml", "common", map[string]string{"LOG": "debug"}),
	}
	nodes := []string{"a1", "h1", "a2", "h2"}
	var ps []synthPod
	ps = append(ps, pods("ml", "train", 6, []string{"train-env", "common"}, nodes, 60, 100)...)
	ps = append(ps, pods("ml", "eval", 6, []string{"eval-env", "common"}, nodes, 55, 0)...)
	ps = append(ps, pods("ml", "old", 4, []string{"eval-env", "common"}, nodes, 10, 0)...)
	return objs, ps
}

// arrival is the incident with no change of content: job train's Job is
// created at 58 s, old's at 8 s, and ConfigMap train-extra, which train's
// pods read too, at 30 s.
func arrival() ([]synthObject, []synthPod) {
	objs, ps := incident()
	objs = append(without(without(objs, "train-env"), "common"),
		configMap(0, "ml", "train-env", map[string]string{"LR": "0.1"}), configMap(0, "ml", "common", map[string]string{"LOG": "info"}),
		job(58, "ml", "train"), job(8, "ml", "old"), configMap(30, "ml", "train-extra", map[string]string{"K": "a"}))
	return objs, edit(ps, func(p *synthPod) {
		if p.job == "train" {
			p.configMaps = append(p.configMaps, "train-extra")
		}
	})
}

// without is objs but the versions of ConfigMap name.
func without(objs []synthObject, name string) []synthObject {
	var out []synthObject
	for _, o := range objs {
		if o.kind != "ConfigMap" || o.name != name {
			out = append(out, o)
		}
	}
	return out
}

// edit returns ps with f applied to each pod.
func edit(ps []synthPod, f func(*synthPod)) []synthPod {
	for i := range ps {
		f(&ps[i])
	}
	return ps
}

// onA100 says whether a pod runs on a node of pool a100.
func onA100(p *synthPod) bool { return p.node == "a1" || p.node == "a2" }

// The suspects of a synthetic incident: which leads and why, ties, the
// owner a difference is laid at, and changes the good units ran with too.
// The confidences are the model's (support.confidence) for the counts the
// case sets up, so a suspect ranked on other evidence fails.
func TestRunSuspects(t *testing.T) {
	type row struct {
		Ref, Dimension, From, To, Kind string
		Confidence                     float64
	}
	// Six bad units; ten comparable good ones (eval, old).
	only := func(competitors int) float64 { return support{badHold: 6, bad: 6, good: 10}.confidence(competitors) }
	lr := func(c float64) row {
		return row{"ConfigMap/ml/train-env", "configmap/train-env/LR", "0.1", "0.3", "change", c}
	}
	// LOG=debug: every bad unit, and eval's six of the ten good.
	log := func(competitors int) row {
		return row{"ConfigMap/ml/common", "configmap/common/LOG", "info", "debug", "change", support{badHold: 6, bad: 6, goodHold: 6, good: 10}.confidence(competitors)}
	}
	type want struct {
		Changes    []row // in rank order
		Verdict    string
		Mitigation []string // action target -> to
	}
	tests := []struct {
		name string
		objs func() ([]synthObject, []synthPod)
		want want
	}{
		{"the change only the bad units hold leads; one the good ran with too trails", incident,
			want{[]row{lr(only(0)), log(1)}, VerdictCause, []string{"rollback ConfigMap/ml/train-env -> 0.1"}}},
		{"two keys changed in one edit tie: each has half the confidence, and neither is a confident cause", func() ([]synthObject, []synthPod) {
			objs, ps := incident()
			objs = append(without(objs, "train-env"),
				configMap(0, "ml", "train-env", map[string]string{"LR": "0.1", "BATCH": "8"}),
				configMap(50, "ml", "train-env", map[string]string{"LR": "0.3", "BATCH": "16"}))
			return objs, ps
		}, want{[]row{
			{"ConfigMap/ml/train-env", "configmap/train-env/BATCH", "8", "16", "change", only(1)},
			lr(only(1)),
			log(2),
		}, VerdictNoCause, nil}},
		{"equally strong changes: the one nearer the first bad first", func() ([]synthObject, []synthPod) {
			objs, ps := incident()
			objs = append(objs, configMap(0, "ml", "train-extra", map[string]string{"K": "a"}), configMap(30, "ml", "train-extra", map[string]string{"K": "b"}))
			return objs, edit(ps, func(p *synthPod) {
				if p.job == "train" {
					p.configMaps = append(p.configMaps, "train-extra")
				}
			})
		}, want{[]row{
			lr(only(1)),
			{"ConfigMap/ml/train-extra", "configmap/train-extra/K", "a", "b", "change", only(1)},
			log(2),
		}, VerdictNoCause, nil}},
		{"the arrival of the job owning the bad units, which failed the way load does, leads; a ConfigMap created along the way owns nothing", func() ([]synthObject, []synthPod) {
			objs, ps := arrival()
			return objs, edit(ps, func(p *synthPod) {
				if p.job == "train" {
					p.message = "listing pods: the server has received too many requests and has asked us to try again later (429)"
				}
			})
		}, want{[]row{{"Job/ml/train", "created", "", "Job", "change", only(0)}}, VerdictCause,
			[]string{"set Job/ml/train start -> jittered or rate-limited start", "set Job/ml/train reads -> namespace- and label-scoped reads from the watch cache or a shared informer"}}},
		{"the arrival of the job owning the bad units is no cause when they did not fail the way load does", func() ([]synthObject, []synthPod) {
			return arrival()
		}, want{[]row{{"Job/ml/train", "created", "", "Job", "change", 0}}, VerdictNoCause, nil}},
		{"a digest no history shows changing: a difference from the good units, laid at the bad units' owner", func() ([]synthObject, []synthPod) {
			objs, ps := incident()
			objs = append(without(without(objs, "train-env"), "common"),
				configMap(0, "ml", "train-env", map[string]string{"LR": "0.1"}), configMap(0, "ml", "common", map[string]string{"LOG": "info"}))
			return objs, edit(ps, func(p *synthPod) {
				if p.job == "train" {
					p.digest = "sha256:new"
				}
			})
		}, want{[]row{{"Job/ml/train", "image.digest/main", "sha256:v1", "sha256:new", "difference", only(0)}},
			VerdictCause, []string{"set Job/ml/train image -> trainer@sha256:v1"}}},
		{"good units that started after the change ran with it too: it explains nothing", func() ([]synthObject, []synthPod) {
			objs, ps := incident()
			var keep []synthPod
			for _, p := range ps {
				if p.job == "eval" {
					p.configMaps, p.created = []string{"train-env", "common"}, 50
					keep = append(keep, p)
				} else if p.job == "train" {
					keep = append(keep, p)
				}
			}
			return objs, keep
		}, want{[]row{
			{"ConfigMap/ml/train-env", "configmap/train-env/LR", "0.1", "0.3", "change", 0},
			{"ConfigMap/ml/common", "configmap/common/LOG", "info", "debug", "change", 0},
		}, VerdictNoCause, nil}},
		{"a change after the first bad is a consequence, not a suspect", func() ([]synthObject, []synthPod) {
			objs, ps := incident()
			objs = append(without(objs, "train-env"),
				configMap(0, "ml", "train-env", map[string]string{"LR": "0.1"}), configMap(150, "ml", "train-env", map[string]string{"LR": "0.3"}))
			return objs, ps
		}, want{[]row{log(0)}, VerdictNoCause, nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, ps := tt.objs()
			rep := runSynthetic(t, objs, ps)
			got := want{Verdict: rep.Verdict}
			for i, c := range rep.Changes {
				if c.Rank != i+1 {
					t.Errorf("%s: rank %d at position %d", c.Dimension, c.Rank, i+1)
				}
				got.Changes = append(got.Changes, row{c.Ref, c.Dimension, c.From, c.To, c.Kind, c.Confidence})
			}
			for _, a := range rep.Mitigation {
				got.Mitigation = append(got.Mitigation, a.Action+" "+a.Target+" -> "+a.To)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 0.0006), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Run (-want +got)\n%s", diff)
			}
		})
	}
}

// The counterexample of a synthetic incident: the good unit most like the
// bad slice, of its population, outside the slice; none without a slice.
func TestRunCounterexample(t *testing.T) {
	tests := []struct {
		name string
		objs func() ([]synthObject, []synthPod)
		want *Counterexample
	}{
		// eval's pods ran with LOG=debug as the bad units did, old's with
		// info; of eval's, eval-5 started nearest the first bad.
		{"the good unit sharing the most of the slice's identity, started nearest the first bad", incident,
			&Counterexample{Ref: "Pod/ml/eval-5", Matches: 4, Differs: []Differ{
				{Dimension: "owner/Job", Bad: "train", Good: "eval"},
				{Dimension: "configmap/train-env", Bad: sha256Of(map[string]string{"LR": "0.3"}), Good: ""},
				{Dimension: "configmap/train-env/LR", Bad: "0.3", Good: ""},
			}}},
		{"a unit of the slice's own job, outside it: only its pool differs", func() ([]synthObject, []synthPod) {
			objs, ps := incident()
			return objs, edit(ps, func(p *synthPod) {
				if p.job == "train" && onA100(p) {
					p.bad = 0
				}
			})
		}, &Counterexample{Ref: "Pod/ml/train-4", Matches: 7, Differs: []Differ{{Dimension: "node.pool", Bad: "h100", Good: "a100"}}}},
		{"of the slice's namespace before a closer match in another", func() ([]synthObject, []synthPod) {
			objs, ps := incident()
			objs = append(objs, configMap(0, "web", "common", map[string]string{"LOG": "debug"}), configMap(0, "web", "eval-env", map[string]string{"LR": "0.01"}))
			return objs, edit(ps, func(p *synthPod) {
				if p.job == "eval" {
					p.ns = "web" // as like the slice as before, in another namespace
				}
			})
		}, &Counterexample{Ref: "Pod/ml/old-3", Matches: 2, Differs: []Differ{
			{Dimension: "owner/Job", Bad: "train", Good: "old"},
			{Dimension: "configmap/common/LOG", Bad: "debug", Good: "info"},
			{Dimension: "configmap/common", Bad: sha256Of(map[string]string{"LOG": "debug"}), Good: sha256Of(map[string]string{"LOG": "info"})},
			{Dimension: "configmap/train-env", Bad: sha256Of(map[string]string{"LR": "0.3"}), Good: ""},
			{Dimension: "configmap/train-env/LR", Bad: "0.3", Good: ""},
		}}},
		{"no good unit but one of the bad units' own: no slice, so none", func() ([]synthObject, []synthPod) {
			objs, ps := incident()
			var keep []synthPod
			for _, p := range ps {
				switch p.job {
				case "train":
					keep = append(keep, p)
				case "eval":
					if p.name == "eval-0" {
						p.job, p.name, p.configMaps = "train", "train-9", []string{"train-env", "common"}
					} else {
						p.bad = 120
					}
					keep = append(keep, p)
				}
			}
			return objs, keep
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, ps := tt.objs()
			rep := runSynthetic(t, objs, ps)
			if diff := cmp.Diff(tt.want, rep.Counterexample, cmpopts.SortSlices(func(a, b Differ) bool { return a.Dimension < b.Dimension })); diff != "" {
				t.Errorf("counterexample (-want +got)\n%s", diff)
			}
			if tt.want == nil && len(rep.Confirmation) != 0 {
				t.Errorf("confirmation %q without a counterexample", rep.Confirmation)
			}
		})
	}
}

// The slice of a synthetic incident: the smallest description of the bad
// units, never by a dimension good and bad units share.
func TestRunSlice(t *testing.T) {
	type slice struct {
		Where       map[string]string
		Equivalents []map[string]string
		Bad, Total  int
	}
	tests := []struct {
		name string
		objs func() ([]synthObject, []synthPod)
		want *slice
	}{
		{"the job, or the value only it ran with; not the pool every job runs on", incident,
			&slice{map[string]string{"owner/Job": "train"}, []map[string]string{{"configmap/train-env/LR": "0.3"}}, 6, 6}},
		{"only the job's pods on one pool went bad: the job and the pool, not either alone", func() ([]synthObject, []synthPod) {
			objs, ps := incident()
			return objs, edit(ps, func(p *synthPod) {
				if p.job == "train" && onA100(p) {
					p.bad = 0
				}
			})
		}, &slice{map[string]string{"owner/Job": "train", "node.pool": "h100"}, nil, 3, 3}},
		{"every job's pods on one pool went bad: the pool alone, not the jobs", func() ([]synthObject, []synthPod) {
			objs, ps := incident()
			return without(without(objs, "train-env"), "common"), edit(ps, func(p *synthPod) {
				p.configMaps = []string{"eval-env"}
				p.created = 55 + float64(len(p.name))
				p.bad = 0
				if !onA100(p) {
					p.bad = 100 + float64(len(p.name))
				}
			})
		}, &slice{map[string]string{"node.pool": "h100"}, nil, 8, 8}},
		{"every unit but one bad: no slice", func() ([]synthObject, []synthPod) {
			objs, ps := incident()
			return objs, edit(ps, func(p *synthPod) {
				if p.name != "old-0" {
					p.bad = 100 + p.created
				}
			})
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, ps := tt.objs()
			rep := runSynthetic(t, objs, ps)
			var got *slice
			if s := rep.Slice; s != nil {
				got = &slice{s.Where, s.Equivalents, s.Bad, s.Total}
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("slice (-want +got)\n%s", diff)
			}
		})
	}
}

// sha256Of is the content hash identity gives a ConfigMap holding data
// (analyze/identity's contentHash): its sorted lines field NUL key NUL
// value, joined by newlines.
func sha256Of(data map[string]string) string {
	var lines []string
	for k, v := range data {
		lines = append(lines, "data\x00"+k+"\x00"+v)
	}
	sort.Strings(lines)
	h := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return "sha256:" + hex.EncodeToString(h[:])
}
