package outcome

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/faultline/faultline/timeline"
)

// Pods that were never created. When the apiserver refuses a controller's
// pod creates (a webhook that fails closed, a quota, a policy), no pod
// exists to go bad: the controller reports FailedCreate, and what failed
// is every pod it wanted and could not create. Counting that as one
// failure would make a refusal of a whole rollout look like a lone crash;
// counting each refused request would count the controller's retries. The
// pods wanted are in the controller's own status: a ReplicaSet that wants
// 7 pods and has none is 7 pods refused. Each becomes a unit, named by the
// controller and its number ("ReplicaSet/ml/api-5f6d/3"), with the
// controller's template as its identity. (The most it lacked in any
// version held: a later version may say the rollout was undone.)

// podControllers are the kinds whose controllers create pods from a
// template, and report FailedCreate when the apiserver refuses one, with
// their API group and resource.
var podControllers = map[string]struct{ group, resource string }{
	"ReplicaSet": {"apps", "replicasets"}, "StatefulSet": {"apps", "statefulsets"}, "DaemonSet": {"apps", "daemonsets"},
	"Job": {"batch", "jobs"}, "ReplicationController": {"", "replicationcontrollers"},
}

// unborn says whether o reports that a controller could not create its
// pods.
func unborn(o Observation) bool {
	_, ok := podControllers[o.Object.Kind]
	return ok && o.Reason == "FailedCreate" && o.Object.Name != ""
}

// expandUnborn replaces each unborn unit (one per controller, as fold
// made it) with one unit per pod its controller lacked (lacking).
func expandUnborn(ctx context.Context, s Store, units []*Unit) ([]*Unit, error) {
	out := units[:0:0]
	for _, u := range units {
		if !u.Unborn {
			out = append(out, u)
			continue
		}
		n, err := lacking(ctx, s, u)
		if err != nil {
			return nil, err
		}
		base := u.Ref
		for i := 1; i <= n; i++ {
			c := *u
			c.Ref = base + "/" + strconv.Itoa(i)
			out = append(out, &c)
		}
	}
	return out, nil
}

// lacking is how many pods the unit's controller wanted and did not have,
// at most over the versions of it held, and at least 1 (the controller
// said it failed to create one).
func lacking(ctx context.Context, s Store, u *Unit) (int, error) {
	kind, _, _ := strings.Cut(u.Owner, "/")
	pc := podControllers[kind]
	vs, err := s.Versions(ctx, timeline.VersionQuery{Group: pc.group, Resource: pc.resource, Namespace: u.Namespace, Name: u.Name})
	if err != nil {
		return 0, fmt.Errorf("%s versions: %w", pc.resource, err)
	}
	n := 0
	for _, v := range vs {
		same := v.Object.Namespace == u.Namespace && v.Object.Name == u.Name
		if same && (u.UID == "" || v.Object.UID == "" || v.Object.UID == u.UID) {
			n = max(n, wanted(kind, v.Content)-have(kind, v.Content))
		}
	}
	return min(max(n, 1), maxUnborn), nil
}

// maxUnborn bounds the units one controller's refusals make. It is a
// guard against a version that asks for absurd numbers (a corrupt dump,
// replicas: 1000000000), not a judgement: no controller of a 7,500-node
// fleet lacks more pods than this.
const maxUnborn = 10_000

// controllerState is what the controllers' versions say of their pods.
type controllerState struct {
	Spec struct {
		Replicas    *int `json:"replicas"`
		Parallelism *int `json:"parallelism"`
		Completions *int `json:"completions"`
	} `json:"spec"`
	Status struct {
		Replicas               int `json:"replicas"`
		Active                 int `json:"active"`
		Succeeded              int `json:"succeeded"`
		Failed                 int `json:"failed"`
		DesiredNumberScheduled int `json:"desiredNumberScheduled"`
		CurrentNumberScheduled int `json:"currentNumberScheduled"`
	} `json:"status"`
}

func parseState(content []byte) (controllerState, bool) {
	var st controllerState
	return st, json.Unmarshal(content, &st) == nil
}

// wanted is how many pods the controller's spec asks for at once.
func wanted(kind string, content []byte) int {
	st, ok := parseState(content)
	if !ok {
		return 0
	}
	one := func(p *int) int {
		if p == nil {
			return 1
		}
		return *p
	}
	switch kind {
	case "DaemonSet":
		return st.Status.DesiredNumberScheduled
	case "Job":
		w := one(st.Spec.Parallelism)
		if st.Spec.Completions != nil {
			w = min(w, *st.Spec.Completions-st.Status.Succeeded)
		}
		return w
	}
	return one(st.Spec.Replicas)
}

// have is how many pods the controller's status says it has.
func have(kind string, content []byte) int {
	st, ok := parseState(content)
	if !ok {
		return 0
	}
	switch kind {
	case "DaemonSet":
		return st.Status.CurrentNumberScheduled
	case "Job":
		return st.Status.Active
	}
	return st.Status.Replicas
}
