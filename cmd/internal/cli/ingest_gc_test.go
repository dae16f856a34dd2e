package cli

import (
	"runtime/debug"
	"testing"
)

type fakeOffHeap int64

func (f fakeOffHeap) MemoryOutsideHeap() int64 { return int64(f) }

// TestIngestGCLeavesRoomForTheStore: the heap's limit during an ingest is
// the budget less what the store holds outside the heap, and GOGC or
// GOMEMLIMIT in the environment leave the collector as it is.
func TestIngestGCLeavesRoomForTheStore(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tc := range []struct {
		name  string
		env   map[string]string
		store any
		want  int64
	}{
		{"no memory outside the heap", nil, struct{}{}, ingestMemoryBudget},
		{"page caches", nil, fakeOffHeap(64 << 20), ingestMemoryBudget - 64<<20},
		{"caches larger than the budget", nil, fakeOffHeap(1 << 30), 32 << 20},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, struct{}{}, 12345678},
		{"GOGC set", map[string]string{"GOGC": "50"}, fakeOffHeap(64 << 20), 12345678},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(12345678)
			f := &Factory{Getenv: func(k string) string { return tc.env[k] }}
			ingestGC(f, tc.store)
			if got := debug.SetMemoryLimit(-1); got != tc.want {
				t.Errorf("memory limit = %d, want %d", got, tc.want)
			}
		})
	}
}
