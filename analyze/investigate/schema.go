package investigate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
)

// What a unit may write is part of what it runs with too. The apiserver
// refuses a write as malformed (400: a field the schema does not declare,
// under strict field validation) or invalid (422) by the rules that define
// the valid objects of its resource. For a built-in resource those are the
// apiserver's own code; for a custom resource they are the schema and
// validation rules of the CustomResourceDefinition that serves it, named
// RESOURCE.GROUP, which anyone with the rights can change at any time while
// nothing its writers run changes. When the writes of the slice's
// ServiceAccounts start being refused so, the audit log narrows the change
// down as it does an RBAC write (access.go):
//
//   - only the CRD named after the refused resource and group defines it;
//   - only an update or a patch can tighten its rules: creating it starts
//     serving the resource, and deleting it stops serving it (404, not a
//     refusal of what was written);
//   - the same write accepted well after the CRD's write says the write did
//     not refuse it: only writes between the last accepted write of the
//     refused kind (less schemaPropagation) and the first refusal are
//     suspects.
//
// Most audit policies keep CRDs at the Metadata level: who wrote, when and
// how, without the schema. The suspect says so.

// schemaPropagation is how long after a write to a CRD the apiserver may
// still validate by its old schema: it rebuilds the resource's handler
// from an informer's event, within a second, longer under load. A write
// accepted that soon after does not clear it.
const schemaPropagation = 5 * time.Second

// The CRD also serves its resource: deleting it deletes every object of
// the resource and stops serving it. While it terminates, the apiserver
// refuses creates (403); once it is gone, every request on the resource's
// collection is answered 404 (outcome.NotServed). When the slice's
// ServiceAccounts meet either, the deletes of the CRD named after the
// resource, in the same window, are suspects; the mitigation recreates it.

// crdRules are the two ways a write to a CRD refuses the requests to its
// resource: the refusals (CEL), the writes to the CRD that make them
// (verbs), what the suspect says after "VERB by USER, " (why, of the
// ServiceAccounts refused), and whether its undo is a schema's (validates;
// a delete is undone by recreating the CRD).
var crdRules = []struct {
	refused, verbs, why string
	validates           bool
}{
	{outcome.RefusedWrite, `["update", "patch"]`,
		"then the writes of %s to the resource it defines were refused as invalid (its schema is not in the evidence)", true},
	{`code == 403 || (` + outcome.NotServed + `)`, `["delete"]`,
		"then the requests of %s to the resource it served were refused (it is no longer served)", false},
}

// crdSuspects are the writes to the CustomResourceDefinitions of the
// resources whose requests by the slice's ServiceAccounts were then
// refused by them (crdRules). Each reaches the units that run as a
// ServiceAccount refused after it.
func crdSuspects(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension, cons constraints,
	where map[string]string, since, until time.Time) ([]*Suspect, error) {
	var out []*Suspect
	for _, rule := range crdRules {
		ds, err := denials(ctx, s, units, ids, cons, where, since, until, rule.refused)
		if err != nil {
			return nil, err
		}
		if len(ds) == 0 {
			continue
		}
		sps, err := writesBeforeRefusal(ctx, s, ds, units, cons, since, schemaPropagation,
			func(d denial) string {
				return fmt.Sprintf(`group == "apiextensions.k8s.io" && resource == "customresourcedefinitions" && name == %q && `+
					`subresource == "" && verb in %s && code > 0 && code < 400`, crdName(d.first.Object), rule.verbs)
			},
			func(r *timeline.Record) *Suspect {
				sp := writeSuspect(r, identity.Ref{Kind: "CustomResourceDefinition", Name: r.Object.Name}.String(), "spec")
				sp.validates = rule.validates
				return sp
			})
		if err != nil {
			return nil, err
		}
		for _, sp := range sps {
			sp.Why = fmt.Sprintf("%s by %s, "+rule.why, pastTense(sp.verb), sp.By, strings.Join(sp.refused, ", "))
		}
		out = append(out, sps...)
	}
	return out, nil
}

// crdName is the name of the CustomResourceDefinition that would serve
// the object's resource: RESOURCE.GROUP. A built-in resource has none (its
// group has no dot, or is one of Kubernetes' own), and no CRD of that name
// is ever written, so the name only finds nothing.
func crdName(o timeline.ObjectRef) string {
	return o.Resource + "." + o.Group
}

// undoSchema undoes a write to a CustomResourceDefinition: the refused
// writes are valid again under the schema it had.
func undoSchema(top Suspect) Action {
	kind, _, name := splitRef(top.Ref)
	return Action{Action: "rollback", Target: top.Ref,
		Why: "undo the write, so the refused writes are valid again under the schema it had " +
			"(its previous schema is not in the evidence: compare what it requires now with what the refused writes send)",
		Verify: objectCommand("get", kind, "", name)}
}
