package investigate

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
)

// What may be done to a pod from outside it. An eviction (a drain, an
// autoscaler taking a node away, a descheduler) asks the apiserver to
// delete a pod only if the PodDisruptionBudgets that select it allow one
// more pod down; when none is allowed, the apiserver refuses it (429,
// "Cannot evict pod as it would violate the pod's disruption budget"),
// and the client retries. That 429 is no load shed: the budget refused
// it, and says so. The refused evictions' pods are units gone bad by the
// operation (outcome.Unit.Target), and the change that made them refused
// is a write to a budget of their namespace (a budget governs the pods of
// its own namespace only):
//
//   - only a write between the same client's last eviction answered in
//     that namespace (less budgetPropagation) and its first refused there
//     can have made the difference; a deletion takes a budget away and
//     refuses nothing;
//   - a budget allows as many pods down as its pods' health leaves room
//     for, so a budget already strict can start refusing when its pods
//     fall ill: the suspect reaches only the refused units, and the
//     scoring weighs it against what made their neighbours ill.
//
// Budgets are audited at the Metadata level in most policies: who wrote,
// when and how, without the body. The suspect says so.

// disruptionBudget is in the apiserver's refusal of an eviction for a
// budget.
const disruptionBudget = "disruption budget"

// budgetPropagation is how long after a write to a budget the apiserver
// may still judge by the old one: the disruption controller recomputes
// the budget's status (how many pods it allows down) from informers, and
// the eviction reads that status.
const budgetPropagation = 5 * time.Second

// budgetSuspects are the writes to the PodDisruptionBudgets of the
// namespaces where the slice's units had an eviction refused for a
// budget, made before the first such refusal and after the client's last
// eviction answered there.
func budgetSuspects(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension,
	where map[string]string, since, until time.Time) ([]*Suspect, error) {
	type key struct{ ns, op string }
	refused := map[key][]*outcome.Unit{}
	for i, u := range units {
		if u.Bad() && u.Target != "" && matches(ids[i], where) && strings.Contains(u.Message, disruptionBudget) {
			k := key{u.Namespace, u.Target}
			refused[k] = append(refused[k], u)
		}
	}
	keys := make([]key, 0, len(refused))
	for k := range refused {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].ns+keys[i].op < keys[j].ns+keys[j].op })
	byKey := map[string]*Suspect{}
	var out []*Suspect
	for _, k := range keys {
		op := outcome.TargetFilter(k.op) + fmt.Sprintf(` && ns == %q`, k.ns)
		first, err := firstRecord(ctx, s, op+` && code == 429`, since, until, false)
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
		if last != nil && last.Time.Add(-budgetPropagation).After(from) {
			from = last.Time.Add(-budgetPropagation)
		}
		f, err := timeline.CompileFilter(fmt.Sprintf(`group == "policy" && resource == "poddisruptionbudgets" && ns == %q && subresource == "" && `+
			`verb in ["create", "update", "patch"] && code > 0 && code < 400`, k.ns))
		if err != nil {
			return nil, err
		}
		for r, err := range s.Records(ctx, timeline.Query{Since: from, Until: first.Time.Add(time.Nanosecond), Where: f}) {
			if err != nil {
				return nil, err
			}
			ref := identity.Ref{Kind: "PodDisruptionBudget", Namespace: r.Object.Namespace, Name: r.Object.Name}.String()
			id := ref + "@" + r.Time.String()
			sp := byKey[id]
			if sp == nil {
				sp = writeSuspect(r, ref, "spec")
				sp.budget = true
				byKey[id] = sp
				out = append(out, sp)
			}
			for _, u := range refused[k] {
				sp.reached[u] = true
			}
		}
	}
	for _, sp := range out {
		sp.Why = fmt.Sprintf("%s by %s, then the evictions of %d pods of its namespace were refused for a disruption budget (its content is not in the evidence)",
			pastTense(sp.verb), sp.By, len(sp.reached))
	}
	return out, nil
}

// undoBudget undoes a write to a disruption budget, so the refused
// evictions go through: a budget created is removed (or corrected to
// allow a pod down), one updated is set back.
func undoBudget(top Suspect) Action {
	return undoWrite(top, "remove it, or correct it to allow at least one pod down (maxUnavailable: 1), so the refused evictions go through and the drain finishes",
		"undo the write, so the refused evictions go through (its previous content is not in the evidence); a budget must allow at least one pod down for a drain to finish")
}
