package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testcluster"
	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
)

// TestFollowClusterOnClickHouse runs ingest cluster --follow into a
// ClickHouse store (--store) against the real control plane: the
// ConfigMap's first version comes from the initial list, a change made
// while following arrives through the watch, Ctrl-C stops it with
// everything committed, and a snapshot after it adds nothing. The store's
// LiveObjects, which a snapshot asks to infer deletions, runs here on the
// cluster.
func TestFollowClusterOnClickHouse(t *testing.T) {
	dir := testcluster.ClusterDir(t)
	dsn := clickhousetest.DSN(t)
	ns := fmt.Sprintf("fl-follow-%d", time.Now().UnixNano()%1e6)
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	kubectlApply(t, dir, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: trainer-env, namespace: %[1]s}
data: {LR: "0.001"}
`, ns))
	t.Cleanup(func() { kubectlOK(dir, "delete", "namespace", ns, "--wait=false") })

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ref := "configmap/" + ns + "/trainer-env"
	var stderr bytes.Buffer
	follow := faultline(ctx, "--store", dsn, "ingest", "cluster", "-n", ns, "--kubeconfig", kubeconfig, "--follow")
	follow.Stderr = &stderr
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	defer follow.Process.Kill()
	exited := make(chan error, 1)
	go func() { exited <- follow.Wait() }()
	versions := func(n int) func() bool {
		return func() bool {
			select {
			case err := <-exited:
				t.Fatalf("ingest cluster --follow exited early: %v; stderr:\n%s", err, stderr.String())
			default:
			}
			return len(history(t, dsn, ref)) == n
		}
	}

	waitFor(t, "the first version in ClickHouse", versions(1))
	kubectl(t, dir, "patch", "configmap", "trainer-env", "-n", ns, "--type=merge", "-p", `{"data":{"LR":"0.01"}}`)
	waitFor(t, "the watched change in ClickHouse", versions(2))

	if err := follow.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil || !strings.Contains(stderr.String(), "everything seen is committed") {
		t.Fatalf("follow after SIGINT: %v; stderr:\n%s", err, stderr.String())
	}
	got := history(t, dsn, ref)
	if changes := got[1].Changes; len(changes) != 1 || changes[0].Path != "data.LR" || changes[0].To != `"0.01"` {
		t.Errorf("the watched version's changes = %+v; want data.LR to \"0.01\"", changes)
	}

	if out, err := faultline(context.Background(), "--store", dsn, "ingest", "cluster", "-n", ns, "--kubeconfig", kubeconfig).CombinedOutput(); err != nil {
		t.Fatalf("snapshot after the follow: %v\n%s", err, out)
	}
	if again := history(t, dsn, ref); len(again) != 2 {
		t.Errorf("a snapshot after the follow: %d versions, want the same 2", len(again))
	}
}

// version is what the tests read of faultline history -o json.
type version struct {
	Changes []struct {
		Path, From, To string
	} `json:"changes"`
}

// history runs faultline history REF -o json on the store at dsn.
func history(t *testing.T, dsn, ref string) []version {
	t.Helper()
	cmd := faultline(context.Background(), "--store", dsn, "history", ref, "-o", "json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if e := stderr.String(); strings.Contains(e, "error: no version of ") || strings.Contains(e, "error: no timeline in database ") {
			return nil // not ingested yet
		}
		t.Fatalf("history %s: %v\n%s", ref, err, stderr.String())
	}
	var vs []version
	if err := json.Unmarshal(out, &vs); err != nil {
		t.Fatalf("history %s -o json: %v\n%s", ref, err, out)
	}
	return vs
}
