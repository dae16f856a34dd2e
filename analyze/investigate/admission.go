package investigate

import (
	"context"
	"fmt"
	"regexp"
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
//   - only a write between the last pod of the same workload admitted
//     (less admissionPropagation) and the first refused can have made the
//     difference; a deletion takes a check away and refuses nothing.
//     Admission judges each pod by what it is (Pod Security by its
//     security context, a webhook or a policy by what its rules select),
//     so another workload's pods admitted after a write neither clear it
//     nor count against it (reach). A quota is the exception: it is the
//     namespace's shared budget, and any pod of the namespace admitted
//     after a write to it was admitted under it, so a quota's writes are
//     bounded by the namespace's last admitted pod, and its good pods
//     count against them;
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
	ns    string
	first time.Time
	// lastAdmitted is, of the workloads refused there, the earliest last
	// pod admitted before the first refusal (zero: one had none in the
	// evidence); lastAdmittedNS the namespace's last pod admitted before
	// it, of any workload.
	lastAdmitted, lastAdmittedNS time.Time
}

// refusals finds, per namespace of the slice's unborn bad units, its first
// refused pod create in [since, until) and when the refused workloads last
// had a pod admitted. A create shed for load (429) or timed out (504) was
// not refused by admission; one that named an existing pod (409) was not
// refused at all.
func refusals(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension,
	where map[string]string, since, until time.Time) ([]refusal, error) {
	spaces := map[string]bool{}
	refused := map[string]map[string]bool{} // namespace -> refused workloads
	for i, u := range units {
		if u.Unborn && u.Bad() && matches(ids[i], where) {
			spaces[u.Namespace] = true
			if refused[u.Namespace] == nil {
				refused[u.Namespace] = map[string]bool{}
			}
			refused[u.Namespace][workloadOf(u, ids[i])] = true
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
		r := refusal{ns: ns, first: first.Time, lastAdmitted: lastAdmitted(units, ids, ns, refused[ns], first.Time)}
		last, err := firstRecord(ctx, s, fmt.Sprintf(`verb == "create" && resource == "pods" && ns == %q && code > 0 && code < 400`, ns),
			since, first.Time, true)
		if err != nil {
			return nil, err
		}
		if last != nil {
			r.lastAdmittedNS = last.Time
		}
		out = append(out, r)
	}
	return out, nil
}

// lastAdmitted is when the workloads refused in a namespace last had a pod
// admitted before the first refusal: each workload's last pod created
// before it, and the earliest of those. A workload with no pod in the
// evidence (or none whose name the units know) gives zero: no bound.
func lastAdmitted(units []*outcome.Unit, ids []map[string]identity.Dimension, ns string, refused map[string]bool, first time.Time) time.Time {
	last := map[string]time.Time{}
	for i, u := range units {
		if u.Unborn || u.Namespace != ns || u.Created.IsZero() || !u.Created.Before(first) {
			continue
		}
		if w := workloadOf(u, ids[i]); refused[w] && u.Created.After(last[w]) {
			last[w] = u.Created
		}
	}
	var out time.Time
	for w := range refused {
		t, ok := last[w]
		if !ok || w == "" {
			return time.Time{}
		}
		if out.IsZero() || t.Before(out) {
			out = t
		}
	}
	return out
}

// admissionSuspects are the writes to admission objects that can have
// made the slice's pod creates refused. Each reaches the unborn bad units
// of the namespaces it governs that were refused after it (but those whose
// refusal names another object written, or another kind), and, against
// it, the good units it let in after it (reach).
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
			if sharedBudget(sp.Ref) && r.Time.Before(rf.lastAdmittedNS.Add(-admissionPropagation)) {
				continue // the namespace's pods were admitted under it since
			}
			key := sp.Ref + "@" + r.Time.String()
			if byKey[key] != nil {
				continue
			}
			byKey[key], verbs[sp] = sp, r.Verb
			out = append(out, sp)
		}
	}
	reach(out, units, ids)
	for _, sp := range out {
		sp.named = namedByAll(sp)
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
	ns := r.Object.Namespace
	if kind == "Namespace" {
		ns = "" // the audit log files a namespace under itself
	}
	return &Suspect{Ref: identity.Ref{Kind: kind, Namespace: ns, Name: r.Object.Name}.String(),
		Dimension: dim, To: to, At: r.Time, Kind: "change", Objects: 1,
		Run: r.Evidence.Run, Line: r.Evidence.Line, By: r.User, UserAgent: r.UserAgent,
		reached: map[*outcome.Unit]bool{}, admits: r.Object.Name}
}

// reach marks the units each admission write reached: an unborn bad unit
// of a namespace it governs, refused after it, unless the refusal names
// another of the objects written or says a kind of object refused it that
// the write is not (refusedBy); a good unit of a workload refused there,
// created after it (admitted in spite of it). Admission judges each pod
// by what it is, so another workload's pods admitted after the write say
// nothing of it: Pod Security admits the pods that comply and refuses
// those that do not, a webhook or a policy those its rules select. A
// quota's good units count, whatever their workload: they were admitted
// under it (sharedBudget).
func reach(sps []*Suspect, units []*outcome.Unit, ids []map[string]identity.Dimension) {
	refused := map[string]bool{} // workloads
	for i, u := range units {
		if w := workloadOf(u, ids[i]); u.Unborn && u.Bad() && w != "" {
			refused[w] = true
		}
	}
	for i, u := range units {
		var named []*Suspect
		kinds, known := []string(nil), false
		if u.Unborn && u.Bad() {
			kinds, known = refusedBy(u.Message)
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
				kind, _, _ := splitRef(sp.Ref)
				if u.BadAt.After(sp.At) && (len(named) == 0 || slices.Contains(named, sp)) && (!known || slices.Contains(kinds, kind)) {
					sp.reached[u] = true
				}
			case u.Good() && u.Created.After(sp.At) && (refused[workloadOf(u, ids[i])] || sharedBudget(sp.Ref)):
				sp.reached[u] = true
			}
		}
	}
}

// sharedBudget says whether an admission object is a namespace's shared
// budget (a ResourceQuota), which admits or refuses a pod by what the
// namespace's other pods use, not by what the pod alone is.
func sharedBudget(ref string) bool {
	kind, _, _ := splitRef(ref)
	return kind == "ResourceQuota"
}

// refusals the apiserver words by what refused them: the admission plugin,
// and so the kinds of object whose writes can have made it refuse. A
// refusal worded otherwise may have come from any of them.
var refusalKinds = []struct {
	re    *regexp.Regexp
	kinds []string
}{
	{regexp.MustCompile(`(exceeded|failed) quota: `), []string{"ResourceQuota"}},
	{regexp.MustCompile(`(failed calling|admission) webhook "`), []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}},
	{regexp.MustCompile(`ValidatingAdmissionPolicy '`), []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}},
	{regexp.MustCompile(`MutatingAdmissionPolicy '`), []string{"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}},
	{regexp.MustCompile(`violates PodSecurity "`), []string{"Namespace"}}, // its labels name the profile enforced
	{regexp.MustCompile(`(maximum|minimum) [a-z-]+ usage per (Container|Pod)|must be (less|greater) than or equal to [a-z-]+ (limit|request)`), []string{"LimitRange"}},
	// Refused for an object admission looks up, not for an admission
	// object: no write of these kinds made it.
	{regexp.MustCompile(`serviceaccount "[^"]*" not found|error looking up service account|no PriorityClass with name|RuntimeClass "[^"]*" not found`), nil},
}

// refusedBy reads the kinds of admission object a refusal's wording says
// refused it; known is false when its wording says none.
func refusedBy(msg string) (kinds []string, known bool) {
	for _, r := range refusalKinds {
		if r.re.MatchString(msg) {
			return r.kinds, true
		}
	}
	return nil, false
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
	goThrough := "the refused pods are admitted"
	if !top.refusedOp.IsZero() {
		goThrough = "the refused " + top.refusedOp.What() + " requests go through"
	}
	why := "undo the write, so " + goThrough + " (its previous content is not in the evidence)"
	switch {
	case top.mutates && top.Dimension == "created":
		why = "remove it (or correct it), then restart the workload, so its new pods are created as their template asks"
	case top.mutates:
		why = "undo the write, then restart the workload, so its new pods are created as their template asks (its previous content is not in the evidence)"
	case top.Dimension == "created" && strings.HasSuffix(kind, "WebhookConfiguration"):
		why = "remove it, or make it fail open (failurePolicy: Ignore) until what it calls answers, so " + goThrough
	case top.Dimension == "created":
		why = "remove it (or correct it), so " + goThrough
	}
	a := Action{Action: "rollback", Target: top.Ref, Why: why}
	switch {
	case top.Dimension == "created":
		a.Command = objectCommand("delete", kind, ns, name)
		a.Verify = objectCommand("get", kind, ns, name)
	case kind == "Namespace" && refusedForPodSecurity(top):
		// The refusals say which label refused them: the profile the
		// namespace enforces. Its previous value is not in the evidence;
		// without the label, the namespace enforces none.
		a.Why = "stop enforcing the Pod Security profile its pods were refused by (the label's previous value is not in the evidence: restore it if it had one), so they are admitted; then bring them up to the profile"
		a.Command = command("kubectl", "label", "namespace", name, podSecurityEnforce+"-")
		a.Verify = command("kubectl", "get", "namespace", name, "--show-labels")
	}
	return a
}

// podSecurityEnforce is the Namespace label that sets the Pod Security
// profile admission enforces there.
const podSecurityEnforce = "pod-security.kubernetes.io/enforce"

// refusedForPodSecurity says whether the units a write reached were
// refused by Pod Security admission.
func refusedForPodSecurity(sp Suspect) bool {
	for u := range sp.reached {
		if u.Unborn && u.Bad() {
			if kinds, _ := refusedBy(u.Message); slices.Contains(kinds, "Namespace") {
				return true
			}
		}
	}
	return false
}
