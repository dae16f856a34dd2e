package investigate

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
)

// What admission set in a pod. Admission does not only refuse pods
// (admission.go); it also changes them as they are created: a LimitRange
// gives the containers that declare no resources its defaults, a mutating
// webhook or admission policy injects a sidecar, env or resources. What a
// pod holds that its owner's template does not give was set there
// (identity marks it: Dimension.Admission), so no write to the workload
// made it. When the bad units of the slice hold such a value, the change
// is a write to what admits pods of their namespace, made before they were
// created:
//
//   - a namespaced object governs only its namespace; a cluster-scoped
//     configuration, any (and a namespace's labels decide which webhooks
//     select it);
//   - only a write before the first bad unit holding the value was
//     created can have set it;
//   - when the pods say what set the value (the LimitRanger names itself
//     in an annotation), a write to another kind of object did not;
//   - a good unit created after the write and given the same value is
//     evidence against it: set alike, it did not fail;
//   - a value pods were given before the write was not set by it (a
//     sidecar every pod of a mesh has long had).

// admittedValue is one value a pod was given at admission.
type admittedValue struct{ name, value string }

// admittedBy maps what a pod says set a value to the kind of object whose
// write can have made it do so ("" for any).
var admittedBy = map[string]string{identity.ByLimitRange: "LimitRange"}

// mutationSuspects are the admission writes that can have set what the
// slice's bad units were created with beyond their template.
func mutationSuspects(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension,
	where map[string]string, since, until time.Time) ([]*Suspect, error) {
	type space struct {
		first time.Time
		vals  map[admittedValue]bool
		kinds map[string]bool // the kinds named; "" when a value's setter is not named
	}
	spaces := map[string]*space{}
	for i, u := range units {
		if u.Unborn || !u.Bad() || u.Created.IsZero() || !matches(ids[i], where) {
			continue
		}
		for _, d := range ids[i] {
			if d.Admission == "" {
				continue
			}
			sp := spaces[u.Namespace]
			if sp == nil {
				sp = &space{first: u.Created, vals: map[admittedValue]bool{}, kinds: map[string]bool{}}
				spaces[u.Namespace] = sp
			}
			if u.Created.Before(sp.first) {
				sp.first = u.Created
			}
			sp.vals[admittedValue{d.Name, d.Value}] = true
			sp.kinds[admittedBy[d.Admission]] = true
		}
	}
	names := make([]string, 0, len(spaces))
	for ns := range spaces {
		names = append(names, ns)
	}
	sort.Strings(names)
	var out []*Suspect
	seen := map[string]bool{}
	for _, ns := range names {
		sp := spaces[ns]
		f, err := timeline.CompileFilter(admissionFilter(ns))
		if err != nil {
			return nil, err
		}
		for r, err := range s.Records(ctx, timeline.Query{Since: since, Until: sp.first.Add(time.Nanosecond), Where: f}) {
			if err != nil {
				return nil, err
			}
			w := admissionWrite(r)
			if kind, _, _ := splitRef(w.Ref); !sp.kinds[""] && !sp.kinds[kind] {
				continue // the pods name what set their values, and it is not this
			}
			if key := w.Ref + "@" + r.Time.String(); seen[key] {
				continue
			} else {
				seen[key] = true
			}
			w.mutates = true
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	bad := map[admittedValue]bool{}
	for _, sp := range spaces {
		for v := range sp.vals {
			bad[v] = true
		}
	}
	for _, sp := range out {
		kind, _, _ := splitRef(sp.Ref)
		// A value pods it governs were given before it was not set by it
		// (a sidecar every pod of a mesh has long had).
		before := map[admittedValue]bool{}
		for i, u := range units {
			if !u.Unborn && !u.Created.IsZero() && u.Created.Before(sp.At) && governs(sp.Ref, u) {
				for _, d := range ids[i] {
					if d.Admission != "" {
						before[admittedValue{d.Name, d.Value}] = true
					}
				}
			}
		}
		var example []string
		n := 0
		for i, u := range units {
			if u.Unborn || u.Created.IsZero() || !u.Created.After(sp.At) || !governs(sp.Ref, u) {
				continue
			}
			for _, d := range ids[i] {
				v := admittedValue{d.Name, d.Value}
				if d.Admission == "" || !bad[v] || before[v] || (admittedBy[d.Admission] != "" && admittedBy[d.Admission] != kind) {
					continue
				}
				if u.Bad() || u.Good() {
					sp.reached[u] = true
				}
				if u.Bad() {
					n++
					if s := d.Name + " = " + d.Value; !slices.Contains(example, s) {
						example = append(example, s)
					}
				}
				break
			}
		}
		sort.Strings(example)
		sp.Why = fmt.Sprintf("%s by %s, then %d pods it governs were created with %s, which their template does not give (set at admission)",
			pastTense(verbOf(sp)), sp.By, n, strings.Join(example, ", "))
	}
	return out, nil
}

// verbOf is the verb of an admission write suspect.
func verbOf(sp *Suspect) string {
	if sp.Dimension == "created" {
		return "create"
	}
	v, _, _ := strings.Cut(sp.To, " ")
	return v
}

// admittedIn says whether the bad units holding value in dimension name
// were given it at admission.
func admittedIn(units []*outcome.Unit, ids []map[string]identity.Dimension, name, value string) bool {
	for i, u := range units {
		if d, ok := ids[i][name]; ok && u.Bad() && d.Value == value && d.Admission != "" {
			return true
		}
	}
	return false
}

// admittedHint says, when the counterexample differs from the bad units in
// a value they were given at admission, where to look for what gave it:
// no write to their workload did.
func admittedHint(rep *Report) string {
	if rep.Counterexample == nil || rep.Slice == nil {
		return ""
	}
	for _, d := range rep.Counterexample.Differs {
		n, ns, by := 0, "", ""
		for i, u := range rep.units {
			if dd, ok := rep.ids[i][d.Dimension]; ok && u.Bad() && matches(rep.ids[i], rep.Slice.Where) && dd.Value == d.Bad && dd.Admission != "" {
				n, ns, by = n+1, u.Namespace, dd.Admission
			}
		}
		if n == 0 {
			continue
		}
		where := "a mutating webhook or admission policy: kubectl get mutatingwebhookconfigurations,mutatingadmissionpolicies"
		if by == identity.ByLimitRange {
			where = "a LimitRange's defaults: kubectl get limitrange -n " + ns
		}
		return fmt.Sprintf("%d bad units were created with %s = %s, which their template does not give: set at admission, by %s",
			n, d.Dimension, d.Bad, where)
	}
	return ""
}
