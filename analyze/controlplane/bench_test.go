package controlplane

import (
	"context"
	"os"
	"testing"

	"github.com/faultline/faultline/timeline/sqlite"
)

// BenchmarkControlplane10M analyses the timeline FAULTLINE_BENCH_DB names:
// hack/bench/run builds one of 10 M records.
func BenchmarkControlplane10M(b *testing.B) {
	path := os.Getenv("FAULTLINE_BENCH_DB")
	if path == "" {
		b.Skip("FAULTLINE_BENCH_DB is not set: see hack/bench/run")
	}
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, sqlite.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for b.Loop() {
		rep, err := Analyze(ctx, s, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Requests == 0 {
			b.Fatal("no requests")
		}
	}
}
