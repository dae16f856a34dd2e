package investigate

import (
	"context"
	"testing"

	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

// BenchmarkInvestigate10M runs the whole investigation on the timeline
// FAULTLINE_BENCH_DB names: hack/bench/run builds one of 10 M records.
func BenchmarkInvestigate10M(b *testing.B) {
	ctx := context.Background()
	s := sqlitetest.Bench(b)
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
