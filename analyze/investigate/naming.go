package investigate

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
)

// Naming a slice. The slice search finds a set of units; several
// descriptions can select exactly that set (a Job, its template hash, the
// ConfigMap version its pods read). The on-call engineer acts on names:
// a namespace, a workload, a pool, a zone, a rack, a node. So among the
// descriptions that select the same units, the slice is named by the one
// an operator can act on and read at a glance, and the others are listed
// as equivalents. What separates bad from good is unchanged by the choice:
// only descriptions of the very same units compete.

// interpretRank orders dimensions by how directly an operator can act on
// them: lower is better.
func interpretRank(dim string) int {
	switch {
	case dim == "namespace":
		return 0
	case strings.HasPrefix(dim, "owner/") && !strings.Contains(dim, "."):
		switch strings.TrimPrefix(dim, "owner/") {
		case "ReplicaSet":
			return 40 // a generated name: the Deployment and its template say it better
		default:
			return 1 // Job, Deployment, StatefulSet, DaemonSet, MPIJob, JobSet ...
		}
	case dim == "node.pool":
		return 2
	case dim == "node.zone":
		return 3
	case strings.HasPrefix(dim, "node.label/") && strings.HasSuffix(dim, "/rack"):
		return 4
	case dim == "node":
		return 5
	case strings.HasPrefix(dim, "image.tag/"), strings.HasPrefix(dim, "node."):
		return 10 // what ran: the image asked for, the node's driver, kernel, runtime
	case strings.HasPrefix(dim, "configmap/"), strings.HasPrefix(dim, "secret/"):
		if strings.Count(dim, "/") == 2 {
			return 11 // one key's value
		}
		return 30 // a whole object's content: its keys say which part
	case strings.HasPrefix(dim, "image.digest/"), strings.HasPrefix(dim, "artifact."):
		return 12
	case dim == "owner.podTemplateHash", dim == "owner.controllerRevision":
		return 20
	case strings.HasSuffix(dim, ".generation"):
		return 35
	}
	return 25
}

// whereRank is the rank of a description: its worst dimension, plus one per
// extra condition (a conjunction is harder to read than one name).
func whereRank(where map[string]string) int {
	worst := 0
	for d := range where {
		worst = max(worst, interpretRank(d))
	}
	return worst + len(where) - 1
}

// redundant drops dimensions that restate others: a whole ConfigMap or
// Secret's content when its keys are dimensions too, and the ReplicaSet's
// generated name when the template hash is there.
func redundant(dims []string) []string {
	has := map[string]bool{}
	for _, d := range dims {
		has[d] = true
	}
	keyed := map[string]bool{} // "configmap/NAME" with per-key dimensions
	for _, d := range dims {
		if strings.HasPrefix(d, "configmap/") || strings.HasPrefix(d, "secret/") {
			if parts := strings.SplitN(d, "/", 3); len(parts) == 3 {
				keyed[parts[0]+"/"+parts[1]] = true
			}
		}
	}
	var out []string
	for _, d := range dims {
		switch {
		case keyed[d]:
			continue
		case d == "owner/ReplicaSet" && has["owner.podTemplateHash"]:
			continue
		}
		out = append(out, d)
	}
	return out
}

// separating keeps at most n of dims, those that tell the bad units from
// the good best, in their order: a dimension's worth is the total
// variation distance between its values' shares among the bad units and
// among the others (0 when it is spread alike, 1 when no value is held on
// both sides). The slice search takes a bounded number of dimensions;
// those left out are the ones least able to name a slice.
func separating(dims []string, units []*outcome.Unit, ids []map[string]identity.Dimension, n int) []string {
	if len(dims) <= n {
		return dims
	}
	var nbad, nother float64
	for _, u := range units {
		if u.Bad() {
			nbad++
		} else {
			nother++
		}
	}
	worth := make(map[string]float64, len(dims))
	for _, d := range dims {
		share := map[string][2]float64{}
		for i, u := range units {
			x := share[ids[i][d].Value]
			if u.Bad() {
				x[0] += 1 / nbad
			} else {
				x[1] += 1 / nother
			}
			share[ids[i][d].Value] = x
		}
		for _, x := range share {
			worth[d] += math.Abs(x[0]-x[1]) / 2
		}
	}
	ranked := slices.Clone(dims)
	slices.SortStableFunc(ranked, func(a, b string) int { return cmp.Compare(worth[b], worth[a]) })
	kept := map[string]bool{}
	for _, d := range ranked[:n] {
		kept[d] = true
	}
	return slices.DeleteFunc(slices.Clone(dims), func(d string) bool { return !kept[d] })
}

// unitSet is the units (indexes) that match where.
func unitSet(units []*outcome.Unit, ids []map[string]identity.Dimension, where map[string]string) map[int]bool {
	set := map[int]bool{}
	for i := range units {
		if matches(ids[i], where) {
			set[i] = true
		}
	}
	return set
}

// nameSlice returns the most interpretable single dimension=value that
// selects exactly the units where selects (where itself when none is
// better), and the other exact descriptions, best first.
func nameSlice(units []*outcome.Unit, ids []map[string]identity.Dimension, dims []string, where map[string]string) (map[string]string, []map[string]string) {
	want := unitSet(units, ids, where)
	if len(want) == 0 {
		return where, nil
	}
	where = plainer(units, ids, dims, where)
	var cands []map[string]string
	seen := map[string]bool{}
	key := func(w map[string]string) string {
		var parts []string
		for k, v := range w {
			parts = append(parts, k+"="+v)
		}
		sort.Strings(parts)
		return strings.Join(parts, "&")
	}
	seen[key(where)] = true
	cands = append(cands, where)
	// The candidates: each dimension's value held by a unit of the set.
	var first int
	for i := range want {
		first = i
		break
	}
	for _, d := range dims {
		v, ok := ids[first][d]
		if !ok {
			continue
		}
		w := map[string]string{d: v.Value}
		if seen[key(w)] {
			continue
		}
		if sameSet(unitSet(units, ids, w), want) {
			seen[key(w)] = true
			cands = append(cands, w)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		ri, rj := whereRank(cands[i]), whereRank(cands[j])
		if ri != rj {
			return ri < rj
		}
		return key(cands[i]) < key(cands[j])
	})
	return cands[0], cands[1:]
}

func sameSet(a, b map[int]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// plainer restates each condition of where by the most interpretable
// dimension=value that holds for exactly the same units (a pool for the
// driver only that pool has).
func plainer(units []*outcome.Unit, ids []map[string]identity.Dimension, dims []string, where map[string]string) map[string]string {
	out := map[string]string{}
	keys := make([]string, 0, len(where))
	for d := range where {
		keys = append(keys, d)
	}
	sort.Strings(keys) // the same input, the same name
	for _, d := range keys {
		v := where[d]
		set := unitSet(units, ids, map[string]string{d: v})
		bestD, bestV := d, v
		var first int
		for i := range set {
			first = i
			break
		}
		for _, d2 := range dims {
			if d2 == d || interpretRank(d2) >= interpretRank(bestD) {
				continue
			}
			v2, ok := ids[first][d2]
			if !ok {
				continue
			}
			if sameSet(unitSet(units, ids, map[string]string{d2: v2.Value}), set) {
				bestD, bestV = d2, v2.Value
			}
		}
		if w, dup := out[bestD]; dup && w == bestV {
			continue // restates a condition already there
		} else if dup {
			bestD, bestV = d, v
		}
		out[bestD] = bestV
	}
	return out
}
