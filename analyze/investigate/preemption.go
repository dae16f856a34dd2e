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

// Who took a unit's place. To place a pod of higher priority, the
// scheduler preempts pods of lower priority from a node, and says so:
// the victim's DisruptionTarget condition (outcome: Preempted) and its
// Preempted event, "Preempted by pod UID on node NODE" (older schedulers
// name the pod NAMESPACE/NAME). Nothing the victims ran with changed: what
// changed is who else wanted their room. The preemptor's arrival, the
// creation of the workload its pods belong to, is the suspect. It reaches
// the victims whose events name its pods, and their replacements (pods
// of the same controller created after the preemption) that then found
// no room (FailedScheduling); a good unit is never reached (it kept its
// room, or found another).

// preemptedBy reads the preemptor a scheduler's Preempted event names: a
// pod's UID, or its namespace and name.
var preemptedBy = regexp.MustCompile(`^Preempted by (?:pod )?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[a-z0-9.-]+/[a-z0-9.-]+)\b`)

// preemptionSuspects are the arrivals of the workloads whose pods
// preempted the slice's bad units.
func preemptionSuspects(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension,
	where map[string]string, since, until time.Time) ([]*Suspect, error) {
	byUID := map[string]int{}
	byName := map[string]int{}
	for i, u := range units {
		if !u.Unborn {
			if u.UID != "" {
				byUID[u.UID] = i
			}
			byName[u.Namespace+"/"+u.Name] = i
		}
	}
	// The victims, by the workload that preempted them.
	victims := map[string][]*outcome.Unit{}
	preempted := map[string]time.Time{} // a victim's controller: its first preemption
	for i, u := range units {
		if !u.Bad() || u.Reason != "Preempted" || !matches(ids[i], where) {
			continue
		}
		f, err := timeline.CompileFilter(fmt.Sprintf(`source == "event" && reason == "Preempted" && ns == %q && name == %q`, u.Namespace, u.Name))
		if err != nil {
			return nil, err
		}
		for r, err := range s.Records(ctx, timeline.Query{Since: since, Until: until, Where: f}) {
			if err != nil {
				return nil, err
			}
			m := preemptedBy.FindStringSubmatch(r.Message)
			if m == nil {
				continue
			}
			j, ok := byUID[m[1]]
			if !ok {
				j, ok = byName[m[1]]
			}
			if !ok {
				continue
			}
			w := workloadOf(units[j], ids[j])
			if w == "" {
				continue
			}
			victims[w] = append(victims[w], u)
			if t, ok := preempted[u.Owner]; !ok || u.BadAt.Before(t) {
				preempted[u.Owner] = u.BadAt
			}
			break
		}
	}
	names := make([]string, 0, len(victims))
	for w := range victims {
		names = append(names, w)
	}
	sort.Strings(names)
	var out []*Suspect
	for _, w := range names {
		sp, err := arrivalOf(ctx, s, w, since, until)
		if err != nil {
			return nil, err
		}
		if sp == nil {
			continue
		}
		owners := map[string]bool{}
		for _, u := range victims[w] {
			sp.reached[u] = true
			owners[u.Owner] = true
		}
		n := len(sp.reached)
		for _, u := range units {
			// creationTimestamp is to the second.
			if u.Bad() && u.Reason == "FailedScheduling" && owners[u.Owner] && !u.Created.Before(preempted[u.Owner].Truncate(time.Second)) {
				sp.reached[u] = true
			}
		}
		sp.Why = fmt.Sprintf("created by %s; the scheduler preempted %d pods to place its pods, and %d of their replacements found no room",
			orUnknown(sp.By), n, len(sp.reached)-n)
		out = append(out, sp)
	}
	return out, nil
}

// workloadOf names the workload a unit's pod belongs to, Kind/namespace/
// name: its Deployment when a ReplicaSet of one owns it, else its owner.
func workloadOf(u *outcome.Unit, id map[string]identity.Dimension) string {
	if d, ok := id["owner/Deployment"]; ok && d.Value != "" {
		return "Deployment/" + u.Namespace + "/" + d.Value
	}
	if u.Owner == "" {
		return ""
	}
	kind, name, _ := strings.Cut(u.Owner, "/")
	return kind + "/" + u.Namespace + "/" + name
}

// arrivalOf is the creation of a workload in (since, until) as a suspect,
// from the audit record that created it; nil when the evidence holds none
// (it came before the window: an arrival long past is no change now).
func arrivalOf(ctx context.Context, s Store, workload string, since, until time.Time) (*Suspect, error) {
	kind, ns, name := splitRef(workload)
	group, resource, ok := identity.Resource(kind)
	if !ok {
		return nil, nil
	}
	r, err := firstRecord(ctx, s, fmt.Sprintf(`verb == "create" && group == %q && resource == %q && ns == %q && name == %q && subresource == "" && code > 0 && code < 400`,
		group, resource, ns, name), since, until, false)
	if err != nil || r == nil {
		return nil, err
	}
	return &Suspect{Ref: workload, Dimension: "created", To: kind, At: r.Time, Kind: "change", Objects: 1,
		Run: r.Evidence.Run, Line: r.Evidence.Line, By: r.User, UserAgent: r.UserAgent,
		reached: map[*outcome.Unit]bool{}, preemptor: true}, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

// givesRoomBack undoes a preemptor's arrival: its pods give their room
// back when it is suspended (a Job) or scaled to nothing. Lowering its
// priority now would free nothing: a pod's priority is fixed when it is
// created.
func givesRoomBack(top Suspect) Action {
	kind, ns, name := splitRef(top.Ref)
	a := Action{Action: "rollback", Target: top.Ref,
		Why: "its pods took the room of running pods of lower priority: suspend it (or scale it to nothing) until the preempted workload has room of its own, if that workload matters more now"}
	if top.quota {
		a.Why = "its pods used the room the namespace's quota allows: suspend it (or scale it down) until the refused workload is back, or raise the quota"
	}
	switch kind {
	case "Job":
		a.Command = command(append([]string{"kubectl", "patch", "job/" + name}, append(nsArgs(ns), "--type=merge", "-p", `{"spec":{"suspend":true}}`)...)...)
	case "Deployment", "StatefulSet", "ReplicaSet":
		a.Command = command(append([]string{"kubectl", "scale", strings.ToLower(kind) + "/" + name}, append(nsArgs(ns), "--replicas=0")...)...)
	}
	if a.Command != "" {
		a.Verify = objectCommand("get", kind, ns, name)
	}
	return a
}
