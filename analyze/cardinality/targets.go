package cardinality

import (
	"cmp"
	"slices"
	"strings"

	"github.com/faultline/faultline/timeline"
)

// targetKey is a scrape target: its job and instance labels.
type targetKey struct{ job, instance string }

// targets counts series per scrape target at At (and at Vs when compared):
// those that grew most first, or with no Vs those with the most series.
// Series with neither label are left out.
func targets(at, vs []*timeline.Series, compared bool, top int) []Target {
	per := map[targetKey]*Target{}
	count := func(series []*timeline.Series, then bool) {
		for _, s := range series {
			k := targetKey{s.Labels.Get("job"), s.Labels.Get("instance")}
			if k == (targetKey{}) {
				continue
			}
			t := per[k]
			if t == nil {
				t = &Target{Job: k.job, Instance: k.instance}
				per[k] = t
			}
			if then {
				t.SeriesVs++
			} else {
				t.Series++
			}
		}
	}
	count(at, false)
	count(vs, true)
	out := make([]Target, 0, len(per))
	for _, t := range per {
		if compared {
			t.Growth = t.Series - t.SeriesVs
		}
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b Target) int {
		c := cmp.Compare(b.Series, a.Series)
		if compared {
			c = cmp.Or(cmp.Compare(b.Growth, a.Growth), c)
		}
		return cmp.Or(c, strings.Compare(a.Job, b.Job), strings.Compare(a.Instance, b.Instance))
	})
	return first(out, top)
}
