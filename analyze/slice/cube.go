package slice

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Measure says how a leaf's numbers are read.
type Measure int

const (
	// Ratio leaves count Bad events out of Total (failed requests out of
	// requests, failed pods out of pods: Bad 0 or 1, Total 1). Expected,
	// when the cube has a baseline, is the number of bad events the leaf
	// would show if nothing were wrong (its baseline failure rate times
	// Total).
	Ratio Measure = iota
	// Volume leaves carry an observed amount in Bad and its forecast in
	// Expected (Squeeze's real and predict); Total is ignored. The anomaly
	// is the deviation of the observed from the forecast, in the direction
	// of the cube's overall deviation.
	Volume
)

func (m Measure) String() string {
	switch m {
	case Ratio:
		return "ratio"
	case Volume:
		return "volume"
	}
	return fmt.Sprintf("Measure(%d)", int(m))
}

// Leaf is one cell of the cube: a tuple of attribute values aligned with
// Cube.Dims. An empty value means the leaf has no such attribute (a pod
// without a ConfigMap); it then belongs to no element naming that
// dimension.
type Leaf struct {
	Values   []string
	Bad      float64 // Ratio: bad events; Volume: the observed amount
	Total    float64 // Ratio: all events; Volume: unused
	Expected float64 // Ratio with Baseline: expected bad events; Volume: the forecast
}

// Cube is a set of leaves over named dimensions.
type Cube struct {
	Dims    []string
	Leaves  []Leaf
	Measure Measure
	// Baseline says the Ratio leaves carry Expected. Without it, a
	// candidate slice is compared with the failure rate of the leaves
	// outside it (a scan statistic), which suits unit-level data such as
	// pods with Bad 0 or 1 and Total 1.
	Baseline bool
}

// Element is one conjunction: dimension -> value.
type Element map[string]string

// String renders the element as "a=x & b=y" with dimensions in name order.
func (e Element) String() string {
	keys := make([]string, 0, len(e))
	for k := range e {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(" & ")
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(e[k])
	}
	return b.String()
}

// Validate reports the first structural problem of the cube.
func (c *Cube) Validate() error {
	if c == nil {
		return errors.New("nil cube")
	}
	if c.Measure != Ratio && c.Measure != Volume {
		return fmt.Errorf("unknown measure %v", c.Measure)
	}
	seen := make(map[string]bool, len(c.Dims))
	for i, d := range c.Dims {
		if d == "" {
			return fmt.Errorf("dimension %d has no name", i)
		}
		if seen[d] {
			return fmt.Errorf("dimension %q appears twice", d)
		}
		seen[d] = true
	}
	for i, l := range c.Leaves {
		if len(l.Values) != len(c.Dims) {
			return fmt.Errorf("leaf %d: %d values for %d dimensions", i, len(l.Values), len(c.Dims))
		}
		for _, x := range []struct {
			name string
			v    float64
		}{{"bad", l.Bad}, {"total", l.Total}, {"expected", l.Expected}} {
			if math.IsNaN(x.v) || math.IsInf(x.v, 0) || x.v < 0 {
				return fmt.Errorf("leaf %d: %s is %v, want a finite number >= 0", i, x.name, x.v)
			}
		}
		if c.Measure == Ratio {
			if l.Bad > l.Total {
				return fmt.Errorf("leaf %d: bad %v exceeds total %v", i, l.Bad, l.Total)
			}
			if c.Baseline && l.Expected > l.Total {
				return fmt.Errorf("leaf %d: expected %v exceeds total %v", i, l.Expected, l.Total)
			}
		}
	}
	return nil
}
