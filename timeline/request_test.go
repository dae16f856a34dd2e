package timeline

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFoldUser(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"system:node:node-0042", "system:node:*"},
		{"system:node:", "system:node:*"},
		{"system:serviceaccount:llm-pretrain:worker-17", "system:serviceaccount:llm-pretrain:*"},
		{"system:serviceaccount:kube-system:job-controller", "system:serviceaccount:kube-system:*"},
		{"system:serviceaccount:broken", "system:serviceaccount:broken"},
		{"system:kube-scheduler", "system:kube-scheduler"},
		{"alice@example.com", "alice@example.com"},
		{"", ""},
	} {
		if diff := cmp.Diff(tc.want, FoldUser(tc.in)); diff != "" {
			t.Errorf("FoldUser(%q) (-want +got)\n%s", tc.in, diff)
		}
	}
}

func TestFoldUserAgent(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"trainer/2.3 (linux/amd64) client-go/v0.37.2", "trainer"},
		{"kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/$Format/system:serviceaccount:kube-system:job-controller", "kube-controller-manager"},
		{"kubelet/v1.37.2 (linux/amd64) kubernetes/abcdef0", "kubelet"},
		{"Go-http-client/2.0", "Go-http-client"},
		{"curl 8.5", "curl"},
		{"prometheus", "prometheus"},
		{"", ""},
	} {
		if diff := cmp.Diff(tc.want, FoldUserAgent(tc.in)); diff != "" {
			t.Errorf("FoldUserAgent(%q) (-want +got)\n%s", tc.in, diff)
		}
	}
}

func TestLatencyBuckets(t *testing.T) {
	if got := LatencyBucket(0); got != 0 {
		t.Errorf("LatencyBucket(0) = %d, want 0", got)
	}
	if got := LatencyBucket(100 * time.Microsecond); got != 0 {
		t.Errorf("LatencyBucket(100µs) = %d, want 0", got)
	}
	if got := LatencyBucket(-time.Second); got != 0 {
		t.Errorf("LatencyBucket(-1s) = %d, want 0", got)
	}
	if got, want := LatencyBucket(2*time.Hour), LatencyBuckets-1; got != want {
		t.Errorf("LatencyBucket(2h) = %d, want the last, %d", got, want)
	}
	if up := LatencyBucketUpper(LatencyBuckets - 2); up < time.Hour {
		t.Errorf("last bounded bucket ends at %v, want >= 1h", up)
	}
	for b := 1; b < LatencyBuckets-1; b++ {
		lo, hi := LatencyBucketUpper(b-1), LatencyBucketUpper(b)
		if ratio := float64(hi) / float64(lo); ratio < 1.09 || ratio > 1.11 {
			t.Errorf("bucket %d: (%v, %v] is %.3fx wide, want about 1.10x", b, lo, hi, ratio)
		}
		// Every latency falls in the bucket whose bounds hold it.
		for _, d := range []time.Duration{lo + 1, (lo + hi) / 2, hi} {
			if got := LatencyBucket(d); got != b {
				t.Errorf("LatencyBucket(%v) = %d, want %d", d, got, b)
			}
		}
	}
	// Monotonic over a sweep of latencies.
	prev := 0
	for d := time.Duration(1); d < 3*time.Hour; d = d*21/20 + 1 {
		b := LatencyBucket(d)
		if b < prev {
			t.Fatalf("LatencyBucket(%v) = %d < %d for a shorter latency", d, b, prev)
		}
		if d > LatencyBucketUpper(b) {
			t.Fatalf("LatencyBucket(%v) = %d, whose upper bound %v is below it", d, b, LatencyBucketUpper(b))
		}
		prev = b
	}
}

// ListFromEtcd and ListHasLimit are tested in timeline/sqlite against the
// SQL the backfill uses: TestListRulesInGoAndSQL.
