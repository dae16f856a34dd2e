// Package testcluster finds, for a test, the real services hack/test runs
// beside the local control plane: the Prometheus of hack/prometheus and the
// CoreDNS of hack/coredns (through FAULTLINE_PROMETHEUS_URL,
// FAULTLINE_COREDNS_ADDR and FAULTLINE_COREDNS_METRICS_URL), and runs the DNS
// load generator hack/cluster/dnsload against that CoreDNS. When a service
// is not there the test skips, saying how to start it; under CI it fails
// (internal/testenv).
package testcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testenv"
)

// Prometheus returns the base URL of the running hack/prometheus server.
func Prometheus(t testing.TB) string {
	t.Helper()
	url := os.Getenv("FAULTLINE_PROMETHEUS_URL")
	if url == "" {
		testenv.Missing(t, "no Prometheus (FAULTLINE_PROMETHEUS_URL unset): after hack/cluster/up, run "+
			"export FAULTLINE_PROMETHEUS_URL=$(bash hack/prometheus/up | tail -1)")
	}
	return strings.TrimSuffix(url, "/")
}

// CoreDNS returns the DNS address (127.0.0.1:PORT) and the /metrics URL of
// the running hack/coredns server.
func CoreDNS(t testing.TB) (addr, metricsURL string) {
	t.Helper()
	addr, metricsURL = os.Getenv("FAULTLINE_COREDNS_ADDR"), os.Getenv("FAULTLINE_COREDNS_METRICS_URL")
	if addr == "" || metricsURL == "" {
		testenv.Missing(t, "no CoreDNS (FAULTLINE_COREDNS_ADDR or FAULTLINE_COREDNS_METRICS_URL unset): after hack/cluster/up, run "+
			"export FAULTLINE_COREDNS_ADDR=$(bash hack/coredns/up | tail -1) FAULTLINE_COREDNS_METRICS_URL=http://127.0.0.1:19153/metrics")
	}
	return addr, metricsURL
}

// ClusterDir returns the state directory of the running control plane
// (FAULTLINE_CLUSTER_DIR), which holds admin.kubeconfig, and holds the
// control plane shared until t ends (Share).
func ClusterDir(t testing.TB) string {
	t.Helper()
	dir := clusterDir(t)
	Share(t, dir)
	return dir
}

// ClusterDirAlone is ClusterDir for a test that stops or restarts a part of
// the control plane: it waits until no other test uses it, and holds it
// alone until t ends (Alone).
func ClusterDirAlone(t testing.TB) string {
	t.Helper()
	dir := clusterDir(t)
	Alone(t, dir)
	return dir
}

func clusterDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("FAULTLINE_CLUSTER_DIR")
	if dir == "" {
		testenv.Missing(t, "no control plane (FAULTLINE_CLUSTER_DIR unset): run hack/cluster/up and eval \"$(bash hack/cluster/env)\"")
	}
	return dir
}

// Resolver returns a resolver that sends every query to the DNS server at
// addr, whatever /etc/resolv.conf says. Ask it for absolute names (a
// trailing dot), or the host's search path applies.
func Resolver(addr string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
}

// DNSLoadSummary is the part of dnsload's JSON summary tests read.
type DNSLoadSummary struct {
	Workers       int              `json:"workers"`
	Start         time.Time        `json:"start"`
	End           time.Time        `json:"end"`
	Lookups       int64            `json:"lookups"`
	Found         int64            `json:"found"`
	Queries       int64            `json:"queries"`
	Answered      int64            `json:"answered"`
	Rcodes        map[string]int64 `json:"rcodes"`
	Timeouts      int64            `json:"timeouts"`
	Errors        int64            `json:"errors"`
	NXDOMAINShare float64          `json:"nxdomainShare"`
	FirstError    string           `json:"firstError"`
}

// DNSLoad builds hack/cluster/dnsload (in its own module; the go build
// cache makes a second build quick), runs it with args and returns its
// summary.
func DNSLoad(t testing.TB, ctx context.Context, args ...string) DNSLoadSummary {
	t.Helper()
	bin, err := buildDNSLoad(t.TempDir())
	if err != nil {
		t.Fatalf("building hack/cluster/dnsload: %v", err)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dnsload %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	var s DNSLoadSummary
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		t.Fatalf("dnsload's summary: %v\n%s", err, stdout.Bytes())
	}
	return s
}

// buildDNSLoad builds dnsload from the repository's hack/cluster module into
// dir.
func buildDNSLoad(dir string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside faultline's module (go env GOMOD = %q)", gomod)
	}
	bin := filepath.Join(dir, "dnsload")
	cmd := exec.Command("go", "build", "-o", bin, "./dnsload")
	cmd.Dir = filepath.Join(filepath.Dir(gomod), "hack", "cluster")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%v\n%s", err, out)
	}
	return bin, nil
}
