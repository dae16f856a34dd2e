package investigate

import (
	"context"
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

// serviceSuspects are the writes to the Services the slice's bad units
// name, in (since, firstBad].
func serviceSuspects(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension,
	where map[string]string, since, firstBad time.Time) ([]*Suspect, error) {
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
		Verify: command("kubectl", "get", "endpointslices", "-n", ns, "-l", "kubernetes.io/service-name="+name) + "; " + objectCommand("get", kind, ns, name)}
}
