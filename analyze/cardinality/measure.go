package cardinality

import (
	"cmp"
	"math/bits"
	"slices"
	"strings"

	"github.com/faultline/faultline/timeline"
)

// snapshot is what one instant's series add up to: per metric, per
// label name over every metric, and per scrape target. Labels are
// counted by their ids in the table's strings.
type snapshot struct {
	n       int
	strs    []string
	metrics []*metricStat // in name order
	labels  map[uint32]*labelStat
	targets map[targetIDs]int

	set hashSet
}

// targetIDs is a scrape target as the ids of its job and instance
// values (0: none).
type targetIDs struct{ job, instance uint32 }

type metricStat struct {
	name   string
	series int
	labels []MetricLabel // full snapshots only
}

type labelStat struct {
	name    string
	role    labelRole
	values  map[uint32]int32 // series per value id
	series  int
	metrics int
	saves   int
}

// labelRole marks the labels that name a scrape target.
type labelRole uint8

const (
	roleOther labelRole = iota
	roleJob
	roleInstance
)

// slot is one label name within one metric, while its series are read.
type slot struct {
	ls     *labelStat
	nameID uint32
	series int
	// Full snapshots: each series' label-set hash without this label,
	// and this label's value id.
	without, vals []uint64
}

// pairHash is the hash of one label pair. A label set's hash is the sum
// of its pairs', so each must spread over all 64 bits.
func pairHash(name, value uint32) uint64 { return spread(uint64(name)<<32 | uint64(value)) }

// spread is MurmurHash3's 64-bit finalizer: a bijection whose every
// output bit depends on every input bit.
func spread(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb93fe53e63b9
	h ^= h >> 33
	return h
}

// measure counts the series of t present at bit by metric, label and
// target. A full snapshot also measures what each label multiplies each
// metric's series by; the other instant of a churn needs only the counts.
// It reads the table once, in order (rows of one metric lie scattered
// over it), each row into its metric's pass.
func measure(t *timeline.SeriesTable, bit uint8, full bool) *snapshot {
	sn := &snapshot{strs: t.Strings, labels: map[uint32]*labelStat{}, targets: map[targetIDs]int{}}
	passes := sn.passes(t, bit, full)
	var p *metricPass
	for i := range t.Rows {
		r := &t.Rows[i]
		if r.In&bit == 0 {
			continue
		}
		if p == nil || p.metric != r.Metric {
			p = passes[r.Metric]
		}
		p.add(t.Labels(r))
		if full {
			p.rows = append(p.rows, int32(i))
		}
	}
	for _, p := range passes {
		sn.n += p.n
		sn.finish(t, p)
	}
	slices.SortFunc(sn.metrics, func(a, b *metricStat) int { return strings.Compare(a.name, b.name) })
	return sn
}

// passes makes a pass for each metric present at bit, sized for its
// series.
func (sn *snapshot) passes(t *timeline.SeriesTable, bit uint8, full bool) map[uint32]*metricPass {
	counts := map[uint32]int{}
	for i := range t.Rows {
		if r := &t.Rows[i]; r.In&bit != 0 {
			counts[r.Metric]++
		}
	}
	out := make(map[uint32]*metricPass, len(counts))
	for m, n := range counts {
		p := &metricPass{sn: sn, metric: m, n: n, full: full}
		if full {
			p.totals, p.rows = make([]uint64, 0, n), make([]int32, 0, n)
		}
		out[m] = p
	}
	return out
}

func (sn *snapshot) label(id uint32) *labelStat {
	ls := sn.labels[id]
	if ls == nil {
		ls = &labelStat{name: sn.strs[id], values: map[uint32]int32{}}
		switch ls.name {
		case "job":
			ls.role = roleJob
		case "instance":
			ls.role = roleInstance
		}
		sn.labels[id] = ls
	}
	return ls
}

// metricPass is one metric's series being read.
type metricPass struct {
	sn     *snapshot
	metric uint32
	n      int // the metric's series
	full   bool
	rows   []int32 // the rows read (full)
	slots  []*slot
	at     []*slot  // the slot of each label position of the last series
	totals []uint64 // each series' label-set hash (full)
	hs     []uint64 // the pair hashes of the series being read
}

// slotFor finds the slot of the label at position j: most series of a
// metric have the same names at the same places.
func (p *metricPass) slotFor(j int, name uint32) *slot {
	if j < len(p.at) && p.at[j].nameID == name {
		return p.at[j]
	}
	i := slices.IndexFunc(p.slots, func(sl *slot) bool { return sl.nameID == name })
	if i < 0 {
		sl := &slot{ls: p.sn.label(name), nameID: name}
		if p.full {
			sl.without, sl.vals = make([]uint64, 0, p.n), make([]uint64, 0, p.n)
		}
		p.slots, i = append(p.slots, sl), len(p.slots)
	}
	for len(p.at) <= j {
		p.at = append(p.at, p.slots[i])
	}
	p.at[j] = p.slots[i]
	return p.slots[i]
}

func (p *metricPass) add(pairs []uint32) {
	var total uint64
	var tk targetIDs
	p.hs = p.hs[:0]
	for j := 0; j+1 < len(pairs); j += 2 {
		name, v := pairs[j], pairs[j+1]
		sl := p.slotFor(j/2, name)
		sl.series++
		sl.ls.values[v]++
		h := pairHash(name, v)
		p.hs = append(p.hs, h)
		total += h
		switch sl.ls.role {
		case roleJob:
			tk.job = v
		case roleInstance:
			tk.instance = v
		}
	}
	if tk != (targetIDs{}) {
		p.sn.targets[tk]++
	}
	if !p.full {
		return
	}
	p.totals = append(p.totals, total)
	for j, h := range p.hs {
		sl := p.at[j]
		sl.without = append(sl.without, total-h)
		sl.vals = append(sl.vals, uint64(pairs[2*j+1]))
	}
}

// finish adds up one metric's pass.
func (sn *snapshot) finish(t *timeline.SeriesTable, p *metricPass) {
	ms := &metricStat{name: sn.strs[p.metric], series: p.n}
	sn.metrics = append(sn.metrics, ms)
	for _, sl := range p.slots {
		sl.ls.series += sl.series
		sl.ls.metrics++
	}
	if !p.full {
		return
	}
	ms.labels = p.multipliers(t)
	for i, sl := range p.slots {
		sl.ls.saves += ms.labels[i].Saves
	}
	slices.SortFunc(ms.labels, func(a, b MetricLabel) int {
		return cmp.Or(cmp.Compare(b.Saves, a.Saves), cmp.Compare(b.Values, a.Values), strings.Compare(a.Name, b.Name))
	})
}

// multipliers measures, for each label of one metric (in slot order), its
// values and the metric's series without it. A series' label set is
// hashed as the sum of its pairs' hashes, so the set without one label is
// the sum less that pair's hash; a series without the label keeps its
// whole hash.
func (p *metricPass) multipliers(t *timeline.SeriesTable) []MetricLabel {
	out := make([]MetricLabel, 0, len(p.slots))
	rows := p.rows
	for _, sl := range p.slots {
		if sl.series < len(rows) {
			for k, i := range rows {
				if !hasName(t.Labels(&t.Rows[i]), sl.nameID) {
					sl.without = append(sl.without, p.totals[k])
				}
			}
		}
		w := p.sn.set.distinct(sl.without)
		out = append(out, MetricLabel{Name: sl.ls.name, Values: p.sn.set.distinct(sl.vals), Multiplier: float64(len(rows)) / float64(w), Saves: len(rows) - w})
	}
	return out
}

// hasName reports whether pairs hold the label name id.
func hasName(pairs []uint32, name uint32) bool {
	for j := 0; j < len(pairs); j += 2 {
		if pairs[j] == name {
			return true
		}
	}
	return false
}

// hashSet counts distinct 64-bit values: open addressing over a table
// reused from count to count.
type hashSet struct{ slots []uint64 }

// distinct counts the distinct values of hs.
func (s *hashSet) distinct(hs []uint64) int {
	size := 1 << bits.Len(uint(2*len(hs)))
	if cap(s.slots) < size {
		s.slots = make([]uint64, size)
	}
	s.slots = s.slots[:size]
	clear(s.slots)
	mask := uint64(size - 1)
	n, zero := 0, false
	for _, h := range hs {
		if h == 0 { // 0 marks a free slot
			if !zero {
				zero, n = true, n+1
			}
			continue
		}
		i := spread(h) & mask
		for s.slots[i] != 0 && s.slots[i] != h {
			i = (i + 1) & mask
		}
		if s.slots[i] == 0 {
			s.slots[i] = h
			n++
		}
	}
	return n
}

// fill writes the snapshot's counts into rep, the first top of each list.
func (sn *snapshot) fill(rep *Report, top int) {
	rep.Series, rep.MetricCount, rep.LabelCount = sn.n, len(sn.metrics), len(sn.labels)
	ms := slices.Clone(sn.metrics)
	slices.SortFunc(ms, func(a, b *metricStat) int {
		return cmp.Or(cmp.Compare(b.series, a.series), strings.Compare(a.name, b.name))
	})
	for _, m := range first(ms, top) {
		rep.Metrics = append(rep.Metrics, Metric{Name: m.name, Series: m.series, Labels: first(m.labels, top)})
	}
	labels := make([]Label, 0, len(sn.labels))
	for _, ls := range sn.labels {
		labels = append(labels, Label{Name: ls.name, Values: len(ls.values), Series: ls.series, Metrics: ls.metrics, Saves: ls.saves})
	}
	slices.SortFunc(labels, compareLabels)
	rep.Labels = first(labels, top)
	rep.Pairs = sn.topPairs(top)
}

func compareLabels(a, b Label) int {
	return cmp.Or(cmp.Compare(b.Saves, a.Saves), cmp.Compare(b.Values, a.Values), cmp.Compare(b.Series, a.Series), strings.Compare(a.Name, b.Name))
}

// topPairs is the top label=value pairs by series, kept in a short sorted
// list as the values stream by.
func (sn *snapshot) topPairs(top int) []Pair {
	out := []Pair{}
	less := func(a, b Pair) int {
		return cmp.Or(cmp.Compare(b.Series, a.Series), strings.Compare(a.Name, b.Name), strings.Compare(a.Value, b.Value))
	}
	for _, ls := range sn.labels {
		for v, n := range ls.values {
			p := Pair{Name: ls.name, Value: sn.strs[v], Series: int(n)}
			if top < 0 {
				out = append(out, p)
				continue
			}
			if top > 0 && len(out) == top && less(p, out[top-1]) >= 0 {
				continue
			}
			i, _ := slices.BinarySearchFunc(out, p, less)
			out = slices.Insert(out, i, p)
			if len(out) > top {
				out = out[:top]
			}
		}
	}
	if top < 0 {
		slices.SortFunc(out, less)
	}
	return out
}

// first is the first n of list (all for n < 0).
func first[T any](list []T, n int) []T {
	if n >= 0 && len(list) > n {
		return list[:n]
	}
	return list
}
