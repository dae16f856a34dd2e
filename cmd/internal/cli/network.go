package cli

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/analyze/network"
	"github.com/faultline/faultline/internal/termsafe"
)

type networkOptions struct {
	since, until string
	near         float64
	output       string
	top          int
	sinceData    bool
}

func newNetworkCmd(f *Factory) *cobra.Command {
	opts := &networkOptions{}
	cmd := &cobra.Command{
		Use:   "network",
		Short: "Network pressure per node and pool: conntrack against its limit, drops, retransmits, link flaps",
		Long: `Measure network pressure per node and per pool from node_exporter's series
(faultline ingest metrics) and from the nodes' own logs (faultline ingest
nodelogs):

  conntrack  node_nf_conntrack_entries against node_nf_conntrack_entries_limit
             at its fullest (--near: the share that counts as near the limit),
             the log's "nf_conntrack: table full" lines, and conntrack's drops
             and failed inserts (insert_failed: the UDP race behind 5 s DNS
             delays)
  drops      listen drops and overflows, UDP buffer errors, receive and
             transmit drops and errors: the increase of each counter that rose
  retrans    TCP segments retransmitted over segments sent
  links      per device: carrier changes (node_network_carrier_changes_total)
             and the log's links down and up; a flap is a change down and up

A series is a node's by its node, nodename or instance label (an instance's
host matched to a node's name or address from the nodes' versions); a
node's pool is the one its labels name. Counters become increases between
scrapes, resets handled. A metric not ingested is listed as missing and
never guessed. -o json is the whole report.`,
		Example: `  faultline ingest metrics --prometheus http://127.0.0.1:9090 \
      --query '` + network.Selector + `' --since 2h --step 15s
  faultline ingest nodelogs /var/log/collected/
  faultline network
  faultline network --since 1h --near 0.8 -o json | jq '.nodes[0].findings'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return networkRun(cmd, f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.since, "since", "", "from this instant (RFC 3339, or a duration back from now: 2h, 1d)")
	fl.StringVar(&opts.until, "until", "", "before this instant")
	fl.Float64Var(&opts.near, "near", network.DefaultNearLimit, "conntrack at this share of its limit is a finding")
	fl.IntVar(&opts.top, "top", 15, "nodes to list in the table (0: all)")
	fl.StringVarP(&opts.output, "output", "o", "table", "output format: table, json or yaml")
	addSinceData(fl, &opts.sinceData)
	addNoHeaders(cmd, f)
	return cmd
}

func networkRun(cmd *cobra.Command, f *Factory, opts *networkOptions) error {
	switch opts.output {
	case "table", "json", "yaml":
	default:
		return usagef("faultline network -o json", "unknown output %q: want table, json or yaml", opts.output)
	}
	if opts.near <= 0 || opts.near > 1 {
		return usagef("faultline network --near 0.8", "--near %g: want a share of the limit in (0, 1]", opts.near)
	}
	ctx := cmd.Context()
	store, err := f.OpenStoreReadOnly(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	o := network.Options{NearLimit: opts.near, Logger: f.Logger()}
	win := windowFlags{since: opts.since, until: opts.until, fromData: opts.sinceData}
	if o.Since, o.Until, err = win.resolve(ctx, f, store); err != nil {
		return err
	}
	rep, err := network.Run(ctx, store, o)
	if err != nil {
		return err
	}
	if structured(opts.output) {
		return f.writeData(opts.output, rep)
	}
	return writeNetwork(f, rep, opts.top)
}

func writeNetwork(f *Factory, r *network.Report, top int) error {
	ew := &errWriter{w: f.IO.Out}
	ew.printf("Window %s .. %s: %d nodes with evidence\n", fmtTime(r.Window.Start, rfc3339Milli), fmtTime(r.Window.End, rfc3339Milli), len(r.Nodes))
	if len(r.Missing) > 0 {
		ew.printf("Not ingested: %s\n", strings.Join(r.Missing, ", "))
	}
	if r.CounterResets > 0 {
		ew.printf("Counter resets: %d (a node_exporter restarted; counted from zero)\n", r.CounterResets)
	}
	ew.printf("\n")
	if ew.err != nil {
		return ew.err
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 8, 2, ' ', 0)
	f.header(tw, "POOL\tNODES\tPRESSED\tCONNTRACK PEAK\tTABLE FULL\tLINK FLAPS\tRETRANS\tDROPS")
	for _, p := range r.Pools {
		termsafe.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d\t%s\t%s\n", dash(p.Pool), p.Nodes, p.Pressed, pct(p.PeakConntrack), p.ConntrackFull,
			p.Flaps, pct(p.RetransmitShare), counterList(p.Counters))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(f.IO.Out)
	tw = tabwriter.NewWriter(f.IO.Out, 0, 8, 2, ' ', 0)
	f.header(tw, "NODE\tPOOL\tCONNTRACK\tTABLE FULL\tLINK FLAPS\tRETRANS\tFINDINGS")
	for i, n := range r.Nodes {
		if top > 0 && i == top {
			break
		}
		termsafe.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", n.Name, dash(n.Pool), conntrackText(n.Conntrack), n.ConntrackFull,
			flapsOf(n.Links), pct(n.RetransmitShare), findingList(n.Findings))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if top > 0 && len(r.Nodes) > top {
		fmt.Fprintf(f.IO.Out, "  ... %d more nodes (--top 0, or -o json)\n", len(r.Nodes)-top)
	}
	return nil
}

func conntrackText(c *network.Conntrack) string {
	switch {
	case c == nil:
		return "-"
	case c.PeakUsage == nil:
		return humanInt(c.PeakEntries) + " (no limit)"
	}
	return fmt.Sprintf("%s (%s of %s)", pct(c.PeakUsage), humanInt(c.PeakEntries), humanInt(c.Limit))
}

func flapsOf(ls []network.Link) int64 {
	var n int64
	for _, l := range ls {
		n += l.Flaps
	}
	return n
}

func findingList(fs []string) string {
	if len(fs) == 0 {
		return "-"
	}
	return strings.Join(fs, "; ")
}

// counterList is "node_network_receive_drop_total 2,400, ...", by name.
func counterList(m map[string]int64) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, strings.TrimPrefix(k, "node_")+" "+humanInt(m[k]))
	}
	return strings.Join(parts, ", ")
}
