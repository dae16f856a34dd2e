package cardinality

import (
	"cmp"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/faultline/faultline/timeline"
)

// snapshot is what one instant's series add up to: per metric, per
// label name over every metric, and per scrape target.
type snapshot struct {
	n       int
	metrics []*metricStat // in name order
	labels  map[string]*labelStat
	targets map[targetKey]int

	seed maphash.Seed
	pool [][]uint64 // hash buffers reused from metric to metric
}

type metricStat struct {
	name   string
	series int
	labels []MetricLabel // full snapshots only
}

type labelStat struct {
	name    string
	values  map[string]int32 // series per value
	series  int
	metrics int
	saves   int
}

// slot is one label name within one metric, while its series are read.
type slot struct {
	ls       *labelStat
	nameHash uint64
	series   int
	// The last value seen, its pair hash and the series carrying it not
	// yet counted in ls.values: series come sorted, so values repeat.
	last    string
	lastH   uint64
	pending int32
	// Full snapshots: each series' label-set hash without this label,
	// and this label's pair hash.
	without, vals []uint64
}

func (sl *slot) value(v string, seed maphash.Seed) uint64 {
	if sl.pending > 0 && v == sl.last {
		sl.pending++
		return sl.lastH
	}
	sl.flush()
	sl.last, sl.pending = v, 1
	sl.lastH = mix(sl.nameHash ^ maphash.String(seed, v))
	return sl.lastH
}

func (sl *slot) flush() {
	if sl.pending > 0 {
		sl.ls.values[sl.last] += sl.pending
		sl.pending = 0
	}
}

// mix is MurmurHash3's 64-bit finalizer: pair hashes are summed into a
// set's hash, so each must spread over all 64 bits.
func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb93fe53e63b9
	h ^= h >> 33
	return h
}

// measure counts series by metric, label and target. A full snapshot
// also measures what each label multiplies each metric's series by; the
// other instant of a churn needs only the counts.
func measure(series []*timeline.Series, full bool) *snapshot {
	sn := &snapshot{n: len(series), labels: map[string]*labelStat{}, targets: map[targetKey]int{}, seed: maphash.MakeSeed()}
	series = byMetric(series)
	for lo := 0; lo < len(series); {
		hi := lo + 1
		for hi < len(series) && series[hi].Metric == series[lo].Metric {
			hi++
		}
		sn.addMetric(series[lo:hi], full)
		lo = hi
	}
	return sn
}

// byMetric is series grouped by metric: as given when a store answers in
// CompareSeries order, else a sorted copy.
func byMetric(series []*timeline.Series) []*timeline.Series {
	byName := func(a, b *timeline.Series) int { return strings.Compare(a.Metric, b.Metric) }
	if slices.IsSortedFunc(series, byName) {
		return series
	}
	series = slices.Clone(series)
	slices.SortStableFunc(series, byName)
	return series
}

func (sn *snapshot) label(name string) *labelStat {
	ls := sn.labels[name]
	if ls == nil {
		ls = &labelStat{name: name, values: map[string]int32{}}
		sn.labels[name] = ls
	}
	return ls
}

// metricPass is one metric's series being read.
type metricPass struct {
	sn     *snapshot
	full   bool
	slots  []*slot
	at     []*slot  // the slot of each label position of the last series
	totals []uint64 // each series' label-set hash (full)
	hs     []uint64 // the pair hashes of the series being read
	target targetKey
	tn     int
}

// slotFor finds the slot of the label at position j: most series of a
// metric have the same names at the same places.
func (p *metricPass) slotFor(j int, name string) *slot {
	if j < len(p.at) && p.at[j].ls.name == name {
		return p.at[j]
	}
	i := slices.IndexFunc(p.slots, func(sl *slot) bool { return sl.ls.name == name })
	if i < 0 {
		sl := &slot{ls: p.sn.label(name), nameHash: maphash.String(p.sn.seed, name)}
		if p.full {
			sl.without, sl.vals = p.sn.take(), p.sn.take()
		}
		p.slots, i = append(p.slots, sl), len(p.slots)
	}
	for len(p.at) <= j {
		p.at = append(p.at, p.slots[i])
	}
	p.at[j] = p.slots[i]
	return p.slots[i]
}

func (p *metricPass) add(s *timeline.Series) {
	var total uint64
	var tk targetKey
	p.hs = p.hs[:0]
	for j, l := range s.Labels {
		sl := p.slotFor(j, l.Name)
		sl.series++
		h := sl.value(l.Value, p.sn.seed)
		p.hs = append(p.hs, h)
		total += h
		switch l.Name {
		case "job":
			tk.job = l.Value
		case "instance":
			tk.instance = l.Value
		}
	}
	p.countTarget(tk)
	if !p.full {
		return
	}
	p.totals = append(p.totals, total)
	for j, h := range p.hs {
		sl := p.at[j]
		sl.without = append(sl.without, total-h)
		sl.vals = append(sl.vals, h)
	}
}

// countTarget counts a series of target k, in runs as series come
// sorted.
func (p *metricPass) countTarget(k targetKey) {
	if p.tn > 0 && k == p.target {
		p.tn++
		return
	}
	p.flushTarget()
	p.target, p.tn = k, 1
}

func (p *metricPass) flushTarget() {
	if p.tn > 0 && p.target != (targetKey{}) {
		p.sn.targets[p.target] += p.tn
	}
	p.tn = 0
}

// addMetric counts one metric's series.
func (sn *snapshot) addMetric(group []*timeline.Series, full bool) {
	ms := &metricStat{name: group[0].Metric, series: len(group)}
	sn.metrics = append(sn.metrics, ms)
	p := &metricPass{sn: sn, full: full}
	for _, s := range group {
		p.add(s)
	}
	p.flushTarget()
	for _, sl := range p.slots {
		sl.flush()
		sl.ls.series += sl.series
		sl.ls.metrics++
	}
	if !full {
		return
	}
	ms.labels = p.multipliers(group)
	for i, sl := range p.slots {
		sl.ls.saves += ms.labels[i].Saves
		sn.give(sl.without, sl.vals)
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
func (p *metricPass) multipliers(group []*timeline.Series) []MetricLabel {
	out := make([]MetricLabel, 0, len(p.slots))
	for _, sl := range p.slots {
		if sl.series < len(group) {
			for i, s := range group {
				if _, ok := labelIndex(s.Labels, sl.ls.name); !ok {
					sl.without = append(sl.without, p.totals[i])
				}
			}
		}
		w := distinct(sl.without)
		out = append(out, MetricLabel{Name: sl.ls.name, Values: distinct(sl.vals), Multiplier: float64(len(group)) / float64(w), Saves: len(group) - w})
	}
	return out
}

// distinct counts the distinct hashes of hs (which it sorts).
func distinct(hs []uint64) int {
	slices.Sort(hs)
	n := 0
	for i, h := range hs {
		if i == 0 || h != hs[i-1] {
			n++
		}
	}
	return n
}

func (sn *snapshot) take() []uint64 {
	if n := len(sn.pool); n > 0 {
		b := sn.pool[n-1]
		sn.pool = sn.pool[:n-1]
		return b[:0]
	}
	return nil
}

func (sn *snapshot) give(bufs ...[]uint64) { sn.pool = append(sn.pool, bufs...) }

func labelIndex(ls timeline.Labels, name string) (int, bool) {
	return slices.BinarySearchFunc(ls, name, func(l timeline.Label, n string) int { return strings.Compare(l.Name, n) })
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
			p := Pair{Name: ls.name, Value: v, Series: int(n)}
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
