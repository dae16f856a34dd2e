package clickhouse

import (
	"math"
	"testing"
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
