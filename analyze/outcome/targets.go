package outcome

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/timeline"
)

// Operations on a pod from outside it. A person or automation acts on
// pods too: a drain evicts them, an operator deletes or patches them.
// When the apiserver refuses such a write, the client failed, but the
// client is no pod and no unit; the pod its request named is what the
// refusal is about (an eviction a disruption budget refuses, a delete a
// webhook refuses), and the pod may run on. Such a pod is a unit gone bad
// by the operation (Unit.Target). The pods the same client's same
// operation was answered on are its known-good population: a pod a drain
// evicted was deleted, yet it stayed good for the drain. The pods nobody
// acted on say nothing about the operation, and the investigation leaves
// them out of its scope when every unit that went bad went bad this way.
//
// The cluster's own machinery is left out: a node's kubelet writing its
// pods' status, and the control plane's controllers. Their refused writes
// (a kubelet's status patch shed while the apiserver is overloaded) say
// what the apiserver could not serve, and other evidence weighs that.

// targetFields are the fields a refused request's operation is read from.
const targetFields = timeline.FieldVerb | timeline.FieldUser

// Operation is a write to pods by a client from outside them: its verb,
// the subresource it wrote ("" for the pod itself) and its user.
type Operation struct {
	Verb, Subresource, User string
}

// IsZero says whether op is no operation.
func (op Operation) IsZero() bool { return op == Operation{} }

// What is "VERB pods[/SUBRESOURCE]".
func (op Operation) What() string {
	if op.Subresource == "" {
		return op.Verb + " pods"
	}
	return op.Verb + " pods/" + op.Subresource
}

// String is "VERB pods[/SUBRESOURCE] by USER"; "" for no operation.
func (op Operation) String() string {
	if op.IsZero() {
		return ""
	}
	return op.What() + " by " + op.User
}

// MarshalText spells op as String does.
func (op Operation) MarshalText() ([]byte, error) { return []byte(op.String()), nil }

// Filter is a filter of op's requests on any pod: the same client, verb
// and subresource.
func (op Operation) Filter() string {
	return fmt.Sprintf(`user == %q && verb == %q && group == "" && resource == "pods" && subresource == %q`, op.User, op.Verb, op.Subresource)
}

// targetOp is the operation of a write that named a pod (refused, or
// answered), made by a client from outside the pod and outside the
// cluster's machinery; zero for any other request.
func targetOp(r *timeline.Record) Operation {
	if r.Object.Group != "" || r.Object.Resource != "pods" || r.Object.Name == "" || r.Object.Namespace == "" ||
		!writeVerb(r.Verb) || r.User == "" || machinery(r.User) {
		return Operation{}
	}
	return Operation{Verb: r.Verb, Subresource: r.Object.Subresource, User: r.User}
}

// evictedBy says whether the unit went bad by an eviction, which the
// operation op is: the Eviction API marked it so (a pod is evicted once).
func evictedBy(u *Unit, op Operation) bool {
	return op.Verb == "create" && op.Subresource == "eviction" && u.Reason == "Evicted" && strings.Contains(u.Message, "EvictionByEvictionAPI")
}

func writeVerb(v string) bool {
	return v == "create" || v == "update" || v == "patch" || v == "delete"
}

// machinery says whether user is the cluster's own: a node, a control
// plane component, or a ServiceAccount of kube-system (its controllers).
func machinery(user string) bool {
	return strings.HasPrefix(user, "system:node:") || strings.HasPrefix(user, "system:kube-") ||
		strings.HasPrefix(user, "system:serviceaccount:kube-system:") || user == "system:apiserver"
}

// readTargets marks, for each operation that went bad on a pod (Target),
// the other pods it was answered on in the window: its population. A pod
// the operation was refused on, then answered on when retried, did not
// fail it: the client waited (a budget allows one pod down at a time, and
// the next only once the first runs again elsewhere).
func readTargets(ctx context.Context, s Store, out *Outcomes, opt Options) error {
	units := out.Units
	byRef := map[string]*Unit{}
	ops := map[Operation]bool{}
	for _, u := range units {
		byRef[u.Ref] = u
		if !u.Target.IsZero() && u.Bad() {
			ops[u.Target] = true
		}
	}
	if len(ops) == 0 {
		return nil
	}
	// One read for every operation: a read of the window is a scan on a
	// store without an index of users.
	keys := make([]string, 0, len(ops))
	for op := range ops {
		keys = append(keys, "("+op.Filter()+")")
	}
	sort.Strings(keys)
	f, err := timeline.CompileFilter("(" + strings.Join(keys, " || ") + `) && code > 0 && code < 400`)
	if err != nil {
		return err
	}
	waited := map[string]Operation{} // pod -> the operation it waited out
	q := timeline.Query{Since: opt.Since, Until: opt.Until, Where: f, Fields: timeline.FieldCode | targetFields}
	for r, err := range s.Records(ctx, q) {
		if err != nil {
			return fmt.Errorf("operations answered on pods: %w", err)
		}
		op := targetOp(r) // one of ops: the filter reads no other
		u := byRef["Pod/"+r.Object.Namespace+"/"+r.Object.Name]
		switch {
		case u == nil:
		case !u.Bad():
			// Answered: the pod stood good for the client then.
			if u.Target.IsZero() {
				u.Target, u.AnsweredAt = op, r.Time
			}
			if r.Time.After(u.LastGood) {
				u.LastGood = r.Time
			}
		case u.Target.IsZero() && evictedBy(u, op):
			// Evicted by this answer: bad for its own story, answered
			// for the operation's.
			u.Target, u.AnsweredAt = op, r.Time
		case u.Target == op && r.Time.After(u.BadAt):
			u.BadAt, u.Reason, u.Message, u.Source, u.RecordID, u.Refusals = time.Time{}, "", "", "", 0, 0
			u.LastGood, u.Evidence, u.AnsweredAt = r.Time, r.Evidence, r.Time
			waited[u.Ref] = op
		}
	}
	if len(waited) > 0 {
		// The refusals the client waited out are no failure either
		// (another client's, on the same pod, still are).
		out.Bad = slices.DeleteFunc(out.Bad, func(o Observation) bool {
			return !o.Target.IsZero() && waited["Pod/"+o.Object.Namespace+"/"+o.Object.Name] == o.Target
		})
	}
	return nil
}
