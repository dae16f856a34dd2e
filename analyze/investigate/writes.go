package investigate

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
)

// Writes without content. A Secret's body never reaches the audit log (and
// a ConfigMap's may not, at the Metadata level), so the timeline can hold
// no version of an object the units read while the audit log still holds
// every write to it: who wrote it, how, when. Each such write before the
// first bad is a suspect on the whole object ("secret/NAME"): the units
// that read the object and started after the write, or ran through it
// before they went bad, hold it.

// unreadable lists the ConfigMaps and Secrets the bad units of the slice
// read whose content the timeline does not hold, as "Kind/ns/name" with
// their dimension.
func unreadable(units []*outcome.Unit, ids []map[string]identity.Dimension, where map[string]string) map[string]string {
	out := map[string]string{}
	for i, u := range units {
		if !u.Bad() || !matches(ids[i], where) {
			continue
		}
		for name, d := range ids[i] {
			if d.Value != "(not in the timeline)" || strings.Count(name, "/") != 1 {
				continue
			}
			kind, obj, _ := strings.Cut(name, "/")
			k := map[string]string{"secret": "Secret", "configmap": "ConfigMap"}[kind]
			if k != "" {
				out[k+"/"+u.Namespace+"/"+obj] = name
			}
		}
	}
	return out
}

// writeSuspects are the writes to those objects in (since, until].
func writeSuspects(ctx context.Context, s Store, objs map[string]string, since, until time.Time) ([]*Suspect, error) {
	refs := make([]string, 0, len(objs))
	for r := range objs {
		refs = append(refs, r)
	}
	sort.Strings(refs)
	var out []*Suspect
	for _, ref := range refs {
		parts := strings.SplitN(ref, "/", 3)
		resource := map[string]string{"Secret": "secrets", "ConfigMap": "configmaps"}[parts[0]]
		f, err := timeline.CompileFilter(fmt.Sprintf(`resource == %q && ns == %q && name == %q && verb in ["create", "update", "patch", "delete"] && code < 400`,
			resource, parts[1], parts[2]))
		if err != nil {
			return nil, err
		}
		for r, err := range s.Records(ctx, timeline.Query{Since: since, Until: until, Where: f}) {
			if err != nil {
				return nil, err
			}
			out = append(out, &Suspect{Ref: ref, Dimension: objs[ref], From: "", To: r.Verb + " (content not in the evidence)",
				At: r.Time, Kind: "change", unread: true, Run: r.Evidence.Run, Line: r.Evidence.Line, By: r.User, UserAgent: r.UserAgent, Objects: 1,
				Why: fmt.Sprintf("%s by %s (its content is not in the evidence)", pastTense(r.Verb), r.User)})
		}
	}
	return out, nil
}

// supportOfWrite counts who a content-less write reached: a unit that
// reads the object and started after the write; a bad unit that ran
// through it before it went bad.
func (p population) supportOfWrite(units []*outcome.Unit, ids []map[string]identity.Dimension, dim string, at time.Time) support {
	s := support{bad: len(p.bad), good: len(p.good)}
	for _, i := range p.bad {
		if _, ok := ids[i][dim]; ok && (units[i].Created.After(at) || (!at.Before(units[i].Created) && at.Before(units[i].BadAt))) {
			s.badHold++
		}
	}
	for _, i := range p.good {
		if _, ok := ids[i][dim]; ok && units[i].Created.After(at) {
			s.goodHold++
		}
	}
	return s
}

// Deletions. A ConfigMap or Secret deleted while pods still read it breaks
// none of them: it breaks the next pods that start, which cannot mount it
// or read its keys. Identity says so of each pod that started after the
// deletion (identity.Deleted, with the delete as evidence). Each object
// that bad units of the slice read as deleted is a suspect: its deletion,
// reaching every unit that started reading it deleted, good or bad.
func deletionSuspects(units []*outcome.Unit, ids []map[string]identity.Dimension, where map[string]string) []*Suspect {
	byRef := map[string]*Suspect{}
	var out []*Suspect
	for i, u := range units {
		if !u.Bad() || !matches(ids[i], where) {
			continue
		}
		for name, d := range ids[i] {
			if d.Value != identity.Deleted || byRef[d.Evidence.Ref] != nil {
				continue
			}
			sp := &Suspect{Ref: d.Evidence.Ref, Dimension: "deleted", To: "deleted", At: d.Evidence.Time, Kind: "change", Objects: 1,
				Run: d.Evidence.Run, Line: d.Evidence.Line, reached: map[*outcome.Unit]bool{}}
			// A namespaced object (a ConfigMap) is read by its namespace's
			// pods; a cluster-scoped one (a StorageClass) by any.
			_, ns, _ := splitRef(sp.Ref)
			for j, v := range units {
				if (ns == "" || v.Namespace == u.Namespace) && ids[j][name].Value == identity.Deleted {
					sp.reached[v] = true
				}
			}
			sp.Why = fmt.Sprintf("deleted; %d pods started after it and used it", len(sp.reached))
			byRef[sp.Ref] = sp
			out = append(out, sp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ref < out[j].Ref })
	return out
}

// Objects a failure names as missing. Whatever the object, a pod that
// cannot start because it is gone says so in the words of the API's
// NotFound: `configmap "app-config" not found` (the kubelet),
// `serviceaccount "trainer" not found` (admission, a controller's
// FailedCreate), `persistentvolumeclaim "data" not found` (the
// scheduler). A successful delete of that object in the unit's namespace
// (or cluster-wide), before the first bad, is a suspect "deleted" that
// reaches the bad units naming it; identity's (deleted) covers the
// ConfigMaps and Secrets pods read even when no message names them.
// Admission plugins word it their own way, with the kind:
// `RuntimeClass "gvisor" not found`, and the Priority plugin's `no
// PriorityClass with name batch-high was found` (the wording of the real
// apiserver, recorded in the zoo's priorityclass-deleted).
var notFound = regexp.MustCompile(`(?i)\b([a-z][a-z0-9.-]*) "([^"]+)" not found|\bno ([a-z][a-z0-9.-]*) with name "?([^" ]+?)"? was found`)

// missingSuspects are the deletions of the objects the bad units of the
// slice name as not found, in [since, until]; those already suspects
// (have) are left out.
func missingSuspects(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension, where map[string]string,
	have []*Suspect, since, until time.Time) ([]*Suspect, error) {
	type missing struct{ resource, ns, name string } // resource: the word the failure used
	naming := map[missing][]*outcome.Unit{}
	var order []missing
	for i, u := range units {
		if !u.Bad() || !matches(ids[i], where) {
			continue
		}
		for _, m := range notFound.FindAllStringSubmatch(u.Message, 4) {
			word, name := m[1], m[2]
			if word == "" {
				word, name = m[3], m[4]
			}
			// The API names a resource with its group
			// (priorityclasses.scheduling.k8s.io); a plugin, its kind.
			word, _, _ = strings.Cut(strings.ToLower(word), ".")
			k := missing{word, u.Namespace, name}
			if naming[k] == nil {
				order = append(order, k)
			}
			naming[k] = append(naming[k], u)
		}
	}
	known := map[string]bool{}
	for _, sp := range have {
		if sp.Dimension == "deleted" {
			known[strings.ToLower(sp.Ref)] = true
		}
	}
	var out []*Suspect
	for _, k := range order {
		// The kubelet names a kind (configmap), the API a resource
		// (configmaps): the word, or its plural.
		plural := k.resource + "s"
		switch {
		case strings.HasSuffix(k.resource, "y"):
			plural = strings.TrimSuffix(k.resource, "y") + "ies"
		case strings.HasSuffix(k.resource, "s"):
			plural = k.resource + "es"
		}
		expr := fmt.Sprintf(`resource in [%q, %q] && name == %q && (ns == %q || ns == "") && subresource == "" && verb == "delete" && code > 0 && code < 400`,
			k.resource, plural, k.name, k.ns)
		r, err := firstRecord(ctx, s, expr, since, until.Add(time.Nanosecond), true)
		if err != nil {
			return nil, err
		}
		if r == nil {
			continue
		}
		kind := r.Object.Kind
		if kind == "" {
			kind = kindOfResource(r.Object.Resource)
		}
		ref := identity.Ref{Kind: kind, Namespace: r.Object.Namespace, Name: r.Object.Name}.String()
		if known[strings.ToLower(ref)] {
			continue
		}
		sp := &Suspect{Ref: ref, Dimension: "deleted", To: "deleted", At: r.Time, Kind: "change", Objects: 1,
			Run: r.Evidence.Run, Line: r.Evidence.Line, By: r.User, UserAgent: r.UserAgent, reached: map[*outcome.Unit]bool{}}
		for _, u := range naming[k] {
			sp.reached[u] = true
		}
		sp.Why = fmt.Sprintf("deleted by %s; %d failed units say it was not found", r.User, len(naming[k]))
		out = append(out, sp)
	}
	return out, nil
}

// kindOfResource spells a resource as its kind: the kinds whose names
// join words, else the singular with its first letter upper-cased.
func kindOfResource(resource string) string {
	if k, ok := map[string]string{"configmaps": "ConfigMap", "serviceaccounts": "ServiceAccount", "persistentvolumeclaims": "PersistentVolumeClaim",
		"persistentvolumes": "PersistentVolume", "priorityclasses": "PriorityClass", "runtimeclasses": "RuntimeClass", "storageclasses": "StorageClass",
		"networkpolicies": "NetworkPolicy", "resourcequotas": "ResourceQuota", "limitranges": "LimitRange"}[resource]; ok {
		return k
	}
	singular := strings.TrimSuffix(resource, "s")
	if singular == "" {
		return resource
	}
	return strings.ToUpper(singular[:1]) + singular[1:]
}
