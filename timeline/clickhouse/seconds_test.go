package clickhouse

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

// TestSecondRowsSorted holds secondRows.sorted to a plain sort by class
// and second, across block bounds and in any arrival order.
func TestSecondRowsSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	many := func(n int) []timeline.RequestSecond {
		var out []timeline.RequestSecond
		seen := map[[2]int64]bool{}
		for len(out) < n {
			r := timeline.RequestSecond{Class: rng.Int64N(7) - 2, Sec: rng.Int64N(200_000), Count: rng.Int64N(50) + 1}
			if !seen[[2]int64{r.Class, r.Sec}] {
				seen[[2]int64{r.Class, r.Sec}] = true
				out = append(out, r)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   []timeline.RequestSecond
	}{
		{"none", nil},
		{"one", []timeline.RequestSecond{{Class: 3, Sec: 9, Count: 1}}},
		{"two classes reversed", []timeline.RequestSecond{{Class: 2, Sec: 5, Count: 1}, {Class: 2, Sec: 4, Count: 2},
			{Class: 1, Sec: 9, Count: 3}, {Class: 1, Sec: 1, Count: 4}}},
		{"a block and more", many(secondBlock + 1000)},
		{"three blocks", many(3 * secondBlock)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g secondRows
			for _, r := range tc.in {
				g.add(r)
			}
			want := slices.Clone(tc.in)
			slices.SortFunc(want, func(a, b timeline.RequestSecond) int {
				return cmp.Or(cmp.Compare(a.Class, b.Class), cmp.Compare(a.Sec, b.Sec))
			})
			if diff := gocmp.Diff(want, g.sorted()); diff != "" {
				t.Errorf("sorted (-want +got):\n%s", diff)
			}
		})
	}
}
