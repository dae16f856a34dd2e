package objdiff

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const configMapV1 = `{
  "apiVersion": "v1", "kind": "ConfigMap",
  "metadata": {"name": "trainer-config", "namespace": "ml", "uid": "4c1e", "resourceVersion": "1001",
    "creationTimestamp": "2026-05-01T10:00:00Z",
    "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"data\":{\"LR\":\"0.001\"}}"}},
  "data": {"LR": "0.001", "EPOCHS": "10", "OPTIMIZER": "adam"}
}`

const configMapV2 = `{
  "apiVersion": "v1", "kind": "ConfigMap",
  "metadata": {"name": "trainer-config", "namespace": "ml", "uid": "4c1e", "resourceVersion": "1044",
    "creationTimestamp": "2026-05-01T10:00:00Z",
    "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"data\":{\"LR\":\"0.01\"}}"}},
  "data": {"LR": "0.01", "EPOCHS": "10", "OPTIMIZER": "adam"}
}`

const deploymentV1 = `{
  "apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "trainer", "namespace": "ml", "generation": 4, "resourceVersion": "2001",
    "annotations": {"deployment.kubernetes.io/revision": "4"},
    "managedFields": [{"manager": "kubectl", "operation": "Update", "time": "2026-05-01T10:00:00Z"}]},
  "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "trainer"}},
    "template": {"metadata": {"creationTimestamp": null, "labels": {"app": "trainer"}},
      "spec": {"containers": [{"name": "trainer", "image": "trainer:1", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}},
  "status": {"observedGeneration": 4, "replicas": 2, "readyReplicas": 2,
    "conditions": [{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
      "lastUpdateTime": "2026-05-01T10:00:00Z", "lastTransitionTime": "2026-05-01T10:00:00Z"}]}
}`

const deploymentV2 = `{
  "apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "trainer", "namespace": "ml", "generation": 5, "resourceVersion": "2077",
    "annotations": {"deployment.kubernetes.io/revision": "5"},
    "managedFields": [{"manager": "kubectl", "operation": "Update", "time": "2026-05-01T11:00:00Z"}]},
  "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "trainer"}},
    "template": {"metadata": {"creationTimestamp": null, "labels": {"app": "trainer"}},
      "spec": {"containers": [{"name": "trainer", "image": "trainer:2", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}},
  "status": {"observedGeneration": 5, "replicas": 2, "readyReplicas": 2,
    "conditions": [{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
      "lastUpdateTime": "2026-05-01T11:00:05Z", "lastTransitionTime": "2026-05-01T10:00:00Z"}]}
}`

const nodeV1 = `{
  "apiVersion": "v1", "kind": "Node",
  "metadata": {"name": "gpu-7", "uid": "9a9a", "resourceVersion": "300",
    "labels": {"kubernetes.io/hostname": "gpu-7", "nvidia.com/cuda.driver.major": "535", "nvidia.com/gpu.present": "true"}},
  "spec": {"providerID": "aws:///eu-west-1a/i-0abc"},
  "status": {
    "conditions": [
      {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory", "message": "kubelet has sufficient memory available",
       "lastHeartbeatTime": "2026-05-01T10:00:00Z", "lastTransitionTime": "2026-04-30T08:00:00Z"},
      {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
       "lastHeartbeatTime": "2026-05-01T10:00:00Z", "lastTransitionTime": "2026-04-30T08:00:00Z"}],
    "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
    "images": [{"names": ["trainer:1"], "sizeBytes": 912345678}]}
}`

// nodeV2Heartbeat is nodeV1 forty seconds later: heartbeats, a new
// resourceVersion and a pulled image, nothing a user asked about.
const nodeV2Heartbeat = `{
  "apiVersion": "v1", "kind": "Node",
  "metadata": {"name": "gpu-7", "uid": "9a9a", "resourceVersion": "377",
    "labels": {"kubernetes.io/hostname": "gpu-7", "nvidia.com/cuda.driver.major": "535", "nvidia.com/gpu.present": "true"}},
  "spec": {"providerID": "aws:///eu-west-1a/i-0abc"},
  "status": {
    "conditions": [
      {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory", "message": "kubelet has sufficient memory available",
       "lastHeartbeatTime": "2026-05-01T10:00:40Z", "lastTransitionTime": "2026-04-30T08:00:00Z"},
      {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
       "lastHeartbeatTime": "2026-05-01T10:00:40Z", "lastTransitionTime": "2026-04-30T08:00:00Z"}],
    "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
    "images": [{"names": ["trainer:2"], "sizeBytes": 912345999}, {"names": ["trainer:1"], "sizeBytes": 912345678}]}
}`

// nodeV2Driver is nodeV1 after a driver upgrade that left the node NotReady.
const nodeV2Driver = `{
  "apiVersion": "v1", "kind": "Node",
  "metadata": {"name": "gpu-7", "uid": "9a9a", "resourceVersion": "512",
    "labels": {"kubernetes.io/hostname": "gpu-7", "nvidia.com/cuda.driver.major": "550", "nvidia.com/gpu.present": "true"}},
  "spec": {"providerID": "aws:///eu-west-1a/i-0abc"},
  "status": {
    "conditions": [
      {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory", "message": "kubelet has sufficient memory available",
       "lastHeartbeatTime": "2026-05-01T10:05:00Z", "lastTransitionTime": "2026-04-30T08:00:00Z"},
      {"type": "Ready", "status": "False", "reason": "KubeletNotReady", "message": "container runtime network not ready",
       "lastHeartbeatTime": "2026-05-01T10:05:00Z", "lastTransitionTime": "2026-05-01T10:04:31Z"}],
    "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
    "images": [{"names": ["trainer:1"], "sizeBytes": 912345678}]}
}`

const leaseV1 = `{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
  "metadata": {"name": "gpu-7", "namespace": "kube-node-lease", "resourceVersion": "88"},
  "spec": {"holderIdentity": "gpu-7", "leaseDurationSeconds": 40, "renewTime": "2026-05-01T10:00:00.000000Z"}}`

const leaseV2 = `{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
  "metadata": {"name": "gpu-7", "namespace": "kube-node-lease", "resourceVersion": "91"},
  "spec": {"holderIdentity": "gpu-7", "leaseDurationSeconds": 40, "renewTime": "2026-05-01T10:00:10.000000Z"}}`

func TestDiffJSON(t *testing.T) {
	tests := []struct {
		name     string
		from, to string
		opt      Options
		want     []Change
	}{
		{
			name: "configmap value",
			from: configMapV1, to: configMapV2,
			want: []Change{{Path: "data.LR", From: `"0.001"`, To: `"0.01"`}},
		},
		{
			name: "key added and key removed",
			from: `{"kind": "ConfigMap", "data": {"LR": "0.01", "EPOCHS": "10"}}`,
			to:   `{"kind": "ConfigMap", "data": {"LR": "0.01", "WARMUP": "500"}}`,
			want: []Change{
				{Path: "data.EPOCHS", From: `"10"`, To: ""},
				{Path: "data.WARMUP", From: "", To: `"500"`},
			},
		},
		{
			name: "added key holding an object is one change",
			from: `{"spec": {}}`,
			to:   `{"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}}}`,
			want: []Change{{Path: "spec.affinity", To: `{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[]}}}`}},
		},
		{
			name: "deployment image",
			from: deploymentV1, to: deploymentV2,
			want: []Change{
				{Path: `metadata.annotations["deployment.kubernetes.io/revision"]`, From: `"4"`, To: `"5"`},
				{Path: "spec.template.spec.containers[0].image", From: `"trainer:1"`, To: `"trainer:2"`},
			},
		},
		{
			name: "node label with a dotted and slashed key",
			from: nodeV1, to: nodeV2Driver,
			want: []Change{
				{Path: `metadata.labels["nvidia.com/cuda.driver.major"]`, From: `"535"`, To: `"550"`},
				{Path: "status.conditions[1].message", From: `"kubelet is posting ready status"`, To: `"container runtime network not ready"`},
				{Path: "status.conditions[1].reason", From: `"KubeletReady"`, To: `"KubeletNotReady"`},
				{Path: "status.conditions[1].status", From: `"True"`, To: `"False"`},
			},
		},
		{
			name: "container appended",
			from: `{"spec": {"containers": [{"name": "trainer", "image": "trainer:1"}]}}`,
			to:   `{"spec": {"containers": [{"name": "trainer", "image": "trainer:1"}, {"name": "dcgm-exporter", "image": "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5"}]}}`,
			want: []Change{{Path: "spec.containers[1]", To: `{"image":"nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5","name":"dcgm-exporter"}`}},
		},
		{
			name: "container removed from the front compares by index",
			from: `{"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}`,
			to:   `{"spec": {"containers": [{"name": "b"}]}}`,
			want: []Change{
				{Path: "spec.containers[0].name", From: `"a"`, To: `"b"`},
				{Path: "spec.containers[1]", From: `{"name":"b"}`},
			},
		},
		{
			name: "node heartbeat only",
			from: nodeV1, to: nodeV2Heartbeat,
			want: nil,
		},
		{
			name: "node heartbeat with KeepNoise",
			from: nodeV1, to: nodeV2Heartbeat,
			opt: Options{KeepNoise: true},
			want: []Change{
				{Path: "metadata.resourceVersion", From: `"300"`, To: `"377"`},
				{Path: "status.conditions[0].lastHeartbeatTime", From: `"2026-05-01T10:00:00Z"`, To: `"2026-05-01T10:00:40Z"`},
				{Path: "status.conditions[1].lastHeartbeatTime", From: `"2026-05-01T10:00:00Z"`, To: `"2026-05-01T10:00:40Z"`},
				{Path: "status.images[0].names[0]", From: `"trainer:1"`, To: `"trainer:2"`},
				{Path: "status.images[0].sizeBytes", From: `912345678`, To: `912345999`},
				{Path: "status.images[1]", To: `{"names":["trainer:1"],"sizeBytes":912345678}`},
			},
		},
		{
			name: "lease renewal",
			from: leaseV1, to: leaseV2,
			want: nil,
		},
		{
			name: "renewTime is noise only on a Lease",
			from: `{"kind": "Other", "spec": {"renewTime": "a"}}`,
			to:   `{"kind": "Other", "spec": {"renewTime": "b"}}`,
			want: []Change{{Path: "spec.renewTime", From: `"a"`, To: `"b"`}},
		},
		{
			name: "last-applied-configuration gone with the annotations map",
			from: `{"metadata": {"name": "x", "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}}}`,
			to:   `{"metadata": {"name": "x"}}`,
			want: nil,
		},
		{
			name: "deletion is signal",
			from: `{"metadata": {"name": "x", "uid": "1"}}`,
			to:   `{"metadata": {"name": "x", "uid": "1", "deletionTimestamp": "2026-05-01T10:00:00Z", "deletionGracePeriodSeconds": 30}}`,
			want: []Change{
				{Path: "metadata.deletionGracePeriodSeconds", To: `30`},
				{Path: "metadata.deletionTimestamp", To: `"2026-05-01T10:00:00Z"`},
			},
		},
		{
			name: "nested type change string to object",
			from: `{"spec": {"strategy": "Recreate"}}`,
			to:   `{"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}}}}`,
			want: []Change{{Path: "spec.strategy", From: `"Recreate"`, To: `{"rollingUpdate":{"maxSurge":"25%"},"type":"RollingUpdate"}`}},
		},
		{
			name: "array to object, null to value, number to string",
			from: `{"a": [1], "b": null, "c": 1, "d": []}`,
			to:   `{"a": {"0": 1}, "b": false, "c": "1", "d": null}`,
			want: []Change{
				{Path: "a", From: `[1]`, To: `{"0":1}`},
				{Path: "b", From: `null`, To: `false`},
				{Path: "c", From: `1`, To: `"1"`},
				{Path: "d", From: `[]`, To: `null`},
			},
		},
		{
			name: "numbers compare by value",
			from: `{"a": 1, "b": 1.50, "c": 1e3, "d": -0, "e": 9007199254740993}`,
			to:   `{"a": 1.0, "b": 15e-1, "c": 1000, "d": 0, "e": 9007199254740992}`,
			want: []Change{{Path: "e", From: `9007199254740993`, To: `9007199254740992`}},
		},
		{
			name: "keys that are not identifiers",
			from: `{"data": {"": 1, "0": 1, "a b": 1, "é": 1, "q\"uote": 1, "x.y": 1, "<&>": 1, "ok-key_1": 1}}`,
			to:   `{"data": {"": 2, "0": 2, "a b": 2, "é": 2, "q\"uote": 2, "x.y": 2, "<&>": 2, "ok-key_1": 2}}`,
			want: []Change{
				{Path: "data.ok-key_1", From: "1", To: "2"}, // '.' sorts before '['
				{Path: `data[""]`, From: "1", To: "2"},
				{Path: `data["0"]`, From: "1", To: "2"},
				{Path: `data["<&>"]`, From: "1", To: "2"},
				{Path: `data["a b"]`, From: "1", To: "2"},
				{Path: `data["q\"uote"]`, From: "1", To: "2"},
				{Path: `data["x.y"]`, From: "1", To: "2"},
				{Path: `data["é"]`, From: "1", To: "2"},
			},
		},
		{
			name: "html characters are not escaped",
			from: `{"data": {"cmd": "a && b"}}`,
			to:   `{"data": {"cmd": "a < b"}}`,
			want: []Change{{Path: "data.cmd", From: `"a && b"`, To: `"a < b"`}},
		},
		{
			name: "identical",
			from: deploymentV1, to: deploymentV1,
			want: nil,
		},
		{
			name: "object created",
			from: `null`, to: `{"kind": "ConfigMap", "data": {"a": "b"}}`,
			want: []Change{{Path: "", From: "", To: `{"data":{"a":"b"},"kind":"ConfigMap"}`}},
		},
		{
			name: "object deleted",
			from: `{}`, to: `null`,
			want: []Change{{Path: "", From: "{}", To: ""}},
		},
		{
			name: "neither exists",
			from: `null`, to: ` null `,
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DiffJSON([]byte(tt.from), []byte(tt.to), tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DiffJSON (-want +got)\n%s", diff)
			}
		})
	}
}

// TestDiffFloat64 runs Diff on values decoded the default way (numbers as
// float64) and mixed with json.Number.
func TestDiffFloat64(t *testing.T) {
	tests := []struct {
		name     string
		from, to map[string]any
		want     []Change
	}{
		{
			name: "json.Number and float64 equal",
			from: map[string]any{"spec": map[string]any{"replicas": json.Number("3"), "ratio": json.Number("0.1"), "big": json.Number("1e21")}},
			to:   map[string]any{"spec": map[string]any{"replicas": float64(3), "ratio": 0.1, "big": 1e21}},
			want: nil,
		},
		{
			name: "Go integers as in unstructured.Unstructured",
			from: map[string]any{"spec": map[string]any{"replicas": int64(3), "port": int32(80), "n": uint8(1)}},
			to:   map[string]any{"spec": map[string]any{"replicas": json.Number("3"), "port": float64(8080), "n": 1.0}},
			want: []Change{{Path: "spec.port", From: "80", To: "8080"}},
		},
		{
			name: "typed Go values go through their JSON form",
			from: map[string]any{"args": []string{"--lr", "0.01"}, "labels": map[string]string{"a": "1"}},
			to:   map[string]any{"args": []any{"--lr", "0.1"}, "labels": map[string]any{"a": "1"}},
			want: []Change{{Path: "args[1]", From: `"0.01"`, To: `"0.1"`}},
		},
		{
			name: "nil map inside is null",
			from: map[string]any{"a": map[string]any(nil), "b": []any(nil)},
			to:   map[string]any{"a": nil, "b": nil},
			want: nil,
		},
		{
			name: "strings and keys that are not UTF-8 compare as encoding/json renders them",
			from: map[string]any{"a\xff": "x\xfe", "b": "\xff"},
			to:   map[string]any{"a\ufffd": "x\ufffd", "b\xff": "y", "b\xfe": "z", "b": "\ufffd"},
			want: []Change{{Path: "[\"b\ufffd\"]", To: `"z"`}}, // of colliding keys, the smallest ("b\xfe") wins
		},
		{
			name: "object created (nil map)",
			from: nil,
			to:   map[string]any{"kind": "Pod"},
			want: []Change{{Path: "", To: `{"kind":"Pod"}`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Diff(tt.from, tt.to, Options{})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Diff (-want +got)\n%s", diff)
			}
		})
	}

	var from, to map[string]any
	if err := json.Unmarshal([]byte(deploymentV1), &from); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(deploymentV2), &to); err != nil {
		t.Fatal(err)
	}
	want, err := DiffJSON([]byte(deploymentV1), []byte(deploymentV2), Options{KeepNoise: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, Diff(from, to, Options{KeepNoise: true})); diff != "" {
		t.Errorf("float64 decoding vs UseNumber (-UseNumber +float64)\n%s", diff)
	}
}

func TestDiffDoesNotMutateInputs(t *testing.T) {
	var from, to map[string]any
	dec := func(s string, v *map[string]any) {
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		if err := d.Decode(v); err != nil {
			t.Fatal(err)
		}
	}
	dec(nodeV1, &from)
	dec(nodeV2Heartbeat, &to)
	from["metadata"].(map[string]any)["annotations"] = map[string]any{"kubectl.kubernetes.io/last-applied-configuration": "{}"}
	to["spec"].(map[string]any)["ratio"] = 0.5 // a float64 next to json.Numbers
	fromBefore, toBefore := deepCopy(from), deepCopy(to)

	for _, opt := range []Options{{}, {KeepNoise: true}} {
		Diff(from, to, opt)
		if diff := cmp.Diff(fromBefore, from); diff != "" {
			t.Errorf("Diff(%+v) changed from (-before +after)\n%s", opt, diff)
		}
		if diff := cmp.Diff(toBefore, to); diff != "" {
			t.Errorf("Diff(%+v) changed to (-before +after)\n%s", opt, diff)
		}
	}
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, e := range v {
			s[i] = deepCopy(e)
		}
		return s
	default:
		return v
	}
}

func TestDiffDeterministic(t *testing.T) {
	// Many keys and elements, so map iteration order would show if it leaked.
	from := map[string]any{}
	to := map[string]any{}
	for i := range 50 {
		k := strings.Repeat("k", i%7+1) + string(rune('a'+i%26))
		from[k] = []any{float64(i), "x", map[string]any{"a": "b"}}
		to[k] = []any{float64(i + 1), "x", map[string]any{"a": "c"}, true}
	}
	first, _ := json.Marshal(Diff(from, to, Options{}))
	for range 20 {
		got, _ := json.Marshal(Diff(from, to, Options{}))
		if string(got) != string(first) {
			t.Fatalf("Diff output changed between runs:\n%s\n%s", first, got)
		}
	}
}

func TestDiffJSONErrors(t *testing.T) {
	tests := []struct {
		name, from, to, want string
	}{
		{"bad from", `{"a":`, `{}`, "objdiff: from: byte 5: unexpected end of JSON input"},
		{"bad to", `{}`, `{"a" 1}`, "objdiff: to: byte 6: invalid character '1' after object key"},
		{"empty", ``, `{}`, "objdiff: from: no JSON value"},
		{"blank", `{}`, " \n", "objdiff: to: no JSON value"},
		{"array", `{}`, `[{}]`, "objdiff: to: want a JSON object, got an array"},
		{"number", `1`, `{}`, "objdiff: from: want a JSON object, got a number"},
		{"trailing data", `{} {}`, `{}`, "objdiff: from: byte 4: data after the JSON value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DiffJSON([]byte(tt.from), []byte(tt.to), Options{})
			if err == nil || err.Error() != tt.want {
				t.Errorf("DiffJSON error = %v, want %s", err, tt.want)
			}
		})
	}
}

func TestNoiseTable(t *testing.T) {
	for _, n := range noiseTable {
		p, err := parsePath(n.path)
		if err != nil {
			t.Errorf("%q: %v", n.path, err)
		}
		if got := formatPath(p); got != n.path {
			t.Errorf("noise path %q is not in canonical form %q", n.path, got)
		}
		if n.why == "" {
			t.Errorf("%q: no reason given", n.path)
		}
	}
}

func TestCanonDecimal(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"0", "0", true}, {"-0", "0", true}, {"0.000", "0", true}, {"0e99", "0", true},
		{"1", "1e0", true}, {"1.0", "1e0", true}, {"10", "1e1", true}, {"1e1", "1e1", true},
		{"0.5", "5e-1", true}, {"5E-1", "5e-1", true}, {"-1.25e+2", "-125e0", true},
		{"100.100", "1001e-1", true}, {"1e00000000000000000000000001", "1e1", true},
		{"", "", false}, {"-", "", false}, {"01", "", false}, {"1.", "", false},
		{".5", "", false}, {"1e", "", false}, {"+1", "", false}, {"1x", "", false}, {"NaN", "", false},
	}
	for _, tt := range tests {
		got, ok := canonDecimal(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("canonDecimal(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// formatPath is parsePath's inverse.
func formatPath(p []pathSeg) string {
	var b strings.Builder
	for _, s := range p {
		switch s.index {
		case segKey:
			writeKey(&b, s.key)
		case segAll:
			b.WriteString("[*]")
		default:
			b.WriteString("[")
			b.WriteString(strings.TrimSpace(jsonString(s.index)))
			b.WriteString("]")
		}
	}
	return b.String()
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// lookup resolves a parsed path in a normalized value.
func lookup(v any, p []pathSeg) (any, bool) {
	for _, s := range p {
		switch n := v.(type) {
		case map[string]any:
			if s.index != segKey {
				return nil, false
			}
			e, ok := n[s.key]
			if !ok {
				return nil, false
			}
			v = e
		case array:
			if s.index < 0 {
				return nil, false
			}
			e, ok := n[s.index]
			if !ok {
				return nil, false
			}
			v = e
		default:
			return nil, false
		}
	}
	return v, true
}

// FuzzDiffJSON: on any two objects DiffJSON accepts, with and without
// noise, an object equals itself, the diff the other way is this one
// swapped, the float64 decoding neither panics nor differs from itself,
// and every change is sorted, real, valid JSON, at a path that parses
// back and holds From on one side and To on the other.
func FuzzDiffJSON(f *testing.F) {
	pairs := [][2]string{
		{configMapV1, configMapV2},
		{deploymentV1, deploymentV2},
		{nodeV1, nodeV2Heartbeat},
		{nodeV1, nodeV2Driver},
		{leaseV1, leaseV2},
		{`null`, `{"a":1}`},
		{`{"a":[1,2,3]}`, `{"a":[3]}`},
		{`{"a":1.0,"b":"x","c":{"d":[]}}`, `{"a":1,"b":{"x":null},"c":{"d":[{}]}}`},
		{`{"":{"x.y":{"0":[[]]}}}`, `{"":{"x.y":{"0":[[1e999]]}}}`},
		{`{"status":{"conditions":[{"lastHeartbeatTime":"x"}]}}`, `{"status":{"conditions":[{"lastHeartbeatTime":"y"}]}}`},
	}
	for _, p := range pairs {
		f.Add([]byte(p[0]), []byte(p[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		for _, opt := range []Options{{}, {KeepNoise: true}} {
			ab, err := DiffJSON(a, b, opt)
			if err != nil {
				return
			}
			checkDiffSymmetric(t, a, b, opt, ab)
			checkDiffFloat64(t, a, b, opt)
			checkChanges(t, a, b, opt, ab)
		}
	})
}

// checkDiffSymmetric: each side diffs to nothing against itself, and
// DiffJSON(b, a) is ab, DiffJSON(a, b), with From and To swapped.
func checkDiffSymmetric(t *testing.T, a, b []byte, opt Options, ab []Change) {
	t.Helper()
	for _, side := range [][]byte{a, b} {
		if self, err := DiffJSON(side, side, opt); err != nil || len(self) != 0 {
			t.Fatalf("DiffJSON(x, x) = %v, %v; want no changes", self, err)
		}
	}
	ba, err := DiffJSON(b, a, opt)
	if err != nil {
		t.Fatalf("DiffJSON(b, a): %v after DiffJSON(a, b) succeeded", err)
	}
	swapped := make([]Change, len(ab))
	for i, c := range ab {
		swapped[i] = Change{Path: c.Path, From: c.To, To: c.From}
	}
	if diff := cmp.Diff(swapped, ba, cmpEmptyIsNil); diff != "" {
		t.Fatalf("DiffJSON(b, a) is not DiffJSON(a, b) swapped (-swapped +got)\n%s", diff)
	}
}

// checkDiffFloat64: the same inputs decoded the default way (float64)
// must not panic either, and equal themselves.
func checkDiffFloat64(t *testing.T, a, b []byte, opt Options) {
	t.Helper()
	var fx, fy map[string]any
	if json.Unmarshal(a, &fx) == nil && json.Unmarshal(b, &fy) == nil {
		Diff(fx, fy, opt)
		if self := Diff(fx, fx, opt); len(self) != 0 {
			t.Fatalf("Diff(x, x) with float64 numbers = %v; want no changes", self)
		}
	}
}

// checkChanges: the changes of ab are sorted by unique path, each changes
// something, has an empty path only when the root appears or goes, holds
// valid JSON, has a path that parses and reformats to itself, and that
// path holds From in a and To in b (normalized, noise stripped unless
// opt keeps it).
func checkChanges(t *testing.T, a, b []byte, opt Options, ab []Change) {
	t.Helper()
	x, _ := decodeObject(a)
	y, _ := decodeObject(b)
	nx, ny := normalizeObject(x), normalizeObject(y)
	if !opt.KeepNoise {
		stripNoise(nx, ny)
	}
	for i, c := range ab {
		if i > 0 && ab[i-1].Path >= c.Path {
			t.Fatalf("changes not sorted by unique path: %q then %q", ab[i-1].Path, c.Path)
		}
		if c.From == c.To {
			t.Fatalf("change %+v: From == To", c)
		}
		if c.Path == "" && ((x == nil) == (y == nil) || len(ab) != 1) {
			t.Fatalf("change %+v: empty path, but the root does not change between absent and present (all: %v)", c, ab)
		}
		for _, s := range []string{c.From, c.To} {
			if s != "" && !json.Valid([]byte(s)) {
				t.Fatalf("change %+v: %q is not JSON", c, s)
			}
		}
		p, err := parsePath(c.Path)
		if err != nil {
			t.Fatalf("change %+v: path does not parse: %v", c, err)
		}
		if got := formatPath(p); got != c.Path {
			t.Fatalf("path %q reformats as %q", c.Path, got)
		}
		if c.Path == "" {
			continue
		}
		checkChangeValues(t, c, p, nx, ny)
	}
}

// checkChangeValues: the value at path p is c.From in nx and c.To in ny,
// "" where the path is absent.
func checkChangeValues(t *testing.T, c Change, p []pathSeg, nx, ny map[string]any) {
	t.Helper()
	for _, side := range []struct {
		obj  map[string]any
		want string
	}{{nx, c.From}, {ny, c.To}} {
		got := ""
		if v, ok := lookup(side.obj, p); ok {
			got = renderJSON(v)
		}
		if got != side.want {
			t.Fatalf("change %+v: value at path is %q", c, got)
		}
	}
}

var cmpEmptyIsNil = cmp.FilterValues(func(x, y []Change) bool { return len(x) == 0 && len(y) == 0 }, cmp.Comparer(func(_, _ []Change) bool { return true }))

// Compile-time check that the reporter satisfies what cmp.Reporter wants.
var _ = cmp.Reporter(&reporter{})
