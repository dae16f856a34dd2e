package cli

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/analyze/controlplane"
	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/fixtures"
	"github.com/faultline/faultline/internal/termsafe"
	"github.com/faultline/faultline/timeline"
)

type replayOptions struct {
	f     *Factory
	name  string
	dbSet bool
	check bool
	keep  bool
	since string
	until string
}

func newReplayCmd(f *Factory) *cobra.Command {
	opts := &replayOptions{f: f}
	cmd := &cobra.Command{
		Use:   "replay [NAME|DIR]",
		Short: "Replay a recorded incident offline",
		Long: `Replay a recorded incident: ingest its evidence into a fresh timeline and show
what it holds. Without arguments, list the incidents bundled in faultline.

NAME is a bundled incident; DIR is a folder of your own in the same format
(fixtures/README.md): audit logs (*.log, *.log.gz), objects/ (kubectl get -o
json dumps, events too), versions.jsonl, expected.json and a README.md. The
report opens with the findings; the evidence's tables are behind faultline
sources. On a terminal (and without --check), the interactive investigation
(faultline tui) opens on it afterwards.

The timeline goes to a temporary folder removed when replay ends, unless
--db FILE names where to keep it, or --keep keeps the temporary one (its
path is printed), to go on exploring with faultline --db.

--check compares the analyzers' findings with expected.json field by field,
with the strict rules of faultline eval (fixtures/README.md: the #1 suspect
must be the change, the last known-good within the tolerance of the true
one, the slice named by the truth's dimensions), and exits 1 on a mismatch;
a field no analyzer covers yet is reported as "not analysed", never as
passing. To score many incidents at once, see faultline eval.

--since and --until replay the audit logs as ingest audit --since/--until
would ingest them: only the requests received in that window (the other
evidence whole). What would the investigation have said to an engineer who
ingested the log from the first alert on, or while the incident was still
under way?`,
		Example: `  faultline replay
  faultline replay sample-audit
  faultline replay mpi-rank-death --check
  faultline replay ./incidents/2026-05-01-apf-storm --db storm.db
  faultline replay digest-drift --keep
  faultline replay thousand-workers --since 2026-11-30T09:19:05Z`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("faultline replay sample-audit", "replay takes one incident, got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return replayList(f)
			}
			opts.name = args[0]
			opts.dbSet = cmd.Flags().Changed("db") || f.Getenv("FAULTLINE_DB") != ""
			return replayRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.check, "check", false, "compare the analyzers' findings with the fixture's expected.json")
	cmd.Flags().BoolVar(&opts.keep, "keep", false, "keep the temporary timeline (without --db) and print where it is")
	cmd.Flags().StringVar(&opts.since, "since", "", "replay only the audit requests received from this instant (RFC 3339, or a duration back from now)")
	cmd.Flags().StringVar(&opts.until, "until", "", "replay only the audit requests received before this instant")
	addNoHeaders(cmd, f)
	cmd.Flags().BoolVar(&f.redactConfigMaps, "redact-configmaps", false, redactConfigMapsUsage)
	return cmd
}

func replayList(f *Factory) error {
	list, err := fixtures.List()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 8, 2, ' ', 0)
	f.header(tw, "NAME\tSUMMARY")
	for _, fx := range list {
		fmt.Fprintf(tw, "%s\t%s\n", fx.Name, fx.Summary)
	}
	return tw.Flush()
}

// replayRun ingests the fixture's evidence where it is (evidence.Loader)
// and shows the findings; with --check it compares them with expected.json.
func replayRun(ctx context.Context, opts *replayOptions) error {
	f := opts.f
	win, err := ingestWindow("faultline replay thousand-workers --since 2026-11-30T09:19:05Z", opts.since, opts.until, f.Now())
	if err != nil {
		return err
	}
	fsys, dir, err := replaySource(opts.name)
	if err != nil {
		return err
	}
	var expected *fixtures.Expected
	if opts.check {
		if expected, err = replayExpected(fsys, dir); err != nil {
			return fmt.Errorf("replay %s --check: %w", opts.name, err)
		}
	}
	// The evidence is read where it is: embedded in the binary, or in the
	// folder. Without --db the timeline goes to a folder of its own,
	// removed on return (after the TUI, on a terminal), also on failure or
	// Ctrl-C, unless --keep keeps it: twelve replays used to leave 238 MB
	// in /tmp.
	keep := true
	if !opts.dbSet {
		work, err := os.MkdirTemp("", "faultline-replay-")
		if err != nil {
			return err
		}
		keep = false
		defer func() {
			if !keep {
				os.RemoveAll(work)
			}
		}()
		f.dbPath = filepath.Join(work, "faultline.db")
	}
	runs, err := replayIngest(ctx, f, fsys, dir, win)
	if err != nil {
		return fmt.Errorf("replay %s: %w", opts.name, err)
	}
	if opts.dbSet || opts.keep {
		keep = true
	}
	replaySummary(f, opts, runs)
	return replayShow(ctx, f, opts.name, expected)
}

// replaySource is the evidence of the incident name: a folder, or one of
// the bundled incidents (dir "").
func replaySource(name string) (fsys fs.FS, dir string, err error) {
	if fi, err := os.Stat(name); err == nil && fi.IsDir() {
		return os.DirFS(name), name, nil
	}
	fx, err := fixtures.Load(name)
	if err != nil {
		return nil, "", usagef("faultline replay", "%v: see the list with faultline replay, or give a folder", err)
	}
	return fx.FS, "", nil
}

// replayExpected reads the incident's ground truth, for --check.
func replayExpected(fsys fs.FS, dir string) (*fixtures.Expected, error) {
	if err := checkIncidentFile(dir, "expected.json"); err != nil {
		return nil, err
	}
	return fixtures.LoadExpected(fsys)
}

// replayIngest ingests the incident into f.dbPath and prints each run's
// summary, also when one failed.
func replayIngest(ctx context.Context, f *Factory, fsys fs.FS, dir string, win timeline.Span) ([]timeline.IngestRun, error) {
	load := incidentLoader{logger: f.Logger(), now: f.Now, warnf: f.warnf, key: f.Key(), redactAll: f.redactConfigMaps,
		auditWindow: win}
	open := load.sqliteAt(f.dbPath)
	if f.storeDSN != "" {
		open = f.OpenStore
	}
	runs, err := load.ingest(ctx, fsys, dir, open)
	for _, r := range runs {
		printRunSummary(f.IO.ErrOut, &r, 0) // every bad line was printed
	}
	return runs, err
}

// replaySummary says what was replayed, and where the timeline stays.
func replaySummary(f *Factory, opts *replayOptions, runs []timeline.IngestRun) {
	var records int64
	for _, r := range runs {
		records += r.Records
	}
	if f.storeDSN != "" {
		termsafe.Fprintf(f.IO.Out, "Replayed %s into %s: ingested %s records from %d files; faultline --store '%s' sources for the tables\n",
			opts.name, f.storeDSN, humanInt(records), len(runs), f.storeDSN)
		return
	}
	if opts.dbSet || opts.keep {
		termsafe.Fprintf(f.IO.Out, "Replayed %s into %s: ingested %s records from %d files; faultline --db %s sources for the tables\n",
			opts.name, f.dbPath, humanInt(records), len(runs), f.dbPath)
		termsafe.Fprintf(f.IO.Out, "Explore it: faultline --db %s timeline --where 'code >= 429'\n", f.dbPath)
		return
	}
	termsafe.Fprintf(f.IO.Out, "Replayed %s: ingested %s records from %d files into a temporary timeline, removed on exit (--keep or --db FILE keeps it)\n",
		opts.name, humanInt(records), len(runs))
}

// replayShow prints the findings, then the check against expected (when
// given), or opens the TUI on a terminal.
func replayShow(ctx context.Context, f *Factory, name string, expected *fixtures.Expected) error {
	ro := sqliteReadOnly(f.dbPath, f.Logger())
	if f.storeDSN != "" {
		ro = f.OpenStoreReadOnly
	}
	rep, cp, err := analyzeIncident(ctx, ro)
	if err != nil {
		return fmt.Errorf("replay %s: %w", name, err)
	}
	fmt.Fprintln(f.IO.Out)
	if err := writeReport(f.IO.Out, rep, f.reportLayout()); err != nil {
		return err
	}
	if len(cp.Bursts) > 0 || len(cp.Shed) > 0 {
		ew := &errWriter{w: f.IO.Out}
		ew.printf("\nCONTROL PLANE (faultline controlplane for all of it)")
		writeBursts(ew, cp.Bursts, 3)
		writeShed(ew, cp.Shed, 3)
		if ew.err != nil {
			return ew.err
		}
	}
	if expected != nil {
		return printCheck(f.IO.Out, expected, rep, cp)
	}
	if f.IO.StdoutIsTTY {
		// On a terminal, go on exploring it interactively.
		return tuiRun(ctx, &tuiOptions{f: f})
	}
	return nil
}

// printCheck reports each field of the ground truth against the analyzers'
// findings (fixtures.Check has the rules); a field no analyzer covers yet is
// "not analysed" and never counts as passing. A failure exits 1.
func printCheck(w io.Writer, e *fixtures.Expected, rep *investigate.Report, cp *controlplane.Report) error {
	verdicts := fixtures.Check(e, rep, cp)
	termsafe.Fprintf(w, "\nCheck against expected.json (%s, seed %d):\n", e.Incident, e.Seed)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "FIELD\tSTATUS\tEXPECTED\tFOUND")
	var passed, failed, other int
	for _, v := range verdicts {
		termsafe.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.Field, v.Status, v.Expected, v.Found)
		switch {
		case v.Passed():
			passed++
		case v.Failed():
			failed++
		default:
			other++
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, v := range verdicts {
		if v.Failed() && v.Why != "" {
			termsafe.Fprintf(w, "  %s: %s\n", v.Field, v.Why)
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed, %d not analysed or n/a\n", passed, failed, other)
	if failed > 0 {
		return fmt.Errorf("replay %s --check: %d of %d fields differ from expected.json", e.Incident, failed, passed+failed)
	}
	return nil
}
