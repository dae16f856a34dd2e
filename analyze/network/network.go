// Package network measures network pressure per node and per pool: the
// conntrack table against its limit, the packets dropped and segments
// retransmitted, and the links that flapped, from node_exporter's series
// (faultline ingest metrics) and from what the nodes' own logs reported
// (conntrack table full, links down and up: faultline ingest nodelogs). A
// series is a node's by its node, nodename or instance label (an instance
// matched to a node's name or address); a node's pool is the one its
// labels name (identity.NodePool). Metrics that were not ingested are
// listed as missing, never guessed. It never prints and never imports an
// ingester.
package network

import (
	"context"
	"io"
	"iter"
	"log/slog"
	"time"

	"github.com/faultline/faultline/analyze/prom"
	"github.com/faultline/faultline/timeline"
)

// The node_exporter metrics read: the conntrack gauges, the counters of
// drops, errors and retransmits (summed over a node's devices), and the
// carrier changes (per device).
const (
	ConntrackEntries = "node_nf_conntrack_entries"
	ConntrackLimit   = "node_nf_conntrack_entries_limit"
	CarrierChanges   = "node_network_carrier_changes_total"
	RetransSegs      = "node_netstat_Tcp_RetransSegs"
	OutSegs          = "node_netstat_Tcp_OutSegs"
)

// Counters are the counters of trouble read per node, summed over its
// devices; each is reported by its name when it rose.
var Counters = []string{
	"node_nf_conntrack_stat_drop", "node_nf_conntrack_stat_early_drop", "node_nf_conntrack_stat_insert_failed",
	"node_netstat_TcpExt_ListenDrops", "node_netstat_TcpExt_ListenOverflows", RetransSegs,
	"node_netstat_Udp_InErrors", "node_netstat_Udp_RcvbufErrors",
	"node_network_receive_drop_total", "node_network_transmit_drop_total",
	"node_network_receive_errs_total", "node_network_transmit_errs_total",
}

// Metrics are every metric read.
var Metrics = append([]string{ConntrackEntries, ConntrackLimit, CarrierChanges, OutSegs}, Counters...)

// Selector selects the series read, and more, from a Prometheus.
const Selector = `{__name__=~"node_nf_conntrack_.*|node_netstat_.*|node_network_.*"}`

// NodeLabels are the series labels that name a node, the first set wins.
var NodeLabels = []string{"node", "nodename", "instance"}

// Defaults.
const (
	DefaultNearLimit = 0.9  // conntrack at this share of its limit is near it
	retransmitWorry  = 0.01 // a retransmitted share of segments worth a finding
)

// Store is the roles the analysis reads: series, node-log records and
// node versions.
type Store interface {
	prom.Reader
	Records(ctx context.Context, q timeline.Query) iter.Seq2[*timeline.Record, error]
	Versions(ctx context.Context, q timeline.VersionQuery) ([]timeline.ObjectVersion, error)
}

// Options bound the window (zero: all the evidence) and say when
// conntrack is near its limit (0: DefaultNearLimit).
type Options struct {
	Since, Until time.Time
	NearLimit    float64
	Logger       *slog.Logger
}

// Report is network pressure over a window.
type Report struct {
	Window Window `json:"window"`
	// Pools are the pools of the nodes with evidence, the most pressed
	// nodes first.
	Pools []Pool `json:"pools"`
	// Nodes are the nodes with evidence, those with the most findings
	// first.
	Nodes []Node `json:"nodes"`
	// Missing are the metrics with no series in the window.
	Missing       []string `json:"missing"`
	CounterResets int      `json:"counterResets"`
}

// Window is the span analysed.
type Window struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Node is one node's network pressure.
type Node struct {
	Name string `json:"name"`
	Pool string `json:"pool,omitempty"`
	Zone string `json:"zone,omitempty"`
	// Conntrack is its table's fill (null without the gauges).
	Conntrack *Conntrack `json:"conntrack"`
	// ConntrackFull counts its log's "nf_conntrack: table full" lines.
	ConntrackFull int `json:"conntrackFull"`
	// Counters are the window's increase of each of Counters that rose.
	Counters map[string]int64 `json:"counters"`
	// RetransmitShare is retransmitted over sent TCP segments.
	RetransmitShare *float64 `json:"retransmitShare"`
	Links           []Link   `json:"links"`
	// Findings say what is wrong, the worst first.
	Findings []string `json:"findings"`
}

// Conntrack is a node's conntrack table at its fullest.
type Conntrack struct {
	PeakEntries int64     `json:"peakEntries"`
	Limit       int64     `json:"limit"`     // 0: unknown
	PeakUsage   *float64  `json:"peakUsage"` // entries over limit
	PeakAt      time.Time `json:"peakAt"`
}

// Link is one device's flaps: carrier changes from the metrics, downs and
// ups from the log.
type Link struct {
	Device         string `json:"device"`
	CarrierChanges int64  `json:"carrierChanges"`
	Down           int    `json:"down"`
	Up             int    `json:"up"`
	// Flaps is the larger of the downs the log told and half the
	// carrier changes (a flap is a change down and one up).
	Flaps int64 `json:"flaps"`
}

// Pool sums its nodes.
type Pool struct {
	Pool            string           `json:"pool"` // "" for nodes of no known pool
	Nodes           int              `json:"nodes"`
	Pressed         int              `json:"pressedNodes"` // with a finding
	PeakConntrack   *float64         `json:"peakConntrackUsage"`
	ConntrackFull   int              `json:"conntrackFull"`
	Flaps           int64            `json:"linkFlaps"`
	Counters        map[string]int64 `json:"counters"`
	RetransmitShare *float64         `json:"retransmitShare"`
}

// Run reads the window's node series, node-log records and node versions,
// and measures each node and pool.
func Run(ctx context.Context, s Store, opt Options) (*Report, error) {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opt.NearLimit <= 0 {
		opt.NearLimit = DefaultNearLimit
	}
	fleet, err := readNodes(ctx, s, opt.Until)
	if err != nil {
		return nil, err
	}
	ev, err := loadSeries(ctx, s, opt, fleet)
	if err != nil {
		return nil, err
	}
	if err := readLogs(ctx, s, opt, fleet, ev); err != nil {
		return nil, err
	}
	if ev.empty() {
		return nil, &prom.NoSeriesError{What: "network pressure", Selector: Selector,
			Metrics: []string{ConntrackEntries, CarrierChanges, RetransSegs, "node_network_receive_drop_total"}}
	}
	ev.window(opt)
	rep := &Report{Window: Window{ev.start, ev.end}, Missing: ev.missing, CounterResets: ev.resets}
	rep.Nodes = measure(ev, fleet, opt.NearLimit)
	rep.Pools = pools(rep.Nodes, ev)
	return rep, nil
}
