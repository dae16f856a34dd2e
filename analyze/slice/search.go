package slice

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Options tunes Search. The zero value is ready to use.
type Options struct {
	// MaxLayer is the largest number of dimensions in one conjunction;
	// 0 means min(len(Dims), 3).
	MaxLayer int
	// MaxCauses bounds the number of causes returned; 0 means 16.
	MaxCauses int
}

// Cause is one conjunction that explains part of the anomaly, with its
// statistics over the whole cube.
type Cause struct {
	Where    Element
	Bad      float64 // Ratio: bad events; Volume: observed amount
	Total    float64 // Ratio: all events; Volume: 0
	Expected float64 // Ratio with baseline: expected bad events; Volume: forecast
	// Coverage is the share of the cube's anomaly inside the element: of
	// all bad events (Ratio) or of the total deviation (Volume).
	Coverage float64
	// Precision is the share of the element that is abnormal: Bad/Total
	// (Ratio), or the share of its absolute deviation that goes in the
	// anomaly's direction (Volume).
	Precision float64
	// Score is the evidence for the cause when it was chosen, in nats: its
	// log-likelihood ratio over the dispersion, less the cost of naming it.
	// Causes are listed by decreasing score at the time they were chosen.
	Score float64
}

// Result is the outcome of Search.
type Result struct {
	Causes []Cause
	// Bad, Total and Expected sum the whole cube (see Leaf).
	Bad, Total, Expected float64
	// Coverage is the share of the anomaly inside the union of Causes.
	Coverage float64
	// Dispersion is the noise level of the cube relative to the model (>= 1).
	Dispersion float64
}

// MaxDims is the most dimensions a cube may have: a cuboid is a bit set of
// them.
const MaxDims = 64

type cuboid struct {
	dims  []int   // indexes into Cube.Dims, ascending
	of    []int32 // leaf -> element, -1 when the leaf lacks one of dims
	cur   []agg   // per element: the leaves not yet explained
	all   []agg   // per element: the whole cube
	vals  [][]int32
	index map[string]int32
}

type searcher struct {
	c       *Cube
	sc      scorer
	dicts   [][]string // dim -> value id -> value
	ids     []int32    // leaf*len(Dims)+dim -> value id, -1 when absent
	leaves  []agg
	cuboids []*cuboid
	byMask  map[uint64]int
	cost    []float64 // layer -> ln(number of elements in that layer)
	rest    agg
	all     agg
	covered []bool
	nLive   int     // leaves with mass not yet explained
	phi     float64 // leaf-level dispersion
	keyBuf  []byte
}

// Search finds the fewest, most general conjunctions that together explain
// the anomaly of the cube. See the package documentation for the method.
// The result depends only on the cube's content: ties are broken by layer,
// then by the dimension order of Cube.Dims, then by value.
func Search(ctx context.Context, c *Cube, opt Options) (Result, error) {
	if err := c.Validate(); err != nil {
		return Result{}, fmt.Errorf("slice search: %w", err)
	}
	if len(c.Dims) > MaxDims {
		return Result{}, fmt.Errorf("slice search: %d dimensions, at most %d supported", len(c.Dims), MaxDims)
	}
	if opt.MaxLayer < 0 || opt.MaxCauses < 0 {
		return Result{}, fmt.Errorf("slice search: negative option (MaxLayer %d, MaxCauses %d)", opt.MaxLayer, opt.MaxCauses)
	}
	maxLayer := opt.MaxLayer
	if maxLayer == 0 {
		maxLayer = 3
	}
	maxLayer = min(maxLayer, len(c.Dims))
	maxCauses := opt.MaxCauses
	if maxCauses == 0 {
		maxCauses = 16
	}

	s := &searcher{c: c, byMask: map[uint64]int{}}
	s.encode()
	res := Result{Bad: s.all.bad, Total: s.all.total, Expected: s.all.exp, Dispersion: 1}
	if maxLayer == 0 || len(c.Leaves) == 0 {
		return res, nil
	}
	if err := s.build(ctx, maxLayer); err != nil {
		return Result{}, err
	}
	res.Dispersion = s.phi

	var explained []agg
	var gross []float64
	for len(res.Causes) < maxCauses {
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("slice search: %w", err)
		}
		ci, e, net, ok := s.best()
		if !ok {
			break
		}
		ci, e = s.generalize(ci, e)
		cb := s.cuboids[ci]
		a := cb.all[e]
		res.Causes = append(res.Causes, Cause{
			Where:     s.element(cb, e),
			Bad:       a.bad,
			Total:     a.total, // zero for Volume cubes
			Expected:  a.exp,   // zero for Ratio cubes without baseline
			Coverage:  s.sc.coverage(a, s.all),
			Precision: s.sc.precision(a),
			Score:     net,
		})
		explained = append(explained, s.explain(cb, e))
		gross = append(gross, net+s.elementCost(len(cb.dims)))
	}
	n := cut(gross, s.elementCost(1))
	res.Causes = res.Causes[:n]
	var union agg
	for _, a := range explained[:n] {
		union.add(a)
	}
	res.Coverage = s.sc.coverage(union, s.all)
	return res, nil
}

// encode interns the values and turns leaves into aggregates.
func (s *searcher) encode() {
	c := s.c
	nd := len(c.Dims)
	s.dicts = make([][]string, nd)
	index := make([]map[string]int32, nd)
	for d := range index {
		index[d] = map[string]int32{}
	}
	s.ids = make([]int32, len(c.Leaves)*nd)
	s.leaves = make([]agg, len(c.Leaves))
	var obs, fc float64
	for i, l := range c.Leaves {
		for d, v := range l.Values {
			id := int32(-1)
			if v != "" {
				var ok bool
				if id, ok = index[d][v]; !ok {
					id = int32(len(s.dicts[d]))
					index[d][v] = id
					s.dicts[d] = append(s.dicts[d], v)
				}
			}
			s.ids[i*nd+d] = id
		}
		a := agg{leaves: 1}
		switch {
		case c.Measure == Volume:
			a.bad, a.exp, a.abs = l.Bad, l.Expected, math.Abs(l.Bad-l.Expected)
			obs += l.Bad
			fc += l.Expected
		default:
			a.bad, a.total = l.Bad, l.Total
			if c.Baseline {
				a.exp = l.Expected
			}
		}
		s.leaves[i] = a
		s.all.add(a)
	}
	s.sc = scorer{measure: c.Measure, baseline: c.Baseline, dir: 1}
	switch c.Measure {
	case Volume:
		if obs < fc {
			s.sc.dir = -1
		}
		// A forecast below a millionth of the mean forecast is treated as
		// that much, so that an observed amount on a zero forecast has a
		// finite (large) likelihood ratio.
		s.sc.lo = 1e-6 * math.Max(fc, obs) / float64(max(len(c.Leaves), 1))
		if s.sc.lo == 0 {
			s.sc.lo = math.SmallestNonzeroFloat64
		}
	default:
		// A rate below half an event in the whole cube is treated as that.
		s.sc.lo = math.Min(0.5/(s.all.total+1), 0.25)
	}
	s.rest = s.all
	s.covered = make([]bool, len(c.Leaves))
	for _, a := range s.leaves {
		if s.live(a) {
			s.nLive++
		}
	}
}

// cut returns how many of the causes, in the order chosen, stand clear of
// the rest: the list of their evidence (before the naming cost), closed by
// floor, the evidence of a just-significant element, is cut at its largest
// relative drop. A real cause dwarfs the best of what is left once it is
// explained; the ones after it are the upper tail of the noise.
func cut(gross []float64, floor float64) int {
	if len(gross) == 0 {
		return 0
	}
	floor = max(floor, math.SmallestNonzeroFloat64)
	best, n := math.Inf(-1), len(gross)
	for i, g := range gross {
		next := floor
		if i+1 < len(gross) {
			next = max(gross[i+1], floor)
		}
		if d := math.Log(max(g, floor) / next); d > best {
			best, n = d, i+1
		}
	}
	return n
}

func (s *searcher) live(a agg) bool {
	if s.c.Measure == Volume {
		return a.bad != 0 || a.exp != 0
	}
	return a.total > 0
}

// build aggregates every element of every cuboid up to maxLayer.
func (s *searcher) build(ctx context.Context, maxLayer int) error {
	nd := len(s.c.Dims)
	s.cost = make([]float64, maxLayer+1)
	count := make([]int, maxLayer+1)
	for layer := 1; layer <= maxLayer; layer++ {
		var err error
		combinations(nd, layer, func(dims []int) bool {
			if err = ctx.Err(); err != nil {
				return false
			}
			cb := s.newCuboid(dims)
			s.byMask[mask(dims)] = len(s.cuboids)
			s.cuboids = append(s.cuboids, cb)
			count[layer] += len(cb.all)
			return true
		})
		if err != nil {
			return fmt.Errorf("slice search: %w", err)
		}
		// Naming one element of a layer costs ln(#elements) nats.
		s.cost[layer] = math.Log(math.Max(float64(count[layer]), 1))
	}
	s.phi = s.sc.dispersion(s.leaves, s.all)
	return nil
}

// dispersionWithout estimates the noise of the elements of a layer once
// the element e of cb is explained: aggregated elements are noisier than
// their counts suggest (a baseline rate is itself uncertain, and related
// leaves move together), so whether the leaves a parent adds are abnormal
// on their own is judged against the spread of their peers. e's leaves are
// left out so that the anomaly does not count as noise.
func (s *searcher) dispersionWithout(layer int, cb *cuboid, e int32) float64 {
	var in []int
	var sum agg
	for i, f := range cb.of {
		if f == e && !s.covered[i] {
			in = append(in, i)
			sum.add(s.leaves[i])
		}
	}
	var buf []agg
	for _, other := range s.cuboids {
		if len(other.dims) != layer {
			continue
		}
		cur := slices.Clone(other.cur)
		for _, i := range in {
			if g := other.of[i]; g >= 0 {
				cur[g] = cur[g].minus(s.leaves[i])
			}
		}
		for _, a := range cur {
			if a.leaves > 0 {
				buf = append(buf, a)
			}
		}
	}
	return max(s.phi, s.sc.dispersion(buf, s.rest.minus(sum)))
}

// elementCost is the cost in nats of claiming one more element of the
// layer: naming it among the layer's elements, plus half a log of the
// number of unexplained leaves for its fitted rate (BIC).
func (s *searcher) elementCost(layer int) float64 {
	return s.cost[layer] + 0.5*math.Log(float64(max(s.nLive, 1)))
}

func mask(dims []int) uint64 {
	var m uint64
	for _, d := range dims {
		m |= 1 << uint(d)
	}
	return m
}

// combinations calls f with every k-subset of 0..n-1 in lexicographic
// order, until f returns false.
func combinations(n, k int, f func([]int) bool) {
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	for {
		if !f(append([]int(nil), idx...)) {
			return
		}
		i := k - 1
		for i >= 0 && idx[i] == n-k+i {
			i--
		}
		if i < 0 {
			return
		}
		idx[i]++
		for j := i + 1; j < k; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
}

func (s *searcher) newCuboid(dims []int) *cuboid {
	nd := len(s.c.Dims)
	cb := &cuboid{dims: dims, of: make([]int32, len(s.leaves)), index: map[string]int32{}}
	vals := make([]int32, len(dims))
	for i := range s.leaves {
		e := int32(-1)
		present := true
		for j, d := range dims {
			vals[j] = s.ids[i*nd+d]
			if vals[j] < 0 {
				present = false
				break
			}
		}
		if present {
			e = s.lookup(cb, vals, true)
			cb.all[e].add(s.leaves[i])
		}
		cb.of[i] = e
	}
	cb.cur = append([]agg(nil), cb.all...)
	return cb
}

// lookup returns the element of cb with the given value ids, adding it when
// add is set; -1 when absent.
func (s *searcher) lookup(cb *cuboid, vals []int32, add bool) int32 {
	s.keyBuf = s.keyBuf[:0]
	for _, v := range vals {
		s.keyBuf = binary.AppendUvarint(s.keyBuf, uint64(v))
	}
	if e, ok := cb.index[string(s.keyBuf)]; ok {
		return e
	}
	if !add {
		return -1
	}
	e := int32(len(cb.all))
	cb.index[string(s.keyBuf)] = e
	cb.all = append(cb.all, agg{})
	cb.vals = append(cb.vals, append([]int32(nil), vals...))
	return e
}

func (s *searcher) netGain(cb *cuboid, e int32) float64 {
	g := s.sc.gain(cb.cur[e], s.rest)
	if g <= 0 {
		return math.Inf(-1)
	}
	layer := len(cb.dims)
	return g/s.phi - s.elementCost(layer)
}

// best returns the unexplained element with the largest positive net gain.
func (s *searcher) best() (ci int, e int32, net float64, ok bool) {
	net = 0
	for i, cb := range s.cuboids {
		for j := range cb.cur {
			if cb.cur[j].leaves == 0 {
				continue
			}
			g := s.netGain(cb, int32(j))
			if g <= 0 {
				continue
			}
			if !ok || g > net || (g == net && s.before(i, int32(j), ci, e)) {
				ci, e, net, ok = i, int32(j), g, true
			}
		}
	}
	return ci, e, net, ok
}

// before orders equal-scoring elements: fewer dimensions first (cuboids
// are built layer by layer), then cuboid order, then values.
func (s *searcher) before(ci int, e int32, cj int, f int32) bool {
	if ci != cj {
		return ci < cj
	}
	a, b := s.cuboids[ci].vals[e], s.cuboids[cj].vals[f]
	for k := range a {
		d := s.cuboids[ci].dims[k]
		if c := strings.Compare(s.dicts[d][a[k]], s.dicts[d][b[k]]); c != 0 {
			return c < 0
		}
	}
	return false
}

// generalize drops dimensions from the element while a parent explains
// the anomaly better: the leaves the parent adds (the siblings) are either
// hit like the element itself (the ripple effect of a cause at the parent)
// or significantly abnormal on their own, so that the element alone would
// leave part of the anomaly to a second cause. Among such parents the one
// whose siblings carry the most evidence wins.
func (s *searcher) generalize(ci int, e int32) (int, int32) {
	for {
		cb := s.cuboids[ci]
		layer := len(cb.dims)
		if layer <= 1 {
			return ci, e
		}
		phi := s.dispersionWithout(layer-1, cb, e)
		bestEv, bestGain := math.Inf(-1), math.Inf(-1)
		bi, be := -1, int32(-1)
		for k := range cb.dims {
			pdims := append(append([]int(nil), cb.dims[:k]...), cb.dims[k+1:]...)
			pi := s.byMask[mask(pdims)]
			pcb := s.cuboids[pi]
			pvals := append(append([]int32(nil), cb.vals[e][:k]...), cb.vals[e][k+1:]...)
			pe := s.lookup(pcb, pvals, false)
			parent := pcb.cur[pe]
			sib := parent.minus(cb.cur[e])
			lr := s.sc.siblingLR(sib, cb.cur[e], parent, s.rest)
			ev := s.sc.gain(sib, s.rest)/phi - s.elementCost(layer-1)
			if math.IsNaN(lr) || (lr < 0 && ev <= 0) {
				continue
			}
			ev = max(ev, 0)
			g := s.sc.gain(parent, s.rest)
			if ev > bestEv || (ev == bestEv && g > bestGain) {
				bestEv, bestGain, bi, be = ev, g, pi, pe
			}
		}
		if bi < 0 {
			return ci, e
		}
		ci, e = bi, be
	}
}

func (s *searcher) element(cb *cuboid, e int32) Element {
	el := make(Element, len(cb.dims))
	for k, d := range cb.dims {
		el[s.c.Dims[d]] = s.dicts[d][cb.vals[e][k]]
	}
	return el
}

// explain marks the unexplained leaves of the element as explained and
// removes them from every cuboid; it returns their sum.
func (s *searcher) explain(cb *cuboid, e int32) agg {
	var sum agg
	for i, f := range cb.of {
		if f != e || s.covered[i] {
			continue
		}
		s.covered[i] = true
		a := s.leaves[i]
		sum.add(a)
		if s.live(a) {
			s.nLive--
		}
		for _, other := range s.cuboids {
			if g := other.of[i]; g >= 0 {
				other.cur[g] = other.cur[g].minus(a)
			}
		}
	}
	s.rest = s.rest.minus(sum)
	return sum
}
