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

// cut: chunks meet end to end over [lo, hi) at bucket starts, the one read
// first (the last with desc) at the limit and each next one twice as large
// up to chunkRows, records without a time in the first.
func TestCut(t *testing.T) {
	const B = bucketNS
	old := chunkRows
	chunkRows = 4
	t.Cleanup(func() { chunkRows = old })
	eight := map[int64]int64{0: 1, 1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1, 7: 1}
	c := func(lo, hi, rows int64) chunk { return chunk{lo: lo, hi: hi, rows: rows} }
	for _, tc := range []struct {
		name   string
		kept   map[int64]int64
		lo, hi int64
		first  int64
		desc   bool
		want   []chunk
	}{
		{"whole read", eight, 0, 8 * B, 4, false, []chunk{c(0, 4*B, 4), c(4*B, 8*B, 4)}},
		{"limit 1", eight, 0, 8 * B, 1, false, []chunk{c(0, B, 1), c(B, 3*B, 2), c(3*B, 7*B, 4), c(7*B, 8*B, 1)}},
		{"limit 1, desc", eight, 0, 8 * B, 1, true, []chunk{c(0, B, 1), c(B, 5*B, 4), c(5*B, 7*B, 2), c(7*B, 8*B, 1)}},
		{"past chunkRows", eight, 0, 8 * B, 100, false, []chunk{c(0, 4*B, 4), c(4*B, 8*B, 4)}},
		{"lo inside its bucket", eight, B / 2, 8*B - 3, 1, true,
			[]chunk{c(B/2, B, 1), c(B, 5*B, 4), c(5*B, 7*B, 2), c(7*B, 8*B-3, 1)}},
		{"no time, first", map[int64]int64{-1: 2, 0: 1, 1: 1}, math.MinInt64, 2 * B, 1, false,
			[]chunk{c(math.MinInt64, 0, 2), c(0, 2*B, 2)}},
		{"no time, desc", map[int64]int64{-1: 2, 0: 1, 1: 1}, math.MinInt64, 2 * B, 1, true,
			[]chunk{c(math.MinInt64, B, 3), c(B, 2*B, 1)}},
		{"one bucket", map[int64]int64{5: 9}, 5 * B, 6 * B, 1, true, []chunk{c(5*B, 6*B, 9)}},
	} {
		got := cut(tc.kept, tc.lo, tc.hi, tc.first, tc.desc)
		if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(chunk{})); diff != "" {
			t.Errorf("%s (-want +got)\n%s", tc.name, diff)
		}
	}
}
