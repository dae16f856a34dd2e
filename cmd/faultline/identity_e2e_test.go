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

	"github.com/faultline/faultline/internal/testcluster"
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
	dir := testcluster.ClusterDir(t)
	ns := fmt.Sprintf("fl-id-%d", time.Now().UnixNano()%1e6)
	c := &identityCluster{
		t:    t,
		ctx:  context.Background(),
		dir:  dir,
		ns:   ns,
		node: ns + "-gpu",
		db:   filepath.Join(t.TempDir(), "t.db"),
	}
	c.applyNodeAndNamespace()
	c.applyWorkload()
	digestA := "sha256:" + strings.Repeat("a", 64)
	digestB := "sha256:" + strings.Repeat("b", 64)
	c.setDigest(digestA)
	pod := "pod/" + ns + "/" + strings.TrimPrefix(strings.Fields(kubectl(t, dir, "get", "pods", "-n", ns, "-o", "name"))[0], "pod/")

	t1 := c.snapshot()
	kubectl(t, dir, "patch", "configmap", "trainer-env", "-n", ns, "--type=merge", "-p", `{"data":{"LR":"0.01"}}`)
	t2 := c.snapshot()
	if got, want := c.diff(pod, "--at", t1, "--vs", t2), []string{"configmap/trainer-env", "configmap/trainer-env/LR"}; !cmp.Equal(want, got) {
		t.Errorf("configmap change: diff names %v, want %v", got, want)
	}

	kubectl(t, dir, "label", "node", c.node, "nvidia.com/cuda.driver.major=560", "--overwrite")
	t3 := c.snapshot()
	if got, want := c.diff(pod, "--at", t2, "--vs", t3), []string{"node.label/nvidia.com/cuda.driver.major"}; !cmp.Equal(want, got) {
		t.Errorf("driver relabel: diff names %v, want %v", got, want)
	}

	// The tag moves: pods recreated by the same ReplicaSet pull another digest.
	kubectl(t, dir, "delete", "pods", "-n", ns, "-l", "app=api", "--wait=true")
	c.setDigest(digestB)
	t4 := c.snapshot()
	if got, want := c.diff("deployment/"+ns+"/api", "--at", t3, "--vs", t4), []string{"image.digest/server"}; !cmp.Equal(want, got) {
		t.Errorf("digest drift: diff names %v, want %v", got, want)
	}
}

// identityCluster is one run of TestIdentityDiffOnARealControlPlane: its
// namespace and GPU node on the control plane in dir, and the database its
// snapshots go to.
type identityCluster struct {
	t        *testing.T
	ctx      context.Context
	dir      string
	ns, node string
	db       string
}

// applyNodeAndNamespace creates the fake GPU node and the namespace, and
// waits for the namespace's default service account.
func (c *identityCluster) applyNodeAndNamespace() {
	c.t.Helper()
	kubectlApply(c.t, c.dir, fmt.Sprintf(`apiVersion: v1
kind: Node
metadata:
  name: %s
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {type: kwok, pool: h100-x, nvidia.com/cuda.driver.major: "550", faultline-test: %s}
---
apiVersion: v1
kind: Namespace
metadata: {name: %s}
`, c.node, c.ns, c.ns))
	waitFor(c.t, "service account", func() bool {
		return strings.Contains(kubectlOK(c.dir, "get", "sa", "default", "-n", c.ns), "default")
	})
}

// applyWorkload creates the ConfigMap and the two-replica Deployment that
// reads it, pinned to the test's node.
func (c *identityCluster) applyWorkload() {
	c.t.Helper()
	kubectlApply(c.t, c.dir, fmt.Sprintf(`apiVersion: v1
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
`, c.ns))
}

// setDigest waits for both pods to run and gives each the digest its image
// resolved to, as a kubelet would report it: kwok runs pods without pulling
// images.
func (c *identityCluster) setDigest(digest string) {
	c.t.Helper()
	waitFor(c.t, "pods running", func() bool {
		out := kubectlOK(c.dir, "get", "pods", "-n", c.ns, "--field-selector", "status.phase=Running", "-o", "name")
		return strings.Count(out, "pod/") == 2
	})
	for _, p := range strings.Fields(kubectl(c.t, c.dir, "get", "pods", "-n", c.ns, "--field-selector", "status.phase=Running", "-o", "name")) {
		status := fmt.Sprintf(`{"status":{"containerStatuses":[{"name":"server","image":"registry.example/api:1.0","imageID":"registry.example/api@%s","ready":true,"restartCount":0,"started":true,"state":{"running":{"startedAt":"2026-05-01T10:00:00Z"}}}]}}`, digest)
		kubectl(c.t, c.dir, "patch", p, "-n", c.ns, "--subresource=status", "--type=merge", "-p", status)
	}
}

// snapshot ingests the namespace and returns an instant after it. The
// times objects record (managedFields) have second precision: the
// instant is taken a full second after the last change and a full
// second before the next, so no change can fall into its second.
func (c *identityCluster) snapshot() string {
	c.t.Helper()
	time.Sleep(1100 * time.Millisecond)
	out, err := faultline(c.ctx, "--db", c.db, "ingest", "cluster", "-n", c.ns, "--kubeconfig", filepath.Join(c.dir, "admin.kubeconfig")).CombinedOutput()
	if err != nil {
		c.t.Fatalf("ingest cluster: %v\n%s", err, out)
	}
	at := time.Now().UTC().Format(time.RFC3339)
	time.Sleep(1100 * time.Millisecond)
	return at
}

// diff runs identity diff -o json with args and returns the dimensions it
// names, in its order; a change whose from and to are equal is an error.
func (c *identityCluster) diff(args ...string) []string {
	c.t.Helper()
	out, err := faultline(c.ctx, append([]string{"--db", c.db, "identity", "diff", "-o", "json"}, args...)...).Output()
	if err != nil {
		c.t.Fatalf("identity diff %v: %v\n%s", args, err, out)
	}
	var res struct {
		Changes []struct{ Dimension, From, To string }
	}
	if err := json.Unmarshal(out, &res); err != nil {
		c.t.Fatalf("%v: %s", err, out)
	}
	var dims []string
	for _, ch := range res.Changes {
		if ch.From == ch.To {
			c.t.Errorf("change without a difference: %+v", ch)
		}
		dims = append(dims, ch.Dimension)
	}
	return dims
}
