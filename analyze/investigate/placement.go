package investigate

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
)

// Where a unit may run is part of what it ran with. A pod that never ran
// was judged by the scheduler against the nodes: its nodeSelector must
// match a node's labels, and the node's every NoSchedule and NoExecute
// taint must be tolerated. A node change that turns nodes a pod could use
// into nodes it cannot (a label it selects renamed or removed, a taint it
// does not tolerate) takes room away from it; when such pods then fail to
// be placed, that change is a suspect. Each suspect is one change over the
// nodes that made it (scope then names their selector), and reaches the
// unplaced bad units whose constraints it turned away, and the good units
// with the same constraints created after it (they were placed all the
// same: evidence against it). Pods that ran are judged by the node they ran
// on instead (identity), and a change to it there is a change in what
// they ran with.

// want is what a unit requires of a node: the labels it selects and the
// taints it tolerates.
type want struct {
	selector    map[string]string
	tolerations []toleration
}

type toleration struct {
	key, value, effect string
	any                bool // operator Exists: any value
}

type taint struct{ key, value, effect string }

func wantOf(cons map[string]string) want {
	w := want{selector: map[string]string{}}
	for k, v := range cons {
		if key, ok := strings.CutPrefix(k, "nodeSelector/"); ok {
			w.selector[key] = v
		}
	}
	for _, t := range strings.Split(cons["tolerations"], ",") {
		if t == "" {
			continue
		}
		if t == "*" {
			w.tolerations = append(w.tolerations, toleration{any: true})
			continue
		}
		kv, eff, _ := strings.Cut(t, ":")
		k, v, eq := strings.Cut(kv, "=")
		w.tolerations = append(w.tolerations, toleration{key: k, value: v, effect: eff, any: !eq})
	}
	return w
}

// tolerates says whether a toleration lets a pod onto a node with the taint.
func (t toleration) tolerates(x taint) bool {
	if t.effect != "" && t.effect != x.effect {
		return false
	}
	if t.key == "" {
		return t.any
	}
	return t.key == x.key && (t.any || t.value == x.value)
}

// node is what the scheduler reads of a node version.
type node struct {
	labels map[string]string
	taints []taint
}

func nodeOf(v *timeline.ObjectVersion) node {
	var m struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			Taints []struct{ Key, Value, Effect string } `json:"taints"`
		} `json:"spec"`
	}
	_ = json.Unmarshal(v.Content, &m) // a version that does not decode has no labels or taints
	n := node{labels: m.Metadata.Labels}
	for _, t := range m.Spec.Taints {
		n.taints = append(n.taints, taint{t.Key, t.Value, t.Effect})
	}
	return n
}

func (n node) taintString() string {
	var out []string
	for _, t := range n.taints {
		s := t.key
		if t.value != "" {
			s += "=" + t.value
		}
		out = append(out, s+":"+t.effect)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// turnedAway lists the changes from node a to node b that make b refuse a
// unit wanting w when a admitted it, as dimension, from, to.
func (w want) turnedAway(a, b node) [][3]string {
	if !w.admits(a) || w.admits(b) {
		return nil
	}
	var out [][3]string
	for _, k := range slices.Sorted(maps.Keys(w.selector)) {
		if v := w.selector[k]; a.labels[k] == v && b.labels[k] != v {
			out = append(out, [3]string{"node.label/" + k, v, b.labels[k]})
		}
	}
	if w.untolerated(b) && !w.untolerated(a) {
		out = append(out, [3]string{"node.taints", a.taintString(), b.taintString()})
	}
	return out
}

func (w want) admits(n node) bool {
	for k, v := range w.selector {
		if n.labels[k] != v {
			return false
		}
	}
	return !w.untolerated(n)
}

// untolerated says whether the node has a taint that keeps the unit off
// (NoSchedule or NoExecute) and that it does not tolerate.
func (w want) untolerated(n node) bool {
	for _, x := range n.taints {
		if x.effect != "NoSchedule" && x.effect != "NoExecute" {
			continue
		}
		ok := false
		for _, t := range w.tolerations {
			ok = ok || t.tolerates(x)
		}
		if !ok {
			return true
		}
	}
	return false
}

// consKey is one line for a unit's constraints, to group units by them.
func consKey(cons map[string]string) string {
	keys := make([]string, 0, len(cons))
	for k := range cons {
		if k != "serviceAccount" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + cons[k] + "\x00")
	}
	return b.String()
}

// placementSuspects are the node changes in (since, until] that turned
// away the unplaced bad units of the slice.
func placementSuspects(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension, cons constraints,
	where map[string]string, since, until time.Time) ([]*Suspect, error) {
	wants := map[string]want{}
	for i, u := range units {
		if _, placed := ids[i]["node"]; u.Bad() && !placed && matches(ids[i], where) {
			k := consKey(cons[u])
			wants[k] = wantOf(cons[u])
		}
	}
	if len(wants) == 0 {
		return nil, nil
	}
	versions, err := s.Versions(ctx, timeline.VersionQuery{Resource: "nodes", History: true})
	if err != nil {
		return nil, err
	}
	type key struct{ dim, from, to string }
	byKey := map[key]*Suspect{}
	groups := map[*Suspect]map[string]bool{} // the constraints it turned away
	var out []*Suspect
	prev := map[string]*timeline.ObjectVersion{}
	for i := range versions {
		v := &versions[i]
		p := prev[v.Object.Name]
		prev[v.Object.Name] = v
		if p == nil || !v.Time.After(since) || v.Time.After(until) {
			continue
		}
		a, b := nodeOf(p), nodeOf(v)
		ref := "Node/" + v.Object.Name
		for wk, w := range wants {
			for _, c := range w.turnedAway(a, b) {
				k := key{c[0], c[1], c[2]}
				sp := byKey[k]
				if sp == nil {
					sp = &Suspect{Ref: ref, Dimension: c[0], From: c[1], To: c[2], At: v.Time, Kind: "change",
						Run: v.Evidence.Run, Line: v.Evidence.Line, unplaced: true,
						Why: "the nodes it changed no longer admit the pods that then could not be placed"}
					byKey[k], groups[sp] = sp, map[string]bool{}
					out = append(out, sp)
				}
				groups[sp][wk] = true
				if !slices.Contains(sp.refs, ref) {
					sp.refs = append(sp.refs, ref)
					sp.Objects = len(sp.refs)
				}
				if v.Time.Before(sp.At) {
					sp.At, sp.Ref, sp.Run, sp.Line = v.Time, ref, v.Evidence.Run, v.Evidence.Line
				}
			}
		}
	}
	for _, sp := range out {
		sp.reached = map[*outcome.Unit]bool{}
		for j, u := range units {
			if !groups[sp][consKey(cons[u])] {
				continue
			}
			if _, placed := ids[j]["node"]; (u.Bad() && !placed) || (u.Good() && u.Created.After(sp.At)) {
				sp.reached[u] = true
			}
		}
	}
	return out, nil
}
