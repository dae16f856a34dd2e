package controlplane

import (
	"context"
	"testing"

	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

// BenchmarkControlplane10M analyses the timeline FAULTLINE_BENCH_DB names:
// hack/bench/run builds one of 10 M records.
func BenchmarkControlplane10M(b *testing.B) {
	ctx := context.Background()
	s := sqlitetest.Bench(b)
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
