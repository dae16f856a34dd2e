package dns

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A share the evidence measured ranks before one it only bounds, however
// large the bound: 100 % of the cluster's repeats may be 0 % of a node's.
func TestSortFixes(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	fixes := []Fix{
		{Kind: "nodelocaldns", RemovesShare: f(1), UpperBound: true},
		{Kind: "autopath"},
		{Kind: "ndots", RemovesShare: f(0.48)},
		{Kind: "other", RemovesShare: f(0.6)},
	}
	sortFixes(fixes)
	var got []string
	for _, fx := range fixes {
		got = append(got, fx.UpTo()+fx.Kind)
	}
	if diff := cmp.Diff([]string{"other", "ndots", "up to nodelocaldns", "autopath"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}
