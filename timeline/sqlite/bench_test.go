package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/faultline/faultline/timeline"
)

// BenchmarkAddRecord measures the writer alone: realistic audit records
// (1,000 nodes, 50 namespaces, 5,000 objects) in transactions of 20,000.
func BenchmarkAddRecord(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "b.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	run := &timeline.IngestRun{Source: timeline.SourceAudit, Path: "bench"}
	if err := s.BeginRun(ctx, run); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	verbs := []string{"get", "list", "watch", "update", "patch", "create"}
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	extra := []byte(`{"annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""},"groups":["system:nodes","system:authenticated"]}`)
	batch, _ := s.Batch(ctx, run.ID)
	n := 0
	for b.Loop() {
		i := n
		n++
		r := timeline.Record{
			Key:    fmt.Sprintf("audit\x00%016x\x00%d", rng.Uint64(), i),
			Time:   t0.Add(time.Duration(i) * time.Millisecond),
			Source: timeline.SourceAudit, Verb: verbs[rng.IntN(len(verbs))],
			User:      fmt.Sprintf("system:node:node-%04d", rng.IntN(1000)),
			UserAgent: "kubelet/v1.37.2 (linux/amd64) kubernetes/abcdef0", SourceIP: "10.0.0.1",
			Object: timeline.ObjectRef{Version: "v1", Resource: "pods", Namespace: fmt.Sprintf("ns-%d", rng.IntN(50)), Name: fmt.Sprintf("pod-%d", rng.IntN(5000))},
			Code:   200, Level: "Metadata", Latency: time.Millisecond, Stages: timeline.StageResponseComplete,
			AuditID: "0b6a7d3e-2f1c-4f57-9d0c-3c8f1f3c2a11", URI: "/api/v1/namespaces/ns-1/pods/pod-1", Extra: extra,
			Evidence: timeline.Evidence{Line: int64(i)},
		}
		if _, err := batch.AddRecord(ctx, &r); err != nil {
			b.Fatal(err)
		}
		if n%20000 == 0 {
			if err := batch.Commit(ctx, run); err != nil {
				b.Fatal(err)
			}
			batch, _ = s.Batch(ctx, run.ID)
		}
	}
	batch.Commit(ctx, run)
}

// BenchmarkRequestStats reads the whole request rollup of 100,000 audit
// records (the query faultline controlplane makes over its window).
func BenchmarkRequestStats(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "b.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	run := &timeline.IngestRun{Source: timeline.SourceAudit, Path: "bench"}
	if err := s.BeginRun(ctx, run); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	verbs := []string{"get", "list", "watch", "update", "patch", "create"}
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	batch, _ := s.Batch(ctx, run.ID)
	for i := range 100000 {
		r := timeline.Record{
			Key: fmt.Sprintf("audit\x00%d", i), Time: t0.Add(time.Duration(i) * 3 * time.Millisecond),
			Source: timeline.SourceAudit, Verb: verbs[rng.IntN(len(verbs))],
			User:      fmt.Sprintf("system:node:node-%04d", rng.IntN(1000)),
			UserAgent: "kubelet/v1.37.2 (linux/amd64) kubernetes/abcdef0",
			Object:    timeline.ObjectRef{Version: "v1", Resource: "pods", Namespace: fmt.Sprintf("ns-%d", rng.IntN(50))},
			Code:      200, Latency: time.Duration(rng.IntN(1e9)), Stages: timeline.StageResponseComplete,
		}
		if _, err := batch.AddRecord(ctx, &r); err != nil {
			b.Fatal(err)
		}
	}
	if err := batch.Commit(ctx, run); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		st, err := s.RequestStats(ctx, time.Time{}, time.Time{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(st.Seconds)+len(st.Stats)+len(st.Clients)), "rows/op")
	}
}
