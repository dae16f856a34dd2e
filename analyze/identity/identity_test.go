package identity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

var update = flag.Bool("update", false, "rewrite golden files")

// memStore is the store's Versions, over versions held in memory.
type memStore struct {
	vs   []timeline.ObjectVersion
	recs []*timeline.Record
}

func (m *memStore) add(t *testing.T, at time.Time, rv string, obj string) {
	t.Helper()
	var h struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct{ Name, Namespace, UID string }
	}
	if err := json.Unmarshal([]byte(obj), &h); err != nil {
		t.Fatal(err)
	}
	group := ""
	if g, _, ok := strings.Cut(h.APIVersion, "/"); ok {
		group = g
	}
	res := strings.ToLower(h.Kind) + "s"
	if strings.HasSuffix(h.Kind, "s") {
		res = strings.ToLower(h.Kind) + "es" // StorageClass
	}
	sum := sha256.Sum256([]byte(obj))
	m.vs = append(m.vs, timeline.ObjectVersion{
		Object:          timeline.ObjectRef{Group: group, Resource: res, Kind: h.Kind, Namespace: h.Metadata.Namespace, Name: h.Metadata.Name, UID: h.Metadata.UID},
		ResourceVersion: rv, Time: at, Hash: "sha256:" + hex.EncodeToString(sum[:8]), Content: []byte(obj),
		Evidence: timeline.Evidence{Run: 1, Line: int64(len(m.vs) + 1)},
	})
}

// Records holds job runs: the ones the test added.
func (m *memStore) Records(_ context.Context, q timeline.Query) iter.Seq2[*timeline.Record, error] {
	return func(yield func(*timeline.Record, error) bool) {
		for _, r := range m.recs {
			if (!q.Until.IsZero() && !r.Time.Before(q.Until)) || (q.Where != nil && !must(q.Where.Match(r))) {
				continue
			}
			if !yield(r, nil) {
				return
			}
		}
	}
}

func must(ok bool, _ error) bool { return ok }

func (m *memStore) Versions(_ context.Context, q timeline.VersionQuery) ([]timeline.ObjectVersion, error) {
	latest := map[string]timeline.ObjectVersion{}
	var all []timeline.ObjectVersion
	for _, v := range m.vs {
		o := v.Object
		if (q.Group != "" && o.Group != q.Group) || (q.Resource != "" && o.Resource != q.Resource) ||
			(q.Namespace != "" && o.Namespace != q.Namespace) || (q.Name != "" && o.Name != q.Name) {
			continue
		}
		all = append(all, v)
		after := !q.At.IsZero() && v.Time.After(q.At)
		if after && !q.OrFirstAfter {
			continue
		}
		cur, ok := latest[o.UID]
		curAfter := ok && !q.At.IsZero() && cur.Time.After(q.At)
		switch {
		case !ok:
			latest[o.UID] = v
		case !after && (curAfter || v.Time.After(cur.Time)):
			latest[o.UID] = v
		case after && curAfter && v.Time.Before(cur.Time):
			latest[o.UID] = v
		}
	}
	if q.History {
		return all, nil
	}
	var out []timeline.ObjectVersion
	for _, v := range latest {
		out = append(out, v)
	}
	return out, nil
}

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func pod(ns, name, uid, node, owner, ownerUID, digest, cm string, extra string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":%q,"uid":%q,
		"labels":{"pod-template-hash":"7d9f","batch.kubernetes.io/job-completion-index":"3"},
		"annotations":{"faultline.dev/dataset":"imagenet@v42"},
		"ownerReferences":[{"kind":%q,"name":"owner","uid":%q,"controller":true,"apiVersion":"apps/v1"}]%s},
		"spec":{"nodeName":%q,"schedulerName":"default-scheduler","priorityClassName":"training-high","serviceAccountName":"trainer",
		  "nodeSelector":{"pool":"h100-a"},"tolerations":[{"key":"gpu","operator":"Exists","effect":"NoSchedule"},{"key":"dedicated","value":"ml","effect":"NoSchedule"}],
		  "containers":[{"name":"trainer","image":"registry.example/trainer:1.4","envFrom":[{"configMapRef":{"name":%q}}],
		    "env":[{"name":"TOKEN","valueFrom":{"secretKeyRef":{"name":"wandb","key":"token"}}},{"name":"MODEL_VERSION","value":"llama-7b@3"}]}],
		  "volumes":[{"name":"cfg","configMap":{"name":"shared"}}]},
		"status":{"containerStatuses":[{"name":"trainer","imageID":"docker-pullable://registry.example/trainer@%s"}]}}`,
		name, ns, uid, owner, ownerUID, extra, node, cm, digest)
}

func node(name, driver string, taint bool) string {
	taints := ""
	if taint {
		taints = `,"spec":{"taints":[{"key":"gpu","value":"broken","effect":"NoSchedule"}]}`
	}
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":%q,"uid":"n-%s","labels":{
		"node.kubernetes.io/instance-type":"p5.48xlarge","topology.kubernetes.io/zone":"us-east-1a","pool":"h100-a",
		"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3","nvidia.com/cuda.driver.major":%q}}%s,
		"status":{"nodeInfo":{"kernelVersion":"6.8.0","osImage":"Ubuntu 24.04","kubeletVersion":"v1.37.2","containerRuntimeVersion":"containerd://2.1.4"}}}`,
		name, name, driver, taints)
}

func world(t *testing.T) *memStore {
	m := &memStore{}
	m.add(t, t0, "1", node("gpu-1", "550", false))
	m.add(t, t0, "2", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"trainer","namespace":"ml","uid":"d1","generation":3}}`)
	m.add(t, t0, "3", `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"trainer-7d9f","namespace":"ml","uid":"rs1","generation":1,
		"ownerReferences":[{"kind":"Deployment","name":"trainer","uid":"d1","controller":true}]}}`)
	m.add(t, t0, "4", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"trainer-env","namespace":"ml","uid":"c1"},"data":{"LR":"sha256:aaa","BATCH":"sha256:bbb"}}`)
	m.add(t, t0, "5", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"shared","namespace":"ml","uid":"c2"},"data":{"x":"sha256:ccc"}}`)
	m.add(t, t0, "6", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"wandb","namespace":"ml","uid":"s1"},"data":{"token":"hmac-sha256:ddd"}}`)
	m.add(t, t0.Add(time.Minute), "7", pod("ml", "trainer-0", "p0", "gpu-1", "ReplicaSet", "rs1", "sha256:0001", "trainer-env", ""))
	return m
}

func dimNames(id *Identity) map[string]string {
	out := map[string]string{}
	for _, d := range id.Dimensions {
		out[d.Name] = d.Value
	}
	return out
}

func TestPodIdentity(t *testing.T) {
	m := world(t)
	id, err := NewResolver(m, time.Time{}, nil).Of(context.Background(), Ref{"Pod", "ml", "trainer-0"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"image.tag/trainer":                       "registry.example/trainer:1.4",
		"image.digest/trainer":                    "sha256:0001",
		"schedulerName":                           "default-scheduler",
		"priorityClassName":                       "training-high",
		"serviceAccount":                          "trainer",
		"nodeSelector/pool":                       "h100-a",
		"tolerations":                             "dedicated=ml:NoSchedule,gpu:NoSchedule",
		"rank":                                    "3",
		"owner.podTemplateHash":                   "7d9f",
		"owner/ReplicaSet":                        "trainer-7d9f",
		"owner/ReplicaSet.generation":             "1",
		"owner/Deployment":                        "trainer",
		"owner/Deployment.generation":             "3",
		"configmap/trainer-env":                   contentOf(t, m.vs[3]),
		"configmap/trainer-env/LR":                "sha256:aaa",
		"configmap/trainer-env/BATCH":             "sha256:bbb",
		"configmap/shared":                        contentOf(t, m.vs[4]),
		"configmap/shared/x":                      "sha256:ccc",
		"secret/wandb":                            contentOf(t, m.vs[5]),
		"secret/wandb/token":                      "hmac-sha256:ddd",
		"node":                                    "gpu-1",
		"node.kernel":                             "6.8.0",
		"node.osImage":                            "Ubuntu 24.04",
		"node.kubelet":                            "v1.37.2",
		"node.containerRuntime":                   "containerd://2.1.4",
		"node.instanceType":                       "p5.48xlarge",
		"node.zone":                               "us-east-1a",
		"node.pool":                               "h100-a",
		"node.label/nvidia.com/gpu.product":       "NVIDIA-H100-80GB-HBM3",
		"node.label/nvidia.com/cuda.driver.major": "550",
		"artifact.dataset":                        "imagenet@v42",
		"artifact.model.env":                      "llama-7b@3",
		"env/trainer/MODEL_VERSION":               "llama-7b@3",
	}
	if diff := cmp.Diff(want, dimNames(id)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	for _, d := range id.Dimensions {
		if d.Evidence.Ref == "" || d.Evidence.Time.IsZero() {
			t.Errorf("%s has no evidence", d.Name)
		}
	}
	if e := id.Dimensions[0].Evidence; !strings.Contains(fmt.Sprint(id.Dimensions), "ConfigMap/ml/trainer-env") {
		t.Errorf("configmap dimensions should point at the ConfigMap version, e.g. %+v", e)
	}
}

// TestDiffNamesExactlyTheChange changes one thing at a time, as the fixture
// incidents do, and checks the diff names that dimension and nothing else.
func TestDiffNamesExactlyTheChange(t *testing.T) {
	ctx := context.Background()
	t1, t2 := t0.Add(2*time.Minute), t0.Add(10*time.Minute)
	tests := []struct {
		name   string
		change func(m *memStore)
		unit   Ref
		want   []string
	}{
		{"configmap key", func(m *memStore) {
			m.add(t, t0.Add(5*time.Minute), "40", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"trainer-env","namespace":"ml","uid":"c1"},"data":{"LR":"sha256:eee","BATCH":"sha256:bbb"}}`)
		}, Ref{"Pod", "ml", "trainer-0"}, []string{"configmap/trainer-env", "configmap/trainer-env/LR"}},
		{"node driver label", func(m *memStore) {
			m.add(t, t0.Add(5*time.Minute), "41", node("gpu-1", "560", false))
		}, Ref{"Pod", "ml", "trainer-0"}, []string{"node.label/nvidia.com/cuda.driver.major"}},
		{"node taint, seen on the node", func(m *memStore) {
			m.add(t, t0.Add(5*time.Minute), "42", node("gpu-1", "550", true))
		}, Ref{"Node", "", "gpu-1"}, []string{"node.taints"}},
		{"digest drift under one tag", func(m *memStore) {
			m.add(t, t0.Add(5*time.Minute), "43", pod("ml", "trainer-0", "p0", "gpu-1", "ReplicaSet", "rs1", "sha256:0002", "trainer-env", ""))
		}, Ref{"Pod", "ml", "trainer-0"}, []string{"image.digest/trainer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := world(t)
			tt.change(m)
			a, err := NewResolver(m, t1, nil).Of(ctx, tt.unit)
			if err != nil {
				t.Fatal(err)
			}
			b, err := NewResolver(m, t2, nil).Of(ctx, tt.unit)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range Diff(a, b) {
				got = append(got, c.Dimension)
				if (c.From == "" && c.To == "") || c.When.IsZero() || c.Evidence.ResourceVersion == "" {
					t.Errorf("change %+v lacks from, to, when or evidence", c)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestParseRef(t *testing.T) {
	tests := []struct {
		in, ns  string
		want    Ref
		wantErr bool
	}{
		{"pod/ml/w-0", "", Ref{"Pod", "ml", "w-0"}, false},
		{"ml/w-0", "", Ref{"Pod", "ml", "w-0"}, false},
		{"job/train", "ml", Ref{"Job", "ml", "train"}, false},
		{"node/gpu-1", "", Ref{"Node", "", "gpu-1"}, false},
		{"MPIJob/ml/llm", "", Ref{"MPIJob", "ml", "llm"}, false},
		{"job/train", "", Ref{}, true},
		{"widget/ml/x", "", Ref{}, true},
		{"pod//x", "", Ref{}, true},
		{"a/b/c/d", "", Ref{}, true},
	}
	for _, tt := range tests {
		got, err := ParseRef(tt.in, tt.ns)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseRef(%q, %q) = %+v, %v", tt.in, tt.ns, got, err)
		}
	}
}

func TestRules(t *testing.T) {
	rules, err := ParseRules([]byte("dataset: pod.metadata.labels[\"data\"]\nshard: pod.spec.containers[0].env.filter(e, e.name == \"SHARD\")[0].value\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := map[string]any{}
	json.Unmarshal([]byte(`{"metadata":{"labels":{"data":"c4@7"}},"spec":{"containers":[{"env":[{"name":"SHARD","value":"12"}]}]}}`), &p)
	got := map[string]string{}
	for _, r := range rules {
		if v, ok := r.eval(p); ok {
			got[r.Dimension] = v
		}
	}
	if diff := cmp.Diff(map[string]string{"artifact.dataset": "c4@7", "artifact.shard": "12"}, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if _, err := ParseRules([]byte("x: pod.(")); err == nil {
		t.Error("a bad expression should be refused")
	}
	if _, err := ParseRules([]byte("- not a map")); err == nil {
		t.Error("a list should be refused")
	}
}

// TestGangJobGolden is the identity of a 64-rank MPIJob as -o json shows it:
// 63 ranks on the old driver, one rescheduled onto a node with the new one.
func TestGangJobGolden(t *testing.T) {
	m := &memStore{}
	m.add(t, t0, "1", `{"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"llm-pretrain","namespace":"ml","uid":"mj","generation":1}}`)
	m.add(t, t0, "2", node("gpu-a", "550", false))
	m.add(t, t0, "3", node("gpu-b", "560", false))
	m.add(t, t0, "4", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"trainer-env","namespace":"ml","uid":"c1"},"data":{"LR":"sha256:aaa"}}`)
	m.add(t, t0, "5", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"shared","namespace":"ml","uid":"c2"},"data":{"x":"sha256:ccc"}}`)
	for i := range 64 {
		n := "gpu-a"
		if i == 17 {
			n = "gpu-b"
		}
		p := pod("ml", fmt.Sprintf("llm-pretrain-worker-%d", i), fmt.Sprintf("p%d", i), n, "MPIJob", "mj", "sha256:0001", "trainer-env",
			`,"labels":{"training.kubeflow.org/job-name":"llm-pretrain","training.kubeflow.org/replica-index":"`+fmt.Sprint(i)+`"}`)
		// the later "labels" key replaces the pod template's: keep the
		// rank label the gang uses.
		m.add(t, t0.Add(time.Duration(i)*time.Second), fmt.Sprint(100+i), p)
	}
	id, err := NewResolver(m, time.Time{}, nil).Of(context.Background(), Ref{"MPIJob", "ml", "llm-pretrain"})
	if err != nil {
		t.Fatal(err)
	}
	if id.Pods != 64 {
		t.Fatalf("gang of %d pods, want 64", id.Pods)
	}
	got, err := json.MarshalIndent(id, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", t.Name(), "mpijob-64.golden")
	if *update {
		os.MkdirAll(filepath.Dir(golden), 0o755)
		os.WriteFile(golden, append(got, '\n'), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)+"\n"); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if v, _ := id.Get("node.label/nvidia.com/cuda.driver.major"); v != "550 (63 pods), 560 (1 pod)" {
		t.Errorf("driver dimension = %q", v)
	}
}

// TestFirstVersionStandsFromCreation: a snapshot holds one version of a pod,
// written after the instant asked about; the pod existed since its
// creation, so that version answers, while an instant before the creation
// finds nothing.
func TestFirstVersionStandsFromCreation(t *testing.T) {
	m := world(t)
	m.vs[len(m.vs)-1].Content = []byte(strings.Replace(string(m.vs[len(m.vs)-1].Content), `"namespace":"ml"`,
		`"namespace":"ml","creationTimestamp":"2026-05-01T10:00:30Z"`, 1)) // created 30 s before its version's time
	ctx := context.Background()
	if _, err := NewResolver(m, t0.Add(45*time.Second), nil).Of(ctx, Ref{"Pod", "ml", "trainer-0"}); err != nil {
		t.Errorf("between creation and first version: %v", err)
	}
	var nf *ErrNotFound
	if _, err := NewResolver(m, t0.Add(10*time.Second), nil).Of(ctx, Ref{"Pod", "ml", "trainer-0"}); !errors.As(err, &nf) {
		t.Errorf("before creation: err = %v, want ErrNotFound", err)
	}
}

// TestJobRunJoinsThePodIdentity: a run recorded by the ML platform names the
// pod; what it consumed becomes part of the pod's identity.
func TestJobRunJoinsThePodIdentity(t *testing.T) {
	m := world(t)
	m.recs = append(m.recs, &timeline.Record{Time: t0.Add(30 * time.Second), Source: timeline.SourceVersions, Verb: timeline.VerbRun,
		Object:   timeline.ObjectRef{Group: "faultline.dev", Resource: timeline.JobRunResource, Namespace: "ml", Name: "train"},
		Extra:    []byte(`{"type":"run","job":"ml/train","run":"r-17","consumed":["dataset/imagenet@v42","model/resnet@3"],"pods":["ml/trainer-0"]}`),
		Evidence: timeline.Evidence{Run: 9, Line: 2}})
	id, err := NewResolver(m, time.Time{}, nil).Of(context.Background(), Ref{"Pod", "ml", "trainer-0"})
	if err != nil {
		t.Fatal(err)
	}
	got := dimNames(id)
	for name, want := range map[string]string{"run": "ml/train r-17", "artifact.consumed/dataset/imagenet": "v42", "artifact.consumed/model/resnet": "3"} {
		if got[name] != want {
			t.Errorf("%s = %q, want %q", name, got[name], want)
		}
	}
}

// contentOf is the content digest of a ConfigMap or Secret version.
func contentOf(t *testing.T, v timeline.ObjectVersion) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(v.Content, &m); err != nil {
		t.Fatal(err)
	}
	return contentHash(m)
}

// A pod runs with what it started on: pinned at its start, a pod created
// before a ConfigMap edit and an owner's rollout keeps the old key value
// and generation, and one created after holds the new ones.
func TestPinAtPodStart(t *testing.T) {
	m := world(t)
	m.add(t, t0.Add(2*time.Minute), "40", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"trainer-env","namespace":"ml","uid":"c1"},"data":{"LR":"sha256:eee","BATCH":"sha256:bbb"}}`)
	m.add(t, t0.Add(2*time.Minute), "41", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"trainer","namespace":"ml","uid":"d1","generation":4}}`)
	m.add(t, t0.Add(3*time.Minute), "42", pod("ml", "trainer-1", "p1", "gpu-1", "ReplicaSet", "rs1", "sha256:0001", "trainer-env", ""))
	tests := []struct {
		pod     string
		pin     bool
		lr, gen string
	}{
		{"trainer-0", true, "sha256:aaa", "3"},
		{"trainer-1", true, "sha256:eee", "4"},
		{"trainer-0", false, "sha256:eee", "4"}, // at the latest instant: what it would read now
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/pin=%v", tt.pod, tt.pin), func(t *testing.T) {
			r := NewResolver(m, time.Time{}, nil)
			if tt.pin {
				r.PinAtPodStart()
			}
			id, err := r.Of(context.Background(), Ref{"Pod", "ml", tt.pod})
			if err != nil {
				t.Fatal(err)
			}
			got := dimNames(id)
			want := map[string]string{"configmap/trainer-env/LR": tt.lr, "owner/Deployment.generation": tt.gen}
			if diff := cmp.Diff(want, map[string]string{"configmap/trainer-env/LR": got["configmap/trainer-env/LR"],
				"owner/Deployment.generation": got["owner/Deployment.generation"]}); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// The same content in every namespace is one value: an object every pod
// mounts (kube-root-ca.crt) cannot stand in for the namespace.
func TestContentHashIgnoresMetadata(t *testing.T) {
	a := map[string]any{"metadata": map[string]any{"namespace": "ml", "uid": "1", "resourceVersion": "7"}, "data": map[string]any{"ca.crt": "sha256:ca"}}
	b := map[string]any{"metadata": map[string]any{"namespace": "web", "uid": "2", "resourceVersion": "9"}, "data": map[string]any{"ca.crt": "sha256:ca"}}
	c := map[string]any{"metadata": map[string]any{"namespace": "web"}, "data": map[string]any{"ca.crt": "sha256:other"}}
	if contentHash(a) != contentHash(b) {
		t.Errorf("same data, other metadata: %s != %s", contentHash(a), contentHash(b))
	}
	if contentHash(a) == contentHash(c) {
		t.Errorf("other data, same digest %s", contentHash(a))
	}
}

func TestConfigRefsKeys(t *testing.T) {
	tests := []struct {
		name string
		spec string
		cms  map[string][]string // name -> keys read (nil: every key)
	}{
		{"env reads one key", `{"containers":[{"env":[{"name":"LR","valueFrom":{"configMapKeyRef":{"name":"shared","key":"LR"}}}]}]}`,
			map[string][]string{"shared": {"LR"}}},
		{"envFrom reads every key", `{"containers":[{"envFrom":[{"configMapRef":{"name":"shared"}}],
			"env":[{"name":"LR","valueFrom":{"configMapKeyRef":{"name":"shared","key":"LR"}}}]}]}`,
			map[string][]string{"shared": nil}},
		{"a volume's items", `{"volumes":[{"name":"v","configMap":{"name":"shared","items":[{"key":"a.yaml","path":"a"},{"key":"b.yaml","path":"b"}]}}]}`,
			map[string][]string{"shared": {"a.yaml", "b.yaml"}}},
		{"a volume without items", `{"volumes":[{"name":"v","configMap":{"name":"shared"}}]}`,
			map[string][]string{"shared": nil}},
		{"an image pull secret, whole", `{"imagePullSecrets":[{"name":"registry-creds"}],"containers":[{"image":"r.example/a:1"}]}`,
			map[string][]string{"registry-creds": nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var spec map[string]any
			if err := json.Unmarshal([]byte(tt.spec), &spec); err != nil {
				t.Fatal(err)
			}
			cms, secrets := configRefs(spec)
			got := map[string][]string{}
			for _, r := range append(cms, secrets...) {
				var keys []string
				for k := range r.keys {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				got[r.name] = keys
			}
			if diff := cmp.Diff(tt.cms, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// FuzzParseRef: a REF argument parses or is refused; a parsed one names
// an object (no empty part stands for "any").
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"pod/ml/train-0", "Pod/train-0", "node/gpu-1", "pod//", "configmap/ml/", "/", "deployment.apps/web/api"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s, "default")
		if err != nil {
			return
		}
		if r.Name == "" || r.Kind == "" {
			t.Fatalf("ParseRef(%q) = %+v: an empty kind or name", s, r)
		}
	})
}

// A pod that started after a ConfigMap it reads was deleted read nothing
// of it (Deleted, with the delete as evidence); one started before, or
// after the ConfigMap was made again, read it. A delete that failed
// deleted nothing.
func TestDeletedBeforeStart(t *testing.T) {
	m := world(t)
	del := func(secs int, code int) *timeline.Record {
		return &timeline.Record{Time: t0.Add(time.Duration(secs) * time.Second), Source: timeline.SourceAudit, Verb: "delete", Code: code,
			Object:   timeline.ObjectRef{Resource: "configmaps", Namespace: "ml", Name: "trainer-env"},
			Evidence: timeline.Evidence{Run: 2, Line: int64(secs)}}
	}
	m.recs = append(m.recs, del(80, 404), del(90, 200))
	m.add(t, t0.Add(3*time.Minute), "42", pod("ml", "trainer-1", "p1", "gpu-1", "ReplicaSet", "rs1", "sha256:0001", "trainer-env", ""))
	m.add(t, t0.Add(4*time.Minute), "43", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"trainer-env","namespace":"ml","uid":"c3"},"data":{"LR":"sha256:fff"}}`)
	m.add(t, t0.Add(5*time.Minute), "44", pod("ml", "trainer-2", "p2", "gpu-1", "ReplicaSet", "rs1", "sha256:0001", "trainer-env", ""))
	tests := []struct {
		pod, whole, lr string
		ev             Evidence
	}{
		{"trainer-0", "", "sha256:aaa", Evidence{}},
		{"trainer-1", Deleted, "", Evidence{Ref: "ConfigMap/ml/trainer-env", Time: t0.Add(90 * time.Second), Run: 2, Line: 90}},
		{"trainer-2", "", "sha256:fff", Evidence{}},
	}
	for _, tt := range tests {
		t.Run(tt.pod, func(t *testing.T) {
			r := NewResolver(m, time.Time{}, nil)
			r.PinAtPodStart()
			id, err := r.Of(context.Background(), Ref{"Pod", "ml", tt.pod})
			if err != nil {
				t.Fatal(err)
			}
			got := dimNames(id)
			if got["configmap/trainer-env/LR"] != tt.lr {
				t.Errorf("LR = %q, want %q", got["configmap/trainer-env/LR"], tt.lr)
			}
			if tt.whole == "" {
				if got["configmap/trainer-env"] == Deleted {
					t.Errorf("configmap/trainer-env = %q, want its content", Deleted)
				}
				return
			}
			for _, d := range id.Dimensions {
				if d.Name == "configmap/trainer-env" {
					if diff := cmp.Diff(struct {
						V  string
						Ev Evidence
					}{tt.whole, tt.ev}, struct {
						V  string
						Ev Evidence
					}{d.Value, d.Evidence}); diff != "" {
						t.Errorf("configmap/trainer-env (-want +got)\n%s", diff)
					}
				}
			}
		})
	}
}

// A pod runs on its node's agents as they were when it was created: the
// DaemonSet's pod there created last before it. A DaemonSet lends the
// same dimension from its template, so its rollout is a change the pods
// hold.
func TestNodeAgents(t *testing.T) {
	m := world(t)
	agent := func(name, uid, created, image string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"gpu","uid":%q,"creationTimestamp":%q,
			"ownerReferences":[{"kind":"DaemonSet","name":"device-plugin","uid":"ds1","controller":true}]},
			"spec":{"nodeName":"gpu-1","containers":[{"name":"plugin","image":%q}]}}`, name, uid, created, image)
	}
	m.add(t, t0.Add(10*time.Second), "60", agent("device-plugin-a", "a1", "2026-05-01T10:00:10Z", "plugin:v1"))
	m.add(t, t0.Add(100*time.Second), "61", agent("device-plugin-b", "a2", "2026-05-01T10:01:40Z", "plugin:v2"))
	m.add(t, t0.Add(150*time.Second), "62", pod("ml", "trainer-late", "p9", "gpu-1", "ReplicaSet", "rs1", "sha256:0001", "trainer-env", ""))
	const dim = "node.agent/gpu/device-plugin/plugin"
	for _, tt := range []struct{ pod, want string }{{"trainer-0", "plugin:v1"}, {"trainer-late", "plugin:v2"}, {"device-plugin-b", "plugin:v2"}} {
		r := NewResolver(m, time.Time{}, nil)
		r.PinAtPodStart()
		ns := "ml"
		if strings.HasPrefix(tt.pod, "device-plugin") {
			ns = "gpu"
		}
		id, err := r.Of(context.Background(), Ref{"Pod", ns, tt.pod})
		if err != nil {
			t.Fatal(err)
		}
		if got := dimNames(id)[dim]; got != tt.want {
			t.Errorf("%s: %s = %q, want %q", tt.pod, dim, got, tt.want)
		}
	}
	var ds obj
	if err := json.Unmarshal([]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"plugin","image":"plugin:v3"}]}}}}`), &ds.m); err != nil {
		t.Fatal(err)
	}
	ds.v.Object = timeline.ObjectRef{Namespace: "gpu", Name: "device-plugin"}
	var got []string
	for _, d := range objectDims("DaemonSet", &ds) {
		if strings.HasPrefix(d.Name, "node.agent/") {
			got = append(got, d.Name+"="+d.Value)
		}
	}
	if diff := cmp.Diff([]string{dim + "=plugin:v3"}, got); diff != "" {
		t.Errorf("a DaemonSet's agent dimensions (-want +got)\n%s", diff)
	}
}

// readsStore is a memStore that keeps the filters of the reads of records.
type readsStore struct {
	*memStore
	filters []*timeline.Filter
}

func (s *readsStore) Records(ctx context.Context, q timeline.Query) iter.Seq2[*timeline.Record, error] {
	s.filters = append(s.filters, q.Where)
	return s.memStore.Records(ctx, q)
}

// The deletions of ConfigMaps and Secrets are read for the names the pods
// refer to, in one read, not for every one ever deleted: a store that
// keeps the timeline in columns reads every part of it to find a few
// scattered rows, once per read. Past maxDeleteNames names of a resource,
// every deletion of it is read. A name asked later is read then. The
// answers are the same either way.
func TestDeletesReadByName(t *testing.T) {
	del := func(secs int, name string) *timeline.Record {
		return &timeline.Record{Time: t0.Add(time.Duration(secs) * time.Second), Source: timeline.SourceAudit, Verb: "delete", Code: 200,
			Object:   timeline.ObjectRef{Resource: "configmaps", Namespace: "ml", Name: name},
			Evidence: timeline.Evidence{Run: 2, Line: int64(secs)}}
	}
	referenced, unrelated, later := del(90, "trainer-env"), del(95, "unrelated"), del(96, "asked-later")
	for _, tt := range []struct {
		name      string
		pods      int    // more pods, each reading a ConfigMap of its own
		long      string // in the name of each of their ConfigMaps
		readsMore bool
	}{
		{"the names the pods read", 0, "", false},
		{"too many names: every deletion", maxDeleteNames, "", true},
		{"names too long for a filter: every deletion", 200, strings.Repeat("x", 240), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := world(t)
			m.recs = append(m.recs, referenced, unrelated, later)
			m.add(t, t0.Add(3*time.Minute), "42", pod("ml", "trainer-1", "p1", "gpu-1", "ReplicaSet", "rs1", "sha256:0001", "trainer-env", ""))
			for i := range tt.pods {
				m.add(t, t0.Add(3*time.Minute), fmt.Sprint(100+i), pod("ml", fmt.Sprintf("w-%d", i), fmt.Sprintf("w%d", i), "gpu-1", "ReplicaSet", "rs1", "sha256:0001", fmt.Sprintf("cm-%d%s", i, tt.long), ""))
			}
			s := &readsStore{memStore: m}
			r := NewResolver(s, time.Time{}, nil)
			r.PinAtPodStart()
			id, err := r.Of(context.Background(), Ref{"Pod", "ml", "trainer-1"})
			if err != nil {
				t.Fatal(err)
			}
			if got := dimNames(id)["configmap/trainer-env"]; got != Deleted {
				t.Errorf("configmap/trainer-env = %q, want %q", got, Deleted)
			}
			matches := func(recs ...*timeline.Record) (n int) {
				for _, f := range s.filters {
					for _, rec := range recs {
						if f != nil && must(f.Match(rec)) {
							n++
							break
						}
					}
				}
				return n
			}
			// The pod reads two ConfigMaps and a Secret: one read asks
			// for all three.
			secret := del(98, "wandb")
			secret.Object.Resource = "secrets"
			if n := matches(referenced, del(97, "shared"), secret); n != 1 {
				t.Errorf("%d reads looked for the deletions of the pod's ConfigMaps and Secret, want 1", n)
			}
			if n := matches(secret); n != 1 {
				t.Errorf("%d reads looked for the deletions of the pod's Secret, want 1", n)
			}
			if got := matches(unrelated) == 1; got != tt.readsMore {
				t.Errorf("a read found an unreferenced ConfigMap's deletion: %v, want %v", got, tt.readsMore)
			}
			// A name no pod refers to, asked later: read then, or
			// already read with every deletion.
			reads := len(s.filters)
			d, err := r.deletedBetween(context.Background(), "", "configmaps", "ConfigMap", "ml", "asked-later", time.Time{}, t0.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if d == nil || !d.Time.Equal(later.Time) {
				t.Errorf("asked-later's deletion = %+v, want at %v", d, later.Time)
			}
			if more := len(s.filters) - reads; more != map[bool]int{false: 1, true: 0}[tt.readsMore] {
				t.Errorf("asking for another name read %d more times", more)
			}
		})
	}
}

// A workload's template lends its pods who places them and as whom they
// run, named and spelt as the pods hold them: a change of its scheduler,
// ServiceAccount, node selector or priority class is a change of its
// new pods' identity, seen in time at the workload's write. Tolerations
// are not: admission adds its own to every pod.
func TestTemplateSchedulingDims(t *testing.T) {
	const spec = `{"schedulerName":"volcano","serviceAccountName":"trainer","nodeSelector":{"pool":"a100"},` +
		`"priorityClassName":"batch-high","tolerations":[{"key":"gpu","operator":"Exists","effect":"NoSchedule"}],` +
		`"containers":[{"name":"main","image":"trainer:1"}]}`
	var d obj
	if err := json.Unmarshal([]byte(`{"spec":{"template":{"spec":`+spec+`}}}`), &d.m); err != nil {
		t.Fatal(err)
	}
	d.v.Object = timeline.ObjectRef{Namespace: "ml", Name: "trainer"}
	got := map[string]string{}
	for _, x := range objectDims("Deployment", &d) {
		got[x.Name] = x.Value
	}
	var p obj
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"trainer-x","namespace":"ml"},"spec":`+spec+`}`), &p.m); err != nil {
		t.Fatal(err)
	}
	var pod dimList
	placementDims(&pod, &p, mapAt(p.m, "spec"), Evidence{})
	for _, name := range []string{"schedulerName", "serviceAccount", "nodeSelector/pool", "priorityClassName"} {
		want := ""
		for _, x := range pod {
			if x.Name == name {
				want = x.Value
			}
		}
		if want == "" || got[name] != want {
			t.Errorf("%s: the template's %q, its pod's %q", name, got[name], want)
		}
	}
	if v, ok := got["tolerations"]; ok {
		t.Errorf("tolerations = %q from a template: admission adds to a pod's", v)
	}
}
