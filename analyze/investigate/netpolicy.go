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

// Whom a unit may talk to. Network policies select pods by label, not by
// anything a pod's spec names: a NetworkPolicy (and its kin in Cilium,
// Calico and Istio) in a pod's namespace, or a cluster-wide one, decides
// which connections it may make and take. A write to one can break pods
// that were running well, with nothing they ran with changed; they then
// fail as a connection fails (a timeout, a refusal, a reset). Each write
// to a policy before the first bad is a suspect. It reaches the bad units
// of the namespaces it governs that ran through it and failed after it,
// as a connection fails; and, as evidence against it, the good units of
// those namespaces that ran through it unharmed. The audit log keeps these
// objects at the Metadata level: the suspect says their content is not in
// the evidence.

// netPolicies are the network policy resources, by API group, with their
// kinds, and whether they are namespaced.
var netPolicies = map[string]map[string]struct {
	kind       string
	namespaced bool
}{
	"networking.k8s.io": {"networkpolicies": {"NetworkPolicy", true}},
	"cilium.io": {"ciliumnetworkpolicies": {"CiliumNetworkPolicy", true},
		"ciliumclusterwidenetworkpolicies": {"CiliumClusterwideNetworkPolicy", false}},
	"crd.projectcalico.org": {"networkpolicies": {"NetworkPolicy", true}, "globalnetworkpolicies": {"GlobalNetworkPolicy", false}},
	"security.istio.io":     {"authorizationpolicies": {"AuthorizationPolicy", true}, "peerauthentications": {"PeerAuthentication", true}},
}

// connectionFailed says whether a failure message reads as a connection
// that failed: the way a pod fails when a policy drops or rejects it.
func connectionFailed(msg string) bool {
	m := strings.ToLower(msg)
	for _, w := range []string{"i/o timeout", "connection refused", "connection reset", "no route to host", "network is unreachable",
		"connection timed out", "upstream connect error", "rbac: access denied", "context deadline exceeded"} {
		if strings.Contains(m, w) {
			return true
		}
	}
	return false
}

// netPolicyFilter selects the writes to network policies of the
// namespaces, or cluster-wide ones.
func netPolicyFilter(spaces []string) string {
	quoted := make([]string, len(spaces))
	for i, ns := range spaces {
		quoted[i] = fmt.Sprintf("%q", ns)
	}
	var terms []string
	groups := make([]string, 0, len(netPolicies))
	for g := range netPolicies {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		var local, cluster []string
		for r, k := range netPolicies[g] {
			if k.namespaced {
				local = append(local, fmt.Sprintf("%q", r))
			} else {
				cluster = append(cluster, fmt.Sprintf("%q", r))
			}
		}
		sort.Strings(local)
		sort.Strings(cluster)
		if len(local) > 0 {
			terms = append(terms, fmt.Sprintf(`(group == %q && resource in [%s] && ns in [%s])`, g, strings.Join(local, ", "), strings.Join(quoted, ", ")))
		}
		if len(cluster) > 0 {
			terms = append(terms, fmt.Sprintf(`(group == %q && resource in [%s])`, g, strings.Join(cluster, ", ")))
		}
	}
	return "(" + strings.Join(terms, " || ") + `) && subresource == "" && verb in ["create", "update", "patch", "delete"] && code > 0 && code < 400`
}

// netPolicySuspects are the writes to network policies that can have cut
// the slice's bad units off.
func netPolicySuspects(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension,
	where map[string]string, since, firstBad time.Time) ([]*Suspect, error) {
	set := map[string]bool{}
	for i, u := range units {
		if u.Bad() && !u.Unborn && matches(ids[i], where) && connectionFailed(u.Message) {
			set[u.Namespace] = true
		}
	}
	if len(set) == 0 {
		return nil, nil
	}
	spaces := make([]string, 0, len(set))
	for ns := range set {
		spaces = append(spaces, ns)
	}
	sort.Strings(spaces)
	f, err := timeline.CompileFilter(netPolicyFilter(spaces))
	if err != nil {
		return nil, err
	}
	var out []*Suspect
	for r, err := range s.Records(ctx, timeline.Query{Since: since, Until: firstBad.Add(time.Nanosecond), Where: f}) {
		if err != nil {
			return nil, err
		}
		k := netPolicies[r.Object.Group][r.Object.Resource]
		ref := identity.Ref{Kind: k.kind, Namespace: r.Object.Namespace, Name: r.Object.Name}.String()
		sp := writeSuspect(r, ref, "spec")
		sp.netpol = true
		bad := 0
		for _, u := range units {
			governed := u.Namespace == r.Object.Namespace || !k.namespaced
			ranThrough := !u.Created.IsZero() && u.Created.Before(r.Time)
			switch {
			case !governed || !ranThrough || u.Unborn:
			case u.Bad() && u.BadAt.After(r.Time) && connectionFailed(u.Message):
				sp.reached[u] = true
				bad++
			case u.Good() && u.LastGood.After(r.Time):
				sp.reached[u] = true
			}
		}
		sp.Why = fmt.Sprintf("%s by %s, then %d pods it governs failed to connect (its content is not in the evidence)",
			pastTense(r.Verb), orUnknown(r.User), bad)
		out = append(out, sp)
	}
	return out, nil
}

// undoNetPolicy undoes a write to a network policy: the pods it cut off
// connect again once a policy created is gone (or allows what they need).
func undoNetPolicy(top Suspect) Action {
	return undoWrite(top, "remove it, or allow the connections the pods need, so they can connect again",
		"undo the write, so the pods can connect again (its previous content is not in the evidence)")
}
