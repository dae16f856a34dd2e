package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/analyze/cardinality"
	"github.com/faultline/faultline/internal/termsafe"
	"github.com/faultline/faultline/timeline"
)

type cardinalityOptions struct {
	at, vs     string
	metric     string
	top        int
	lookback   time.Duration
	tsdbStatus string
	output     string
}

func newCardinalityCmd(f *Factory) *cobra.Command {
	opts := &cardinalityOptions{}
	cmd := &cobra.Command{
		Use:   "cardinality",
		Short: "Which metrics, labels and targets make the series, what churned, and which label to drop",
		Long: `Measure the telemetry's own cardinality, from the series ingested with
"faultline ingest metrics" or from a saved /api/v1/status/tsdb answer:

  METRICS   series per metric, and for each of its labels the distinct values,
            the multiplier (its series over its series without the label) and
            the series the metric would lose without it
  LABELS    per label name over every metric: values, series carrying it, and
            the series all metrics together would lose without it
  PAIRS     the label=value pairs carried by the most series
  CHURN     with --vs: the series present at one instant and not the other,
            per metric, and the labels whose values came and went
  TARGETS   series per scrape target (job, instance); with --vs, those that
            grew most first
  FIX       for the label whose removal saves most series (job, instance, le
            and quantile are never offered): a metric_relabel_configs labeldrop
            and "sum without" recording rules, as YAML to paste, with the
            series each saves and what each costs

A series is present at an instant when it has a sample in the lookback
before it (--lookback, 5m as Prometheus's query.lookback-delta). Without
--at, every series held counts, whenever its samples. --at and --vs take
RFC 3339, a duration back from the end of the series data (1h), or end.

A tsdb status is one instant and lists only its top entries: no churn, no
multipliers, and a fix without the series it would save. -o json is the
whole report (docs/metrics.md, "Cardinality").`,
		Example: `  faultline ingest metrics query_range.json
  faultline cardinality
  faultline cardinality --at end --vs 1h
  faultline cardinality --at 2026-05-01T11:00:00Z --vs 2026-05-01T10:00:00Z --metric apiserver_request_total
  curl -s http://prometheus:9090/api/v1/status/tsdb > tsdb.json && faultline cardinality --tsdb-status tsdb.json
  faultline cardinality --at end --vs 1h -o json | jq -r '.worst.fixes[0].yaml'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cardinalityRun(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.at, "at", "", "the instant measured (RFC 3339, a duration back from the end of the series data, or end; default: every series held)")
	fl.StringVar(&opts.vs, "vs", "", "compare with this instant: churn and the targets that grew (--at defaults to end)")
	fl.StringVar(&opts.metric, "metric", "", "only this metric")
	fl.IntVar(&opts.top, "top", cardinality.DefaultTop, "entries of each list (-1: all)")
	fl.DurationVar(&opts.lookback, "lookback", cardinality.DefaultLookback, "a sample keeps its series present this long")
	fl.StringVar(&opts.tsdbStatus, "tsdb-status", "", "read a saved /api/v1/status/tsdb answer instead of the timeline")
	fl.StringVarP(&opts.output, "output", "o", "table", "output format: table, json or yaml")
	addNoHeaders(cmd, f)
	return cmd
}

func cardinalityRun(ctx context.Context, f *Factory, opts *cardinalityOptions) error {
	switch opts.output {
	case "table", "json", "yaml":
	default:
		return usagef("faultline cardinality -o json", "unknown output %q: want table, json or yaml", opts.output)
	}
	switch {
	case opts.top == 0 || opts.top < -1:
		return usagef("faultline cardinality --top 20", "invalid --top %d: want a count, or -1 for all", opts.top)
	case opts.lookback <= 0:
		return usagef("faultline cardinality --at end --lookback 5m", "invalid --lookback %s: want a positive duration", opts.lookback)
	case opts.tsdbStatus != "" && (opts.at != "" || opts.vs != ""):
		return usagef("faultline cardinality --tsdb-status tsdb.json",
			"--tsdb-status is one instant: --at and --vs need ingested series (faultline ingest metrics)")
	}
	o := cardinality.Options{Metric: opts.metric, Top: opts.top, Lookback: opts.lookback, Logger: f.Logger()}
	var rep *cardinality.Report
	var err error
	if opts.tsdbStatus != "" {
		rep, err = readTSDBStatus(opts.tsdbStatus, o)
	} else {
		rep, err = cardinalityFromTimeline(ctx, f, opts, o)
	}
	if err != nil {
		return err
	}
	if structured(opts.output) {
		return f.writeData(opts.output, rep)
	}
	return writeCardinality(f, rep)
}

func readTSDBStatus(path string, o cardinality.Options) (*cardinality.Report, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return cardinality.ReadTSDBStatus(fh, path, o)
}

func cardinalityFromTimeline(ctx context.Context, f *Factory, opts *cardinalityOptions, o cardinality.Options) (*cardinality.Report, error) {
	store, err := f.OpenStoreReadOnly(ctx)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	at := opts.at
	if at == "" && opts.vs != "" {
		at = "end"
	}
	if at != "" {
		end, err := seriesEnd(ctx, store)
		if err != nil {
			return nil, err
		}
		if o.At, err = cardinalityInstant("at", at, end); err != nil {
			return nil, err
		}
		if opts.vs != "" {
			if o.Vs, err = cardinalityInstant("vs", opts.vs, end); err != nil {
				return nil, err
			}
		}
	}
	return cardinality.Run(ctx, store, o)
}

// cardinalityInstant reads --at or --vs as parseInstant does, with this
// command's hint.
func cardinalityInstant(flag, s string, end time.Time) (time.Time, error) {
	t, err := parseInstant(flag, s, end)
	var ue *usageError
	if errors.As(err, &ue) {
		ue.hint = "faultline cardinality --at end --vs 1h"
	}
	return t, err
}

// runLister is the part of the store that lists the ingest runs.
type runLister interface {
	Runs(ctx context.Context) ([]timeline.IngestRun, error)
}

// seriesEnd is the end of the series data: the last sample time of the
// metrics runs.
func seriesEnd(ctx context.Context, store runLister) (time.Time, error) {
	runs, err := store.Runs(ctx)
	if err != nil {
		return time.Time{}, err
	}
	var end time.Time
	for _, r := range runs {
		if r.Source == timeline.SourceMetrics && r.Last.After(end) {
			end = r.Last
		}
	}
	if end.IsZero() {
		return end, cardinality.ErrNoSeries
	}
	return end, nil
}

// ---- the table ----

func writeCardinality(f *Factory, r *cardinality.Report) error {
	ew := &errWriter{w: f.IO.Out}
	writeCardinalityHead(ew, r)
	if r.Series == 0 && len(r.Metrics) == 0 {
		return ew.err
	}
	for _, section := range []func(*Factory, io.Writer, *cardinality.Report){writeCardMetrics, writeCardLabels, writeCardPairs, writeCardChurn, writeCardTargets} {
		section(f, f.IO.Out, r)
	}
	writeCardFix(ew, r.Worst)
	for _, n := range r.Notes {
		ew.printf("\nnote: %s\n", n)
	}
	return ew.err
}

func writeCardinalityHead(ew *errWriter, r *cardinality.Report) {
	what := "(every series held)"
	switch {
	case r.Source == "tsdb-status":
		what = "in the TSDB head at " + fmtTime(r.At, rfc3339Sec) + " (tsdb status)"
	case !r.At.IsZero():
		what = fmt.Sprintf("present at %s (a sample in the %s before)", fmtTime(r.At, rfc3339Sec), shortDuration(time.Duration(r.LookbackSeconds*float64(time.Second))))
	}
	of := ""
	if r.Metric != "" {
		of = " of " + r.Metric
	}
	ew.printf("SERIES%s: %s %s; %s %s, %s label %s\n", of, humanInt(int64(r.Series)), what,
		humanInt(int64(r.MetricCount)), plural(r.MetricCount, "metric"), humanInt(int64(r.LabelCount)), plural(r.LabelCount, "name"))
	if c := r.Churn; c != nil {
		ew.printf("  vs %s: %s then; %s appeared, %s disappeared, %s kept\n", fmtTime(r.Vs, rfc3339Sec), humanInt(int64(c.SeriesVs)),
			humanInt(int64(c.Appeared)), humanInt(int64(c.Disappeared)), humanInt(int64(c.Kept)))
	}
	if r.Series == 0 && len(r.Metrics) == 0 {
		ew.printf("No series present: try another --at, a longer --lookback, or no --at for every series held.\n")
	}
}

// dashZero is n, or "-" for 0 (not known).
func dashZero(n int) string {
	if n == 0 {
		return "-"
	}
	return humanInt(int64(n))
}

// shortDuration is 5m for 5m0s and 2h for 2h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// table starts a section: its title, a tabwriter and its header row.
func (f *Factory) table(w io.Writer, title, header string) *tabwriter.Writer {
	fmt.Fprintf(w, "\n%s\n", title)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	f.header(tw, header)
	return tw
}

func writeCardMetrics(f *Factory, w io.Writer, r *cardinality.Report) {
	if r.Source == "tsdb-status" {
		tw := f.table(w, "METRICS", "METRIC\tSERIES")
		for _, m := range r.Metrics {
			termsafe.Fprintf(tw, "%s\t%s\n", m.Name, humanInt(int64(m.Series)))
		}
		tw.Flush()
		return
	}
	tw := f.table(w, "METRICS", "METRIC\tSERIES\tTOP LABEL\tVALUES\tMULTIPLIER\tSAVES")
	for _, m := range r.Metrics {
		if len(m.Labels) == 0 {
			termsafe.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\n", m.Name, humanInt(int64(m.Series)))
			continue
		}
		l := m.Labels[0]
		termsafe.Fprintf(tw, "%s\t%s\t%s\t%d\t%.1fx\t%s\n", m.Name, humanInt(int64(m.Series)), l.Name, l.Values, l.Multiplier, humanInt(int64(l.Saves)))
	}
	tw.Flush()
}

func writeCardLabels(f *Factory, w io.Writer, r *cardinality.Report) {
	if r.Source == "tsdb-status" {
		tw := f.table(w, "LABELS", "LABEL\tVALUES\tMEMORY")
		for _, l := range r.Labels {
			mem := "-"
			if l.MemoryBytes > 0 {
				mem = humanBytes(l.MemoryBytes)
			}
			termsafe.Fprintf(tw, "%s\t%s\t%s\n", l.Name, dashZero(l.Values), mem)
		}
		tw.Flush()
		return
	}
	tw := f.table(w, "LABELS", "LABEL\tVALUES\tSERIES\tMETRICS\tSAVES")
	for _, l := range r.Labels {
		termsafe.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\n", l.Name, l.Values, humanInt(int64(l.Series)), l.Metrics, humanInt(int64(l.Saves)))
	}
	tw.Flush()
}

func writeCardPairs(f *Factory, w io.Writer, r *cardinality.Report) {
	tw := f.table(w, "PAIRS", "LABEL=VALUE\tSERIES")
	for _, p := range r.Pairs {
		termsafe.Fprintf(tw, "%s\t%s\n", p.Name+"="+p.Value, humanInt(int64(p.Series)))
	}
	tw.Flush()
}

func writeCardChurn(f *Factory, w io.Writer, r *cardinality.Report) {
	c := r.Churn
	if c == nil {
		return
	}
	tw := f.table(w, "CHURN BY METRIC", "METRIC\tSERIES\tVS\tAPPEARED\tDISAPPEARED")
	for _, m := range c.Metrics {
		termsafe.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Name, humanInt(int64(m.Series)), humanInt(int64(m.SeriesVs)), humanInt(int64(m.Appeared)), humanInt(int64(m.Disappeared)))
	}
	tw.Flush()
	tw = f.table(w, "CHURN BY LABEL", "LABEL\tNEW VALUES\tGONE VALUES\tAPPEARED\tDISAPPEARED\tNEW, E.G.")
	for _, l := range c.Labels {
		termsafe.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", l.Name, l.NewValues, l.GoneValues, humanInt(int64(l.Appeared)), humanInt(int64(l.Disappeared)), dash(strings.Join(l.Examples, ", ")))
	}
	tw.Flush()
}

func writeCardTargets(f *Factory, w io.Writer, r *cardinality.Report) {
	if r.Source == "tsdb-status" {
		return
	}
	if r.Churn == nil {
		tw := f.table(w, "TARGETS", "JOB\tINSTANCE\tSERIES")
		for _, t := range r.Targets {
			termsafe.Fprintf(tw, "%s\t%s\t%s\n", dash(t.Job), dash(t.Instance), humanInt(int64(t.Series)))
		}
		tw.Flush()
		return
	}
	tw := f.table(w, "TARGETS (grew most)", "JOB\tINSTANCE\tSERIES\tVS\tGROWTH")
	for _, t := range r.Targets {
		termsafe.Fprintf(tw, "%s\t%s\t%s\t%s\t%+d\n", dash(t.Job), dash(t.Instance), humanInt(int64(t.Series)), humanInt(int64(t.SeriesVs)), t.Growth)
	}
	tw.Flush()
}

func writeCardFix(ew *errWriter, w *cardinality.Worst) {
	if w == nil {
		return
	}
	if w.Saves > 0 {
		ew.printf("\nFIX  %s: without it, %s fewer series\n", w.Label, humanInt(int64(w.Saves)))
	} else {
		ew.printf("\nFIX  %s: the most values (how many series it multiplies is not in a tsdb status)\n", w.Label)
	}
	for _, fx := range w.Fixes {
		saves := "-"
		if fx.Saves > 0 {
			saves = humanInt(int64(fx.Saves))
		}
		ew.printf("\n%s (saves %s", fx.Kind, saves)
		if len(fx.Metrics) > 0 {
			ew.printf(", of %s", strings.Join(fx.Metrics, ", "))
		}
		ew.printf(")\n  tradeoff: %s\n", fx.Tradeoff)
		for _, line := range strings.Split(strings.TrimSuffix(fx.YAML, "\n"), "\n") {
			ew.printf("    %s\n", line)
		}
	}
}
