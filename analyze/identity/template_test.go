package identity

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The pods a ReplicaSet could not create ran with what its template says,
// its owners and the config as they stood when they were refused; no node
// and no digest, which only a pod that ran has.
func TestOfTemplate(t *testing.T) {
	m := world(t)
	m.add(t, t0.Add(2*time.Minute), "40", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"trainer-env","namespace":"ml","uid":"c1"},"data":{"LR":"sha256:eee"}}`)
	m.add(t, t0.Add(3*time.Minute), "41", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"trainer","namespace":"ml","uid":"d1","generation":4}}`)
	m.add(t, t0.Add(3*time.Minute), "42", `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"trainer-55bb","namespace":"ml","uid":"rs2","generation":1,
		"ownerReferences":[{"kind":"Deployment","name":"trainer","uid":"d1","controller":true}]},
		"spec":{"replicas":4,"template":{"metadata":{"labels":{"app":"trainer","pod-template-hash":"55bb"}},
			"spec":{"serviceAccountName":"trainer","nodeSelector":{"pool":"h100-a"},
				"containers":[{"name":"trainer","image":"registry.example/trainer:1.5","envFrom":[{"configMapRef":{"name":"trainer-env"}}]}]}}},
		"status":{"replicas":0}}`)
	r := NewResolver(m, time.Time{}, nil)
	r.PinAtPodStart()
	id, err := r.OfTemplate(context.Background(), Ref{"ReplicaSet", "ml", "trainer-55bb"}, t0.Add(4*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got := dimNames(id)
	want := map[string]string{
		"image.tag/trainer":           "registry.example/trainer:1.5",
		"serviceAccount":              "trainer",
		"nodeSelector/pool":           "h100-a",
		"owner.podTemplateHash":       "55bb",
		"owner/ReplicaSet":            "trainer-55bb",
		"owner/ReplicaSet.generation": "1",
		"owner/Deployment":            "trainer",
		"owner/Deployment.generation": "4",
		"configmap/trainer-env":       got["configmap/trainer-env"],
		"configmap/trainer-env/LR":    "sha256:eee",
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			want[k] = got[k] // dimensions of every pod (scheduler, ...) are not this test's
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("template identity (-want +got)\n%s", diff)
	}
	for _, d := range []string{"node", "image.digest/trainer"} {
		if v, ok := got[d]; ok {
			t.Errorf("%s = %q: a pod never created ran on no node and pulled nothing", d, v)
		}
	}
	var nf *ErrNotFound
	if _, err := r.OfTemplate(context.Background(), Ref{"ReplicaSet", "ml", "nope"}, t0); !errors.As(err, &nf) {
		t.Errorf("a ReplicaSet not held: err %v, want ErrNotFound", err)
	}
}

// A container's resources, probes, literal env, command and args are part
// of what it runs with; a request equal to its limit says nothing more, and
// a variable read from a ConfigMap is that ConfigMap's key.
func TestContainerDims(t *testing.T) {
	var spec map[string]any
	if err := json.Unmarshal([]byte(`{"containers":[{"name":"main","resources":{"limits":{"memory":"4Gi","cpu":"2"},"requests":{"memory":"4Gi","cpu":"500m"}},
		"readinessProbe":{"httpGet":{"path":"/readyz","port":8080},"periodSeconds":5,"timeoutSeconds":1,"failureThreshold":1},
		"livenessProbe":{"tcpSocket":{"port":"grpc"},"initialDelaySeconds":30},
		"startupProbe":{"httpGet":{"path":"/up","port":8443,"scheme":"HTTPS","host":"localhost"}},
		"args":["hmac-sha256:aa","hmac-sha256:bb"],
		"env":[{"name":"MODE","value":"fast"},{"name":"EMPTY","value":""},{"name":"LR","valueFrom":{"configMapKeyRef":{"name":"cfg","key":"lr"}}}]},
		{"name":"sidecar","readinessProbe":{"exec":{"command":["hmac-sha256:cc"]}},"command":["hmac-sha256:dd"]}]}`), &spec); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range containerDims(spec, Evidence{}) {
		got = append(got, d.Name+"="+d.Value)
	}
	want := []string{
		"args/main=sha256:",
		"command/sidecar=sha256:",
		"env/main/EMPTY=\"\"", "env/main/MODE=fast",
		"probes/main/liveness=tcpSocket :grpc delay=30s",
		"probes/main/readiness=httpGet :8080/readyz period=5s failure=1",
		"probes/main/startup=httpGet https://localhost:8443/up",
		"probes/sidecar/readiness=exec sha256:",
		"resources/main/limits.cpu=2", "resources/main/limits.memory=4Gi", "resources/main/requests.cpu=500m"}
	// The digests are of what the timeline holds (keyed hashes): checked
	// to be digests, compared up to their prefix.
	for i, g := range got {
		if n, v, _ := strings.Cut(g, "="); strings.HasPrefix(v, "sha256:") || strings.HasPrefix(v, "exec sha256:") {
			if _, digest, _ := strings.Cut(v, "sha256:"); len(digest) < 12 {
				t.Errorf("%s = %q: not a digest", n, v)
			}
			got[i] = g[:strings.Index(g, "sha256:")+len("sha256:")]
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("containerDims (-want +got)\n%s", diff)
	}
}

// The pod spec fields no other dimension covers are dimensions when set
// to other than their default; a long value is a digest.
func TestSpecDims(t *testing.T) {
	var spec map[string]any
	if err := json.Unmarshal([]byte(`{"containers":[{"name":"main"}],"nodeName":"gpu-1","hostname":"db-0","restartPolicy":"Never",
		"priority":1000,"dnsPolicy":"ClusterFirst","terminationGracePeriodSeconds":30,"securityContext":{},"enableServiceLinks":true,
		"runtimeClassName":"nvidia","hostNetwork":true,"dnsConfig":{"options":[{"name":"ndots","value":"1"}]},
		"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[
		  {"key":"topology.kubernetes.io/zone","operator":"In","values":["us-west-2a"]}]}]}}}}`), &spec); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range specDims(spec, Evidence{}) {
		got = append(got, d.Name+"="+d.Value)
	}
	want := []string{
		"spec/affinity=node requires topology.kubernetes.io/zone In us-west-2a",
		`spec/dnsConfig={"options":[{"name":"ndots","value":"1"}]}`,
		"spec/hostNetwork=true",
		"spec/runtimeClassName=nvidia",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("specDims (-want +got)\n%s", diff)
	}
}

// An affinity reads as its rules say; one with a rule it does not read
// is left to its digest.
func TestAffinityString(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":50,"preference":{"matchExpressions":[{"key":"pool","operator":"In","values":["a","b"]}]}}]}}`,
			"node prefers(50) pool In a,b"},
		{`{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"kubernetes.io/hostname"}]}}`,
			"pod anti-affinity requires app=web per kubernetes.io/hostname"},
		{`{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"gpu","operator":"Exists"}]},{"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]}]}}}`,
			"node requires gpu Exists | metadata.name In n1"},
		{`{"someFutureAffinity":{}}`, ""},
		{`{"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"topologyKey":"zone"}]}}`, ""},
	} {
		var a map[string]any
		if err := json.Unmarshal([]byte(tt.in), &a); err != nil {
			t.Fatal(err)
		}
		if got := affinityString(a); got != tt.want {
			t.Errorf("affinityString(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
