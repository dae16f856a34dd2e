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

// How much of the apiserver a unit may use is part of what it runs with
// too. API Priority and Fairness sorts every request by FlowSchemas (which
// match its user, groups, verb and resource) into priority levels, each
// with a share of the apiserver's seats and a way to meet the excess:
// queue it, or reject it (429). A write to a FlowSchema or a priority
// level can send a client's usual load where it no longer fits: its
// requests are then rejected with nothing it runs with changed, and its
// load flat. The audit log narrows the write down as it does an RBAC write
// (access.go), with one difference:
//
//   - any write can reject: a FlowSchema created matches requests that
//     went elsewhere before, a level created gives a FlowSchema that names
//     it a home, an update changes either, a delete sends its requests to
//     the next FlowSchema that matches them;
//   - the same request seated well after the write says the write did not
//     reject it: only writes between the last seated request of the
//     rejected kind (less apfPropagation) and the first rejection are
//     suspects;
//   - the level or schema matters only for the clients whose requests it
//     governs, which only its content says; the audit log keeps these
//     objects at the Metadata level, so a write reaches the units whose
//     ServiceAccount was rejected after it, and the suspect says that its
//     content is not in the evidence.
//
// Rejections of a client whose own load rose (a storm of its own making)
// fit this rule too; the storm's arrival then competes with any write in
// that window, and the scoring weighs them.

// flowControl maps the API Priority and Fairness resources to their kinds.
var flowControl = map[string]string{
	"flowschemas":                 "FlowSchema",
	"prioritylevelconfigurations": "PriorityLevelConfiguration",
}

// apfPropagation is how long after a write to a FlowSchema or priority
// level the apiserver may still sort requests by the old configuration:
// its APF controller reads them through an informer and reconfigures on
// each event, within milliseconds, seconds under load. A request seated
// that soon after a write does not clear it.
const apfPropagation = 5 * time.Second

// throttleSuspects are the writes to API Priority and Fairness objects
// that can have sent the slice's ServiceAccounts where their requests
// were rejected. Each reaches the units that run as a ServiceAccount
// rejected after it.
func throttleSuspects(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension, cons constraints,
	where map[string]string, since, until time.Time) ([]*Suspect, error) {
	ds, err := denials(ctx, s, units, ids, cons, where, since, until, `code == 429`)
	if err != nil || len(ds) == 0 {
		return nil, err
	}
	out, err := writesBeforeRefusal(ctx, s, ds, units, cons, since, apfPropagation,
		func(denial) string {
			return `group == "flowcontrol.apiserver.k8s.io" && resource in ["flowschemas", "prioritylevelconfigurations"] && ` +
				`subresource == "" && verb in ["create", "update", "patch", "delete"] && code > 0 && code < 400`
		},
		func(r *timeline.Record) *Suspect {
			sp := writeSuspect(r, identity.Ref{Kind: flowControl[r.Object.Resource], Name: r.Object.Name}.String(), "spec")
			sp.throttles = true
			return sp
		})
	if err != nil {
		return nil, err
	}
	for _, sp := range out {
		sp.Why = fmt.Sprintf("%s by %s, then the requests of %s were rejected (429) (its content is not in the evidence)",
			pastTense(sp.verb), sp.By, strings.Join(sp.refused, ", "))
	}
	return out, nil
}

// undoFlowControl undoes a write to a FlowSchema or priority level: the
// rejected clients' requests go back where they were seated.
func undoFlowControl(top Suspect) Action {
	kind, _, name := splitRef(top.Ref)
	if top.Dimension == "deleted" {
		return recreate(top)
	}
	a := Action{Action: "rollback", Target: top.Ref,
		Why: "undo the write, so the rejected clients' requests are seated as before (its previous content is not in the evidence)"}
	if top.Dimension == "created" {
		a.Why = "remove it (or correct it), so the rejected clients' requests go back to the priority level that seated them"
		a.Command, a.Verify = objectCommand("delete", kind, "", name), objectCommand("get", kind, "", name)
	}
	return a
}
