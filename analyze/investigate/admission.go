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

// What a unit may be created with. Before a pod exists, the apiserver's
// admission decides whether it may: the validating and mutating webhooks
// and admission policies its configurations send it to, the ResourceQuotas
// and LimitRanges of its namespace, and the namespace's own labels (Pod
// Security). When a controller's pod creates start being refused (its
// units are unborn: outcome.Unit.Unborn), the change that made them
// refused is a write to one of these, and the audit log narrows it down
// as it does for RBAC (access.go):
//
//   - a namespaced object (a quota, a LimitRange, the Namespace) governs
//     only its namespace; a cluster-scoped configuration may govern any;
//   - only a write between the last pod admitted in that namespace (less
//     admissionPropagation) and the first refused can have made the
//     difference; a deletion takes a check away and refuses nothing;
//   - the apiserver's refusal names what refused it (`failed calling
//     webhook "NAME"`, `exceeded quota: NAME`): when a refusal names one
//     of the objects written, a write to another did not refuse that unit.
//
// Admission objects are audited at the Metadata level in most policies:
// who wrote, when and how, without the body. The suspect says so.

// admissionResources are the resources whose objects admit or refuse a
// pod, by API group, with their kinds.
var admissionResources = map[string]map[string]string{
	"admissionregistration.k8s.io": {
		"validatingwebhookconfigurations": "ValidatingWebhookConfiguration", "mutatingwebhookconfigurations": "MutatingWebhookConfiguration",
		"validatingadmissionpolicies": "ValidatingAdmissionPolicy", "validatingadmissionpolicybindings": "ValidatingAdmissionPolicyBinding",
		"mutatingadmissionpolicies": "MutatingAdmissionPolicy", "mutatingadmissionpolicybindings": "MutatingAdmissionPolicyBinding",
	},
	"": {"resourcequotas": "ResourceQuota", "limitranges": "LimitRange", "namespaces": "Namespace"},
}

// admissionFilter selects the writes that can change what admits a pod
// of namespace ns: to a cluster-wide admission configuration, to a quota
// or LimitRange of ns, or to ns itself. A write to a subresource (a
// quota's status, which its controller keeps up to date) changes no rule.
func admissionFilter(ns string) string {
	var cluster []string
	for r := range admissionResources["admissionregistration.k8s.io"] {
		cluster = append(cluster, fmt.Sprintf("%q", r))
	}
	sort.Strings(cluster)
	return fmt.Sprintf(`((group == "admissionregistration.k8s.io" && resource in [%s]) || `+
		`(group == "" && resource in ["resourcequotas", "limitranges"] && ns == %q) || `+
		`(group == "" && resource == "namespaces" && name == %q)) && subresource == "" && verb in ["create", "update", "patch"] && code > 0 && code < 400`,
		strings.Join(cluster, ", "), ns, ns)
}

// admissionPropagation is how long after a write the apiserver may still
// admit by the old configuration: its admission plugins read them from
// informers, as the authorizer reads RBAC.
const admissionPropagation = rbacPropagation

// refusal is the first refused pod create of one namespace.
type refusal struct {
	ns           string
	first        time.Time
	lastAdmitted time.Time // the last pod create admitted before it (zero: none seen)
}

// refusals finds, per namespace of the slice's unborn bad units, its first
// refused pod create in [since, until) and the last admitted one before.
// A create shed for load (429) or timed out (504) was not refused by
// admission; one that named an existing pod (409) was not refused at all.
func refusals(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension,
	where map[string]string, since, until time.Time) ([]refusal, error) {
	spaces := map[string]bool{}
	for i, u := range units {
		if u.Unborn && u.Bad() && matches(ids[i], where) {
			spaces[u.Namespace] = true
		}
	}
	names := make([]string, 0, len(spaces))
	for ns := range spaces {
		names = append(names, ns)
	}
	sort.Strings(names)
	var out []refusal
	for _, ns := range names {
		first, err := firstRecord(ctx, s, fmt.Sprintf(`verb == "create" && resource == "pods" && ns == %q && code >= 400 && !(code in [409, 429, 504])`, ns),
			since, until, false)
		if err != nil {
			return nil, err
		}
		if first == nil {
			continue
		}
		r := refusal{ns: ns, first: first.Time}
		last, err := firstRecord(ctx, s, fmt.Sprintf(`verb == "create" && resource == "pods" && ns == %q && code > 0 && code < 400`, ns),
			since, first.Time, true)
		if err != nil {
			return nil, err
		}
		if last != nil {
			r.lastAdmitted = last.Time
		}
		out = append(out, r)
	}
	return out, nil
}

// admissionSuspects are the writes to admission objects that can have
// made the slice's pod creates refused. Each reaches the unborn bad units
// of the namespaces it governs that were refused after it (but those whose
// refusal names another object written), and, against it, the good units
// of those namespaces created after it.
func admissionSuspects(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension,
	where map[string]string, since, until time.Time) ([]*Suspect, error) {
	rs, err := refusals(ctx, s, units, ids, where, since, until)
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	byKey := map[string]*Suspect{}
	verbs := map[*Suspect]string{}
	var out []*Suspect
	for _, rf := range rs {
		from := since
		if t := rf.lastAdmitted.Add(-admissionPropagation); t.After(from) {
			from = t
		}
		f, err := timeline.CompileFilter(admissionFilter(rf.ns))
		if err != nil {
			return nil, err
		}
		for r, err := range s.Records(ctx, timeline.Query{Since: from, Until: rf.first.Add(time.Nanosecond), Where: f}) {
			if err != nil {
				return nil, err
			}
			sp := admissionWrite(r)
			key := sp.Ref + "@" + r.Time.String()
			if byKey[key] != nil {
				continue
			}
			byKey[key], verbs[sp] = sp, r.Verb
			out = append(out, sp)
		}
	}
	reach(out, units)
	for _, sp := range out {
		n := 0
		for u := range sp.reached {
			if u.Bad() {
				n++
			}
		}
		sp.Why = fmt.Sprintf("%s by %s, then %d pod creates it governs were refused (its content is not in the evidence)", pastTense(verbs[sp]), sp.By, n)
	}
	return out, nil
}

// admissionWrite is the suspect of one write to an admission object: its
// creation, a Namespace's labels, or a spec whose content the audit log
// does not hold.
func admissionWrite(r *timeline.Record) *Suspect {
	kind := admissionResources[r.Object.Group][r.Object.Resource]
	dim, to := "spec", r.Verb+" (content not in the evidence)"
	switch {
	case r.Verb == "create":
		dim, to = "created", "created"
	case kind == "Namespace":
		dim = "labels"
	}
	return &Suspect{Ref: identity.Ref{Kind: kind, Namespace: r.Object.Namespace, Name: r.Object.Name}.String(),
		Dimension: dim, To: to, At: r.Time, Kind: "change", Objects: 1,
		Run: r.Evidence.Run, Line: r.Evidence.Line, By: r.User, UserAgent: r.UserAgent,
		reached: map[*outcome.Unit]bool{}, admits: r.Object.Name}
}

// reach marks the units each admission write reached: an unborn bad unit
// of a namespace it governs, refused after it, unless the refusal names
// another of the objects written; a good unit of such a namespace created
// after it (admitted in spite of it).
func reach(sps []*Suspect, units []*outcome.Unit) {
	for _, u := range units {
		var named []*Suspect
		if u.Unborn && u.Bad() {
			for _, sp := range sps {
				if mentions(u.Message, sp.admits) {
					named = append(named, sp)
				}
			}
		}
		for _, sp := range sps {
			switch {
			case !governs(sp.Ref, u):
			case u.Unborn && u.Bad():
				if u.BadAt.After(sp.At) && (len(named) == 0 || slices.Contains(named, sp)) {
					sp.reached[u] = true
				}
			case u.Good() && u.Created.After(sp.At):
				sp.reached[u] = true
			}
		}
	}
}

// governs says whether the admission object ref governs the unit's pods:
// a Namespace its own, a namespaced object those of its namespace, a
// cluster-scoped configuration any.
func governs(ref string, u *outcome.Unit) bool {
	kind, ns, name := splitRef(ref)
	switch {
	case kind == "Namespace":
		return u.Namespace == name
	case ns != "":
		return u.Namespace == ns
	}
	return true
}

// mentions says whether a message names an object: its name as a whole
// word (between characters that cannot be part of a Kubernetes name), as
// the apiserver quotes a webhook, a quota or a policy that refused.
func mentions(msg, name string) bool {
	if name == "" {
		return false
	}
	for i := 0; ; {
		j := strings.Index(msg[i:], name)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(name)
		if (start == 0 || !nameByte(msg[start-1])) && (end == len(msg) || !nameByte(msg[end])) {
			return true
		}
		i = start + 1
	}
}

// nameByte says whether b can be part of a Kubernetes name (a DNS label:
// lower-case letters, digits, hyphens).
func nameByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-'
}

// undoAdmission undoes a write to an admission object: the refused pods
// are admitted again once it is gone (a configuration created) or back to
// its last-known-good content.
func undoAdmission(top Suspect) Action {
	kind, ns, name := splitRef(top.Ref)
	why := "undo the write, so the refused pods are admitted (its previous content is not in the evidence)"
	switch {
	case top.mutates && top.Dimension == "created":
		why = "remove it (or correct it), then restart the workload, so its new pods are created as their template asks"
	case top.mutates:
		why = "undo the write, then restart the workload, so its new pods are created as their template asks (its previous content is not in the evidence)"
	case top.Dimension == "created" && strings.HasSuffix(kind, "WebhookConfiguration"):
		why = "remove it, or make it fail open (failurePolicy: Ignore) until what it calls answers, so the refused pods are admitted"
	case top.Dimension == "created":
		why = "remove it (or correct it), so the refused pods are admitted"
	}
	a := Action{Action: "rollback", Target: top.Ref, Why: why}
	if top.Dimension == "created" {
		a.Command = objectCommand("delete", kind, ns, name)
		a.Verify = objectCommand("get", kind, ns, name)
	}
	return a
}
