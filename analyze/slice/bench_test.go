package slice

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// synthetic builds a Ratio cube with baseline: n leaves over 5 dimensions
// (cardinalities 10, 10, 10, 10, 100), background failure rate 1% with
// binomial-like noise, and a cause a=a3 & b=b7 whose leaves fail at 20%.
func synthetic(n int) *Cube {
	r := rand.New(rand.NewPCG(1, 2))
	c := &Cube{Dims: []string{"a", "b", "c", "d", "e"}, Baseline: true}
	card := []int{10, 10, 10, 10, 100}
	for i := range n {
		vals := make([]string, len(card))
		x := i
		for d, k := range card {
			vals[d] = fmt.Sprintf("%c%d", 'a'+d, x%k)
			x /= k
		}
		total := float64(50 + r.IntN(100))
		rate := 0.01
		if vals[0] == "a3" && vals[1] == "b7" {
			rate = 0.2
		}
		bad := 0.0
		for range int(total) {
			if r.Float64() < rate {
				bad++
			}
		}
		c.Leaves = append(c.Leaves, Leaf{Values: vals, Bad: bad, Total: total, Expected: 0.01 * total})
	}
	return c
}

func TestSearchSynthetic(t *testing.T) {
	res, err := Search(context.Background(), synthetic(20000), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Causes) != 1 || res.Causes[0].Where.String() != "a=a3 & b=b7" {
		t.Errorf("causes %+v, want a=a3 & b=b7 alone", res.Causes)
	}
}

func BenchmarkSearch100kLeaves(b *testing.B) {
	c := synthetic(100_000)
	ctx := context.Background()
	for b.Loop() {
		res, err := Search(ctx, c, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Causes) != 1 {
			b.Fatalf("causes %+v", res.Causes)
		}
	}
}
