package investigate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
)

// Node health. A node that stops reporting (NotReady, its lease expired,
// its kubelet down) changes the state of everything on it, whether or not
// a pod ran there. Each node condition seen going bad is a finding of its
// own, and a candidate cause of the pods that went bad on those nodes: a
// suspect "node.ready: True -> False" over every node that went so, with
// the selector that names them.

// NodeHealth is a set of nodes seen in one bad condition.
type NodeHealth struct {
	Reason   string    `json:"reason"` // NodeNotReady, ...
	Nodes    int       `json:"nodes"`
	Selector string    `json:"selector,omitempty"` // the label that names exactly them, if one does
	First    time.Time `json:"first"`
	Last     time.Time `json:"last"`
	// WithoutPods counts the nodes that ran none of the units in scope.
	WithoutPods int      `json:"withoutPods"`
	Examples    []string `json:"examples"`

	refs []string
	// condition: the nodes reported it in their status (NotReady,
	// DiskPressure), not in their own logs (an Xid, a link down: the
	// host suspects weigh those).
	condition bool
}

// nodeHealth groups the bad observations of nodes from since on by
// reason, each node once, at its first.
func nodeHealth(out *outcome.Outcomes, since time.Time, units []*outcome.Unit, ids []map[string]identity.Dimension) []NodeHealth {
	// A node is only seen failing once it had been seen well: a node
	// registering is NotReady until its kubelet says otherwise.
	wasGood := map[string]time.Time{}
	for _, o := range out.Good {
		if o.Object.Kind == "Node" {
			if _, ok := wasGood[o.Object.Name]; !ok {
				wasGood[o.Object.Name] = o.Time
			}
		}
	}
	byReason := map[string]*NodeHealth{}
	seen := map[string]bool{}
	for _, o := range out.Bad {
		if o.Object.Kind != "Node" || o.Time.Before(since) || seen[o.Reason+"/"+o.Object.Name] {
			continue
		}
		if g, ok := wasGood[o.Object.Name]; !ok || !g.Before(o.Time) {
			continue
		}
		seen[o.Reason+"/"+o.Object.Name] = true
		h := byReason[o.Reason]
		if h == nil {
			h = &NodeHealth{Reason: o.Reason, First: o.Time, condition: o.Source == outcome.SourceStatus}
			byReason[o.Reason] = h
		}
		h.Nodes++
		h.Last = o.Time
		h.refs = append(h.refs, "Node/"+o.Object.Name)
	}
	ran := map[string]bool{}
	for i := range units {
		if n := ids[i]["node"].Value; n != "" {
			ran["Node/"+n] = true
		}
	}
	var list []NodeHealth
	for _, h := range byReason {
		sort.Strings(h.refs)
		for _, r := range h.refs {
			if !ran[r] {
				h.WithoutPods++
			}
		}
		h.Examples = h.refs[:min(3, len(h.refs))]
		list = append(list, *h)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].First.Before(list[j].First) })
	return list
}

// nodeSuspects makes each node finding a suspect of the units that ran on
// its nodes.
func nodeSuspects(health []NodeHealth) []*Suspect {
	var out []*Suspect
	for _, h := range health {
		if !h.condition {
			continue
		}
		sp := &Suspect{Ref: h.refs[0], Dimension: "node.ready", From: "True", To: "False", At: h.First,
			Kind: "change", Objects: h.Nodes, refs: h.refs,
			Why: fmt.Sprintf("%d nodes stopped reporting Ready from %s", h.Nodes, h.First.UTC().Format(time.RFC3339))}
		if h.Reason != "NodeNotReady" {
			sp.Dimension, sp.From, sp.To = "node.condition/"+h.Reason, "False", "True"
			sp.Why = fmt.Sprintf("%d nodes reported %s from %s", h.Nodes, h.Reason, h.First.UTC().Format(time.RFC3339))
		}
		out = append(out, sp)
	}
	return out
}

// nodeCondition says whether a dimension is a node's own condition
// (node.ready, node.condition/DiskPressure): what the node reports of
// itself, which no one set and no one can set back.
func nodeCondition(dim string) bool {
	return dim == "node.ready" || strings.HasPrefix(dim, "node.condition/")
}

// supportOfNodes counts the units that ran on the nodes.
func (p population) supportOfNodes(ids []map[string]identity.Dimension, refs []string) support {
	set := map[string]bool{}
	for _, r := range refs {
		set[r] = true
	}
	s := support{bad: len(p.bad), good: len(p.good)}
	for _, i := range p.bad {
		if set["Node/"+ids[i]["node"].Value] {
			s.badHold++
		}
	}
	for _, i := range p.good {
		if set["Node/"+ids[i]["node"].Value] {
			s.goodHold++
		}
	}
	return s
}

// nodeUnits makes the fleet's nodes units of their own, for when nodes
// themselves went bad: a node that went NotReady after it was seen Ready
// is bad from then, one seen Ready and never after NotReady is good. Each
// has its node identity (pool, zone, rack labels, kernel, runtime ...)
// and its name as "node".
func nodeUnits(ctx context.Context, res *identity.Resolver, out *outcome.Outcomes, since time.Time) ([]*outcome.Unit, []map[string]identity.Dimension, error) {
	byName := map[string]*outcome.Unit{}
	var order []string
	unit := func(name string) *outcome.Unit {
		u := byName[name]
		if u == nil {
			u = &outcome.Unit{Ref: "Node/" + name, Name: name}
			byName[name] = u
			order = append(order, name)
		}
		return u
	}
	for _, o := range out.Good {
		if o.Object.Kind == "Node" {
			u := unit(o.Object.Name)
			if u.LastGood.IsZero() || o.Time.After(u.LastGood) {
				u.LastGood = o.Time
			}
		}
	}
	for _, o := range out.Bad {
		if o.Object.Kind != "Node" || o.Time.Before(since) {
			continue
		}
		u := byName[o.Object.Name]
		if u == nil || u.LastGood.IsZero() || !u.LastGood.Before(o.Time) || u.Bad() {
			continue // never seen well before: registering, not failing
		}
		u.BadAt, u.Reason, u.Message = o.Time, o.Reason, o.Message
	}
	sort.Strings(order)
	var units []*outcome.Unit
	var ids []map[string]identity.Dimension
	for _, name := range order {
		id, err := res.Of(ctx, identity.Ref{Kind: "Node", Name: name})
		if err != nil {
			if nf := (*identity.ErrNotFound)(nil); errors.As(err, &nf) {
				continue
			}
			return nil, nil, fmt.Errorf("identity of Node/%s: %w", name, err)
		}
		m := map[string]identity.Dimension{"node": {Name: "node", Value: name}}
		for _, d := range id.Dimensions {
			m[d.Name] = d
		}
		// Where the node sits below its zone (its rack or block): the
		// failure domain a failure of nodes follows.
		labels, err := res.NodeLabels(ctx, name)
		if err != nil {
			return nil, nil, err
		}
		for k, v := range labels {
			if topo := strings.HasPrefix(k, "topology.") && k != "topology.kubernetes.io/zone" && k != "topology.kubernetes.io/region"; topo || strings.HasSuffix(k, "/rack") || k == "rack" {
				m["node.label/"+k] = identity.Dimension{Name: "node.label/" + k, Value: v}
			}
		}
		units, ids = append(units, byName[name]), append(ids, m)
	}
	return units, ids, nil
}

// nodeEpisode investigates the nodes that went bad as an episode of their
// own, over the nodes as units; nil when no node went bad.
func nodeEpisode(ctx context.Context, s Store, res *identity.Resolver, out *outcome.Outcomes, health []NodeHealth, since time.Time) (*Episode, error) {
	if len(health) == 0 {
		return nil, nil
	}
	// The nodes as they were before the incident: what a node became as
	// it failed (the controller's taints) is its reaction, not a slice.
	units, ids, err := nodeUnits(ctx, res, out, since)
	if err != nil {
		return nil, err
	}
	sl, err := findSlice(ctx, units, ids)
	if err != nil || sl == nil {
		return nil, err
	}
	none := func(int) bool { return false }
	return episodeOf(ctx, s, out, units, ids, nil, sl, none, health, since)
}
