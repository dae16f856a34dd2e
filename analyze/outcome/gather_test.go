package outcome

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGather: values gathered in blocks come out once each, in the order
// added, after what dst held, across the blocks' boundaries.
func TestGather(t *testing.T) {
	for _, tc := range []struct {
		name string
		dst  []int
		n    int
	}{
		{"none", nil, 0},
		{"none after some", []int{-2, -1}, 0},
		{"one", nil, 1},
		{"a first block, full", nil, 256},
		{"a second block begun", nil, 257},
		{"blocks past the largest", []int{-1}, 8192*3 + 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g gather[int]
			want := slices.Clone(tc.dst)
			for i := range tc.n {
				g.add(i)
				want = append(want, i)
			}
			got := slices.Clone(tc.dst)
			g.each(func(v *int) { got = append(got, *v) })
			if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b []int) bool { return slices.Equal(a, b) })); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			for _, b := range append(g.full, g.cur) {
				if cap(b) > 8192 {
					t.Errorf("a block of %d values, want at most 8192", cap(b))
				}
			}
		})
	}
}
