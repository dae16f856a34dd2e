package sqlitetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/faultline/faultline/timeline/sqlite"
)

// New opens a fresh timeline in the test's temporary folder, closed when
// the test ends: what most tests of ingesters and analyzers start from.
func New(t testing.TB) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Bench opens the large timeline FAULTLINE_BENCH_DB names, read-only and
// closed when the benchmark ends; hack/bench/run builds one of 10 M
// records and sets it. Without it the benchmark skips: benchmarks do not
// run in CI.
func Bench(b *testing.B) *sqlite.Store {
	b.Helper()
	path := os.Getenv("FAULTLINE_BENCH_DB")
	if path == "" {
		b.Skip("FAULTLINE_BENCH_DB is not set: see hack/bench/run")
	}
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{ReadOnly: true})
	if err != nil {
		b.Fatalf("benchmark timeline %s (FAULTLINE_BENCH_DB): %v", path, err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}
