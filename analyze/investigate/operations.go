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

// What may be done to a pod from outside it. A drain evicts pods, an
// operator deletes or patches them (outcome.Unit.Target); the apiserver
// refuses such an operation for one of two kinds of object, and its
// refusal says which:
//
//   - a PodDisruptionBudget: an eviction deletes a pod only if the
//     budgets that select it allow one more pod down; else it is refused,
//     429 "Cannot evict pod as it would violate the pod's disruption
//     budget". That 429 is no load shed: the budget refused it and says
//     so. A budget governs the pods of its own namespace only;
//   - admission: a validating or mutating webhook configuration, or an
//     admission policy, whose rules select the operation (a policy engine
//     guarding evictions or deletes); a webhook that cannot be called and
//     fails closed refuses it, 500 "failed calling webhook "NAME"". These
//     are cluster-wide and may govern any namespace. The refusal's wording
//     says which kind refused (refusedBy), and a refusal that names one of
//     the objects written was not refused by another (mentions), as for
//     pods never created (admission.go).
//
// The change that made an operation refused is a write to such an object
// (a delete takes a rule or a budget away and refuses nothing) made
// between the same client's last operation answered in the namespace
// (less operationPropagation) and its first refused there. Each reaches
// the units refused there that its kind, and name, can have refused. A
// budget already strict can start refusing when its pods fall ill, so a
// suspect reaches only the refused units, and the scoring weighs it
// against what made their neighbours ill. These objects are audited at the
// Metadata level in most policies: the suspect says its content is not in
// the evidence.

// disruptionBudget is in the apiserver's refusal of an eviction for a
// budget.
const disruptionBudget = "disruption budget"

// operationPropagation is how long after a write the apiserver may still
// judge by the old objects: the disruption controller recomputes a
// budget's allowance from informers, and admission reads its
// configurations from informers too.
const operationPropagation = admissionPropagation

// operationSuspects are the writes to disruption budgets and admission
// configurations that can have made the slice's refused operations
// refused (outcome.Unit.Target).
func operationSuspects(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension,
	where map[string]string, since, until time.Time) ([]*Suspect, error) {
	type key struct {
		ns string
		op outcome.Operation
	}
	refused := map[key][]*outcome.Unit{}
	for i, u := range units {
		if u.Bad() && !u.Target.IsZero() && matches(ids[i], where) {
			k := key{u.Namespace, u.Target}
			refused[k] = append(refused[k], u)
		}
	}
	keys := make([]key, 0, len(refused))
	for k := range refused {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].ns+keys[i].op.String() < keys[j].ns+keys[j].op.String() })
	byKey := map[string]*Suspect{}
	var out []*Suspect
	for _, k := range keys {
		op := k.op.Filter() + fmt.Sprintf(` && ns == %q`, k.ns)
		first, err := firstRecord(ctx, s, op+` && code >= 400 && !(code in [404, 409])`, since, until, false)
		if err != nil {
			return nil, err
		}
		if first == nil {
			continue
		}
		from := since
		last, err := firstRecord(ctx, s, op+` && code > 0 && code < 400`, since, first.Time, true)
		if err != nil {
			return nil, err
		}
		if last != nil && last.Time.Add(-operationPropagation).After(from) {
			from = last.Time.Add(-operationPropagation)
		}
		f, err := timeline.CompileFilter(operationWrites(k.ns))
		if err != nil {
			return nil, err
		}
		var written []*Suspect
		for r, err := range s.Records(ctx, timeline.Query{Since: from, Until: first.Time.Add(time.Nanosecond), Where: f}) {
			if err != nil {
				return nil, err
			}
			sp := operationWrite(r, k.op)
			id := sp.Ref + "@" + r.Time.String()
			if byKey[id] == nil {
				byKey[id] = sp
				out = append(out, sp)
			}
			written = append(written, byKey[id])
		}
		for _, u := range refused[k] {
			for _, sp := range refusedFor(u.Message, written) {
				sp.reached[u] = true
			}
		}
	}
	var kept []*Suspect
	for _, sp := range out {
		if len(sp.reached) == 0 {
			continue // its kind, or name, refused none of them
		}
		sp.named = namedByAll(sp)
		sp.Why = fmt.Sprintf("%s by %s, then %s requests on %d pods it governs were refused (its content is not in the evidence)",
			pastTense(sp.verb), sp.By, sp.refusedOp.What(), len(sp.reached))
		kept = append(kept, sp)
	}
	return kept, nil
}

// operationWrites selects the writes that can make an operation on the
// pods of namespace ns refused: to a disruption budget of ns, or to a
// cluster-wide admission configuration. A write to a subresource (a
// budget's status, which its controller keeps up to date) changes no
// rule.
func operationWrites(ns string) string {
	var cluster []string
	for r := range admissionResources["admissionregistration.k8s.io"] {
		cluster = append(cluster, fmt.Sprintf("%q", r))
	}
	sort.Strings(cluster)
	return fmt.Sprintf(`((group == "policy" && resource == "poddisruptionbudgets" && ns == %q) || `+
		`(group == "admissionregistration.k8s.io" && resource in [%s])) && `+
		`subresource == "" && verb in ["create", "update", "patch"] && code > 0 && code < 400`, ns, strings.Join(cluster, ", "))
}

// operationWrite is the suspect of one write to a budget or an admission
// configuration, before the operation op was refused.
func operationWrite(r *timeline.Record, op outcome.Operation) *Suspect {
	var sp *Suspect
	if r.Object.Resource == "poddisruptionbudgets" {
		sp = writeSuspect(r, identity.Ref{Kind: "PodDisruptionBudget", Namespace: r.Object.Namespace, Name: r.Object.Name}.String(), "spec")
		sp.budget = true
	} else {
		sp = admissionWrite(r)
	}
	sp.refusedOp = op
	return sp
}

// refusedFor is, of the writes before a refusal, those its message says
// can have made it: a budget's for a refusal for a disruption budget; an
// admission configuration's of the kind its wording names (any, when it
// names none), and only those of the objects it names when it names one.
func refusedFor(msg string, written []*Suspect) []*Suspect {
	var budgets, admission, named []*Suspect
	kinds, known := refusedBy(msg)
	for _, sp := range written {
		kind, _, _ := splitRef(sp.Ref)
		switch {
		case sp.budget:
			if strings.Contains(msg, disruptionBudget) {
				budgets = append(budgets, sp)
			}
		case strings.Contains(msg, disruptionBudget) || (known && !slices.Contains(kinds, kind)):
		default:
			admission = append(admission, sp)
			if mentions(msg, sp.admits) {
				named = append(named, sp)
			}
		}
	}
	if len(named) > 0 {
		admission = named
	}
	return append(budgets, admission...)
}

// undoBudget undoes a write to a disruption budget, so the refused
// evictions go through: a budget created is removed (or corrected to
// allow a pod down), one updated is set back.
func undoBudget(top Suspect) Action {
	return undoWrite(top, "remove it, or correct it to allow at least one pod down (maxUnavailable: 1), so the refused evictions go through and the drain finishes",
		"undo the write, so the refused evictions go through (its previous content is not in the evidence); a budget must allow at least one pod down for a drain to finish")
}

// namedByAll says whether every bad unit the write reached was refused in
// words that name the object it wrote.
func namedByAll(sp *Suspect) bool {
	n := 0
	for u := range sp.reached {
		if !u.Bad() {
			continue
		}
		if !mentions(u.Message, sp.admits) {
			return false
		}
		n++
	}
	return n > 0
}
