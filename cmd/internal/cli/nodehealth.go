package cli

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/analyze/nodehealth"
	"github.com/faultline/faultline/internal/termsafe"
)

type nodehealthOptions struct {
	since, until string
	output       string
	top          int
	sinceData    bool
}

func newNodehealthCmd(f *Factory) *cobra.Command {
	opts := &nodehealthOptions{}
	cmd := &cobra.Command{
		Use:   "nodehealth",
		Short: "Error budgets of the nodes by pool: GPU Xid, ECC, OOM kills, evictions, link flaps, NotReady minutes",
		Long: `Count what the nodes' own logs reported (faultline ingest nodelogs: NVIDIA Xid
errors by code, ECC and row remapping, NVLink, OOM kills, kubelet evictions and
PLEG stalls, conntrack table full, links down) and the minutes each node spent
NotReady after it had been seen Ready (from the nodes' versions), per node and
per pool, over the window:

  POOLS   faults per node-hour, NotReady minutes, how many nodes are affected:
          a pool that fails more often than its peers stands out
  NODES   the nodes that spend the budget, the most faults first

Faults are the node-log records "faultline timeline --where 'source ==
\"node\"'" lists with type Warning (a link coming up, a corrected ECC error
are not faults). -o json is the whole report.`,
		Example: `  faultline ingest nodelogs /var/log/collected/
  faultline nodehealth
  faultline nodehealth --since 2h -o json | jq '.pools[0]'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return nodehealthRun(cmd, f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.since, "since", "", "from this instant (RFC 3339, or a duration back from now: 2h, 1d)")
	fl.StringVar(&opts.until, "until", "", "before this instant")
	fl.IntVar(&opts.top, "top", 10, "nodes to list")
	fl.StringVarP(&opts.output, "output", "o", "table", "output format: table, json or yaml")
	addSinceData(fl, &opts.sinceData)
	addNoHeaders(cmd, f)
	return cmd
}

func nodehealthRun(cmd *cobra.Command, f *Factory, opts *nodehealthOptions) error {
	switch opts.output {
	case "table", "json", "yaml":
	default:
		return usagef("faultline nodehealth -o json", "unknown output %q: want table, json or yaml", opts.output)
	}
	ctx := cmd.Context()
	store, err := f.OpenStoreReadOnly(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	o := nodehealth.Options{TopNodes: opts.top}
	win := windowFlags{since: opts.since, until: opts.until, fromData: opts.sinceData}
	if o.Since, o.Until, err = win.resolve(ctx, f, store); err != nil {
		return err
	}
	rep, err := nodehealth.Run(ctx, store, o)
	if err != nil {
		return err
	}
	if structured(opts.output) {
		return f.writeData(opts.output, rep)
	}
	return writeNodehealth(f, rep)
}

func writeNodehealth(f *Factory, rep *nodehealth.Report) error {
	if len(rep.Faults) == 0 && !slices.ContainsFunc(rep.Pools, func(p nodehealth.Pool) bool { return p.NotReadyMinutes > 0 }) {
		termsafe.Fprintf(f.IO.Out, "No node fault and no NotReady time from %s to %s (node logs: faultline ingest nodelogs).\n",
			rep.Window.Start.UTC().Format(rfc3339Milli), rep.Window.End.UTC().Format(rfc3339Milli))
		return nil
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 8, 2, ' ', 0)
	f.header(tw, "POOL\tNODES\tAFFECTED\tFAULTS/NODE-H\tNOTREADY-MIN\tFAULTS")
	for _, p := range rep.Pools {
		termsafe.Fprintf(tw, "%s\t%d\t%d\t%.3f\t%.1f\t%s\n", dash(p.Pool), p.Nodes, p.Affected, p.PerNodeHour, p.NotReadyMinutes, faultList(p.Faults))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(f.IO.Out)
	tw = tabwriter.NewWriter(f.IO.Out, 0, 8, 2, ' ', 0)
	f.header(tw, "NODE\tPOOL\tZONE\tNOTREADY-MIN\tFIRST\tFAULTS")
	for _, n := range rep.Nodes {
		first := "-"
		if !n.First.IsZero() {
			first = n.First.UTC().Format(rfc3339Milli)
		}
		termsafe.Fprintf(tw, "%s\t%s\t%s\t%.1f\t%s\t%s\n", n.Name, dash(n.Pool), dash(n.Zone), n.NotReadyMinutes, first, faultList(n.Faults))
	}
	return tw.Flush()
}

// faultList is "Xid 79 x2, OOMKill x1", the most first.
func faultList(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s x%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
