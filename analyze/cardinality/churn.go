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
func churn(t *timeline.SeriesTable, snAt, snVs *snapshot, top int) *Churn {
	c := &Churn{SeriesVs: snVs.n, Metrics: []MetricChurn{}, Labels: []LabelChurn{}}
	per := map[uint32]*MetricChurn{}
	for i := range t.Rows {
		r := &t.Rows[i]
		in := r.In & (bitAt | bitVs)
		if in == 0 {
			continue
		}
		m := per[r.Metric]
		if m == nil {
			m = &MetricChurn{Name: t.Strings[r.Metric]}
			per[r.Metric] = m
		}
		switch in {
		case bitAt | bitVs:
			m.Series++
			m.SeriesVs++
			c.Kept++
		case bitAt:
			m.Series++
			m.Appeared++
			c.Appeared++
		case bitVs:
			m.SeriesVs++
			m.Disappeared++
			c.Disappeared++
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

// labelChurn is, for every label name at either instant, its values
// present at one and not the other, the most churned label first.
func labelChurn(snAt, snVs *snapshot) []LabelChurn {
	names := map[uint32]bool{}
	for n := range snAt.labels {
		names[n] = true
	}
	for n := range snVs.labels {
		names[n] = true
	}
	out := []LabelChurn{}
	for n := range names {
		var now, then map[uint32]int32
		if ls := snAt.labels[n]; ls != nil {
			now = ls.values
		}
		if ls := snVs.labels[n]; ls != nil {
			then = ls.values
		}
		lc := LabelChurn{Name: snAt.strs[n]}
		lc.NewValues, lc.Appeared, lc.Examples = missing(now, then, snAt.strs)
		lc.GoneValues, lc.Disappeared, _ = missing(then, now, snAt.strs)
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
// and the first few of them in order (values are ids into strs).
func missing(a, b map[uint32]int32, strs []string) (values, series int, examples []string) {
	for id, n := range a {
		if _, ok := b[id]; ok {
			continue
		}
		values++
		series += int(n)
		v := strs[id]
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
