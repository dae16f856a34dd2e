// Package nodehealth keeps the error budgets of a fleet's nodes by pool:
// the faults their own logs reported (GPU Xid errors by code, ECC and row
// remapping, NVLink, OOM kills, kubelet evictions and PLEG stalls,
// conntrack overflows, link flaps: ingest/nodelogs) and the minutes they
// spent NotReady (from the nodes' versions), per node and per node-hour.
// A pool that fails more often than its peers shows, and so does the node
// that spends its pool's budget. It never prints and never imports an
// ingester.
package nodehealth

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"time"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
)

// Store is what the budgets are read from.
type Store interface {
	Records(ctx context.Context, q timeline.Query) iter.Seq2[*timeline.Record, error]
	Versions(ctx context.Context, q timeline.VersionQuery) ([]timeline.ObjectVersion, error)
	Bounds(ctx context.Context) (first, last time.Time, err error)
}

// Options bound the window (zero: all the evidence) and how many nodes
// the report lists.
type Options struct {
	Since, Until time.Time
	TopNodes     int // 0: 10
}

// Report is the fleet's node health over a window.
type Report struct {
	Window struct {
		Start time.Time `json:"start"`
		End   time.Time `json:"end"`
	} `json:"window"`
	// Pools are the node pools, the most faults per node-hour first.
	Pools []Pool `json:"pools"`
	// Nodes are the nodes that logged a fault or were NotReady, the most
	// first (at most Options.TopNodes).
	Nodes []Node `json:"nodes"`
	// Faults counts every fault in the window by kind ("Xid 79",
	// "OOMKill").
	Faults map[string]int `json:"faults"`
}

// Pool is one pool's budget.
type Pool struct {
	Pool      string  `json:"pool"` // "" for nodes of no known pool
	Nodes     int     `json:"nodes"`
	NodeHours float64 `json:"nodeHours"`
	// Faults counts the pool's faults by kind; PerNodeHour is all of them
	// over NodeHours.
	Faults      map[string]int `json:"faults"`
	PerNodeHour float64        `json:"faultsPerNodeHour"`
	// NotReadyMinutes sums the minutes its nodes were NotReady after
	// being seen Ready.
	NotReadyMinutes float64 `json:"notReadyMinutes"`
	// Affected counts its nodes with a fault or NotReady time.
	Affected int `json:"affectedNodes"`
}

// Node is one node's share.
type Node struct {
	Name            string         `json:"name"`
	Pool            string         `json:"pool,omitempty"`
	Zone            string         `json:"zone,omitempty"`
	Faults          map[string]int `json:"faults"`
	NotReadyMinutes float64        `json:"notReadyMinutes"`
	First           time.Time      `json:"first,omitzero"` // its first fault
	Last            time.Time      `json:"last,omitzero"`
}

func (n *Node) total() int {
	t := 0
	for _, c := range n.Faults {
		t += c
	}
	return t
}

// Kind names a fault: its reason, and its Xid code ("Xid 79").
func Kind(r *timeline.Record) string {
	if r.Code != 0 {
		return r.Reason + " " + strconv.Itoa(r.Code)
	}
	return r.Reason
}

// Run reads the window's node faults and node versions and keeps the
// budgets.
func Run(ctx context.Context, s Store, opt Options) (*Report, error) {
	first, last, err := s.Bounds(ctx)
	if err != nil {
		return nil, err
	}
	if !opt.Since.IsZero() {
		first = opt.Since
	}
	if !opt.Until.IsZero() {
		last = opt.Until
	}
	rep := &Report{Pools: []Pool{}, Nodes: []Node{}, Faults: map[string]int{}}
	rep.Window.Start, rep.Window.End = first, last
	nodes, err := readNodes(ctx, s, first, last)
	if err != nil {
		return nil, err
	}
	if err := readFaults(ctx, s, first, last, nodes, rep.Faults); err != nil {
		return nil, err
	}
	rep.Pools = pools(nodes, last.Sub(first))
	rep.Nodes = worst(nodes, cmp.Or(opt.TopNodes, 10))
	return rep, nil
}

// readFaults counts the node faults of [first, last] into their nodes
// (a node no version names joins with no pool) and into all.
func readFaults(ctx context.Context, s Store, first, last time.Time, nodes map[string]*Node, all map[string]int) error {
	f, err := timeline.CompileFilter(outcome.NodeFaults)
	if err != nil {
		return fmt.Errorf("node faults: %w", err) // a constant: a bug
	}
	for r, err := range s.Records(ctx, timeline.Query{Since: first, Until: last.Add(time.Nanosecond), Where: f}) {
		if err != nil {
			return fmt.Errorf("node faults: %w", err)
		}
		n := nodes[r.Object.Name]
		if n == nil {
			n = &Node{Name: r.Object.Name, Faults: map[string]int{}}
			nodes[n.Name] = n
		}
		k := Kind(r)
		n.Faults[k]++
		all[k]++
		if n.First.IsZero() || r.Time.Before(n.First) {
			n.First = r.Time
		}
		if r.Time.After(n.Last) {
			n.Last = r.Time
		}
	}
	return nil
}

// nodeState is what a node version says of the node.
type nodeState struct {
	Metadata struct {
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Status struct {
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

// readNodes reads every node's versions up to last: its pool and zone
// (from its labels) and the minutes of [first, last] it spent NotReady
// after it had been seen Ready.
func readNodes(ctx context.Context, s Store, first, last time.Time) (map[string]*Node, error) {
	vs, err := s.Versions(ctx, timeline.VersionQuery{Resource: "nodes", History: true, Until: last.Add(time.Nanosecond)})
	if err != nil {
		return nil, fmt.Errorf("node versions: %w", err)
	}
	nodes := map[string]*Node{}
	ready := map[string]bool{}      // as last seen
	since := map[string]time.Time{} // NotReady since, after Ready
	slices.SortStableFunc(vs, func(a, b timeline.ObjectVersion) int { return a.Time.Compare(b.Time) })
	for _, v := range vs {
		name := v.Object.Name
		n := nodes[name]
		if n == nil {
			n = &Node{Name: name, Faults: map[string]int{}}
			nodes[name] = n
		}
		var st nodeState
		if json.Unmarshal(v.Content, &st) != nil {
			continue
		}
		n.Pool = identity.NodePool(st.Metadata.Labels)
		n.Zone = st.Metadata.Labels["topology.kubernetes.io/zone"]
		isReady, known := readyOf(st)
		if !known {
			continue // a version that says nothing of Ready (a partial write) changes nothing
		}
		switch {
		case isReady && !since[name].IsZero():
			n.NotReadyMinutes += overlap(since[name], v.Time, first, last).Minutes()
			since[name] = time.Time{}
		case !isReady && ready[name] && since[name].IsZero():
			since[name] = v.Time
		}
		if isReady {
			ready[name] = true
		}
	}
	for name, t := range since {
		if !t.IsZero() {
			nodes[name].NotReadyMinutes += overlap(t, last, first, last).Minutes()
		}
	}
	return nodes, nil
}

// readyOf says whether a node's Ready condition is True, and whether the
// version has one at all.
func readyOf(st nodeState) (ready, known bool) {
	for _, c := range st.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True", true
		}
	}
	return false, false
}

// overlap is how much of [a, b) lies within [first, last].
func overlap(a, b, first, last time.Time) time.Duration {
	if a.Before(first) {
		a = first
	}
	if b.After(last) {
		b = last
	}
	return max(b.Sub(a), 0)
}

// pools sums the nodes into their pools, the most faults per node-hour
// first.
func pools(nodes map[string]*Node, span time.Duration) []Pool {
	byPool := map[string]*Pool{}
	for _, n := range nodes {
		p := byPool[n.Pool]
		if p == nil {
			p = &Pool{Pool: n.Pool, Faults: map[string]int{}}
			byPool[n.Pool] = p
		}
		p.Nodes++
		p.NodeHours += span.Hours()
		p.NotReadyMinutes += n.NotReadyMinutes
		for k, c := range n.Faults {
			p.Faults[k] += c
		}
		if n.total() > 0 || n.NotReadyMinutes > 0 {
			p.Affected++
		}
	}
	out := make([]Pool, 0, len(byPool))
	for _, p := range byPool {
		t := 0
		for _, c := range p.Faults {
			t += c
		}
		if p.NodeHours > 0 {
			p.PerNodeHour = float64(t) / p.NodeHours
		}
		p.NodeHours = round3(p.NodeHours)
		p.PerNodeHour = round3(p.PerNodeHour)
		p.NotReadyMinutes = round3(p.NotReadyMinutes)
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b Pool) int {
		return cmp.Or(cmp.Compare(b.PerNodeHour, a.PerNodeHour), cmp.Compare(b.NotReadyMinutes, a.NotReadyMinutes), cmp.Compare(a.Pool, b.Pool))
	})
	return out
}

// worst are the top nodes that logged a fault or were NotReady, the most
// faults first.
func worst(nodes map[string]*Node, top int) []Node {
	var out []Node
	for _, n := range nodes {
		if n.total() > 0 || n.NotReadyMinutes > 0 {
			c := *n
			c.NotReadyMinutes = round3(c.NotReadyMinutes)
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Node) int {
		return cmp.Or(cmp.Compare(b.total(), a.total()), cmp.Compare(b.NotReadyMinutes, a.NotReadyMinutes), cmp.Compare(a.Name, b.Name))
	})
	return out[:min(len(out), top)]
}

func round3(x float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 3, 64), 64)
	return f
}
