package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/internal/termsafe"
)

// investigateFlags are shared by investigate and the commands that run one
// part of it (bisect, diff, slice, counterexample).
type investigateFlags struct {
	bad, good    string
	since, until string
	rules        string
	output       string
	sinceData    bool
	scope        scopeFlags
}

func (fl *investigateFlags) add(cmd *cobra.Command, outputs string) {
	cmd.Flags().StringVar(&fl.bad, "bad", "", "CEL over record fields: what counts as bad (default: see --help)")
	cmd.Flags().StringVar(&fl.good, "good", "", "CEL over record fields: what counts as good (default: see --help)")
	cmd.Flags().StringVar(&fl.since, "since", "", "look at evidence from this instant (RFC 3339, or a duration back from now: 2h, 1d)")
	cmd.Flags().StringVar(&fl.until, "until", "", "look at evidence before this instant")
	addSinceData(cmd.Flags(), &fl.sinceData)
	fl.scope.add(cmd.Flags(), "judge bad and good observations")
	cmd.Flags().StringVar(&fl.rules, "rules", "", "YAML file of artifact extraction rules (see faultline identity --help)")
	cmd.Flags().StringVarP(&fl.output, "output", "o", "text", "output format: "+outputs)
}

const badHelp = `What "bad" means: --bad is a CEL expression over record fields (those of
faultline timeline --where). Object states are offered to it as records of
source "status" whose reason is the state: OOMKilled, Error, Failed,
CrashLoopBackOff, ErrImagePull, Evicted, FailedScheduling (pods),
NodeNotReady (nodes), BackoffLimitExceeded (jobs); Ready, Running,
Succeeded, Complete when all is well. The default:

  ` + outcome.DefaultBad + `

and --good defaults to

  ` + outcome.DefaultGood + `

A lone failure long before the incident is the baseline's noise: the
boundary is the change point where the rate of bad observations departs from
its baseline, not the first bad record.

-n NS judges only the observations of objects in namespace NS (both --bad
and --good are narrowed to ns == "NS"); the changes that could explain them
are still searched in the whole cluster, since a node or a cluster-wide
change can hurt one namespace. --since 2h counts back from now; add
--since-data to count back from the end of the evidence instead.`

// investigation runs the analyzers and returns the report.
func (fl *investigateFlags) run(ctx context.Context, f *Factory) (*investigate.Report, error) {
	store, err := f.OpenStoreReadOnly(ctx)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	opt := investigate.Options{Bad: fl.bad, Good: fl.good}
	if fl.scope.cel() != "" {
		opt.Bad = fl.scope.scoped(cmp.Or(fl.bad, outcome.DefaultBad))
		opt.Good = fl.scope.scoped(cmp.Or(fl.good, outcome.DefaultGood))
	}
	win := windowFlags{since: fl.since, until: fl.until, fromData: fl.sinceData}
	if opt.Since, opt.Until, err = win.resolve(ctx, f, store); err != nil {
		return nil, err
	}
	if fl.rules != "" {
		b, err := os.ReadFile(fl.rules)
		if err != nil {
			return nil, usagef("faultline investigate --rules rules.yaml", "--rules: %v", err)
		}
		if opt.Rules, err = identity.ParseRules(b); err != nil {
			return nil, fmt.Errorf("--rules %s: %w", fl.rules, err)
		}
	}
	rep, err := investigate.Run(ctx, store, opt)
	if err != nil {
		if strings.HasPrefix(err.Error(), "--bad") || strings.HasPrefix(err.Error(), "--good") {
			return nil, usagef("faultline investigate --bad 'reason == \"OOMKilled\"'", "%v", err)
		}
		return nil, err
	}
	return rep, nil
}

func newInvestigateCmd(f *Factory) *cobra.Command {
	fl := &investigateFlags{}
	var plotPath string
	cmd := &cobra.Command{
		Use:   "investigate",
		Short: "Run the whole investigation and print a report (or a postmortem draft)",
		Long: `Run the investigator's method over the timeline:

  1. the earliest known-bad instant and the last known-good one (bisect)
  2. the changes of identity that could explain it, ranked (diff)
  3. the smallest affected slice of identity dimensions (slice)
  4. a known-good counterexample, and how it differs (counterexample)
  5. for gang jobs, the first rank to fail apart from the cascade

and print Mitigation (what to roll back or cordon, to which last-known-good
identity) apart from Root-cause confirmation (the prediction the
counterexample lets you test).

-o text is for the terminal, -o markdown a postmortem draft with a timeline
table and evidence links (record ids, runs and lines), -o json the stable
contract documented in docs/investigate.md.

` + badHelp,
		Example: `  faultline replay bad-config-rollout --db incident.db
  faultline --db incident.db investigate
  faultline --db incident.db investigate -o markdown > postmortem.md
  faultline --db incident.db investigate -o markdown --plot incident.png > postmortem.md
  faultline --db incident.db investigate --bad 'reason == "OOMKilled"' --since 2h --since-data -o json
  faultline --db incident.db investigate -n vision-train -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch fl.output {
			case "text", "json", "yaml", "markdown", "md":
			default:
				return usagef("faultline investigate -o markdown", "unknown output %q: want text, json, yaml or markdown", fl.output)
			}
			if err := checkPlotPath(plotPath); err != nil {
				return err
			}
			rep, err := fl.run(cmd.Context(), f)
			if err != nil {
				return err
			}
			link := ""
			if plotPath != "" {
				if link, err = writePlot(cmd.Context(), f, rep, fl.good, plotPath); err != nil {
					return err
				}
			}
			switch fl.output {
			case "json", "yaml":
				return writeData(f.IO.Out, fl.output, rep)
			case "markdown", "md":
				return investigate.WriteMarkdownPlot(f.IO.Out, rep, link)
			}
			return writeReport(f.IO.Out, rep)
		},
	}
	fl.add(cmd, "text, json, yaml or markdown")
	cmd.Flags().StringVar(&plotPath, "plot", "", plotHelp)
	return cmd
}

func ts(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// writeReport prints the report for a terminal.
func writeReport(w io.Writer, r *investigate.Report) error {
	ew := &errWriter{w: w}
	ew.printf("Window  %s .. %s\n", ts(r.Window.Start), ts(r.Window.End))
	b := r.Boundary
	if b == nil {
		ew.printf("\nNothing bad in the evidence (bad = %s).\n", r.Bad)
		return ew.err
	}
	verdict := "cause"
	if r.Verdict != investigate.VerdictCause {
		verdict = "no confident cause"
	}
	ew.printf("\nVERDICT  %s: %s\n", verdict, r.VerdictWhy)
	for _, n := range r.Next {
		ew.printf("  next: %s\n", n)
	}
	ew.printf("\nBOUNDARY\n")
	ew.printf("  last known-good  %s\n  earliest bad     %s   (incident until %s)\n", ts(b.LastGood), ts(b.FirstBad), ts(b.IncidentEnd))
	ew.printf("  bad rate %.3g/s inside vs %.3g/s baseline; %d bad observation(s) before it set aside as noise\n",
		b.IncidentRate, b.BaselineRate, b.Noise)
	for _, e := range b.Evidence {
		ew.printf("  %-4s %s  %s  %s  (run %d line %d)\n", e.Side, ts(e.Time), e.Ref, e.What, e.Run, e.Line)
	}
	if s := r.Slice; s != nil {
		ew.printf("\nSLICE  %s\n  %d of %d units bad (precision %.2f), covering %.0f%% of the bad\n",
			investigate.WhereString(s.Where), s.Bad, s.Total, s.Precision, 100*s.Coverage)
		for _, o := range s.Others {
			ew.printf("  also: %s (%d of %g bad)\n", o.Where.String(), int(o.Bad), o.Total)
		}
	}
	ew.printf("  units: %d bad, %d good, %d bad before the boundary (noise), %d unknown\n", r.Units.Bad, r.Units.Good, r.Units.Noise, r.Units.Unknown)
	if c := r.Counterexample; c != nil {
		ew.printf("\nCOUNTEREXAMPLE  %s stayed good\n", c.Ref)
		if c.InSlice {
			ew.printf("  it matches the whole slice: identity alone does not explain the failure\n")
		}
		for i, d := range c.Differs {
			if i == 8 {
				ew.printf("  ... and %d more\n", len(c.Differs)-8)
				break
			}
			ew.printf("  %-40s bad %-24s good %s\n", d.Dimension, investigate.ShortID(d.Bad), investigate.ShortID(d.Good))
		}
	} else if r.Slice != nil {
		ew.printf("\nCOUNTEREXAMPLE  none: no known-good unit in the evidence\n")
	}
	if len(r.Changes) > 0 {
		ew.printf("\nSUSPECTS\n")
		for i, c := range r.Changes {
			if i == 5 {
				ew.printf("  ... %d more (-o json)\n", len(r.Changes)-5)
				break
			}
			ew.printf("  %d. %s %s: %s -> %s at %s\n     %s\n", c.Rank, c.Ref, c.Dimension, investigate.ShortID(c.From), investigate.ShortID(c.To), ts(c.At), c.Why)
			writeSuspectDetail(ew, c)
		}
	}
	for _, h := range r.NodeHealth {
		sel := ""
		if h.Selector != "" {
			sel = " (-l " + h.Selector + ")"
		}
		ew.printf("\nNODE HEALTH  %d nodes %s%s from %s to %s; %d ran none of the units\n", h.Nodes, h.Reason, sel, ts(h.First), ts(h.Last), h.WithoutPods)
	}
	for i, e := range r.Episodes {
		where := "-"
		if e.Slice != nil {
			where = investigate.WhereString(e.Slice.Where)
		}
		first := time.Time{}
		if e.Boundary != nil {
			first = e.Boundary.FirstBad
		}
		ew.printf("\nEPISODE %d  %s from %s\n  %s: %s\n", i+2, where, ts(first), e.Verdict, e.VerdictWhy)
	}
	for _, g := range r.Gangs {
		ew.printf("\nGANG JOB %s (%d ranks)\n  first to fail: %s rank %s, %s (exit %d) at %s, %s before the next\n  cascade: %d ranks (%s); terminated: %d\n",
			g.Owner, g.Ranks, g.First.Ref, dash(g.First.Rank), g.First.Reason, g.First.ExitCode, ts(g.First.At), g.Lead.Round(time.Millisecond),
			g.Cascade, reasonList(g.CascadeReasons), g.Terminated)
	}
	ew.printf("\nMITIGATION\n")
	if len(r.Mitigation) == 0 {
		ew.printf("  (none suggested)\n")
	}
	for _, a := range r.Mitigation {
		to := ""
		if a.To != "" {
			to = " -> " + a.To
		}
		ew.printf("  %s %s%s\n     %s\n", a.Action, a.Target, to, a.Why)
	}
	ew.printf("\nROOT-CAUSE CONFIRMATION\n")
	for _, c := range r.Confirmation {
		ew.printf("  %s\n", c)
	}
	return ew.err
}

// writeSuspectDetail prints a suspect's confidence, actor and scope, and
// the control-plane burst behind a load-shaped cause.
func writeSuspectDetail(ew *errWriter, c investigate.Suspect) {
	ew.printf("     confidence %.2f: %s\n", c.Confidence, c.ConfidenceWhy)
	if c.By != "" {
		ua := ""
		if c.UserAgent != "" {
			ua = " (" + c.UserAgent + ")"
		}
		ew.printf("     by %s%s\n", c.By, ua)
	}
	if c.Selector != "" {
		ew.printf("     scope -l %s (%d objects)\n", c.Selector, c.Objects)
	}
	if l := c.Load; l != nil {
		ew.printf("     load: %s by %s [%s] %.0f/s at peak vs %.2g/s before, %s .. %s; %s\n     detail: %s\n",
			l.Class, l.Client, l.User, l.PeakRps, l.Baseline, ts(l.Start), ts(l.End), l.Load, l.Detail)
	}
}

func reasonList(m map[string]int) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = termsafe.Fprintf(e.w, format, args...)
	}
}
