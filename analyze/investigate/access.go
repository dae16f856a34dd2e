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

// What a unit may do is part of what it ran with. A pod's requests are
// authorized as its ServiceAccount, by the Roles and ClusterRoles bound to
// it. When the requests of a bad unit's ServiceAccount start being denied
// (401, 403), the change that took the permission away is a write to an
// RBAC object, and the audit log narrows it down on three counts:
//
//   - RBAC only grants, so creating a Role or a binding never denies
//     anything: only an update, a patch or a delete can;
//   - a Role or RoleBinding grants only in its own namespace: a write in
//     another namespace than the denied request's cannot explain it (a
//     ClusterRole or ClusterRoleBinding can, anywhere);
//   - the same request allowed well after the write says the write did not
//     take that permission away: only writes between the last allowed
//     request of the denied kind (less rbacPropagation) and the first
//     denial are suspects.
//
// The audit log records RBAC objects at the Metadata level, as it does
// Secrets: who wrote, when and how, without the rules. The suspect says so.

// rbacResources maps the RBAC resources to their kinds, and the dimension
// their update changes (a Role is its rules; a binding's roleRef is
// immutable, so an update changes its subjects).
var rbacResources = map[string]struct{ kind, dim string }{
	"roles":               {"Role", "rules"},
	"clusterroles":        {"ClusterRole", "rules"},
	"rolebindings":        {"RoleBinding", "subjects"},
	"clusterrolebindings": {"ClusterRoleBinding", "subjects"},
}

// rbacPropagation is how long after an RBAC write the apiserver may still
// authorize by the old rules: its authorizer reads them from an informer's
// cache, which a watch event reaches within milliseconds, seconds under
// load. A request allowed that soon after a write does not clear it.
const rbacPropagation = 5 * time.Second

// constraint says whether a dimension is what a unit may do or where it
// may run (its ServiceAccount, the node labels it requires, the taints it
// tolerates) rather than what it ran with. Authorization and scheduling
// reach units through these (access.go, placement.go); every pod of a
// template shares them, so they never name a slice of their own.
func constraint(name string) bool {
	return name == "serviceAccount" || name == "tolerations" || strings.HasPrefix(name, "nodeSelector/")
}

// denial is the first refused request of one ServiceAccount: denied
// (access), or rejected by API Priority and Fairness (throttle.go).
type denial struct {
	user        string // system:serviceaccount:NS:NAME
	first       *timeline.Record
	lastAllowed time.Time // the same verb on the same resource, answered (zero: never seen)
}

// saUser is the user a unit's requests are authorized as.
func saUser(u *outcome.Unit, cons constraints) string {
	if sa := cons[u]["serviceAccount"]; sa != "" {
		return "system:serviceaccount:" + u.Namespace + ":" + sa
	}
	return ""
}

// constraints are the units' constraints (constraint), by unit.
type constraints map[*outcome.Unit]map[string]string

// denials finds, per ServiceAccount the bad units of the slice run as, its
// first request in [since, until) that refused matches (a CEL condition on
// the code), and the last answered request of the same kind before it.
func denials(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension, cons constraints,
	where map[string]string, since, until time.Time, refused string) ([]denial, error) {
	users := map[string]bool{}
	for i, u := range units {
		if user := saUser(u, cons); u.Bad() && matches(ids[i], where) && user != "" {
			users[user] = true
		}
	}
	names := make([]string, 0, len(users))
	for u := range users {
		names = append(names, u)
	}
	sort.Strings(names)
	var out []denial
	for _, user := range names {
		first, err := firstRecord(ctx, s, fmt.Sprintf(`user == %q && (%s)`, user, refused), since, until, false)
		if err != nil {
			return nil, err
		}
		if first == nil {
			continue
		}
		d := denial{user: user, first: first}
		last, err := firstRecord(ctx, s, fmt.Sprintf(`user == %q && verb == %q && resource == %q && ns == %q && code < 400`,
			user, first.Verb, first.Object.Resource, first.Object.Namespace), since, first.Time, true)
		if err != nil {
			return nil, err
		}
		if last != nil {
			d.lastAllowed = last.Time
		}
		out = append(out, d)
	}
	return out, nil
}

// accessSuspects are the RBAC writes that can have taken away a permission
// the slice's ServiceAccounts were then denied. Each reaches the units
// that run as a ServiceAccount denied after it.
func accessSuspects(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension, cons constraints,
	where map[string]string, since, until time.Time) ([]*Suspect, error) {
	ds, err := denials(ctx, s, units, ids, cons, where, since, until, `code in [401, 403]`)
	if err != nil || len(ds) == 0 {
		return nil, err
	}
	out, err := writesBeforeRefusal(ctx, s, ds, units, cons, since, rbacPropagation,
		func(d denial) string {
			return fmt.Sprintf(`((resource in ["roles", "rolebindings"] && ns == %q) || resource in ["clusterroles", "clusterrolebindings"]) && `+
				`group == "rbac.authorization.k8s.io" && verb in ["update", "patch", "delete"] && code < 400`, d.first.Object.Namespace)
		},
		func(r *timeline.Record) *Suspect {
			res := rbacResources[r.Object.Resource]
			return writeSuspect(r, identity.Ref{Kind: res.kind, Namespace: r.Object.Namespace, Name: r.Object.Name}.String(), res.dim)
		})
	if err != nil {
		return nil, err
	}
	for _, sp := range out {
		sp.Why = fmt.Sprintf("%s by %s, then %s denied (the rules are not in the evidence)", pastTense(sp.verb), sp.By, strings.Join(sp.refused, ", "))
	}
	return out, nil
}

// writesBeforeRefusal finds, for each first refusal of a ServiceAccount,
// the writes that filter selects made between its last answered request
// of the same kind (less lag, how long the apiserver may still act on the
// old objects) and the refusal. Each write is one suspect (mk), which
// reaches the units that run as a ServiceAccount refused after it and
// lists them (refused). The writes one actor made within lag of one
// another are one act (a FlowSchema and the level it names, applied
// together): no request can tell them apart, as the apiserver may act on
// either a lag late, so they do not compete with each other (discount).
func writesBeforeRefusal(ctx context.Context, s Store, ds []denial, units []*outcome.Unit, cons constraints, since time.Time, lag time.Duration,
	filter func(denial) string, mk func(*timeline.Record) *Suspect) ([]*Suspect, error) {
	byKey := map[string]*Suspect{}
	var out []*Suspect
	for _, d := range ds {
		from := since
		if t := d.lastAllowed.Add(-lag); t.After(from) {
			from = t
		}
		f, err := timeline.CompileFilter(filter(d))
		if err != nil {
			return nil, err
		}
		for r, err := range s.Records(ctx, timeline.Query{Since: from, Until: d.first.Time.Add(time.Nanosecond), Where: f}) {
			if err != nil {
				return nil, err
			}
			x := mk(r)
			key := x.Ref + "@" + r.Time.String()
			sp := byKey[key]
			if sp == nil {
				sp, byKey[key] = x, x
				out = append(out, sp)
			}
			sp.refused = append(sp.refused, strings.TrimPrefix(d.user, "system:serviceaccount:"))
			for _, u := range units {
				if saUser(u, cons) == d.user {
					sp.reached[u] = true
				}
			}
		}
	}
	acts(out, lag)
	return out, nil
}

// acts names the act of each write: one actor's writes, each within lag
// of the one before it.
func acts(sps []*Suspect, lag time.Duration) {
	byTime := slices.Clone(sps)
	slices.SortStableFunc(byTime, func(a, b *Suspect) int { return a.At.Compare(b.At) })
	type open struct {
		act  string
		last time.Time
	}
	cur := map[string]*open{}
	for _, sp := range byTime {
		actor := sp.By + "\x00" + sp.UserAgent
		o := cur[actor]
		if o == nil || sp.At.Sub(o.last) > lag {
			o = &open{act: actor + "@" + sp.At.String()}
			cur[actor] = o
		}
		sp.act, o.last = o.act, sp.At
	}
}

// writeSuspect is the suspect of one write whose content the audit log
// does not hold: a create ("created"), a delete ("deleted"), or an update
// or patch of the dimension updated names.
func writeSuspect(r *timeline.Record, ref, updated string) *Suspect {
	dim, to := updated, r.Verb+" (content not in the evidence)"
	switch r.Verb {
	case "create":
		dim, to = "created", "created"
	case "delete":
		dim, to = "deleted", "deleted"
	}
	return &Suspect{Ref: ref, Dimension: dim, To: to, At: r.Time, Kind: "change", Objects: 1,
		Run: r.Evidence.Run, Line: r.Evidence.Line, By: r.User, UserAgent: r.UserAgent,
		reached: map[*outcome.Unit]bool{}, verb: r.Verb}
}

// undoWrite undoes a write whose content the audit log does not hold: an
// object created is deleted (created says why), any other write is set
// back by hand (written says why).
func undoWrite(top Suspect, created, written string) Action {
	a := Action{Action: "rollback", Target: top.Ref, Why: written}
	if top.Dimension == "created" {
		kind, ns, name := splitRef(top.Ref)
		a.Why = created
		a.Command, a.Verify = objectCommand("delete", kind, ns, name), objectCommand("get", kind, ns, name)
	}
	return a
}

// pastTense is an audit verb as done: "updated", "patched", "deleted".
func pastTense(verb string) string {
	switch verb {
	case "patch":
		return "patched"
	case "delete":
		return "deleted"
	}
	return strings.TrimSuffix(verb, "e") + "ed"
}

// firstRecord is the first record of the filter in [since, until), or
// the last with desc.
func firstRecord(ctx context.Context, s Store, expr string, since, until time.Time, desc bool) (*timeline.Record, error) {
	f, err := timeline.CompileFilter(expr)
	if err != nil {
		return nil, err
	}
	var out *timeline.Record
	for r, err := range s.Records(ctx, timeline.Query{Since: since, Until: until, Where: f, Limit: 1, Desc: desc}) {
		if err != nil {
			return nil, err
		}
		out = r
	}
	return out, nil
}
