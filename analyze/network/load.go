package network

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/prom"
	"github.com/faultline/faultline/timeline"
)

// fleet is what the nodes' versions say: each node's pool and zone, and
// the node an address or host name is.
type fleet struct {
	pool, zone map[string]string // by node name
	byAddr     map[string]string // address or host name -> node name
}

// nodeVersion is what a node version says of the node.
type nodeVersion struct {
	Metadata struct {
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Status struct {
		Addresses []struct {
			Address string `json:"address"`
		} `json:"addresses"`
	} `json:"status"`
}

// versionReader is the store role the nodes are read through.
type versionReader interface {
	Versions(ctx context.Context, q timeline.VersionQuery) ([]timeline.ObjectVersion, error)
}

// Nodes are the nodes the versions tell of, for naming the node of a
// series as Run does (the alerts of analyze/alerts read them).
type Nodes struct{ f *fleet }

// ReadNodes reads each node's versions up to until (zero: all).
func ReadNodes(ctx context.Context, s versionReader, until time.Time) (*Nodes, error) {
	f, err := readNodes(ctx, s, until)
	if err != nil {
		return nil, err
	}
	return &Nodes{f}, nil
}

// NodeOf names a series' node as Run does: the value of its first
// NodeLabels label set (an instance's host matched to a node by name or
// address), and that label; "" when no label names one.
func (n *Nodes) NodeOf(ls timeline.Labels) (node, label string) {
	for _, l := range NodeLabels {
		if ls.Get(l) != "" {
			return n.f.nodeOf(ls), l
		}
	}
	return "", ""
}

// readNodes reads each node's versions up to until (zero: all), the
// latest telling its pool, zone and addresses.
func readNodes(ctx context.Context, s versionReader, until time.Time) (*fleet, error) {
	q := timeline.VersionQuery{Resource: "nodes", History: true}
	if !until.IsZero() {
		q.Until = until.Add(time.Nanosecond)
	}
	vs, err := s.Versions(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("node versions: %w", err)
	}
	slices.SortStableFunc(vs, func(a, b timeline.ObjectVersion) int { return a.Time.Compare(b.Time) })
	f := &fleet{pool: map[string]string{}, zone: map[string]string{}, byAddr: map[string]string{}}
	for _, v := range vs {
		var nv nodeVersion
		if json.Unmarshal(v.Content, &nv) != nil {
			continue
		}
		name := v.Object.Name
		f.pool[name] = identity.NodePool(nv.Metadata.Labels)
		f.zone[name] = nv.Metadata.Labels["topology.kubernetes.io/zone"]
		for _, a := range nv.Status.Addresses {
			f.byAddr[a.Address] = name
		}
	}
	return f, nil
}

// nodeOf names a series' node: its first NodeLabels label set, an
// instance's host without its port, matched to a node by name or by
// address. "" when no label names one.
func (f *fleet) nodeOf(ls timeline.Labels) string {
	for _, l := range NodeLabels {
		v := ls.Get(l)
		if v == "" {
			continue
		}
		if host, _, err := net.SplitHostPort(v); err == nil {
			v = host
		}
		if _, ok := f.pool[v]; ok {
			return v
		}
		if n, ok := f.byAddr[v]; ok {
			return n
		}
		return v
	}
	return ""
}

// evidence is the window's evidence, by node.
type evidence struct {
	start, end  time.Time
	first, last time.Time // of the evidence read
	missing     []string
	resets      int
	nodes       map[string]*nodeEvidence
}

// nodeEvidence is one node's.
type nodeEvidence struct {
	entries, limits []timeline.Sample
	counters        map[string]*prom.Counter
	carrier         map[string]*prom.Counter // by device
	outSegs         prom.Counter
	full            int
	down, up        map[string]int // by device ("" when the log did not say)
}

func (ev *evidence) node(name string) *nodeEvidence {
	n := ev.nodes[name]
	if n == nil {
		n = &nodeEvidence{counters: map[string]*prom.Counter{}, carrier: map[string]*prom.Counter{},
			down: map[string]int{}, up: map[string]int{}}
		ev.nodes[name] = n
	}
	return n
}

func (ev *evidence) empty() bool { return len(ev.nodes) == 0 }

// seen widens the span of the evidence read to t.
func (ev *evidence) seen(t time.Time) {
	if ev.first.IsZero() || t.Before(ev.first) {
		ev.first = t
	}
	if t.After(ev.last) {
		ev.last = t
	}
}

// window is the one asked for, or the evidence's span.
func (ev *evidence) window(opt Options) {
	ev.start, ev.end = ev.first, ev.last
	if !opt.Since.IsZero() {
		ev.start = opt.Since
	}
	if !opt.Until.IsZero() {
		ev.end = opt.Until
	}
}

// loadSeries reads every metric's series (from prom.Lookback before the window
// to prom.Lookback after it, so its first and last intervals count) into their
// nodes; a series that names no node is passed over, and logged.
func loadSeries(ctx context.Context, s Store, opt Options, f *fleet) (*evidence, error) {
	from, to := prom.Around(opt.Since, opt.Until)
	ev := &evidence{nodes: map[string]*nodeEvidence{}}
	for _, m := range Metrics {
		set, err := prom.Load(ctx, s, m, from, to)
		if err != nil {
			return nil, err
		}
		if len(set) == 0 {
			ev.missing = append(ev.missing, m)
		}
		for _, l := range set {
			name := f.nodeOf(l.Series.Labels)
			if name == "" {
				opt.Logger.Warn("series names no node (no node, nodename or instance label): passed over", "series", l.Series.String())
				continue
			}
			ev.add(ev.node(name), l, opt)
		}
	}
	return ev, nil
}

// add keeps a series' samples on its node.
func (ev *evidence) add(n *nodeEvidence, l prom.Loaded, opt Options) {
	for _, sm := range l.Samples {
		if in(sm.Time, opt) {
			ev.seen(sm.Time)
		}
	}
	counter := func(c *prom.Counter) {
		before := c.Resets
		c.Add(l.Samples)
		ev.resets += c.Resets - before
	}
	switch m := l.Series.Metric; m {
	case ConntrackEntries:
		n.entries = append(n.entries, l.Samples...)
	case ConntrackLimit:
		n.limits = append(n.limits, l.Samples...)
	case CarrierChanges:
		dev := l.Series.Labels.Get("device")
		if n.carrier[dev] == nil {
			n.carrier[dev] = &prom.Counter{}
		}
		counter(n.carrier[dev])
	case OutSegs:
		counter(&n.outSegs)
	default:
		if n.counters[m] == nil {
			n.counters[m] = &prom.Counter{}
		}
		counter(n.counters[m])
	}
}

// in says whether t lies in the window asked for (a bound not given
// holds everything).
func in(t time.Time, opt Options) bool {
	return (opt.Since.IsZero() || !t.Before(opt.Since)) && (opt.Until.IsZero() || t.Before(opt.Until))
}

// logReasons are the node-log records read.
const logReasons = `source == "node" && reason in ["` + timeline.NodeConntrackFull + `", "` +
	timeline.NodeLinkDown + `", "` + timeline.NodeLinkUp + `"]`

// readLogs counts the window's conntrack-full lines and links down and
// up on their nodes (a link's device from the record's iface).
func readLogs(ctx context.Context, s Store, opt Options, f *fleet, ev *evidence) error {
	where, err := timeline.CompileFilter(logReasons)
	if err != nil {
		return fmt.Errorf("node-log filter: %w", err) // a constant: a bug
	}
	for r, err := range s.Records(ctx, timeline.Query{Since: opt.Since, Until: opt.Until, Where: where}) {
		if err != nil {
			return fmt.Errorf("node logs: %w", err)
		}
		n := ev.node(r.Object.Name)
		ev.seen(r.Time)
		switch r.Reason {
		case timeline.NodeConntrackFull:
			n.full++
		case timeline.NodeLinkDown:
			n.down[iface(r)]++
		case timeline.NodeLinkUp:
			n.up[iface(r)]++
		}
	}
	return nil
}

// iface is the device a link record names ("" when none).
func iface(r *timeline.Record) string {
	var x struct {
		Iface string `json:"iface"`
	}
	if len(r.Extra) > 0 && json.Unmarshal(r.Extra, &x) == nil {
		return x.Iface
	}
	return ""
}

// sortSamples orders samples by time (several series of one gauge on a
// node, merged).
func sortSamples(s []timeline.Sample) {
	slices.SortStableFunc(s, func(a, b timeline.Sample) int { return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.Series, b.Series)) })
}
