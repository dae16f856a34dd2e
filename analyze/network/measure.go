package network

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/faultline/faultline/analyze/prom"
	"github.com/faultline/faultline/timeline"
)

// measure measures each node of the evidence, the most findings first.
func measure(ev *evidence, f *fleet, near float64) []Node {
	out := []Node{}
	for _, name := range slices.Sorted(maps.Keys(ev.nodes)) {
		e := ev.nodes[name]
		n := Node{Name: name, Pool: f.pool[name], Zone: f.zone[name], ConntrackFull: e.full, Counters: map[string]int64{}}
		n.Conntrack = conntrack(e, ev.start, ev.end)
		for m, c := range e.counters {
			if v := int64(math.Round(c.Over(ev.start, ev.end))); v > 0 {
				n.Counters[m] = v
			}
		}
		if !e.outSegs.Empty() && e.counters[RetransSegs] != nil {
			n.RetransmitShare = prom.Share(e.counters[RetransSegs].Over(ev.start, ev.end), e.outSegs.Over(ev.start, ev.end))
		}
		n.Links = links(e, ev.start, ev.end)
		n.Findings = findings(&n, near)
		out = append(out, n)
	}
	slices.SortStableFunc(out, func(a, b Node) int {
		return cmp.Or(cmp.Compare(len(b.Findings), len(a.Findings)), cmp.Compare(usage(b.Conntrack), usage(a.Conntrack)), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// usage is a table's peak usage, -1 when unknown.
func usage(c *Conntrack) float64 {
	if c == nil || c.PeakUsage == nil {
		return -1
	}
	return *c.PeakUsage
}

// conntrack is the node's table at its fullest in [start, end]: the
// entries against the limit last scraped at or before them (or the first
// one after, when none was before); nil without entries.
func conntrack(e *nodeEvidence, start, end time.Time) *Conntrack {
	sortSamples(e.entries)
	sortSamples(e.limits)
	var c *Conntrack
	peak := math.Inf(-1) // the best usage yet, unrounded; -Inf: none known
	for _, s := range e.entries {
		if s.Time.Before(start) || s.Time.After(end) || math.IsNaN(s.Value) {
			continue
		}
		limit := limitAt(e.limits, s.Time)
		u := math.Inf(-1)
		if limit > 0 {
			u = s.Value / limit
		}
		better := c == nil || u > peak || (math.IsInf(peak, -1) && math.IsInf(u, -1) && s.Value > float64(c.PeakEntries))
		if better {
			c, peak = &Conntrack{PeakEntries: int64(s.Value), Limit: int64(limit), PeakAt: s.Time}, u
			if !math.IsInf(u, -1) {
				c.PeakUsage = f64(prom.Round(u, 4))
			}
		}
	}
	return c
}

func f64(v float64) *float64 { return &v }

// limitAt is the limit last scraped at or before t, else the first after;
// 0 when there is none.
func limitAt(limits []timeline.Sample, t time.Time) float64 {
	if len(limits) == 0 {
		return 0
	}
	i := sort.Search(len(limits), func(i int) bool { return limits[i].Time.After(t) })
	if i > 0 {
		i--
	}
	return limits[i].Value
}

// links are the node's devices that changed carrier or went down or up,
// by device.
func links(e *nodeEvidence, start, end time.Time) []Link {
	devs := map[string]*Link{}
	get := func(d string) *Link {
		if devs[d] == nil {
			devs[d] = &Link{Device: d}
		}
		return devs[d]
	}
	for d, c := range e.carrier {
		if v := int64(math.Round(c.Over(start, end))); v > 0 {
			get(d).CarrierChanges = v
		}
	}
	for d, n := range e.down {
		get(d).Down = n
	}
	for d, n := range e.up {
		get(d).Up = n
	}
	out := []Link{}
	for _, d := range slices.Sorted(maps.Keys(devs)) {
		l := *devs[d]
		l.Flaps = max(int64(l.Down), (l.CarrierChanges+1)/2)
		out = append(out, l)
	}
	return out
}

// findings say what is wrong with a node, the worst first.
func findings(n *Node, near float64) []string {
	out := []string{}
	if c := n.Conntrack; c != nil && c.PeakUsage != nil && *c.PeakUsage >= near {
		out = append(out, fmt.Sprintf("conntrack at %.0f%% of its limit (%d of %d entries) at %s",
			*c.PeakUsage*100, c.PeakEntries, c.Limit, c.PeakAt.UTC().Format(time.RFC3339)))
	}
	if n.ConntrackFull > 0 {
		out = append(out, fmt.Sprintf("conntrack table full %d times in its log: new connections dropped", n.ConntrackFull))
	}
	if d := n.Counters["node_nf_conntrack_stat_drop"] + n.Counters["node_nf_conntrack_stat_early_drop"] +
		n.Counters["node_nf_conntrack_stat_insert_failed"]; d > 0 {
		out = append(out, fmt.Sprintf("conntrack dropped or failed to insert %d packets (insert_failed: %d, the UDP race that delays DNS by 5 s)",
			d, n.Counters["node_nf_conntrack_stat_insert_failed"]))
	}
	for _, l := range n.Links {
		if l.Flaps > 0 {
			out = append(out, fmt.Sprintf("link %s flapped %d times (%d carrier changes; %d down, %d up in its log)",
				dev(l.Device), l.Flaps, l.CarrierChanges, l.Down, l.Up))
		}
	}
	if r := n.RetransmitShare; r != nil && *r >= retransmitWorry {
		out = append(out, fmt.Sprintf("%.1f%% of TCP segments retransmitted", *r*100))
	}
	for _, m := range []string{"node_netstat_TcpExt_ListenDrops", "node_netstat_TcpExt_ListenOverflows",
		"node_netstat_Udp_RcvbufErrors", "node_network_receive_drop_total", "node_network_transmit_drop_total",
		"node_network_receive_errs_total", "node_network_transmit_errs_total"} {
		if v := n.Counters[m]; v > 0 {
			out = append(out, fmt.Sprintf("%s rose by %d", m, v))
		}
	}
	return out
}

func dev(d string) string {
	if d == "" {
		return "(device not named)"
	}
	return d
}

// pools sums the nodes into their pools, the most pressed nodes first.
func pools(nodes []Node, ev *evidence) []Pool {
	by := map[string]*Pool{}
	segs := map[string][2]float64{} // retransmitted and sent, by pool
	for _, n := range nodes {
		p := by[n.Pool]
		if p == nil {
			p = &Pool{Pool: n.Pool, Counters: map[string]int64{}}
			by[n.Pool] = p
		}
		p.Nodes++
		if len(n.Findings) > 0 {
			p.Pressed++
		}
		if u := usage(n.Conntrack); u >= 0 && (p.PeakConntrack == nil || u > *p.PeakConntrack) {
			p.PeakConntrack = f64(u)
		}
		p.ConntrackFull += n.ConntrackFull
		for _, l := range n.Links {
			p.Flaps += l.Flaps
		}
		for m, v := range n.Counters {
			p.Counters[m] += v
		}
		e := ev.nodes[n.Name]
		if !e.outSegs.Empty() && e.counters[RetransSegs] != nil {
			s := segs[n.Pool]
			segs[n.Pool] = [2]float64{s[0] + e.counters[RetransSegs].Over(ev.start, ev.end), s[1] + e.outSegs.Over(ev.start, ev.end)}
		}
	}
	out := make([]Pool, 0, len(by))
	for _, p := range by {
		p.RetransmitShare = prom.Share(segs[p.Pool][0], segs[p.Pool][1])
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b Pool) int {
		return cmp.Or(cmp.Compare(b.Pressed, a.Pressed), cmp.Compare(b.ConntrackFull, a.ConntrackFull), cmp.Compare(a.Pool, b.Pool))
	})
	return out
}
