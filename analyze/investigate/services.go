package investigate

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
)

// Whom a unit calls. A pod reaches another workload through its Service,
// by the Service's DNS name (NAME.NS.svc, NAME.NS.svc.cluster.local), and a
// client that cannot reach it quotes that name in its error (the URL it
// fetched, the host it dialled). A write to the Service (its selector, its
// ports) or its deletion can leave the name with no endpoint behind it:
// the callers fail as a connection fails, with nothing they ran with
// changed and the workload behind the Service healthy. No pod spec names
// the Service, so identity cannot hold it; the failures do. Each write to
// a Service that the slice's bad units name in their failures, made before
// the first bad, is a suspect. It reaches the bad units that name it and
// failed after it. The audit log keeps Services at the Metadata level in
// most policies: the suspect says its content is not in the evidence.

// serviceName matches a Service's cluster DNS name: NAME.NS.svc, or a
// pod's under a headless Service (POD.NAME.NS.svc, as StatefulSet peers
// call one another), alone or followed by the cluster domain, a port or a
// path.
var serviceName = regexp.MustCompile(`(?:^|[^a-z0-9.-])(?:[a-z0-9](?:[-a-z0-9]*[a-z0-9])?\.)?([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\.([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\.svc(?:$|[^a-z0-9-])`)

// namedServices are the Services ("NS/NAME") a failure message names.
func namedServices(msg string) []string {
	var out []string
	for _, m := range serviceName.FindAllStringSubmatch(msg, 4) {
		if ref := m[2] + "/" + m[1]; !slices.Contains(out, ref) {
			out = append(out, ref)
		}
	}
	return out
}

// namingServices are the Services ("NS/NAME") the slice's bad units name
// in their failures, in the order first named, with the units naming
// each.
func namingServices(units []*outcome.Unit, ids []map[string]identity.Dimension, where map[string]string) ([]string, map[string][]*outcome.Unit) {
	naming := map[string][]*outcome.Unit{}
	var order []string
	for i, u := range units {
		if !u.Bad() || u.Unborn || !matches(ids[i], where) {
			continue
		}
		for _, ref := range namedServices(u.Message) {
			if naming[ref] == nil {
				order = append(order, ref)
			}
			naming[ref] = append(naming[ref], u)
		}
	}
	return order, naming
}

// serviceSuspects are the writes to the Services the slice's bad units
// name, in (since, firstBad].
func serviceSuspects(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension,
	where map[string]string, since, firstBad time.Time) ([]*Suspect, error) {
	order, naming := namingServices(units, ids, where)
	var out []*Suspect
	for _, ref := range order {
		ns, name, _ := strings.Cut(ref, "/")
		f, err := timeline.CompileFilter(fmt.Sprintf(`resource == "services" && group == "" && ns == %q && name == %q && subresource == "" && `+
			`verb in ["update", "patch", "delete"] && code > 0 && code < 400`, ns, name))
		if err != nil {
			return nil, err
		}
		for r, err := range s.Records(ctx, timeline.Query{Since: since, Until: firstBad.Add(time.Nanosecond), Where: f}) {
			if err != nil {
				return nil, err
			}
			sp := writeSuspect(r, identity.Ref{Kind: "Service", Namespace: ns, Name: name}.String(), "spec")
			sp.service = true
			n := 0
			for _, u := range naming[ref] {
				if u.BadAt.After(r.Time) {
					sp.reached[u] = true
					n++
				}
			}
			sp.Why = fmt.Sprintf("%s by %s, then %d failed units named it (%s.%s.svc) (its content is not in the evidence)",
				pastTense(r.Verb), r.User, n, name, ns)
			out = append(out, sp)
		}
	}
	return out, nil
}

// undoService puts a Service back as it was before the write: its
// selector and ports, so its name reaches its workload's pods again.
func undoService(top Suspect) Action {
	if top.Dimension == "deleted" {
		return recreate(top)
	}
	kind, ns, name := splitRef(top.Ref)
	return Action{Action: "rollback", Target: top.Ref,
		Why: "undo the write, so its selector and ports reach its workload's pods again: its last version, if the timeline holds it, is the last of " +
			command("faultline", "history", "service/"+ns+"/"+name) + " (its content is not in the evidence)",
		Verify: endpointsCheck(ns, name) + "; " + objectCommand("get", kind, ns, name)}
}

// endpointsCheck lists a Service's EndpointSlices: its pods, answering
// again.
func endpointsCheck(ns, service string) string {
	return command("kubectl", "get", "endpointslices", "-n", ns, "-l", "kubernetes.io/service-name="+service)
}

// What a failure names, behind the name. A Service is a name for the
// pods its selector matches, and those pods belong to workloads: a
// Deployment scaled to zero, a StatefulSet rolled to a broken image,
// leave the name with no one to answer, with nothing written to the
// Service itself. So the workloads in the Service's namespace whose pod
// template matches its selector (as the timeline last holds the Service)
// are the callee; each field of a callee's spec that a write changed
// before the first bad (how many pods it runs included: none is what a
// caller cannot reach) is a suspect, reaching the bad units that name the
// Service and failed after it.

// calleeKinds are the workloads whose pods a Service can select.
var calleeKinds = []struct{ group, resource, kind string }{
	{"apps", "deployments", "Deployment"}, {"apps", "statefulsets", "StatefulSet"}, {"apps", "daemonsets", "DaemonSet"},
}

// calleeSuspects are the changes, in (since, firstBad], to the workloads
// behind the Services the slice's bad units name.
func calleeSuspects(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension,
	where map[string]string, since, firstBad time.Time) ([]*Suspect, error) {
	order, naming := namingServices(units, ids, where)
	var out []*Suspect
	for _, ref := range order {
		ns, name, _ := strings.Cut(ref, "/")
		selector, err := serviceSelector(ctx, s, ns, name)
		if err != nil || len(selector) == 0 {
			if err != nil {
				return nil, err
			}
			continue
		}
		for _, k := range calleeKinds {
			vs, err := s.Versions(ctx, timeline.VersionQuery{Group: k.group, Resource: k.resource, Namespace: ns, History: true})
			if err != nil {
				return nil, err
			}
			behind := func(content []byte) (map[string]any, bool) {
				spec, labels, ok := workloadSpec(content)
				return spec, ok && selects(selector, labels)
			}
			for _, w := range specWrites(vs, since, firstBad, behind) {
				sp := w.suspect(k.kind)
				sp.callee = ref
				n := 0
				for _, u := range naming[ref] {
					if u.BadAt.After(w.v.Time) {
						sp.reached[u] = true
						n++
					}
				}
				sp.Why = fmt.Sprintf("the workload behind Service %s (its selector matches its pods); then %d failed units named the Service", ref, n)
				out = append(out, sp)
			}
		}
	}
	return out, nil
}

// serviceSelector is a Service's selector as the timeline last holds it.
func serviceSelector(ctx context.Context, s Store, ns, name string) (map[string]string, error) {
	vs, err := s.Versions(ctx, timeline.VersionQuery{Resource: "services", Namespace: ns, Name: name, History: true})
	if err != nil || len(vs) == 0 {
		return nil, err
	}
	var m struct {
		Spec struct {
			Selector map[string]string `json:"selector"`
		} `json:"spec"`
	}
	if json.Unmarshal(vs[len(vs)-1].Content, &m) != nil {
		return nil, nil
	}
	return m.Spec.Selector, nil
}

// workloadSpec is a workload's spec and its pod template's labels.
func workloadSpec(content []byte) (map[string]any, map[string]string, bool) {
	var m struct {
		Spec map[string]any `json:"spec"`
	}
	if json.Unmarshal(content, &m) != nil || m.Spec == nil {
		return nil, nil, false
	}
	var t struct {
		Spec struct {
			Template struct {
				Metadata struct {
					Labels map[string]string `json:"labels"`
				} `json:"metadata"`
			} `json:"template"`
		} `json:"spec"`
	}
	_ = json.Unmarshal(content, &t)
	return m.Spec, t.Spec.Template.Metadata.Labels, true
}

// selects says whether a Service's selector matches a pod's labels.
func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

// undoCallee puts the workload behind a Service back: its pods, scaled
// away, scaled back; any other field set back.
func undoCallee(top Suspect) Action {
	if top.Dimension != "spec.replicas" || top.From == "" {
		return undoOwnerSpec(top)
	}
	kind, ns, name := splitRef(top.Ref)
	_, service, _ := strings.Cut(top.callee, "/")
	return Action{Action: "rollback", Target: top.Ref, To: top.From,
		Why:     fmt.Sprintf("scale it back to %s replicas, so Service %s has pods to answer its callers", top.From, top.callee),
		Command: command(append([]string{"kubectl", "scale", strings.ToLower(kind) + "/" + name}, append(nsArgs(ns), "--replicas="+top.From)...)...),
		Verify:  endpointsCheck(ns, service) + "; " + objectCommand("get", kind, ns, name)}
}
