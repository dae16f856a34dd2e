package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/internal/testenv"
)

// kubectlCmd is the control plane's kubectl, as admin.
func kubectlCmd(dir string, args ...string) *exec.Cmd {
	bin := "kubectl"
	if b := os.Getenv("FAULTLINE_CLUSTER_BIN"); b != "" {
		bin = filepath.Join(b, "kubectl")
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(dir, "admin.kubeconfig"))
	return cmd
}

func kubectl(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := kubectlCmd(dir, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// kubectlOK runs kubectl and returns its output, or "" on failure.
func kubectlOK(dir string, args ...string) string {
	out, err := kubectlCmd(dir, args...).CombinedOutput()
	if err != nil {
		return ""
	}
	return string(out)
}

func kubectlApply(t *testing.T, dir, yaml string) {
	t.Helper()
	cmd := kubectlCmd(dir, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(yaml)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s\n%s", err, out, yaml)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// TestIdentityDiffOnARealControlPlane makes the three changes an
// investigation must tell apart, snapshots the cluster around each, and
// checks that identity diff names exactly the changed dimension: a
// ConfigMap key, a node pool's driver label, and an image digest that moved
// under an unchanged tag.
func TestIdentityDiffOnARealControlPlane(t *testing.T) {
	dir := os.Getenv("FAULTLINE_CLUSTER_DIR")
	if dir == "" {
		testenv.Missing(t, "no control plane (FAULTLINE_CLUSTER_DIR unset): run hack/cluster/up")
	}
	ctx := context.Background()
	ns := fmt.Sprintf("fl-id-%d", time.Now().UnixNano()%1e6)
	node := ns + "-gpu"
	db := filepath.Join(t.TempDir(), "t.db")
	kubectlApply(t, dir, fmt.Sprintf(`apiVersion: v1
kind: Node
metadata:
  name: %s
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {type: kwok, pool: h100-x, nvidia.com/cuda.driver.major: "550", faultline-test: %s}
---
apiVersion: v1
kind: Namespace
metadata: {name: %s}
`, node, ns, ns))
	waitFor(t, "service account", func() bool {
		return strings.Contains(kubectlOK(dir, "get", "sa", "default", "-n", ns), "default")
	})
	kubectlApply(t, dir, fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: trainer-env, namespace: %[1]s}
data: {LR: "0.001", BATCH: "512"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: %[1]s}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      nodeSelector: {faultline-test: %[1]s}
      automountServiceAccountToken: false
      containers:
      - name: server
        image: registry.example/api:1.0
        envFrom: [{configMapRef: {name: trainer-env}}]
`, ns))
	// kwok runs pods without pulling images: give each running pod the
	// digest its image resolved to, as a kubelet would report it.
	setDigest := func(digest string) {
		waitFor(t, "pods running", func() bool {
			out := kubectlOK(dir, "get", "pods", "-n", ns, "--field-selector", "status.phase=Running", "-o", "name")
			return strings.Count(out, "pod/") == 2
		})
		for _, p := range strings.Fields(kubectl(t, dir, "get", "pods", "-n", ns, "--field-selector", "status.phase=Running", "-o", "name")) {
			status := fmt.Sprintf(`{"status":{"containerStatuses":[{"name":"server","image":"registry.example/api:1.0","imageID":"registry.example/api@%s","ready":true,"restartCount":0,"started":true,"state":{"running":{"startedAt":"2026-05-01T10:00:00Z"}}}]}}`, digest)
			kubectl(t, dir, "patch", p, "-n", ns, "--subresource=status", "--type=merge", "-p", status)
		}
	}
	digestA := "sha256:" + strings.Repeat("a", 64)
	digestB := "sha256:" + strings.Repeat("b", 64)
	setDigest(digestA)

	// snapshot ingests the namespace and returns an instant after it. The
	// times objects record (managedFields) have second precision: the
	// instant is taken a full second after the last change and a full
	// second before the next, so no change can fall into its second.
	snapshot := func() string {
		time.Sleep(1100 * time.Millisecond)
		out, err := faultline(ctx, "--db", db, "ingest", "cluster", "-n", ns, "--kubeconfig", filepath.Join(dir, "admin.kubeconfig")).CombinedOutput()
		if err != nil {
			t.Fatalf("ingest cluster: %v\n%s", err, out)
		}
		at := time.Now().UTC().Format(time.RFC3339)
		time.Sleep(1100 * time.Millisecond)
		return at
	}
	diff := func(args ...string) []string {
		t.Helper()
		out, err := faultline(ctx, append([]string{"--db", db, "identity", "diff", "-o", "json"}, args...)...).Output()
		if err != nil {
			t.Fatalf("identity diff %v: %v\n%s", args, err, out)
		}
		var res struct {
			Changes []struct{ Dimension, From, To string }
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		var dims []string
		for _, c := range res.Changes {
			if c.From == c.To {
				t.Errorf("change without a difference: %+v", c)
			}
			dims = append(dims, c.Dimension)
		}
		return dims
	}
	pod := "pod/" + ns + "/" + strings.TrimPrefix(strings.Fields(kubectl(t, dir, "get", "pods", "-n", ns, "-o", "name"))[0], "pod/")

	t1 := snapshot()
	kubectl(t, dir, "patch", "configmap", "trainer-env", "-n", ns, "--type=merge", "-p", `{"data":{"LR":"0.01"}}`)
	t2 := snapshot()
	if got, want := diff(pod, "--at", t1, "--vs", t2), []string{"configmap/trainer-env", "configmap/trainer-env/LR"}; !cmp.Equal(want, got) {
		t.Errorf("configmap change: diff names %v, want %v", got, want)
	}

	kubectl(t, dir, "label", "node", node, "nvidia.com/cuda.driver.major=560", "--overwrite")
	t3 := snapshot()
	if got, want := diff(pod, "--at", t2, "--vs", t3), []string{"node.label/nvidia.com/cuda.driver.major"}; !cmp.Equal(want, got) {
		t.Errorf("driver relabel: diff names %v, want %v", got, want)
	}

	// The tag moves: pods recreated by the same ReplicaSet pull another digest.
	kubectl(t, dir, "delete", "pods", "-n", ns, "-l", "app=api", "--wait=true")
	setDigest(digestB)
	t4 := snapshot()
	if got, want := diff("deployment/"+ns+"/api", "--at", t3, "--vs", t4), []string{"image.digest/server"}; !cmp.Equal(want, got) {
		t.Errorf("digest drift: diff names %v, want %v", got, want)
	}
}
