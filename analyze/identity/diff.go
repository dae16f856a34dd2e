package identity

import (
	"sort"
	"time"
)

// Change is one dimension that differs between two identities.
type Change struct {
	Dimension string    `json:"dimension"`
	From      string    `json:"from"` // "" when the dimension appeared
	To        string    `json:"to"`   // "" when it went away
	When      time.Time `json:"when,omitzero"`
	// Evidence is the object version that holds the new value (the old one
	// when the dimension went away).
	Evidence Evidence `json:"evidence"`
}

// Diff returns the dimensions whose values differ from a to b, by name.
// Dimensions that differ by design between two units (node, rank) are left
// out when a and b are different units.
func Diff(a, b *Identity) []Change {
	av, bv := index(a), index(b)
	sameUnit := a.Ref == b.Ref
	names := map[string]bool{}
	for n := range av {
		names[n] = true
	}
	for n := range bv {
		names[n] = true
	}
	var out []Change
	for n := range names {
		if !sameUnit && perPod(n) {
			continue
		}
		x, inA := av[n]
		y, inB := bv[n]
		if inA && inB && x.Value == y.Value {
			continue
		}
		c := Change{Dimension: n, From: x.Value, To: y.Value, Evidence: y.Evidence}
		if !inB {
			c.Evidence = x.Evidence
		}
		c.When = c.Evidence.Time
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dimension < out[j].Dimension })
	return out
}

func index(id *Identity) map[string]Dimension {
	m := make(map[string]Dimension, len(id.Dimensions))
	for _, d := range id.Dimensions {
		m[d.Name] = d
	}
	return m
}
