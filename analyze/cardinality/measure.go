package cardinality

import (
	"cmp"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/faultline/faultline/timeline"
)

// snapshot is what one instant's series add up to: per metric, and per
// label name over every metric.
type snapshot struct {
	n       int
	metrics []*metricStat // in name order
	labels  map[string]*labelStat

	// Scratch reused from metric to metric.
	seed    maphash.Seed
	pairs   []uint64 // pair hashes of a metric's series, label by label
	totals  []uint64 // a series' label-set hash: the sum of its pair hashes
	without map[uint64]struct{}
	vals    map[uint64]struct{}
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
	last    *metricStat // the metric that counted last in metrics
}

// measure counts series by metric and label. A full snapshot also
// measures what each label multiplies each metric's series by; the other
// instant of a churn needs only the values.
func measure(series []*timeline.Series, full bool) *snapshot {
	sn := &snapshot{n: len(series), labels: map[string]*labelStat{}, seed: maphash.MakeSeed(),
		without: map[uint64]struct{}{}, vals: map[uint64]struct{}{}}
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

// addMetric counts one metric's series.
func (sn *snapshot) addMetric(group []*timeline.Series, full bool) {
	ms := &metricStat{name: group[0].Metric, series: len(group)}
	sn.metrics = append(sn.metrics, ms)
	var names []*labelStat
	for _, s := range group {
		for _, l := range s.Labels {
			ls := sn.label(l.Name)
			ls.values[l.Value]++
			ls.series++
			if ls.last != ms {
				ls.last = ms
				ls.metrics++
				names = append(names, ls)
			}
		}
	}
	if !full {
		return
	}
	ms.labels = sn.multipliers(group, names)
	for i := range ms.labels {
		sn.labels[ms.labels[i].Name].saves += ms.labels[i].Saves
	}
}

// multipliers measures, for each label of one metric, its values and the
// metric's series without it: a series' label set is hashed as the sum
// of its pairs' hashes, so the set without one label is the sum less
// that pair's hash.
func (sn *snapshot) multipliers(group []*timeline.Series, names []*labelStat) []MetricLabel {
	sn.pairs, sn.totals = sn.pairs[:0], sn.totals[:0]
	for _, s := range group {
		var t uint64
		for _, l := range s.Labels {
			h := maphash.Comparable(sn.seed, l)
			sn.pairs = append(sn.pairs, h)
			t += h
		}
		sn.totals = append(sn.totals, t)
	}
	out := make([]MetricLabel, 0, len(names))
	for _, ls := range names {
		clear(sn.without)
		clear(sn.vals)
		k := 0
		for i, s := range group {
			if j, ok := labelIndex(s.Labels, ls.name); ok {
				h := sn.pairs[k+j]
				sn.without[sn.totals[i]-h] = struct{}{}
				sn.vals[h] = struct{}{}
			} else {
				sn.without[sn.totals[i]] = struct{}{}
			}
			k += len(s.Labels)
		}
		w := len(sn.without)
		out = append(out, MetricLabel{Name: ls.name, Values: len(sn.vals), Multiplier: float64(len(group)) / float64(w), Saves: len(group) - w})
	}
	slices.SortFunc(out, func(a, b MetricLabel) int {
		return cmp.Or(cmp.Compare(b.Saves, a.Saves), cmp.Compare(b.Values, a.Values), strings.Compare(a.Name, b.Name))
	})
	return out
}

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
