package cli

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/analyze/controlplane"
	"github.com/faultline/faultline/internal/termsafe"
)

type controlplaneOptions struct {
	since, until string
	where        string
	sortBy       string
	output       string
	top          int
	jitter       time.Duration
	sinceData    bool
}

func newControlplaneCmd(f *Factory) *cobra.Command {
	opts := &controlplaneOptions{}
	cmd := &cobra.Command{
		Use:   "controlplane",
		Short: "Who is hammering the apiserver, with what, since when, and what would calm it",
		Long: `Analyse apiserver load from the audit log (and pod versions):

  classes     verb x resource x scope (cluster, namespace, object) x client
              (user agent) x user, node and service-account names folded
              (system:node:*, system:serviceaccount:NS:*): count, rate, peak
              1-second rate, latency p50/p99/max, codes
  clients     LISTs served from etcd (no resourceVersion, or a limit without
              continue), unpaged cluster-scope LISTs, watch opens per minute,
              429s: the clients whose reads cost most
  slo         classes whose p99 breaks the Kubernetes API latency SLOs (1 s
              mutating and single-object reads, 5 s namespace LISTs, 30 s
              cluster LISTs)
  bursts      classes whose rate jumps an order of magnitude within seconds
              over their own last five minutes, ranked by their load on the
              apiserver and etcd (a request or WATCH opening counts 1, a LIST
              read from etcd 10 more; bursts shed together, from the first
              client's: those after it met a full priority level), the
              clients behind them, the amplification (requests per pod
              started), the fan-out, and fixes simulated on the recorded
              requests: a jittered start (--jitter), reads from the watch
              cache or an informer, scoped reads, a dedicated APF priority
              level
  shed        clients rejected (429) with no burst of their own: a priority
              level too small for them, or another's load in theirs
  slow        seconds in which the requests to etcd (writes, LISTs read from
              etcd) of 2 or more steady clients took over 250 ms, an order of
              magnitude above their share of the five minutes before, and
              where they waited: etcd, the apiserver itself, or the APF queues
  pod start   creation -> running p50/p99 against the SLO (p99 <= 5 s), and
              scheduler binds per second
  cardinality distinct users and user agents, and whether they keep growing

--where filters classes with CEL over verb, group, resource, subresource,
scope, client, user, count, etcdLists, peakRps, p50Ms, p99Ms and codes
(codes["429"] > 0). -o json is a stable contract (docs/controlplane.md).`,
		Example: `  faultline controlplane
  faultline controlplane --since 2026-05-01T10:00:00Z --until 2026-05-01T10:30:00Z
  faultline controlplane --where 'verb == "list" && scope == "cluster"' --sort etcd
  faultline controlplane --where 'codes["429"] > 0' -o json | jq '.bursts[0].fixes'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return controlplaneRun(cmd, f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.since, "since", "", "from this instant (RFC 3339, or a duration back from now: 2h, 1d)")
	fl.StringVar(&opts.until, "until", "", "before this instant")
	fl.StringVar(&opts.where, "where", "", "CEL over class fields: which classes to keep")
	fl.StringVar(&opts.sortBy, "sort", "count", "order classes by count, peak, p99 or etcd")
	fl.IntVar(&opts.top, "top", 15, "classes and clients to list in the table (0: all)")
	fl.DurationVar(&opts.jitter, "jitter", time.Minute, "the window a jittered start would spread a burst over")
	fl.StringVarP(&opts.output, "output", "o", "table", "output format: table, json or yaml")
	addSinceData(fl, &opts.sinceData)
	addNoHeaders(cmd, f)
	return cmd
}

func controlplaneRun(cmd *cobra.Command, f *Factory, opts *controlplaneOptions) error {
	switch opts.output {
	case "table", "json", "yaml":
	default:
		return usagef("faultline controlplane -o json", "unknown output %q: want table, json or yaml", opts.output)
	}
	switch opts.sortBy {
	case "count", "peak", "p99", "etcd":
	default:
		return usagef("faultline controlplane --sort peak", "unknown --sort %q: want count, peak, p99 or etcd", opts.sortBy)
	}
	ctx := cmd.Context()
	store, err := f.OpenStoreReadOnly(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	o := controlplane.Options{Jitter: opts.jitter}
	win := windowFlags{since: opts.since, until: opts.until, fromData: opts.sinceData}
	if o.Since, o.Until, err = win.resolve(ctx, f, store); err != nil {
		return err
	}
	if opts.where != "" {
		if o.Where, err = controlplane.CompileWhere(opts.where); err != nil {
			return err
		}
	}
	rep, err := controlplane.Analyze(ctx, store, o)
	if err != nil {
		return err
	}
	sortClasses(rep.Classes, opts.sortBy)
	if structured(opts.output) {
		return f.writeData(opts.output, rep)
	}
	return writeControlplane(f, rep, opts.top)
}

func sortClasses(cs []controlplane.Class, by string) {
	key := func(c *controlplane.Class) float64 {
		switch by {
		case "peak":
			return c.PeakRps
		case "p99":
			return c.P99Ms
		case "etcd":
			return float64(c.EtcdLists)
		}
		return float64(c.Count)
	}
	sort.SliceStable(cs, func(i, j int) bool { return key(&cs[i]) > key(&cs[j]) })
}

func writeControlplane(f *Factory, r *controlplane.Report, top int) error {
	w := f.IO.Out
	ew := &errWriter{w: w}
	ew.printf("Window %s .. %s: %s requests in %d classes\n", fmtTime(r.Window.Start, rfc3339Milli), fmtTime(r.Window.End, rfc3339Milli), humanInt(r.Requests), len(r.Classes))
	if len(r.Classes) == 0 {
		ew.printf("No audited API requests in the window.\n")
		return ew.err
	}
	writeBursts(ew, r.Bursts, 5)
	writeShed(ew, r.Shed, 5)
	writeSlow(ew, r.Slow, 5)
	ew.printf("\nCLASSES\n")
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	f.header(tw, "VERB\tRESOURCE\tSCOPE\tCLIENT\tUSER\tCOUNT\tPEAK/S\tP50\tP99\tMAX\tCODES\tETCD LISTS")
	for i, c := range r.Classes {
		if top > 0 && i == top {
			break
		}
		res := c.Resource
		if c.Subresource != "" {
			res += "/" + c.Subresource
		}
		termsafe.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%d\n", c.Verb, res, c.Scope, dash(c.Client), c.User,
			humanInt(c.Count), c.PeakRps, ms(c.P50Ms), ms(c.P99Ms), ms(c.MaxMs), codeList(c.Codes), c.EtcdLists)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if top > 0 && len(r.Classes) > top {
		ew.printf("  ... %d more classes (--top 0, or -o json)\n", len(r.Classes)-top)
	}
	ew.printf("\nCLIENTS (by LISTs served from etcd)\n")
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	f.header(tw, "CLIENT\tUSER\tREQUESTS\tETCD LISTS\tUNPAGED CLUSTER LISTS\tWATCHES/MIN\t429s")
	for i, c := range r.Clients {
		if top > 0 && i == top {
			break
		}
		termsafe.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%.2f\t%d\n", dash(c.Client), c.User, humanInt(c.Requests), c.EtcdLists, c.UnpagedLists, c.WatchesPerMin, c.Throttled)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.SLO) > 0 {
		ew.printf("\nSLO BREACHES (p99)\n")
		for _, s := range r.SLO {
			ew.printf("  %s: p99 %s > %s (%s)\n", s.Class, ms(s.P99Ms), ms(s.SLOMs), s.Kind)
		}
	}
	if p := r.PodStartup; p != nil {
		met := "met"
		if !p.SLOMet {
			met = "BROKEN"
		}
		ew.printf("\nPOD START-UP  %d pods: creation -> running p50 %s, p99 %s (SLO p99 <= 5s: %s); scheduled p99 %s\n",
			p.Pods, ms(p.P50Ms), ms(p.P99Ms), met, ms(p.SchedP99Ms))
		for i, o := range p.PerOwner {
			if i == 5 {
				break
			}
			ew.printf("  %s: %d pods, p50 %s, p99 %s\n", o.Owner, o.Pods, ms(o.P50Ms), ms(o.P99Ms))
		}
	}
	if s := r.Scheduler; s != nil {
		ew.printf("SCHEDULER  %s binds: peak %.0f/s at %s, %.1f/s over %.0f active seconds\n", humanInt(s.Binds), s.PeakPerSec, fmtTime(s.PeakAt, rfc3339Milli), s.MeanPerSec, s.ActiveSpanS)
	}
	c := r.Cardinality
	ew.printf("CARDINALITY  %d users, %d user agents, %d classes; %d users first seen in the second half\n", c.Users, c.UserAgents, c.Classes, c.UsersLast)
	if c.Warning != "" {
		ew.printf("  warning: %s\n", c.Warning)
	}
	return ew.err
}

func ms(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v < 1:
		return fmt.Sprintf("%.2fms", v)
	case v < 1000:
		return fmt.Sprintf("%.0fms", v)
	}
	return fmt.Sprintf("%.1fs", v/1000)
}

func codeList(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s:%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

// writeShed lists the first n clients shed with no burst of their own.
func writeShed(ew *errWriter, shed []controlplane.Shed, n int) {
	if len(shed) == 0 {
		return
	}
	ew.printf("\nSHED (429s with no burst of their own: a level too small for them, or another's load in it)\n")
	for i := range firstOf(ew, len(shed), n, "faultline controlplane -o json") {
		sh := shed[i]
		ew.printf("%d. %s [%s]: %s of %s requests shed; peak %.0f/s, %.2f/s over the window\n",
			i+1, dash(sh.Client), sh.User, humanInt(sh.Throttled), humanInt(sh.Requests), sh.PeakRps, sh.Rate)
	}
}

// firstOf yields the indexes of the first n of total items (all when n is
// 0), then says how many more there are, and where they all are.
func firstOf(ew *errWriter, total, n int, where string) func(func(int) bool) {
	return func(yield func(int) bool) {
		for i := range total {
			if n > 0 && i == n {
				ew.printf("  ... %d more (%s)\n", total-n, where)
				return
			}
			if !yield(i) {
				return
			}
		}
	}
}

// writeSlow lists the first n episodes of slow requests to etcd from several
// clients at once, and where they waited.
func writeSlow(ew *errWriter, slow []controlplane.Slow, n int) {
	if len(slow) == 0 {
		return
	}
	ew.printf("\nSLOW (seconds of requests to etcd over 250ms from 2 or more steady clients, an order of magnitude over the five minutes before: the server's doing, not theirs)\n")
	for i := range firstOf(ew, len(slow), n, "faultline controlplane -o json") {
		sl := slow[i]
		ew.printf("%d. %s .. %s  %s\n", i+1, fmtTime(sl.Start, rfc3339Milli), fmtTime(sl.End, rfc3339Milli), sl)
		ew.printf("   %s requests to etcd (writes, lists from etcd) over 250ms (%.0f%% of the steady clients') from %d steady clients, the slowest %s; APF queue wait at most %s\n",
			humanInt(sl.Requests), 100*sl.Share, sl.Clients, ms(sl.MaxMs), ms(sl.QueueWaitMaxMs))
		ew.printf("   %s reads from the watch cache in those minutes, %s over 250ms less their APF queue wait\n", humanInt(sl.CacheReads), humanInt(sl.CacheSlow))
		switch {
		case len(sl.Bursts) > 0:
			ew.printf("   bursts then: %s\n", strings.Join(sl.Bursts, "; "))
		case sl.Where == "etcd":
			ew.printf("   no burst ran: look below the apiserver (etcd's disk: its fsync and commit latency; a defragmentation, a compaction)\n")
		default:
			ew.printf("   no burst ran\n")
		}
		for _, c := range sl.Classes {
			ew.printf("   slow: %s\n", c)
		}
	}
}

func writeBursts(ew *errWriter, bursts []controlplane.Burst, n int) {
	if len(bursts) == 0 {
		return
	}
	ew.printf("\nBURSTS (by load on apiserver and etcd; those shed together from the first)\n")
	for i := range firstOf(ew, len(bursts), n, "faultline controlplane -o json") {
		b := bursts[i]
		ew.printf("%d. %s .. %s  %s\n   %s\n   %.0f/s peak vs %.2f/s before; %s requests from %d clients; %.1f requests per %s started\n   %s\n",
			i+1, fmtTime(b.Start, rfc3339Milli), fmtTime(b.End, rfc3339Milli), b.Class.Key(), b.Load, b.PeakRps, b.BaselineRps, humanInt(b.Requests), b.Clients,
			b.Amplification, dash(b.AmplifiedBy), b.FanOut)
		if b.ShedAfter > 0 {
			ew.printf("   shed after #%d began: it met a full priority level (ranked after #%d, whatever its load)\n", b.ShedAfter, b.ShedAfter)
		}
		for _, fx := range b.Fixes {
			ew.printf("   fix %-11s -> peak %.1f/s  %s\n                   tradeoff: %s\n", fx.Kind, fx.SimulatedPeakRps, fx.Detail, fx.Tradeoff)
		}
	}
}
