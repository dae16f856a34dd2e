package identity

import (
	"context"
	"sort"
	"time"
)

// Node agents. A DaemonSet runs one pod on each node it selects: a device
// plugin, a CNI, a CSI node driver, a log shipper. What that pod runs is
// part of the node every other pod there runs on: a device plugin that
// cannot allocate gets the GPU pods its kubelet admits rejected, a CNI
// that cannot make a sandbox leaves them in ContainerCreating. A pod's
// identity holds, for each DaemonSet that had a pod on its node when it
// was created, the image of each of that pod's containers:
// "node.agent/NAMESPACE/DAEMONSET/CONTAINER". A DaemonSet's template
// lends the same dimension to the pods of its nodes (objectDims), so a
// rollout of it is a change they hold.

// agentPod is one pod of a DaemonSet on a node.
type agentPod struct {
	ns, ds  string
	created time.Time
	o       *obj
}

// agentsOn returns the pods of DaemonSets on node as they stood at t
// (zero: the latest): for each DaemonSet, its pod there created last at
// or before t (a rollout replaces one pod a node by another).
func (r *Resolver) agentsOn(ctx context.Context, node string, t time.Time) ([]agentPod, error) {
	if r.agents == nil {
		if err := r.load(ctx, "", "pods"); err != nil {
			return nil, err
		}
		r.agents = map[string][]agentPod{}
		for _, o := range r.byName["/pods"] {
			owners := ownerRefs(o.m)
			n := str(mapAt(o.m, "spec"), "nodeName")
			if len(owners) == 0 || owners[0].kind != "DaemonSet" || n == "" {
				continue
			}
			r.agents[n] = append(r.agents[n], agentPod{ns: o.v.Object.Namespace, ds: owners[0].name, created: podStart(o), o: o})
		}
	}
	latest := map[string]agentPod{}
	for _, a := range r.agents[node] {
		if !t.IsZero() && a.created.After(t) {
			continue
		}
		k := a.ns + "/" + a.ds
		if cur, ok := latest[k]; !ok || a.created.After(cur.created) {
			latest[k] = a
		}
	}
	out := make([]agentPod, 0, len(latest))
	for _, a := range latest {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ns+"/"+out[i].ds < out[j].ns+"/"+out[j].ds })
	return out, nil
}

// agentDims are the node-agent dimensions a DaemonSet's pod spec lends to
// the pods on its node.
func agentDims(ns, ds string, spec map[string]any, ev Evidence) []Dimension {
	var out []Dimension
	for _, x := range list(spec, "containers") {
		c, _ := x.(map[string]any)
		if img := str(c, "image"); img != "" {
			out = append(out, Dimension{Name: "node.agent/" + ns + "/" + ds + "/" + str(c, "name"), Value: img, Evidence: ev})
		}
	}
	return out
}
