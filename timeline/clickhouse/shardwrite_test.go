package clickhouse

import "testing"

// TestShardOf: each shard owns as many consecutive slots of the hash
// modulo the total weight as its weight, as a Distributed table counts.
func TestShardOf(t *testing.T) {
	for _, tc := range []struct {
		weights []uint64
		hashes  []uint64
		want    []int
	}{
		{[]uint64{1, 1}, []uint64{0, 1, 2, 3}, []int{0, 1, 0, 1}},
		{[]uint64{1, 2}, []uint64{0, 1, 2, 3, 4}, []int{0, 1, 1, 0, 1}},
		{[]uint64{3}, []uint64{0, 7}, []int{0, 0}},
		{[]uint64{0, 0}, []uint64{5}, []int{0}},
	} {
		var shards []shard
		for i, w := range tc.weights {
			shards = append(shards, shard{num: i + 1, weight: w})
		}
		for i, h := range tc.hashes {
			if got := shardOf(shards, h); got != tc.want[i] {
				t.Errorf("weights %v, hash %d: shard %d, want %d", tc.weights, h, got, tc.want[i])
			}
		}
	}
}
