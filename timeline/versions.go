package timeline

import (
	"cmp"
	"slices"
	"strconv"
)

// ChooseVersions applies q's choice to versions, which are the versions
// matching q's object and span in time order (the order they were stored
// in breaking ties): all of them with q.History, else per object the
// latest at or before q.At (with q.OrFirstAfter, or else the first after
// it). The result is in time order (at most q.Limit) with q.ByTime, else by
// object (namespace, name, uid) and OrderVersions within each. A store
// whose query language cannot choose per object uses it.
func ChooseVersions(versions []ObjectVersion, q VersionQuery) []ObjectVersion {
	out := versions
	if !q.History {
		at := q.At
		chosen := map[string]int{} // object -> index in out
		out = nil
		for _, v := range versions {
			k := objectOf(&v)
			i, held := chosen[k]
			switch {
			case at.IsZero() || !v.Time.After(at):
				// Later in time order: the latest at or before At wins,
				// over an earlier one and over one after At.
				if held {
					out[i] = v
					continue
				}
			case !q.OrFirstAfter || held:
				continue // after At: only the first, and only if none before
			}
			chosen[k] = len(out)
			out = append(out, v)
		}
	}
	if q.ByTime {
		if q.Limit > 0 && len(out) > q.Limit {
			out = out[:q.Limit]
		}
		return out
	}
	slices.SortStableFunc(out, func(a, b ObjectVersion) int {
		return cmp.Or(cmp.Compare(a.Object.Namespace, b.Object.Namespace), cmp.Compare(a.Object.Name, b.Object.Name),
			cmp.Compare(a.Object.UID, b.Object.UID))
	})
	OrderVersions(out)
	return out
}

// objectOf tells objects apart: by uid, or by resource, namespace and name
// where the uid is unknown.
func objectOf(v *ObjectVersion) string {
	if v.Object.UID != "" {
		return v.Object.UID
	}
	return v.Object.Resource + "/" + v.Object.Namespace + "/" + v.Object.Name
}

// OrderVersions puts each object's versions (consecutive in vs) in the
// order they were made: by time, then by resourceVersion (numerically
// where both parse). A version known only from its own metadata (a dump,
// SeenInferred) has a time that is a lower bound: it was made no earlier
// than any version of the same object with a smaller resourceVersion, so
// it is ordered after them, never before the audited writes that preceded
// it. Its Time is left as learned.
func OrderVersions(vs []ObjectVersion) {
	for lo := 0; lo < len(vs); {
		hi := lo + 1
		for hi < len(vs) && sameObject(&vs[lo], &vs[hi]) {
			hi++
		}
		orderObject(vs[lo:hi])
		lo = hi
	}
}

func sameObject(a, b *ObjectVersion) bool {
	return a.Object.UID == b.Object.UID && a.Object.Namespace == b.Object.Namespace && a.Object.Name == b.Object.Name &&
		a.Object.Resource == b.Object.Resource && a.Object.Group == b.Object.Group
}

func orderObject(vs []ObjectVersion) {
	if len(vs) < 2 || !slices.ContainsFunc(vs, func(v ObjectVersion) bool { return v.Seen == SeenInferred }) {
		return
	}
	at := make(map[*ObjectVersion]int64, len(vs)) // when each was made, at the earliest
	for i := range vs {
		v := &vs[i]
		t := v.Time.UnixNano()
		if v.Seen == SeenInferred {
			for j := range vs {
				w := &vs[j]
				if w.Seen != SeenInferred && compareRV(w.ResourceVersion, v.ResourceVersion) < 0 && w.Time.UnixNano() > t {
					t = w.Time.UnixNano()
				}
			}
		}
		at[v] = t
	}
	type entry struct {
		at int64
		v  ObjectVersion
	}
	es := make([]entry, len(vs))
	for i := range vs {
		es[i] = entry{at[&vs[i]], vs[i]}
	}
	slices.SortStableFunc(es, func(a, b entry) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return compareRV(a.v.ResourceVersion, b.v.ResourceVersion)
	})
	for i := range es {
		vs[i] = es[i].v
	}
}

// compareRV compares resourceVersions numerically where both parse (etcd
// revisions), else not at all (0).
func compareRV(a, b string) int {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return 0
	}
	return cmp.Compare(x, y)
}
