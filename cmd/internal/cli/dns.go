package cli

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/analyze/dns"
	"github.com/faultline/faultline/internal/termsafe"
)

type dnsOptions struct {
	since, until string
	by           string
	step         time.Duration
	output       string
	top          int
	sinceData    bool
}

func newDNSCmd(f *Factory) *cobra.Command {
	opts := &dnsOptions{}
	cmd := &cobra.Command{
		Use:   "dns",
		Short: "DNS pressure from CoreDNS metrics: query rate, p99, SERVFAIL/NXDOMAIN, cache hits, storms and their fixes",
		Long: `Measure DNS pressure from the CoreDNS series ingested with faultline ingest
metrics (` + strings.Join(dns.Metrics, ", ") + `):

  summary   queries and queries a second, the busiest second, latency p99
            (histogram_quantile over the request duration buckets), the
            SERVFAIL and NXDOMAIN shares of the responses, the cache hit ratio
  rate      the same, step by step over the window (--step)
  clients   the same by client, where a label names it: CoreDNS's view (the
            view plugin), or the label --by names (not the namespace label a
            scrape config adds: that is CoreDNS's own)
  bursts    a client's query rate jumping an order of magnitude over its own
            last five minutes (the rule of controlplane's request bursts),
            the query types in it, and the fixes
  fixes     NodeLocal DNSCache, a lower ndots, CoreDNS autopath: each with the
            share of the queries it would take off CoreDNS, computed from the
            evidence (the NXDOMAIN share: the search-path tries; the cache
            hit ratio, "up to": the cluster's repeats, of which a node's
            cache answers only its own node's), and its trade-off; measured
            shares rank before bounds

Counters become rates between scrapes, a restarted CoreDNS's reset
handled; a burst is placed to the scrape interval, no finer. A metric not
ingested is listed as missing and what it measures is "-" (null in JSON).
-o json is the whole report.`,
		Example: `  faultline ingest metrics --prometheus http://127.0.0.1:9090 \
      --query '` + dns.Selector + `' --since 2h --step 15s
  faultline dns
  faultline dns --since 2026-05-01T10:00:00Z --until 2026-05-01T10:30:00Z --step 30s
  faultline dns --by client_namespace -o json | jq '.bursts[0].fixes'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return dnsRun(cmd, f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.since, "since", "", "from this instant (RFC 3339, or a duration back from now: 2h, 1d)")
	fl.StringVar(&opts.until, "until", "", "before this instant")
	fl.StringVar(&opts.by, "by", dns.DefaultBy, "the series label that names a query's client")
	fl.DurationVar(&opts.step, "step", 0, "the step of the rate over time (default: the window over 60, at least 1m)")
	fl.IntVar(&opts.top, "top", 10, "clients, bursts and steps to list in the table (0: all)")
	fl.StringVarP(&opts.output, "output", "o", "table", "output format: table, json or yaml")
	addSinceData(fl, &opts.sinceData)
	addNoHeaders(cmd, f)
	return cmd
}

func dnsRun(cmd *cobra.Command, f *Factory, opts *dnsOptions) error {
	switch opts.output {
	case "table", "json", "yaml":
	default:
		return usagef("faultline dns -o json", "unknown output %q: want table, json or yaml", opts.output)
	}
	if opts.step < 0 {
		return usagef("faultline dns --step 30s", "--step %s: want a positive duration", opts.step)
	}
	ctx := cmd.Context()
	store, err := f.OpenStoreReadOnly(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	o := dns.Options{By: opts.by, Step: opts.step, Logger: f.Logger()}
	win := windowFlags{since: opts.since, until: opts.until, fromData: opts.sinceData}
	if o.Since, o.Until, err = win.resolve(ctx, f, store); err != nil {
		return err
	}
	rep, err := dns.Run(ctx, store, o)
	if err != nil {
		return err
	}
	if structured(opts.output) {
		return f.writeData(opts.output, rep)
	}
	return writeDNS(f, rep, opts.top)
}

func writeDNS(f *Factory, r *dns.Report, top int) error {
	ew := &errWriter{w: f.IO.Out}
	s := r.Summary
	ew.printf("Window %s .. %s: %s queries, %.2f/s, peak %.0f/s at %s\n", fmtTime(r.Window.Start, rfc3339Milli), fmtTime(r.Window.End, rfc3339Milli),
		humanInt(s.Requests), s.Rps, r.PeakRps, fmtTime(r.PeakAt, rfc3339Milli))
	ew.printf("p99 %s; SERVFAIL %s, NXDOMAIN %s; cache hits %s; types %s\n", msPtr(s.P99Ms), pct(s.ServfailShare), pct(s.NxdomainShare), pct(s.CacheHitRatio), typeList(r.Types))
	if len(r.Missing) > 0 {
		ew.printf("Not ingested: %s (what they measure is \"-\")\n", strings.Join(r.Missing, ", "))
	}
	if r.CounterResets > 0 {
		ew.printf("Counter resets: %d (a CoreDNS restarted; counted from zero)\n", r.CounterResets)
	}
	if ew.err != nil {
		return ew.err
	}
	if err := writeDNSRate(f, r, top); err != nil {
		return err
	}
	if err := writeDNSClients(f, r, top); err != nil {
		return err
	}
	writeDNSBursts(ew, r.Bursts, top)
	ew.printf("\nFIXES (the whole window)\n")
	writeDNSFixes(ew, r.Fixes)
	return ew.err
}

// writeDNSRate prints the rate step by step, the busiest steps when
// there are more than top.
func writeDNSRate(f *Factory, r *dns.Report, top int) error {
	pts := r.Over
	title := fmt.Sprintf("\nRATE (step %s)\n", time.Duration(r.StepSeconds*float64(time.Second)))
	if top > 0 && len(pts) > top {
		pts = slices.Clone(pts)
		slices.SortStableFunc(pts, func(a, b dns.Point) int { return cmp.Compare(b.Requests, a.Requests) })
		pts = pts[:top]
		slices.SortFunc(pts, func(a, b dns.Point) int { return a.Time.Compare(b.Time) })
		title = fmt.Sprintf("\nRATE (step %s; the %d busiest of %d steps, --top 0 for all)\n", time.Duration(r.StepSeconds*float64(time.Second)), top, len(r.Over))
	}
	fmt.Fprint(f.IO.Out, title)
	tw := tabwriter.NewWriter(f.IO.Out, 0, 8, 2, ' ', 0)
	f.header(tw, "TIME\tQUERIES\tQUERIES/S\tP99\tSERVFAIL\tNXDOMAIN\tCACHE HITS")
	for _, p := range pts {
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%s\t%s\t%s\t%s\n", fmtTime(p.Time, rfc3339Milli), humanInt(p.Requests), p.Rps,
			msPtr(p.P99Ms), pct(p.ServfailShare), pct(p.NxdomainShare), pct(p.CacheHitRatio))
	}
	return tw.Flush()
}

func writeDNSClients(f *Factory, r *dns.Report, top int) error {
	if !r.Labelled {
		termsafe.Fprintf(f.IO.Out, "\nCLIENTS  no series carries the label %q: name the client's label with --by\n", r.By)
		return nil
	}
	termsafe.Fprintf(f.IO.Out, "\nCLIENTS (by %s)\n", r.By)
	tw := tabwriter.NewWriter(f.IO.Out, 0, 8, 2, ' ', 0)
	f.header(tw, strings.ToUpper(termsafe.Field(r.By))+"\tQUERIES\tSHARE\tPEAK/S\tP99\tSERVFAIL\tNXDOMAIN")
	for i, c := range r.Clients {
		if top > 0 && i == top {
			break
		}
		termsafe.Fprintf(tw, "%s\t%s\t%.1f%%\t%.0f\t%s\t%s\t%s\n", dash(c.Value), humanInt(c.Requests), c.Share*100, c.PeakRps,
			msPtr(c.P99Ms), pct(c.ServfailShare), pct(c.NxdomainShare))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if top > 0 && len(r.Clients) > top {
		fmt.Fprintf(f.IO.Out, "  ... %d more clients (--top 0, or -o json)\n", len(r.Clients)-top)
	}
	return nil
}

func writeDNSBursts(ew *errWriter, bursts []dns.Burst, top int) {
	if len(bursts) == 0 {
		ew.printf("\nBURSTS  none: no client's rate jumped an order of magnitude over its last five minutes\n")
		return
	}
	ew.printf("\nBURSTS (the most queries first)\n")
	for i := range firstOf(ew, len(bursts), top, "faultline dns -o json") {
		b := bursts[i]
		who := "all queries (no client label)"
		if b.Client != "" {
			who = "client " + b.Client
		}
		ew.printf("%d. %s .. %s  %s\n   %.0f/s peak vs %.2f/s before; %s queries (%s); NXDOMAIN %s, SERVFAIL %s, p99 %s\n",
			i+1, fmtTime(b.Start, rfc3339Milli), fmtTime(b.End, rfc3339Milli), who, b.PeakRps, b.BaselineRps, humanInt(b.Requests),
			typeList(b.Types), pct(b.NxdomainShare), pct(b.ServfailShare), msPtr(b.P99Ms))
		writeDNSFixes(ew, b.Fixes)
	}
}

func writeDNSFixes(ew *errWriter, fixes []dns.Fix) {
	for _, fx := range fixes {
		removes, atLeast := "an unknown share", ""
		if fx.RemovesShare != nil {
			removes = fmt.Sprintf("%s%.1f%% (%s queries)", fx.UpTo(), *fx.RemovesShare*100, humanInt(fx.RemovesQueries))
		}
		if fx.UpperBound {
			atLeast = "at least "
		}
		ew.printf("   fix %-12s removes %s -> peak %s%.1f/s\n                    %s\n                    evidence: %s\n                    tradeoff: %s\n",
			fx.Kind, removes, atLeast, fx.SimulatedPeakRps, fx.Detail, fx.Evidence, fx.Tradeoff)
	}
}

// pct is a share as a percentage, "-" when unknown.
func pct(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", *p*100)
}

// msPtr is ms of a figure that may be unknown.
func msPtr(p *float64) string {
	if p == nil {
		return "-"
	}
	return ms(*p)
}

// typeList is "A 12,000, AAAA 12,000", the most first.
func typeList(m map[string]int64) string {
	if len(m) == 0 {
		return "-"
	}
	keys := slices.Sorted(maps.Keys(m))
	slices.SortStableFunc(keys, func(a, b string) int { return cmp.Compare(m[b], m[a]) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = dash(k) + " " + humanInt(m[k])
	}
	return strings.Join(parts, ", ")
}
