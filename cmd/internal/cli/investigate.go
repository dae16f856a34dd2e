package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/analyze/outcome"
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
		return nil, err
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(f.IO.ErrOut, "warning: %s\n", w)
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
				return f.writeData(fl.output, rep)
			case "markdown", "md":
				return investigate.WriteMarkdownPlot(f.IO.Out, rep, link)
			}
			return writeReport(f.IO.Out, rep, f.reportLayout())
		},
	}
	fl.add(cmd, "text, json, yaml or markdown")
	cmd.Flags().StringVar(&plotPath, "plot", "", plotHelp)
	return cmd
}

// writeReport prints the report as text: a headline of three to six
// lines (what broke, since when, the cause and who made it, the command
// that mitigates it), then the detail, every line within the layout's
// width.
func writeReport(w io.Writer, r *investigate.Report, lay textLayout) error {
	tw := &textWriter{w: w, lay: lay}
	writeHeadline(tw, r)
	tw.blank()
	tw.row(2, "Window  %s .. %s", fmtTime(r.Window.Start, rfc3339Milli), fmtTime(r.Window.End, rfc3339Milli))
	for _, w := range r.WindowedRuns {
		tw.prose(8, "        %s", w.Text())
	}
	if r.Boundary == nil {
		tw.write(glossaryLine)
		return tw.err
	}
	writeVerdict(tw, r)
	writeBoundary(tw, r.Boundary)
	writeSliceSection(tw, r)
	writeCounterexample(tw, r)
	writeSuspects(tw, r.Changes)
	writeOtherFindings(tw, r)
	writeMitigation(tw, r.Mitigation)
	tw.blank()
	tw.write("ROOT-CAUSE CONFIRMATION")
	for _, c := range r.Confirmation {
		tw.prose(2, "  %s", c)
	}
	tw.blank()
	tw.write(glossaryLine)
	return tw.err
}

// writeVerdict prints the verdict and the next steps it suggests.
func writeVerdict(tw *textWriter, r *investigate.Report) {
	verdict := "cause"
	if r.Verdict != investigate.VerdictCause {
		verdict = "no confident cause"
	}
	tw.blank()
	tw.prose(9, "VERDICT  %s: %s", verdict, r.VerdictWhy)
	for _, n := range r.Next {
		tw.prose(8, "  next: %s", n)
	}
}

// writeBoundary prints the boundary with the evidence at each side.
func writeBoundary(tw *textWriter, b *investigate.Boundary) {
	tw.blank()
	tw.write("BOUNDARY")
	tw.row(4, "  last known-good  %s", fmtTime(b.LastGood, rfc3339Milli))
	tw.row(4, "  earliest bad     %s   (incident until %s)", fmtTime(b.FirstBad, rfc3339Milli), fmtTime(b.IncidentEnd, rfc3339Milli))
	tw.prose(4, "  bad rate %.3g/s inside vs %.3g/s baseline; %d bad observation(s) before it set aside as noise",
		b.IncidentRate, b.BaselineRate, b.Noise)
	for _, e := range b.Evidence {
		tw.row(7, "  %-4s %s  %s  %s  (run"+nbsp+"%d"+nbsp+"line"+nbsp+"%d)", e.Side, fmtTime(e.Time, rfc3339Milli), e.Ref, e.What, e.Run, e.Line)
	}
}

// writeSliceSection prints the bad slice, if any, and the units counted.
func writeSliceSection(tw *textWriter, r *investigate.Report) {
	if s := r.Slice; s != nil {
		tw.blank()
		tw.row(7, "SLICE  %s", shortDigests(sliceText(s.Where)))
		tw.prose(4, "  %d of %d units bad (precision %.2f), covering %.0f%% of the bad", s.Bad, s.Total, s.Precision, 100*s.Coverage)
		for _, o := range s.Others {
			tw.row(4, "  also: %s (%d of %g bad)", sliceText(o.Where), int(o.Bad), o.Total)
		}
	}
	tw.prose(4, "  units: %d bad, %d good, %d bad before the boundary (noise), %d unknown", r.Units.Bad, r.Units.Good, r.Units.Noise, r.Units.Unknown)
}

// writeCounterexample prints the good unit most like the slice, or says
// there is none when there is a slice.
func writeCounterexample(tw *textWriter, r *investigate.Report) {
	c := r.Counterexample
	if c == nil {
		if r.Slice != nil {
			tw.blank()
			tw.write("COUNTEREXAMPLE  none: no known-good unit in the evidence")
		}
		return
	}
	tw.blank()
	tw.row(4, "COUNTEREXAMPLE  %s stayed good", c.Ref)
	if c.InSlice {
		tw.prose(4, "  it matches the whole slice: identity alone does not explain the failure")
	}
	for i, d := range c.Differs {
		if i == 8 {
			tw.write(fmt.Sprintf("  ... and %d more", len(c.Differs)-8))
			break
		}
		tw.row(4, "  %-40s bad %-24s good %s", d.Dimension, investigate.ShortID(d.Bad), investigate.ShortID(d.Good))
	}
}

// writeSuspects prints the first five suspects with their reasons.
func writeSuspects(tw *textWriter, changes []investigate.Suspect) {
	if len(changes) == 0 {
		return
	}
	tw.blank()
	tw.write("SUSPECTS")
	for i, c := range changes {
		if i == 5 {
			tw.write(fmt.Sprintf("  ... %d more (-o json)", len(changes)-5))
			break
		}
		tw.prose(7, "  %d. %s %s: %s -> %s at %s", c.Rank, c.Ref, c.Dimension, investigate.ShortID(c.From), investigate.ShortID(c.To), fmtTime(c.At, rfc3339Milli))
		tw.prose(7, "     %s", c.Why)
		writeSuspectDetail(tw, c)
	}
}

// writeOtherFindings prints node health, the later episodes and the gang jobs.
func writeOtherFindings(tw *textWriter, r *investigate.Report) {
	for _, h := range r.NodeHealth {
		sel := ""
		if h.Selector != "" {
			sel = " (-l " + h.Selector + ")"
		}
		tw.blank()
		tw.prose(4, "NODE HEALTH  %d nodes %s%s from %s to %s; %d ran none of the units", h.Nodes, h.Reason, sel, fmtTime(h.First, rfc3339Milli), fmtTime(h.Last, rfc3339Milli), h.WithoutPods)
	}
	for i, e := range r.Episodes {
		where := "-"
		if e.Slice != nil {
			where = sliceText(e.Slice.Where)
		}
		first := time.Time{}
		if e.Boundary != nil {
			first = e.Boundary.FirstBad
		}
		tw.blank()
		tw.row(4, "EPISODE %d  %s from %s", i+2, where, fmtTime(first, rfc3339Milli))
		tw.prose(4, "  %s: %s", e.Verdict, e.VerdictWhy)
	}
	for _, g := range r.Gangs {
		tw.blank()
		tw.row(4, "GANG JOB %s (%d ranks)", g.Owner, g.Ranks)
		tw.prose(4, "  first to fail: %s rank %s, %s%s at %s, %s before the next",
			g.First.Ref, dash(g.First.Rank), g.First.Reason, exitOf(g.First.ExitCode), fmtTime(g.First.At, rfc3339Milli), g.Lead.Round(time.Millisecond).String())
		for _, h := range g.Host {
			tw.prose(4, "  its node %s logged %s at %s, %s before it failed (%s; chance of the coincidence %.2g)",
				h.Node, h.What(), fmtTime(h.At, rfc3339Milli), h.Lead.Round(time.Millisecond).String(), dash(h.Origin), h.Chance)
		}
		tw.prose(4, "  cascade: %d ranks (%s); terminated: %d", g.Cascade, reasonList(g.CascadeReasons), g.Terminated)
	}
}

// exitOf is " (exit N)" for a container that exited N, and nothing for a
// failure that is no exit of its own (an eviction, a refused request):
// those have no exit code, and "exit 0" would read as success.
func exitOf(code int) string {
	if code == 0 {
		return ""
	}
	return fmt.Sprintf(" (exit %d)", code)
}

// writeMitigation prints the mitigations with the commands that run and
// verify them.
func writeMitigation(tw *textWriter, actions []investigate.Action) {
	tw.blank()
	tw.write("MITIGATION")
	if len(actions) == 0 {
		tw.write("  (none suggested)")
	}
	for _, a := range actions {
		to := ""
		if a.To != "" {
			to = " -> " + a.To
		}
		if a.Command != "" {
			to = shortDigests(to) // whole in the command
		}
		tw.prose(4, "  %s %s%s", a.Action, a.Target, to)
		tw.prose(5, "     %s", a.Why)
		if a.Command != "" {
			tw.command("     run:    ", a.Command)
		}
		if a.Verify != "" {
			tw.command("     verify: ", a.Verify)
		}
	}
}

// glossaryLine ends a text report: where its words are explained.
const glossaryLine = "terms: faultline explain TERM (docs/glossary.md)"

// writeHeadline writes the report's first lines: what broke, since when,
// the verdict with the leading cause, who made it and how sure it is, and
// the mitigation as a command.
func writeHeadline(tw *textWriter, r *investigate.Report) {
	b := r.Boundary
	if b == nil {
		tw.prose(9, "NOTHING  went bad in the evidence (bad = %s)", r.Bad)
		for _, n := range r.Next {
			tw.prose(9, "NEXT     %s", n)
		}
		return
	}
	inScope := r.Units.Bad + r.Units.Good
	switch {
	case r.Slice != nil:
		// Values shortened: the slice is whole below, under SLICE.
		tw.prose(9, "BROKE    %s: %d of %d units bad; %d of %d in scope",
			shortDigests(sliceText(headlineWhere(r.Slice.Where))), r.Slice.Bad, r.Slice.Total, r.Units.Bad, inScope)
	case r.Units.Bad > 0:
		tw.prose(9, "BROKE    %d of %d units in scope went bad", r.Units.Bad, inScope)
	case r.Bad == outcome.DefaultBad:
		// The default is a page of CEL: --help has it.
		tw.prose(9, "BROKE    requests and objects went bad (by the default --bad: faultline investigate --help), no unit in scope")
	default:
		tw.prose(9, "BROKE    requests and objects went bad (--bad %s), no unit in scope", r.Bad)
	}
	since := fmtTime(b.FirstBad, rfc3339Milli)
	if tw.lay.TTY && tw.lay.Loc != nil {
		since = b.FirstBad.In(tw.lay.Loc).Format("Mon 2 Jan 15:04:05 MST") + " (" + since + ")"
	}
	lastGood := ""
	if !b.LastGood.IsZero() {
		lastGood = "; last known-good " + relative(b.LastGood, b.FirstBad)
	}
	tw.prose(9, "SINCE    %s (first bad%s)", since, lastGood)
	var top *investigate.Suspect
	// A node's fault is told as the verdict tells it (the rank it killed
	// and the cascade), not as a change.
	if len(r.Changes) > 0 && r.Changes[0].Confidence >= investigate.Confident && r.Changes[0].Kind != investigate.KindFault {
		top = &r.Changes[0]
	}
	switch {
	case r.Verdict == investigate.VerdictCause && top != nil:
		tw.prose(9, "CAUSE    %s", changeName(*top))
		when := strings.NewReplacer(" before", " earlier", " after", " later", "together with", "with the first bad").Replace(relative(top.At, b.FirstBad))
		tw.prose(9, "         %s, %s, confidence %.2f", shortActor(*top), when, top.Confidence)
	case r.Verdict == investigate.VerdictCause:
		tw.prose(9, "CAUSE    %s", r.VerdictWhy)
	default:
		tw.prose(9, "VERDICT  no confident cause: %s", r.VerdictWhy)
		if len(r.Next) > 0 {
			tw.prose(9, "NEXT     %s", r.Next[0])
		}
	}
	// The first step only: the others are under MITIGATION.
	switch {
	case len(r.Mitigation) > 0 && r.Mitigation[0].Command != "":
		tw.command("FIX      ", r.Mitigation[0].Command)
	case len(r.Mitigation) > 0:
		a := r.Mitigation[0]
		to := ""
		if a.To != "" {
			to = " -> " + a.To
		}
		tw.prose(9, "FIX      %s %s%s", a.Action, a.Target, to)
	case r.Verdict == investigate.VerdictCause:
		tw.write("FIX      none suggested: see MITIGATION below")
	}
}

// changeName says what a suspect changed in a few words: "ConfigMap/ml/env
// key LR: 0.06 -> 0.6".
func changeName(c investigate.Suspect) string {
	kind, _, _ := strings.Cut(c.Ref, "/")
	what := c.Ref + " " + c.Dimension
	switch d := c.Dimension; {
	case d == "created":
		return c.Ref + " created"
	case d == "restart":
		return c.Ref + " restarted"
	case d == "deleted":
		return c.Ref + " deleted"
	case strings.HasPrefix(d, "configmap/") && kind == "ConfigMap", strings.HasPrefix(d, "secret/") && kind == "Secret":
		if parts := strings.SplitN(d, "/", 3); len(parts) == 3 {
			what = c.Ref + " key " + parts[2]
		} else {
			what = c.Ref + " content"
		}
	case strings.HasPrefix(d, "image.tag/"):
		what = c.Ref + " image of " + strings.TrimPrefix(d, "image.tag/")
	case strings.HasPrefix(d, "image.digest/"):
		what = c.Ref + " digest of " + strings.TrimPrefix(d, "image.digest/")
	case strings.HasPrefix(d, "node.") && c.Selector != "":
		what = fmt.Sprintf("%d nodes -l %s %s", c.Objects, c.Selector, strings.TrimPrefix(strings.TrimPrefix(d, "node."), "label/"))
	case strings.HasPrefix(d, "node."):
		what = c.Ref + " " + strings.TrimPrefix(strings.TrimPrefix(d, "node."), "label/")
	}
	from, to := investigate.ShortID(c.From), investigate.ShortID(c.To)
	// One image's two tags: the repository once; and, when the line
	// would not fit the headline, its last path element, then its tags
	// alone (the change is whole under SUSPECTS).
	if i := strings.LastIndex(from, ":"); i > strings.LastIndex(from, "/") && strings.HasPrefix(to, from[:i+1]) && !strings.HasPrefix(from, "sha256:") {
		to = to[i+1:]
		if len(what+from+to) > maxCauseName {
			from = from[strings.LastIndex(from[:i], "/")+1:]
		}
		if len(what+from+to) > maxCauseName {
			from = from[strings.LastIndex(from, ":")+1:]
		}
	}
	return what + ": " + from + " -> " + to
}

// maxCauseName is how long a change's name may be and fit the headline's
// CAUSE line (100 columns less its label and the words around it).
const maxCauseName = 85

// digests are sha256 digests in a text.
var digests = regexp.MustCompile(`sha256:[0-9a-f]{12}[0-9a-f]+`)

// headlineWhere shortens a slice for the headline (it is whole below,
// under SLICE): a node agent is its DaemonSet and container
// ("agent/nvidia-device-plugin/plugin"), and an image its last path
// element with its tag ("k8s-device-plugin:v0.17.0").
func headlineWhere(where map[string]string) map[string]string {
	out := make(map[string]string, len(where))
	for k, v := range where {
		if rest, ok := strings.CutPrefix(k, "node.agent/"); ok {
			if _, ds, ok := strings.Cut(rest, "/"); ok {
				k = "agent/" + ds
			}
			if i := strings.LastIndex(v, "/"); i >= 0 && strings.Contains(v[i:], ":") {
				v = v[i+1:]
			}
		}
		out[k] = v
	}
	return out
}

// shortDigests shortens every sha256 digest of s as investigate.ShortID
// does.
func shortDigests(s string) string {
	return digests.ReplaceAllStringFunc(s, investigate.ShortID)
}

// relative says when at was from t: "45.2s before", "3s after".
func relative(at, t time.Time) string {
	d, word := t.Sub(at), "before"
	if d < 0 {
		d, word = -d, "after"
	}
	switch {
	case d == 0:
		return "together with"
	case d < time.Millisecond:
	case d < time.Second:
		d = d.Round(time.Millisecond)
	case d < time.Minute:
		d = d.Round(100 * time.Millisecond)
	default:
		d = d.Round(time.Second)
	}
	return d.String() + " " + word
}

// shortActor names who made a change in a few words: the audit record's
// user and its user agent's product, without version or platform.
func shortActor(c investigate.Suspect) string {
	ua, _, _ := strings.Cut(c.UserAgent, " ")
	ua, _, _ = strings.Cut(ua, "/")
	if c.By == "" || ua == "" {
		return investigate.Actor(c)
	}
	return "by " + c.By + " via " + ua
}

// writeSuspectDetail prints a suspect's confidence, actor and scope, and
// the control-plane burst behind a load-shaped cause.
func writeSuspectDetail(tw *textWriter, c investigate.Suspect) {
	tw.prose(7, "     confidence %.2f: %s", c.Confidence, c.ConfidenceWhy)
	tw.prose(7, "     %s", investigate.Actor(c))
	if c.Selector != "" {
		tw.row(7, "     scope -l %s (%d objects)", c.Selector, c.Objects)
	}
	if l := c.Load; l != nil {
		tw.prose(7, "     load: %s by %s [%s] %.0f/s at peak vs %.2g/s before, %s .. %s; %s",
			l.Class, l.Client, l.User, l.PeakRps, l.Baseline, fmtTime(l.Start, rfc3339Milli), fmtTime(l.End, rfc3339Milli), l.Load)
		tw.prose(7, "     detail: %s", l.Detail)
	}
	if d := c.DNS; d != nil {
		tw.prose(7, "     dns: %s's queries (by %s) %.0f/s at peak vs %.2g/s before, %s .. %s; NXDOMAIN %s, SERVFAIL %s, p99 %s",
			d.Client, d.Attributed, d.PeakRps, d.BaselineRps, fmtTime(d.Start, rfc3339Milli), fmtTime(d.End, rfc3339Milli),
			pct(d.NxdomainShare), pct(d.ServfailShare), msPtr(d.P99Ms))
		tw.prose(7, "     detail: %s", d.Detail)
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

// flagsOf returns the investigation flags registered on cmd, for the
// commands that run one part of the investigation on flags they share with
// another mode (bare bisect; slice without --cube).
func flagsOf(cmd *cobra.Command) *investigateFlags {
	fl := &investigateFlags{output: "text"}
	get := func(name string) string {
		if f := cmd.Flags().Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	fl.bad, fl.good, fl.since, fl.until, fl.rules = get("bad"), get("good"), get("since"), get("until"), get("rules")
	if o := get("output"); o != "" {
		fl.output = o
	}
	fl.sinceData = get("since-data") == "true"
	fl.scope = scopeFlags{namespace: get("namespace"), all: get("all-namespaces") == "true"}
	return fl
}
