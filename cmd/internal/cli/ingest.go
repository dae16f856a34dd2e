package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/ingest/audit"
	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/internal/termsafe"
	"github.com/faultline/faultline/timeline"
)

func newIngestCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ingest",
		Short: "Read evidence into the timeline",
		Long: `Read evidence into the timeline database (--db). Ingest is idempotent:
reading the same evidence twice adds nothing, and an interrupted ingest can
simply be run again.`,
		Args: noArgs,
	}
	cmd.AddCommand(newIngestAuditCmd(f), newIngestClusterCmd(f), newIngestObjectsCmd(f), newIngestVersionsCmd(f), newIngestMetricsCmd(f), newIngestNodeLogsCmd(f))
	cmd.PersistentFlags().BoolVar(&f.redactConfigMaps, "redact-configmaps", false, redactConfigMapsUsage)
	return cmd
}

type ingestAuditOptions struct {
	f         *Factory
	paths     []string
	strict    bool
	maxLine   string
	workers   int
	batchSize int
	maxBad    int
	since     string
	until     string
}

func newIngestAuditCmd(f *Factory) *cobra.Command {
	opts := &ingestAuditOptions{f: f}
	cmd := &cobra.Command{
		Use:   "audit PATH...",
		Short: "Ingest kube-apiserver audit logs",
		Long: `Ingest kube-apiserver audit logs. Each PATH is a file, a directory of
rotated logs (read oldest first), a .gz file, or - for standard input.

Every format a cluster really leaves is read, one record per line:
  - audit.k8s.io/v1 Event lines (kube-apiserver --audit-log-format=json)
  - EventList batches (the audit webhook), also pretty-printed over many lines
  - AKS diagnostic logs (properties.log, as an object or a JSON string)
  - GKE Cloud Logging exports (protoPayload)
  - EKS CloudWatch exports (the event in a message field, logEvents batches,
    or "TIMESTAMP {json}" lines)

The stages of one request (RequestReceived, ResponseComplete...) are joined
into one record by audit ID. At level Request and RequestResponse, request
and response bodies become object versions: Secret values are never stored
and ConfigMap values are replaced by per-key hashes.

A bad line is reported as FILE:LINE: field: problem and skipped; the good
lines around it are kept. With --strict the first bad line stops the ingest
(exit 1), keeping what came before it.

--since and --until keep only the requests received in that window, for
when you know roughly when the trouble began: a day's log is read, but only
the window's hours are decoded and stored, so the ingest takes a fraction
of the time. Keep an hour or so of the calm before the first symptom: the
investigation compares the two sides. The lines outside are counted
("N events outside the window") and not checked; ingesting again with a
wider window, or none, adds what is missing and nothing twice.`,
		Example: `  faultline ingest audit /var/log/kubernetes/audit/
  faultline ingest audit audit.log audit-2026-05-01T10-00-00.000.log.gz
  faultline ingest audit --since 2026-05-01T02:00:00Z --until 2026-05-01T04:00:00Z /var/log/kubernetes/audit/
  faultline ingest audit --since 3h /var/log/kubernetes/audit/
  kubectl logs -n kube-system kube-apiserver-0 | faultline ingest audit -
  faultline --db incident.db ingest audit --strict export.json`,
		Args: argsAtLeast(1, "faultline ingest audit /var/log/kubernetes/audit.log"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.paths = args
			return ingestAuditRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.strict, "strict", false, "stop at the first bad line (exit 1)")
	cmd.Flags().StringVar(&opts.maxLine, "max-line-size", "32MiB", "longest line to read; longer lines are reported and skipped")
	cmd.Flags().IntVar(&opts.workers, "workers", 0, "decoding goroutines (default: one per CPU)")
	cmd.Flags().IntVar(&opts.maxBad, "max-bad-lines-shown", 20, "bad lines to print per file before only counting them")
	cmd.Flags().StringVar(&opts.since, "since", "", "keep only the requests received from this instant (RFC 3339, or a duration back from now: 2h, 1d)")
	cmd.Flags().StringVar(&opts.until, "until", "", "keep only the requests received before this instant")
	cmd.Flags().IntVar(&opts.batchSize, "batch-size", 100000, "records per transaction")
	cmd.Flags().MarkHidden("batch-size")
	return cmd
}

// parseSize reads "32MiB", "512KiB", "1GiB", "4096".
func parseSize(s string) (int, error) {
	units := []struct {
		suffix string
		mult   int
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			n, err := strconv.Atoi(strings.TrimSpace(num))
			if err != nil || n <= 0 {
				return 0, fmt.Errorf("invalid size %q", s)
			}
			return n * u.mult, nil
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("invalid size %q: want a number of bytes or 32MiB, 512KiB", s)
	}
	return n, nil
}

// ingestMemoryBudget is the Go heap's soft limit during an ingest, less
// what the store holds outside the heap (offHeap): with the runtime's own
// overhead it keeps the process's peak under 200 MiB.
//
// Measured on the 1 M-line benchmark log (hack/bench), one run each: into
// SQLite, a heap limit of 88 MiB at GOGC=200 took 28.9 s and peaked at
// 186 MB (the default GC: 23.9 s, 203 MB; 64 MiB at GOGC=400: 29.5 s,
// 174 MB). Into ClickHouse, which keeps no page cache, the same 88 MiB took
// 44.2 s (the collector running all the time near the limit: the batch
// holds 20,000 records and their columns), 150 MiB took 21.3 s and peaked
// at 196 MB, no limit 21.0 s and 348 MB.
const ingestMemoryBudget = 150 << 20

// offHeap is a store that holds memory outside the Go heap while it writes
// (SQLite's page caches).
type offHeap interface {
	MemoryOutsideHeap() int64
}

// ingestGC sets the garbage collector for an ingest into store (unless
// GOGC or GOMEMLIMIT say otherwise): collections half as often as the
// default, under a soft limit of the budget less the store's memory outside
// the heap.
func ingestGC(f *Factory, store any) {
	if f.Getenv("GOGC") != "" || f.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit := int64(ingestMemoryBudget)
	if o, ok := store.(offHeap); ok {
		limit -= o.MemoryOutsideHeap()
	}
	debug.SetMemoryLimit(max(limit, 32<<20))
	debug.SetGCPercent(200)
}

func ingestAuditRun(ctx context.Context, opts *ingestAuditOptions) error {
	f := opts.f
	maxLine, err := parseSize(opts.maxLine)
	if err != nil {
		return usagef("faultline ingest audit --max-line-size 64MiB PATH", "--max-line-size: %v", err)
	}
	win, err := ingestWindow("faultline ingest audit --since 2026-05-01T02:00:00Z --until 2026-05-01T04:00:00Z PATH",
		opts.since, opts.until, f.Now())
	if err != nil {
		return err
	}
	store, err := f.OpenStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	ingestGC(f, store)

	errOut := f.IO.ErrOut
	prog := &progressLine{w: termsafe.Raw(errOut), on: f.IO.StderrIsTTY} // it draws its own escapes
	shown := map[string]int{}
	runs, err := audit.Ingest(ctx, store, opts.paths, audit.Options{
		Strict:    opts.strict,
		MaxLine:   maxLine,
		Workers:   opts.workers,
		BatchSize: opts.batchSize,
		Logger:    f.Logger(),
		OnSkip: func(b *input.Skip) {
			if shown[absPath(b.Path)] < opts.maxBad || opts.strict {
				prog.clear()
				f.warnf("%s", b)
			}
			shown[absPath(b.Path)]++
		},
		OnProgress: prog.update,
		Window:     win,
	})
	prog.clear()
	for _, r := range runs {
		var hidden int64
		if n := shown[absPath(r.Path)]; !opts.strict && n > opts.maxBad {
			hidden = int64(n - opts.maxBad)
		}
		printRunSummary(errOut, &r, hidden)
		if r.Outside > 0 && r.Records+r.Merged+r.Duplicates == 0 {
			f.warnf("%s: none of its %s audit events was received %s; nothing of it was stored",
				displayPath(r.Path), humanInt(r.Outside), r.Window())
		}
	}
	if aerr := analyze(ctx, store); aerr != nil && err == nil {
		err = aerr
	}
	if skipped := (*input.SkippedError)(nil); err == nil || errors.As(err, &skipped) {
		err = errors.Join(err, noneGood(runs))
	}
	return err
}

// ingestWindow reads --since and --until (RFC 3339, or a duration back
// from now); example is the command line a usage error suggests.
func ingestWindow(example, since, until string, now time.Time) (timeline.Span, error) {
	var (
		w   timeline.Span
		err error
	)
	if w.Since, err = parseWhen("since", since, now); err != nil {
		return w, err
	}
	if w.Until, err = parseWhen("until", until, now); err != nil {
		return w, err
	}
	if !w.Since.IsZero() && !w.Until.IsZero() && !w.Since.Before(w.Until) {
		return w, usagef(example, "--since (%s) must come before --until (%s)", w.Since.Format(time.RFC3339Nano), w.Until.Format(time.RFC3339Nano))
	}
	return w, nil
}

// noneGood fails an ingest in which some file had lines but not one good
// one: most likely not the kind of file the user meant.
func noneGood(runs []timeline.IngestRun) error {
	for _, r := range runs {
		if r.Lines > 0 && r.BadLines == r.Lines {
			return fmt.Errorf("%s: every one of its %d lines was bad: is it an audit log? (the good files were ingested)", displayPath(r.Path), r.Lines)
		}
	}
	return nil
}

// ingestFilesRun is the shape of an ingest from files: open the store, run
// the ingester, summarise each run on stderr, refresh the planner's
// statistics.
func ingestFilesRun(ctx context.Context, f *Factory, ingest func(context.Context, timeline.Appender) ([]timeline.IngestRun, error)) error {
	store, err := f.OpenStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	runs, err := ingest(ctx, store)
	for _, r := range runs {
		printRunSummary(f.IO.ErrOut, &r, 0)
	}
	if err != nil {
		return err
	}
	return analyze(ctx, store)
}

// warnf prints a skipped input's problem on stderr.
func (f *Factory) warnf(format string, args ...any) {
	termsafe.Fprintf(f.IO.ErrOut, "warning: "+format+"\n", args...)
}

func displayPath(p string) string {
	if p == "-" {
		return "<stdin>"
	}
	return p
}

// absPath names a file one way whichever way it was given ("-" stays).
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil && p != "-" {
		return a
	}
	return p
}

// printRunSummary summarises a run; hidden is how many of its bad lines
// were counted but not printed (only ingest audit holds some back).
func printRunSummary(w io.Writer, r *timeline.IngestRun, hidden int64) {
	dur := r.Finished.Sub(r.Started)
	rate := ""
	if secs := dur.Seconds(); secs > 0 {
		rate = fmt.Sprintf(", %s lines/s", humanInt(int64(float64(r.Lines)/secs)))
	}
	termsafe.Fprintf(w, "%s %s: %s records", r.Status, displayPath(r.Path), humanInt(r.Records))
	if r.Merged > 0 {
		fmt.Fprintf(w, " (+%s stages joined)", humanInt(r.Merged))
	}
	fmt.Fprintf(w, ", %s duplicates skipped", humanInt(r.Duplicates))
	if r.Conflicts > 0 {
		fmt.Fprintf(w, ", %s conflicting records kept", humanInt(r.Conflicts))
	}
	fmt.Fprintf(w, ", %s bad lines, %s object versions", humanInt(r.BadLines), humanInt(r.Versions))
	if r.Outside > 0 {
		fmt.Fprintf(w, ", %s events outside the window", humanInt(r.Outside))
	}
	if !r.First.IsZero() {
		fmt.Fprintf(w, "; %s .. %s", r.First.Format(time.RFC3339), r.Last.Format(time.RFC3339))
	}
	fmt.Fprintf(w, "; %s in %s%s\n", humanBytes(r.Size), dur.Round(time.Millisecond), rate)
	if hidden > 0 {
		fmt.Fprintf(w, "  (%d more bad lines not shown; --max-bad-lines-shown N to see more)\n", hidden)
	}
}

// progressLine draws a one-line progress report on a terminal's stderr.
type progressLine struct {
	w     io.Writer
	on    bool
	drawn bool
}

func (p *progressLine) update(pr audit.Progress) {
	if !p.on {
		return
	}
	pct := ""
	if pr.Size > 0 {
		pct = fmt.Sprintf(" %3.0f%%", 100*float64(pr.Bytes)/float64(pr.Size))
	}
	secs := pr.Elapsed.Seconds()
	if secs <= 0 {
		secs = 1e-9
	}
	termsafe.Fprintf(p.w, "\r\x1b[K%s%s %s %s/s %s records/s", pr.Path, pct, humanBytes(pr.Bytes),
		humanBytes(int64(float64(pr.Bytes)/secs)), humanInt(int64(float64(pr.Records)/secs)))
	p.drawn = true
}

func (p *progressLine) clear() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
}
