package investigate

import (
	"context"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
)

// Episodes. Failures that form distinct clusters (units the slice search
// explains by different causes) are told apart: each further cause of the
// slice search with at least minEpisodeUnits bad units of its own is an
// episode, investigated as the main one is: its own first bad and last
// good, slice, counterexample, suspects and verdict, judged against the
// good units of the whole timeline. The episode whose units went bad first
// is the main one (the report's top-level fields); the others are listed.

// minEpisodeUnits is the least number of bad units of an episode: one
// failure is no pattern (score.go).
const minEpisodeUnits = 2

// Episode is one independent fault.
type Episode struct {
	Boundary       *Boundary       `json:"boundary"`
	Slice          *Slice          `json:"slice"`
	Changes        []Suspect       `json:"changes"`
	Counterexample *Counterexample `json:"counterexample"`
	Verdict        string          `json:"verdict"`
	VerdictWhy     string          `json:"verdictWhy"`

	typical map[string]string
	ns      string
	units   []*outcome.Unit // the units it was judged over
	ids     []map[string]identity.Dimension
}

// episodeOf investigates the units of one cluster: the bad units where
// selects (less those of the slices before it) and every good unit.
func episodeOf(ctx context.Context, s Store, out *outcome.Outcomes, units []*outcome.Unit, ids []map[string]identity.Dimension,
	cons constraints, sl *Slice, taken func(int) bool, health []NodeHealth, since time.Time) (*Episode, error) {
	var sub []*outcome.Unit
	var subIDs []map[string]identity.Dimension
	var first time.Time
	for i, u := range units {
		switch {
		case u.Good():
		case u.Bad() && matches(ids[i], sl.Where) && !taken(i):
			if first.IsZero() || u.BadAt.Before(first) {
				first = u.BadAt
			}
		default:
			continue
		}
		sub, subIDs = append(sub, u), append(subIDs, ids[i])
	}
	nbad := 0
	for _, u := range sub {
		if u.Bad() {
			nbad++
		}
	}
	if nbad < minEpisodeUnits {
		return nil, nil
	}
	ep := &Episode{Slice: sl, units: sub, ids: subIDs}
	lg, err := lastGoodBefore(ctx, s, out, first.Truncate(time.Second))
	if err != nil {
		return nil, err
	}
	ep.Boundary = &Boundary{FirstBad: first}
	if lg != nil {
		ep.Boundary.LastGood = lg.Time
	}
	ep.typical = typical(sub, subIDs, sl.Where)
	for i, u := range sub {
		if u.Bad() && matches(subIDs[i], sl.Where) {
			ep.ns = u.Namespace
			break
		}
	}
	ep.Counterexample = counterexample(sub, subIDs, ep.typical, sl.Where, ep.ns, first)
	tmp := &Report{Slice: sl, Counterexample: ep.Counterexample, NodeHealth: health, ns: ep.ns, typical: ep.typical, cons: cons}
	if ep.Changes, err = suspects(ctx, s, sub, subIDs, tmp, ep.typical, first, since); err != nil {
		return nil, err
	}
	tmp.Boundary, tmp.Changes = ep.Boundary, ep.Changes
	tmp.Units.Bad = nbad
	decide(tmp)
	ep.Verdict, ep.VerdictWhy = tmp.Verdict, tmp.VerdictWhy
	return ep, nil
}

// episodes finds the further episodes beside the main slice, and makes the
// earliest of all the main one: it returns the report's episodes and, when
// another episode went bad before the main slice's units did, that
// episode, to take the main one's place.
func episodes(ctx context.Context, s Store, out *outcome.Outcomes, units []*outcome.Unit, ids []map[string]identity.Dimension,
	rep *Report, since time.Time) ([]Episode, *Episode, time.Time, error) {
	if rep.Slice == nil {
		return nil, nil, time.Time{}, nil
	}
	dims := sliceDims(ids)
	slices := []map[string]string{rep.Slice.Where}
	taken := func(i int) bool {
		for _, w := range slices {
			if matches(ids[i], w) {
				return true
			}
		}
		return false
	}
	var eps []Episode
	for _, c := range rep.Slice.Others {
		if int(c.Bad) < minEpisodeUnits {
			continue
		}
		where, equivalents := nameSlice(units, ids, dims, map[string]string(c.Where))
		sl := &Slice{Where: where, Equivalents: equivalents, Bad: int(c.Bad), Total: int(c.Total), Coverage: c.Coverage, Precision: c.Precision}
		ep, err := episodeOf(ctx, s, out, units, ids, rep.cons, sl, taken, rep.NodeHealth, since)
		if err != nil {
			return nil, nil, time.Time{}, err
		}
		slices = append(slices, where)
		if ep != nil {
			eps = append(eps, *ep)
		}
	}
	eps = byFirstBad(eps)
	// The main slice's own first bad unit.
	var mainFirst time.Time
	for i, u := range units {
		if u.Bad() && matches(ids[i], rep.Slice.Where) && (mainFirst.IsZero() || u.BadAt.Before(mainFirst)) {
			mainFirst = u.BadAt
		}
	}
	if len(eps) > 0 && !mainFirst.IsZero() && eps[0].Boundary.FirstBad.Before(mainFirst) {
		earlier := eps[0]
		return eps[1:], &earlier, mainFirst, nil
	}
	return eps, nil, mainFirst, nil
}

// demote makes the report's main findings an episode of their own, with
// the main slice's own first bad: its suspects are gathered again up to
// it (the report's boundary was the earlier episode's).
func demote(ctx context.Context, s Store, out *outcome.Outcomes, rep *Report, first, since time.Time) (Episode, error) {
	ep := Episode{Boundary: &Boundary{FirstBad: first}, Slice: rep.Slice, Changes: rep.Changes,
		Counterexample: rep.Counterexample, typical: rep.typical, ns: rep.ns, units: rep.units, ids: rep.ids}
	lg, err := lastGoodBefore(ctx, s, out, first.Truncate(time.Second))
	if err != nil {
		return ep, err
	}
	if lg != nil {
		ep.Boundary.LastGood = lg.Time
	}
	tmp := &Report{Slice: rep.Slice, Counterexample: rep.Counterexample, NodeHealth: rep.NodeHealth, ns: rep.ns, typical: rep.typical}
	if ep.Changes, err = suspects(ctx, s, rep.units, rep.ids, tmp, rep.typical, first, since); err != nil {
		return ep, err
	}
	tmp = &Report{Boundary: ep.Boundary, Changes: ep.Changes, Units: UnitCounts{Bad: ep.Slice.Bad}}
	decide(tmp)
	ep.Verdict, ep.VerdictWhy = tmp.Verdict, tmp.VerdictWhy
	return ep, nil
}

// sliceDims are the dimensions the slice search saw, less those that
// restate others.
func sliceDims(ids []map[string]identity.Dimension) []string {
	return redundant(allDims(ids))
}

// allDims are the dimensions of the units, sorted.
func allDims(ids []map[string]identity.Dimension) []string {
	set := map[string]bool{}
	for _, id := range ids {
		for n := range id {
			set[n] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// separate finds the report's further episodes (episodes) and the nodes'
// own (nodeEpisode), and makes the earliest of all the main one. res
// resolves node identities as they were before the incident.
func separate(ctx context.Context, s Store, out *outcome.Outcomes, units []*outcome.Unit, ids []map[string]identity.Dimension,
	rep *Report, res *identity.Resolver, since time.Time) error {
	eps, earlier, mainFirst, err := episodes(ctx, s, out, units, ids, rep, since)
	if err != nil {
		return err
	}
	if earlier != nil {
		old, err := demote(ctx, s, out, rep, mainFirst, since)
		if err != nil {
			return err
		}
		others := rep.Slice.Others
		promote(rep, earlier)
		rep.Slice.Others, old.Slice.Others = others, nil
		eps = byFirstBad(append([]Episode{old}, eps...))
		mainFirst = earlier.Boundary.FirstBad
	}
	nep, err := nodeEpisode(ctx, s, res, out, rep.NodeHealth, since)
	if err != nil {
		return err
	}
	switch {
	case nep == nil:
	case rep.Slice == nil: // no pod went bad: the nodes are the incident
		promote(rep, nep)
		rep.units, rep.ids = nep.units, nep.ids
		rep.Units.Bad, rep.Units.Good = 0, 0
		for _, u := range nep.units {
			if u.Bad() {
				rep.Units.Bad++
			} else if u.Good() {
				rep.Units.Good++
			}
		}
	case sameEpisode(nep, rep.Changes):
	case nep.Boundary.FirstBad.Before(mainFirst):
		// The nodes failed before the main slice's units did: theirs is
		// the main episode.
		old, err := demote(ctx, s, out, rep, mainFirst, since)
		if err != nil {
			return err
		}
		promote(rep, nep)
		rep.units, rep.ids = nep.units, nep.ids
		eps = byFirstBad(append(eps, old))
	default:
		eps = byFirstBad(append(eps, *nep))
	}
	if eps != nil {
		rep.Episodes = eps
	}
	return nil
}

// promote makes an episode's findings the report's main ones.
func promote(rep *Report, ep *Episode) {
	rep.Slice, rep.Changes, rep.Counterexample, rep.typical, rep.ns = ep.Slice, ep.Changes, ep.Counterexample, ep.typical, ep.ns
}

// byFirstBad orders episodes by when they went bad.
func byFirstBad(eps []Episode) []Episode {
	sort.SliceStable(eps, func(i, j int) bool { return eps[i].Boundary.FirstBad.Before(eps[j].Boundary.FirstBad) })
	return eps
}
