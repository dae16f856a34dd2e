package cardinality

import (
	"cmp"
	"slices"
	"strings"

	"github.com/faultline/faultline/timeline"
)

// exampleValues is how many new values a label's churn shows.
const exampleValues = 3

// churn compares the series at At with those at Vs: which appeared,
// which disappeared, per metric, and which labels' values came and went.
func churn(at, vs []*timeline.Series, snAt, snVs *snapshot, top int) *Churn {
	c := &Churn{SeriesVs: len(vs), Metrics: []MetricChurn{}, Labels: []LabelChurn{}}
	inAt, inVs := ids(at), ids(vs)
	per := map[string]*MetricChurn{}
	var m *MetricChurn
	metric := func(name string) *MetricChurn {
		if m != nil && m.Name == name { // series come grouped by metric
			return m
		}
		if m = per[name]; m == nil {
			m = &MetricChurn{Name: name}
			per[name] = m
		}
		return m
	}
	for _, s := range at {
		m := metric(s.Metric)
		m.Series++
		if _, ok := slices.BinarySearch(inVs, s.ID); ok {
			c.Kept++
		} else {
			c.Appeared++
			m.Appeared++
		}
	}
	for _, s := range vs {
		m := metric(s.Metric)
		m.SeriesVs++
		if _, ok := slices.BinarySearch(inAt, s.ID); !ok {
			c.Disappeared++
			m.Disappeared++
		}
	}
	for _, m := range per {
		if m.Appeared+m.Disappeared > 0 {
			c.Metrics = append(c.Metrics, *m)
		}
	}
	slices.SortFunc(c.Metrics, func(a, b MetricChurn) int {
		return cmp.Or(cmp.Compare(b.Appeared+b.Disappeared, a.Appeared+a.Disappeared), strings.Compare(a.Name, b.Name))
	})
	c.Metrics = first(c.Metrics, top)
	c.Labels = first(labelChurn(snAt, snVs), top)
	return c
}

// ids are the series' IDs, sorted.
func ids(series []*timeline.Series) []int64 {
	out := make([]int64, len(series))
	for i, s := range series {
		out[i] = s.ID
	}
	slices.Sort(out)
	return out
}

// labelChurn is, for every label name at either instant, its values
// present at one and not the other, the most churned label first.
func labelChurn(snAt, snVs *snapshot) []LabelChurn {
	names := map[string]bool{}
	for n := range snAt.labels {
		names[n] = true
	}
	for n := range snVs.labels {
		names[n] = true
	}
	out := []LabelChurn{}
	for n := range names {
		var now, then map[string]int32
		if ls := snAt.labels[n]; ls != nil {
			now = ls.values
		}
		if ls := snVs.labels[n]; ls != nil {
			then = ls.values
		}
		lc := LabelChurn{Name: n}
		lc.NewValues, lc.Appeared, lc.Examples = missing(now, then)
		lc.GoneValues, lc.Disappeared, _ = missing(then, now)
		if lc.NewValues+lc.GoneValues > 0 {
			out = append(out, lc)
		}
	}
	slices.SortFunc(out, func(a, b LabelChurn) int {
		return cmp.Or(cmp.Compare(b.NewValues+b.GoneValues, a.NewValues+a.GoneValues),
			cmp.Compare(b.Appeared+b.Disappeared, a.Appeared+a.Disappeared), strings.Compare(a.Name, b.Name))
	})
	return out
}

// missing counts the values of a that b lacks, the series carrying them,
// and the first few of them in order.
func missing(a, b map[string]int32) (values, series int, examples []string) {
	for v, n := range a {
		if _, ok := b[v]; ok {
			continue
		}
		values++
		series += int(n)
		if len(examples) == exampleValues && v >= examples[exampleValues-1] {
			continue
		}
		i, _ := slices.BinarySearch(examples, v)
		examples = slices.Insert(examples, i, v)
		if len(examples) > exampleValues {
			examples = examples[:exampleValues]
		}
	}
	return values, series, examples
}
