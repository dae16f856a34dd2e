package clickhouse

import (
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBucketMeets(t *testing.T) {
	const B = bucketNS
	for _, tc := range []struct {
		b, lo, hi int64
		want      bool
	}{
		{-1, math.MinInt64, math.MaxInt64, true}, // no time, whole timeline
		{-1, 0, math.MaxInt64, false},            // since the epoch
		{0, math.MinInt64, 1, true},
		{0, math.MinInt64, 0, false}, // until the epoch, exclusive
		{3, 3 * B, 4 * B, true},
		{3, 4 * B, 5 * B, false}, // starts where it ends
		{3, 2 * B, 3 * B, false}, // ends where it starts
		{3, 3*B + 5, 3*B + 6, true},
		{3, 0, math.MaxInt64, true},
	} {
		if got := bucketMeets(tc.b, tc.lo, tc.hi); got != tc.want {
			t.Errorf("bucketMeets(%d, %d, %d) = %v, want %v", tc.b, tc.lo, tc.hi, got, tc.want)
		}
	}
}

// bucketSpan holds exactly the times whose buckets meet [lo, hi).
func TestBucketSpan(t *testing.T) {
	const B = bucketNS
	edges := []int64{math.MinInt64, -B, -1, 0, 1, B - 1, B, 3*B - 1, 3 * B, 3*B + 1, 4*B - 1, 4 * B,
		math.MaxInt64 - B, math.MaxInt64 - 1, math.MaxInt64}
	bucket := func(t int64) int64 {
		if t < 0 {
			return -1
		}
		return t / B
	}
	for _, lo := range edges {
		for _, hi := range edges {
			if lo >= hi {
				continue
			}
			blo, bhi := bucketSpan(lo, hi)
			for _, at := range edges {
				in := at >= blo && (bhi == math.MaxInt64 || at < bhi)
				if want := bucketMeets(bucket(at), lo, hi); in != want {
					t.Errorf("bucketSpan(%d, %d) = [%d, %d): holds %d %v, want %v", lo, hi, blo, bhi, at, in, want)
				}
			}
		}
	}
}

func TestDiffering(t *testing.T) {
	for _, tc := range []struct {
		name      string
		want, got map[int64]int64
		differ    []int64
	}{
		{"both empty", nil, map[int64]int64{}, nil},
		{"the same", map[int64]int64{-1: 2, 3: 4}, map[int64]int64{3: 4, -1: 2}, nil},
		{"a value", map[int64]int64{1: 1, 2: 2}, map[int64]int64{1: 1, 2: 3}, []int64{2}},
		{"only in want", map[int64]int64{1: 1, 5: 0}, map[int64]int64{1: 1}, []int64{5}},
		{"only in got", map[int64]int64{1: 1}, map[int64]int64{1: 1, 7: 0}, []int64{7}},
	} {
		got := differing(tc.want, tc.got)
		slices.Sort(got)
		if diff := cmp.Diff(tc.differ, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
