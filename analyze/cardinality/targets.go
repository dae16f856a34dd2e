package cardinality

import (
	"cmp"
	"slices"
	"strings"
)

// targetKey is a scrape target: its job and instance labels.
type targetKey struct{ job, instance string }

// target is the scrape target of ids k.
func (sn *snapshot) target(k targetIDs) targetKey {
	return targetKey{job: sn.strs[k.job], instance: sn.strs[k.instance]}
}

// targets lists the series per scrape target at At (and at Vs when
// compared): those that grew most first, or with no Vs those with the
// most series. Series with neither label are left out.
func targets(at, vs *snapshot, top int) []Target {
	per := map[targetKey]*Target{}
	get := func(k targetKey) *Target {
		t := per[k]
		if t == nil {
			t = &Target{Job: k.job, Instance: k.instance}
			per[k] = t
		}
		return t
	}
	for k, n := range at.targets {
		get(at.target(k)).Series = n
	}
	if vs != nil {
		for k, n := range vs.targets {
			get(vs.target(k)).SeriesVs = n
		}
	}
	out := make([]Target, 0, len(per))
	for _, t := range per {
		if vs != nil {
			t.Growth = t.Series - t.SeriesVs
		}
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b Target) int {
		c := cmp.Compare(b.Series, a.Series)
		if vs != nil {
			c = cmp.Or(cmp.Compare(b.Growth, a.Growth), c)
		}
		return cmp.Or(c, strings.Compare(a.Job, b.Job), strings.Compare(a.Instance, b.Instance))
	})
	return first(out, top)
}
