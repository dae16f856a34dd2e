package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/faultline/faultline/analyze/alerts"
	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/internal/termsafe"
)

func newAlertsCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "alerts",
		Short: "Alert definitions learned from the incident: suggest, backtest, export",
		Long: `Make recurrence visible early. From an investigated incident, propose alert
definitions for its signals (owner, slice, normal range learned from the
known-good window, persistence, severity, the exact mitigation, runbook),
prove on the evidence when each would have fired and how early, and write
them as Prometheus alerting rules.

The definition format is documented in docs/alerts.md and
docs/alerts.schema.json.`,
		Example: `  faultline replay thousand-workers --db tw.db
  faultline --db tw.db alerts suggest > alerts.yaml
  faultline --db tw.db alerts backtest alerts.yaml
  faultline alerts export alerts.yaml --format prometheus > rules.yaml && promtool check rules rules.yaml`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usagef("faultline alerts suggest", "alerts needs a subcommand: suggest, backtest or export")
		},
	}
	cmd.AddCommand(newAlertsSuggestCmd(f), newAlertsBacktestCmd(f), newAlertsExportCmd(f))
	return cmd
}

type alertsSuggestOptions struct {
	output           string
	interval, window time.Duration
	boundary         boundaryFlags
}

// boundaryFlags are the boundary an investigator gives alerts suggest and
// backtest instead of the investigation's: needed where the timeline holds
// metric series only (no records to find it in).
type boundaryFlags struct{ firstBad, lastGood string }

func (b *boundaryFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&b.firstBad, "first-bad", "", "the earliest known-bad instant (RFC 3339), instead of the investigation's; needed for a timeline of metric series only")
	fl.StringVar(&b.lastGood, "last-good", "", "the last known-good instant (RFC 3339; default: --first-bad): the known-good window ends there")
}

func (b *boundaryFlags) options() (alerts.LoadOptions, error) {
	var opt alerts.LoadOptions
	for _, f := range []struct {
		name, v string
		to      *time.Time
	}{{"first-bad", b.firstBad, &opt.FirstBad}, {"last-good", b.lastGood, &opt.LastGood}} {
		if f.v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, f.v)
		if err != nil {
			return opt, usagef("faultline alerts suggest --first-bad 2026-05-01T10:03:00Z", "invalid --%s %q: want RFC 3339 (2026-05-01T10:03:00Z)", f.name, f.v)
		}
		*f.to = t.UTC()
	}
	if opt.FirstBad.IsZero() && !opt.LastGood.IsZero() {
		return opt, usagef("faultline alerts suggest --first-bad 2026-05-01T10:03:00Z --last-good 2026-05-01T10:02:30Z", "--last-good needs --first-bad")
	}
	if opt.LastGood.After(opt.FirstBad) {
		return opt, usagef("faultline alerts suggest --first-bad 2026-05-01T10:03:00Z --last-good 2026-05-01T10:02:30Z",
			"--last-good (%s) is after --first-bad (%s)", b.lastGood, b.firstBad)
	}
	return opt, nil
}

func newAlertsSuggestCmd(f *Factory) *cobra.Command {
	opts := &alertsSuggestOptions{}
	cmd := &cobra.Command{
		Use:   "suggest",
		Short: "Propose alert definitions for the incident's signals, learned and backtested",
		Long: `Run the investigation and the control-plane analysis over the timeline, and
propose a definition for each signal of the incident:

  the slice's pod failures         pods of the bad slice entering a failure state
  the top burst's request class    its rate and p99 latency
  429s per request class           (APF priority levels are not in the audit evidence)
  pod start-up p99                 creation -> running
  nodes going NotReady, per pool
  node faults, per pool and kind   Xid, OOM kills, conntrack drops, links down (node logs)
  DNS pressure                     CoreDNS's query rate (and the storming client's view),
                                   p99 latency, SERVFAIL share (faultline ingest metrics)
  network pressure, per pool       conntrack fill against its limit, conntrack drops,
                                   TCP retransmits, link flaps (node_exporter series)

A DNS or network candidate is made only where its metric was ingested.
The normal range is learned from the known-good window before the boundary
(the 0.95 quantile with a 50 % margin, at least a floor more: one record
per window for a rate of records), from the signal's own values (a
metric's, for the metric signals), and the persistence is the shortest that would not have fired there. A
candidate is kept only if its backtest fires before the first bad
observation or within one persistence after it, with no false positive, and
its labels stay bounded; the others are listed on stderr with the reason.`,
		Example: `  faultline --db incident.db alerts suggest > alerts.yaml
  faultline --db incident.db alerts suggest -o json | jq '.alerts[].name'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return alertsSuggestRun(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.output, "output", "o", "yaml", "output format: yaml or json")
	fl.DurationVar(&opts.interval, "interval", alerts.DefaultInterval, "evaluation interval of the rules (the backtest's step)")
	fl.DurationVar(&opts.window, "window", alerts.DefaultWindow, "window each signal is counted over")
	opts.boundary.add(fl)
	return cmd
}

func alertsSuggestRun(ctx context.Context, f *Factory, opts *alertsSuggestOptions) error {
	if opts.output != "yaml" && opts.output != "json" {
		return usagef("faultline alerts suggest -o json", "unknown output %q: want yaml or json", opts.output)
	}
	if opts.interval <= 0 || opts.window < opts.interval {
		return usagef("faultline alerts suggest --interval 5s --window 30s",
			"--window (%s) must be at least --interval (%s), and both positive", opts.window, opts.interval)
	}
	ev, err := loadEvidence(ctx, f, opts.boundary)
	if err != nil {
		return err
	}
	file, dropped, err := ev.Suggest(alerts.SuggestOptions{Interval: opts.interval, Window: opts.window})
	if err != nil {
		return err
	}
	for _, d := range dropped {
		termsafe.Fprintf(f.IO.ErrOut, "not suggested: %s: %s\n", d.Name, d.Reason)
	}
	fmt.Fprintf(f.IO.ErrOut, "%d alert definition(s) learned from the known-good window %s .. %s\n",
		len(file.Alerts), ev.Start.UTC().Format(time.RFC3339), ev.LastGood.UTC().Format(time.RFC3339))
	var out []byte
	if opts.output == "json" {
		out, err = file.JSON()
	} else {
		out, err = file.YAML()
	}
	if err != nil {
		return err
	}
	_, err = termsafe.Raw(f.IO.Out).Write(out) // JSON and YAML escape control characters themselves
	return err
}

// loadEvidence investigates the timeline and reads the series of the
// metrics named (beyond those suggest reads), for the definitions that
// watch them.
func loadEvidence(ctx context.Context, f *Factory, b boundaryFlags, metrics ...string) (*alerts.Evidence, error) {
	opt, err := b.options()
	if err != nil {
		return nil, err
	}
	store, err := f.OpenStoreReadOnly(ctx)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	ev, err := alerts.LoadWith(ctx, store, opt)
	if errors.Is(err, investigate.ErrOnlySeries) {
		return nil, usagef("faultline alerts suggest --first-bad 2026-05-01T10:03:00Z --last-good 2026-05-01T10:02:30Z",
			"%v: with no records to find the boundary in, give it: --first-bad, and --last-good where it is earlier", err)
	}
	if err != nil {
		return nil, err
	}
	if len(metrics) > 0 {
		if err := ev.ReadSeries(ctx, store, metrics...); err != nil {
			return nil, err
		}
	}
	return ev, nil
}

func readAlertFile(path, hint string) (*alerts.File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef(hint, "%v", err)
	}
	file, err := alerts.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return file, nil
}

func newAlertsBacktestCmd(f *Factory) *cobra.Command {
	var output string
	var boundary boundaryFlags
	cmd := &cobra.Command{
		Use:   "backtest FILE",
		Short: "Replay alert definitions over the timeline: when each would have fired, and how early",
		Long: `Replay each definition of FILE over the timeline, evaluated every interval as
Prometheus would (pending while outside the normal range, firing once it has
stayed outside for the persistence), and report:

  FIRED     the first firing after the last known-good instant
  LEAD      how long before the first bad observation it fired (negative: after)
  NOTICED   how long before a human could have noticed: the first Warning
            event or failed Job from the last known-good instant on
  FP        firings in the known-good window (false positives)
  VERDICT   early, in-time (within one persistence, at least one interval,
            after the first bad), late or missed`,
		Example: `  faultline --db incident.db alerts backtest alerts.yaml
  faultline --db other-incident.db alerts backtest alerts.yaml -o json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("faultline alerts backtest alerts.yaml", "backtest takes one definition file, got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "table", "json", "yaml"); err != nil {
				return err
			}
			file, err := readAlertFile(args[0], "faultline alerts suggest > alerts.yaml")
			if err != nil {
				return err
			}
			ev, err := loadEvidence(cmd.Context(), f, boundary, file.Metrics()...)
			if err != nil {
				return err
			}
			bt, err := ev.Run(file)
			if err != nil {
				return err
			}
			if structured(output) {
				return f.writeData(output, bt)
			}
			return writeBacktest(f, bt)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	boundary.add(cmd.Flags())
	addNoHeaders(cmd, f)
	return cmd
}

func writeBacktest(f *Factory, bt *alerts.Backtest) error {
	w := f.IO.Out
	ts := func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
	fmt.Fprintf(w, "Known good %s .. %s; first bad %s", ts(bt.Start), ts(bt.LastGood), ts(bt.FirstBad))
	if !bt.Noticed.IsZero() {
		termsafe.Fprintf(w, "; noticed %s (%s)", ts(bt.Noticed), bt.NoticedBy)
	}
	fmt.Fprintf(w, "\n\n")
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	f.header(tw, "NAME\tFOR\tNORMAL\tFIRED\tLEAD\tNOTICED\tFP\tVERDICT")
	for _, a := range bt.Alerts {
		fired, lead, noticed := "-", "-", "-"
		if a.Fired != nil {
			fired = ts(*a.Fired)
		}
		if a.Lead != nil {
			lead = fmt.Sprintf("%+.1fs", *a.Lead)
		}
		if a.LeadNoticed != nil {
			noticed = fmt.Sprintf("%+.1fs", *a.LeadNoticed)
		}
		normal := fmt.Sprintf("<= %g", a.Max)
		if a.Min != nil {
			normal = fmt.Sprintf("%g .. %g", *a.Min, a.Max)
		}
		termsafe.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", a.Name, alerts.FormatDuration(a.For.D()), normal, fired, lead, noticed,
			len(a.FalsePositives), a.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, a := range bt.Alerts {
		for _, fp := range a.FalsePositives {
			termsafe.Fprintf(w, "false positive: %s fired %s (pending since %s, peak %g)\n", a.Name, ts(fp.Start), ts(fp.Pending), fp.Peak)
		}
	}
	return nil
}

func newAlertsExportCmd(f *Factory) *cobra.Command {
	var format, group string
	cmd := &cobra.Command{
		Use:   "export FILE --format prometheus",
		Short: "Write alert definitions as Prometheus alerting rules",
		Long: `Write the definitions of FILE as a Prometheus rule file: one group (its
interval the definitions' interval), one alerting rule per definition with
expr (the signal's PromQL outside its normal range), for, labels (severity,
owner, rotation, slice) and annotations (summary, description, mitigation,
runbook_url, cause).

A definition whose slice or PromQL would create unbounded series (per pod,
per request, per user where users are per-pod service accounts, per uid or
scrape instance) is refused with the reason, and nothing is written.`,
		Example: `  faultline alerts export alerts.yaml --format prometheus > rules.yaml
  promtool check rules rules.yaml`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("faultline alerts export alerts.yaml --format prometheus", "export takes one definition file, got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "prometheus" {
				return usagef("faultline alerts export "+args[0]+" --format prometheus", "unknown --format %q: want prometheus", format)
			}
			file, err := readAlertFile(args[0], "faultline alerts suggest > alerts.yaml")
			if err != nil {
				return err
			}
			if group == "" {
				group = "faultline-" + strings.TrimSuffix(filepath.Base(args[0]), filepath.Ext(args[0]))
			}
			rules, err := alerts.Prometheus(file, group)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			out, err := alerts.YAML(rules)
			if err != nil {
				return err
			}
			_, err = termsafe.Raw(f.IO.Out).Write(out) // JSON and YAML escape control characters themselves
			return err
		},
	}
	cmd.Flags().StringVar(&format, "format", "prometheus", "rule format: prometheus")
	cmd.Flags().StringVar(&group, "group", "", "rule group name (default faultline-FILE)")
	return cmd
}
