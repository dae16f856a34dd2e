package alerts

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/dns"
	"github.com/faultline/faultline/analyze/network"
)

// Floors of the metric signals: the least distance above the normal
// quantile that counts as abnormal, whatever the baseline.
const (
	dnsLatencyFloor = 0.01 // seconds: a lookup 10 ms slower than its normal p99
	shareFloor      = 0.01 // one point of a share (SERVFAIL, retransmitted segments)
	usageFloor      = 0.05 // five points of a table's fill
)

// dnsCandidates are candidates 7: CoreDNS's query rate (and the rate of
// the client behind the incident's DNS burst, where the series carry its
// view), its p99 latency and its SERVFAIL share; each only where its
// metric was ingested.
func (ev *Evidence) dnsCandidates(w time.Duration, perWindow float64) []candidate {
	fix := ev.dnsFix()
	mk := func(name, summary, severity, anchor string, floor float64, sig Signal) candidate {
		sig.Window = Duration(w)
		return candidate{floor: floor, def: Definition{Name: name, Summary: summary, Signal: sig, Severity: severity,
			Owner: owner("platform"), Mitigation: fix, Runbook: RunbookBase + anchor}}
	}
	var out []candidate
	if ev.has(dns.Requests) {
		out = append(out, mk("CoreDNSRequestRate", "CoreDNS queries per second", "page", "dns-request-rate", perWindow,
			Signal{Kind: KindMetricRate, Series: &Selector{Metric: dns.Requests}, PromQL: DNSRequestRatePromQL(nil, w)}))
		if client := ev.dnsStormClient(); client != "" {
			slice := map[string]string{dns.DefaultBy: client}
			c := mk("CoreDNSView"+pascal(client)+"RequestRate", "CoreDNS queries per second from view "+client, "page",
				"dns-request-rate", perWindow, Signal{Kind: KindMetricRate, Series: &Selector{Metric: dns.Requests}, PromQL: DNSRequestRatePromQL(slice, w)})
			c.def.Slice, c.def.Owner = slice, owner(teamOfView(client))
			out = append(out, c)
		}
	}
	if ev.has(dns.Latency) {
		out = append(out, mk("CoreDNSLatencyP99", "CoreDNS p99 request duration in seconds", "ticket", "dns-latency", dnsLatencyFloor,
			Signal{Kind: KindMetricQuantile, Quantile: 0.99, Series: &Selector{Metric: dns.Latency}, PromQL: DNSLatencyPromQL(0.99, nil, w)}))
	}
	if ev.has(dns.Responses) {
		out = append(out, mk("CoreDNSServfailShare", "share of CoreDNS responses that are SERVFAIL", "page", "dns-servfail", shareFloor,
			Signal{Kind: KindMetricRatio, Series: &Selector{Metric: dns.Responses, Match: map[string]string{"rcode": "SERVFAIL"}},
				Per: &Selector{Metric: dns.Responses}, PromQL: DNSServfailSharePromQL(nil, w)}))
	}
	return out
}

// dnsBurst is the heaviest DNS burst that overlaps the incident (from the
// last good to its end); nil if none does.
func (ev *Evidence) dnsBurst() *dns.Burst {
	if ev.DNS == nil {
		return nil
	}
	for i := range ev.DNS.Bursts {
		b := &ev.DNS.Bursts[i]
		if !b.Start.After(ev.IncidentEnd) && !b.End.Before(ev.LastGood) {
			return b
		}
	}
	return nil
}

// dnsStormClient is the client (view) of the incident's DNS burst; ""
// when the series name none.
func (ev *Evidence) dnsStormClient() string {
	if b := ev.dnsBurst(); b != nil {
		return b.Client
	}
	return ""
}

// teamOfView is the team a client view names, as a request class's team
// is its service account's namespace: kube-system's is the platform's.
func teamOfView(v string) string {
	if v == "" || v == "kube-system" {
		return "platform"
	}
	return v
}

// dnsFix is the mitigation of the DNS alerts: the fix of analyze/dns that
// takes the most queries off CoreDNS in the incident's burst (else over the
// whole evidence), with its evidence and its trade-off; all three where
// the evidence cannot rank them.
func (ev *Evidence) dnsFix() string {
	var fixes []dns.Fix
	if b := ev.dnsBurst(); b != nil {
		fixes = b.Fixes
	} else if ev.DNS != nil {
		fixes = ev.DNS.Fixes
	}
	if len(fixes) == 0 || fixes[0].RemovesShare == nil { // the evidence cannot rank them
		return "take queries off CoreDNS: NodeLocal DNSCache, a lower ndots in the pods' dnsConfig, or CoreDNS autopath " +
			"(faultline dns measures which removes most; docs/pressure.md gives each one's trade-off)"
	}
	fx := fixes[0]
	removes := ""
	if fx.RemovesShare != nil {
		removes = fmt.Sprintf(", removes %s%.0f%% of the queries, simulated peak %s/s", fx.UpTo(), *fx.RemovesShare*100, num(fx.SimulatedPeakRps))
	}
	var others []string
	for _, o := range fixes[1:] {
		others = append(others, o.Kind)
	}
	return fmt.Sprintf("%s (%s fix: %s%s). Trade-off: %s. Other fixes: %s (faultline dns)",
		fx.Detail, fx.Kind, fx.Evidence, removes, fx.Tradeoff, strings.Join(others, ", "))
}

// Mitigations of the network alerts, each with its trade-off.
const (
	conntrackFix = "raise net.netfilter.nf_conntrack_max (and nf_conntrack_buckets) on the nodes (trade-off: kernel memory, " +
		"about 300 bytes an entry); or shorten nf_conntrack_tcp_timeout_established and the UDP timeouts (trade-off: idle " +
		"long-lived connections are forgotten and reset); or spread the connections over more nodes (anti-affinity, " +
		"topology spread; trade-off: more nodes or less packing). DNS over UDP fills it first: NodeLocal DNSCache skips conntrack"
	retransmitFix = "find the lossy path (faultline network: the nodes and devices with drops and errors), then drain the node " +
		"or move the flows off the congested link or peer and spread the load (trade-off: capacity while it is out)"
	linkFlapFix = "cordon the node whose link flaps and have its NIC, cable or switch port repaired (trade-off: its work " +
		"moves to the pool's other nodes; a gang job on it restarts)"
)

// nodeScope is where a network candidate watches: a pool, or a node that
// has none; and the metrics with series there.
type nodeScope struct {
	pool, node   string
	label, value string // a node's: the series label that names it, and its value
	metrics      map[string]bool
}

func (sc *nodeScope) slice() map[string]string {
	if sc.pool != "" {
		return map[string]string{"pool": sc.pool}
	}
	return map[string]string{"node": sc.node}
}

func (sc *nodeScope) name() string {
	if sc.pool != "" {
		return "Pool" + pascal(sc.pool)
	}
	return "Node" + pascal(sc.node)
}

func (sc *nodeScope) where() string {
	if sc.pool != "" {
		return "nodes of pool " + sc.pool
	}
	return "node " + sc.node
}

// counter is the PromQL of a node_exporter counter's rate in the scope.
func (ev *Evidence) counter(sc *nodeScope, metric string, w time.Duration) string {
	if sc.pool != "" {
		return NodeCounterPromQL(metric)(ev.poolLabel(), sc.pool, w)
	}
	return NodeSeriesCounterPromQL(metric, sc.label, sc.value, w)
}

// networkMetrics are the metrics of the network candidates.
var networkMetrics = []string{network.ConntrackEntries, network.ConntrackLimit, conntrackDrop,
	network.RetransSegs, network.OutSegs, network.CarrierChanges}

// nodeScopes are the pools (and the nodes of no pool) with series of the
// network metrics, pools first, each in name order.
func (ev *Evidence) nodeScopes() []*nodeScope {
	by := map[string]*nodeScope{}
	for _, m := range networkMetrics {
		for _, l := range ev.series[m] {
			node, label := ev.nodes.NodeOf(l.Series.Labels)
			if node == "" {
				continue
			}
			key, sc := "pool/"+ev.pools[node], &nodeScope{pool: ev.pools[node]}
			if sc.pool == "" {
				key, sc = "node/"+node, &nodeScope{node: node, label: label, value: l.Series.Labels.Get(label)}
			}
			if by[key] == nil {
				sc.metrics = map[string]bool{}
				by[key] = sc
			}
			by[key].metrics[m] = true
		}
	}
	out := slices.Collect(maps.Values(by))
	slices.SortFunc(out, func(a, b *nodeScope) int {
		return cmp.Or(cmp.Compare(boolRank(a.pool == ""), boolRank(b.pool == "")), cmp.Compare(a.pool, b.pool), cmp.Compare(a.node, b.node))
	})
	return out
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// networkCandidates are candidates 8: for each pool (or node of no pool)
// with node_exporter's series, its conntrack table's fill against its
// limit, conntrack's drops, TCP retransmits (a share of the segments
// sent, where those are ingested) and link flaps; each only where its
// metrics were ingested.
func (ev *Evidence) networkCandidates(w time.Duration, perWindow float64) []candidate {
	var out []candidate
	for _, sc := range ev.nodeScopes() {
		mk := func(kind, summary, severity, anchor, fix string, floor float64, sig Signal) {
			sig.Window = Duration(w)
			out = append(out, candidate{floor: floor, def: Definition{Name: sc.name() + kind,
				Summary: summary + " on " + sc.where(), Signal: sig, Slice: sc.slice(), Severity: severity,
				Owner: owner("platform"), Mitigation: fix, Runbook: RunbookBase + anchor}})
		}
		m := sc.metrics
		if m[network.ConntrackEntries] && m[network.ConntrackLimit] {
			q := ConntrackUsagePromQL(ev.poolLabel(), sc.pool)
			if sc.pool == "" {
				q = NodeConntrackUsagePromQL(sc.label, sc.value)
			}
			mk("ConntrackUsage", "the fullest conntrack table (entries over the limit)", "page", "conntrack-usage", conntrackFix, usageFloor,
				Signal{Kind: KindMetricUsage, Series: &Selector{Metric: network.ConntrackEntries}, Per: &Selector{Metric: network.ConntrackLimit}, PromQL: q})
		}
		if m[conntrackDrop] {
			mk("ConntrackDrops", "packets conntrack dropped per second", "page", "conntrack-drops", conntrackFix, perWindow,
				Signal{Kind: KindMetricRate, Series: &Selector{Metric: conntrackDrop}, PromQL: ev.counter(sc, conntrackDrop, w)})
		}
		switch {
		case m[network.RetransSegs] && m[network.OutSegs]:
			mk("TCPRetransmits", "share of TCP segments retransmitted", "ticket", "tcp-retransmits", retransmitFix, shareFloor,
				Signal{Kind: KindMetricRatio, Series: &Selector{Metric: network.RetransSegs}, Per: &Selector{Metric: network.OutSegs},
					PromQL: ev.counter(sc, network.RetransSegs, w) + " / " + ev.counter(sc, network.OutSegs, w)})
		case m[network.RetransSegs]:
			mk("TCPRetransmits", "TCP segments retransmitted per second", "ticket", "tcp-retransmits", retransmitFix, perWindow,
				Signal{Kind: KindMetricRate, Series: &Selector{Metric: network.RetransSegs}, PromQL: ev.counter(sc, network.RetransSegs, w)})
		}
		if m[network.CarrierChanges] {
			mk("LinkFlaps", "link carrier changes per second (a flap is two)", "page", "link-flaps", linkFlapFix, perWindow,
				Signal{Kind: KindMetricRate, Series: &Selector{Metric: network.CarrierChanges}, PromQL: ev.counter(sc, network.CarrierChanges, w)})
		}
	}
	return out
}

// preferMetric adds the metric candidates, each in place of a candidate
// of records of the same name (a pool's conntrack drops counted in its
// nodes' logs): the exported rule reads the metric, so its normal range
// is learned from the metric.
func preferMetric(out, metric []candidate) []candidate {
	names := map[string]bool{}
	for _, c := range metric {
		names[c.def.Name] = true
	}
	kept := out[:0]
	for _, c := range out {
		if !names[c.def.Name] {
			kept = append(kept, c)
		}
	}
	return append(kept, metric...)
}
