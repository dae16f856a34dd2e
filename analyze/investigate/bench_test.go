package investigate

import (
	"context"
	"os"
	"testing"

	"github.com/faultline/faultline/timeline/sqlite"
)

// BenchmarkInvestigate10M runs the whole investigation on the timeline
// FAULTLINE_BENCH_DB names: hack/bench/run builds one of 10 M records.
func BenchmarkInvestigate10M(b *testing.B) {
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
		rep, err := Run(ctx, s, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Boundary == nil {
			b.Fatal("no boundary")
		}
	}
}
