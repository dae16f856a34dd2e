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

	"github.com/faultline/faultline/analyze/bisect"
	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/internal/termsafe"
	"github.com/faultline/faultline/timeline"
)

// bisect tuning: how much of the window the report lists.
const (
	bisectMaxVersions = 10_000 // versions read from a window
	bisectMaxObjects  = 25     // objects listed as changed
	bisectMaxHints    = 5      // bad observations listed
)

type bisectOptions struct {
	f      *Factory
	good   string // start --good
	bad    string // start --bad
	note   string
	output string
	scope  scopeFlags // status: -n/-A
}

func newBisectCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bisect",
		Short: "Find the earliest known-bad instant of an incident, like git bisect",
		Long: `Find the earliest known-bad instant of an incident.

Run bare, bisect searches the timeline for the change point by itself: the
instant where the rate of bad observations departs from its baseline (a lone
failure long before is noise), with the last known-good instant before it
and the evidence at each side (--bad, --good, --since, --until, -o json). Its
subcommands let you search by hand, in git bisect's words: mark instants you
have judged good (the incident had not begun) or bad (it was under way), and
faultline narrows the window between the last good and the first bad
instant, lists what changed inside it (object versions, records by source,
the first bad-looking records) and suggests the midpoint to judge next,
until the window is a second wide.

Instants are RFC 3339 times (2026-05-01T10:03:00Z), durations counted back
from the end of the data (15m), or "end" (also "now") for the end of the
data. The session is kept in the timeline database, so it survives across
shells and the TUI shows the same marks.`,
		Example: `  # Let faultline find the boundary
  faultline bisect
  faultline bisect --bad 'reason == "OOMKilled" || code == 429' -o json

  # Start a session: the incident was on at the end of the data, not at 10:00
  faultline bisect start --bad end --good 2026-05-01T10:00:00Z

  # Judge the suggested instants, with a note on the evidence you used
  faultline bisect bad 2026-05-01T10:15:00Z --note "trainer pods in CrashLoopBackOff"
  faultline bisect good 2026-05-01T10:07:30Z
  faultline bisect skip 2026-05-01T10:11:15Z --note "no metrics for this minute"

  # Where do we stand; save the session, replay it later or elsewhere
  faultline bisect status
  faultline bisect log > bisect.log
  faultline bisect replay bisect.log

  # End the session
  faultline bisect reset`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("faultline bisect --help", "unknown bisect command %q: want start, good, bad, skip, status, log, replay or reset", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAutoBisect(cmd, f)
		},
	}
	(&investigateFlags{}).add(cmd, "text, json or yaml")
	addNoHeaders(cmd, f)
	cmd.AddCommand(newBisectStartCmd(f), newBisectMarkCmd(f, timeline.BisectGood), newBisectMarkCmd(f, timeline.BisectBad),
		newBisectMarkCmd(f, timeline.BisectSkip), newBisectStatusCmd(f), newBisectLogCmd(f), newBisectReplayCmd(f),
		newBisectResetCmd(f))
	return cmd
}

func newBisectStartCmd(f *Factory) *cobra.Command {
	opts := &bisectOptions{f: f}
	cmd := &cobra.Command{
		Use:   "start [--bad T] [--good T]",
		Short: "Start a bisect session, optionally with its first marks",
		Long: `Start a bisect session. A session already open is replaced (its marks stay
in the database, no longer open); faultline says so on stderr.

--bad and --good mark the first instants, as "faultline bisect bad" and
"faultline bisect good" would.`,
		Example: `  # The incident was under way at the end of the data, and not an hour before
  faultline bisect start --bad end --good 1h

  # Only what you know so far
  faultline bisect start --bad 2026-05-01T10:15:00Z`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return bisectStartRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.bad, "bad", "", "an instant the incident was under way (RFC 3339, a duration back from the end of the data, or end)")
	cmd.Flags().StringVar(&opts.good, "good", "", "an instant the incident had not begun")
	return cmd
}

func newBisectMarkCmd(f *Factory, kind timeline.BisectKind) *cobra.Command {
	opts := &bisectOptions{f: f}
	var short, long, example string
	switch kind {
	case timeline.BisectGood:
		short = "Mark an instant at which the incident had not begun"
		long = `Mark an instant good: the incident had not begun. It must be before every
instant marked bad.`
		example = `  faultline bisect good 2026-05-01T10:07:30Z
  faultline bisect good 45m --note "all trainer pods Running"`
	case timeline.BisectBad:
		short = "Mark an instant at which the incident was under way"
		long = `Mark an instant bad: the incident was under way. It must be after every
instant marked good.`
		example = `  faultline bisect bad 2026-05-01T10:15:00Z --note "CrashLoopBackOff on 3 workers"
  faultline bisect bad end`
	case timeline.BisectSkip:
		short = "Mark an instant that cannot be judged"
		long = `Mark an instant skipped: the evidence cannot tell whether the incident had
begun. The window does not change; the next suggestion steers clear of it.`
		example = `  faultline bisect skip 2026-05-01T10:11:15Z --note "monitoring gap"`
	}
	cmd := &cobra.Command{
		Use:   string(kind) + " INSTANT",
		Short: short,
		Long: long + `

INSTANT is an RFC 3339 time (2026-05-01T10:03:00Z), a duration counted back
from the end of the data (15m), or "end" (also "now") for the end of the
data. After the mark faultline prints the narrowed window, what changed
inside it, and the instant to judge next.`,
		Example: example,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("faultline bisect "+string(kind)+" 2026-05-01T10:03:00Z",
					"%s takes one instant, got %d arguments", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return bisectMarkRun(cmd.Context(), opts, kind, args[0])
		},
	}
	cmd.Flags().StringVar(&opts.note, "note", "", "why: the evidence you judged by (shown in log and status)")
	return cmd
}

func newBisectStatusCmd(f *Factory) *cobra.Command {
	opts := &bisectOptions{f: f}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the bisect session: its marks, the window and what changed inside",
		Example: `  faultline bisect status
  faultline bisect status -o json | jq .firstBad`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return bisectStatusRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.output, "output", "o", "table", "output format: table, json or yaml")
	opts.scope.add(cmd.Flags(), "the changes and bad observations (cluster-scoped objects such as nodes always count)")
	return cmd
}

func newBisectLogCmd(f *Factory) *cobra.Command {
	opts := &bisectOptions{f: f}
	return &cobra.Command{
		Use:   "log",
		Short: "Print the bisect session as commands that replay it",
		Long: `Print the bisect session as the commands that make it, one per line, notes
as trailing comments, like git bisect log. Save it to share the
investigation, edit out a wrong mark, and feed it to "faultline bisect
replay".`,
		Example: `  faultline bisect log > bisect.log
  faultline bisect log | grep -v 10:11:15 | faultline bisect replay -`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return bisectLogRun(cmd.Context(), opts)
		},
	}
}

func newBisectReplayCmd(f *Factory) *cobra.Command {
	opts := &bisectOptions{f: f}
	return &cobra.Command{
		Use:   "replay FILE",
		Short: "Start a new bisect session from a bisect log",
		Long: `Start a new bisect session (replacing the open one) and make the marks a
bisect log lists. Blank lines and lines starting with # are ignored; a
trailing "# text" is the mark's note. The whole file is checked before
anything is written: a line that is not a bisect command, or a mark that
contradicts the earlier ones, is reported as FILE:LINE and nothing changes.
FILE - reads stdin.`,
		Example: `  faultline bisect replay bisect.log
  faultline bisect log | sed '/10:11:15/d' | faultline bisect replay -`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("faultline bisect replay bisect.log", "%s takes one file (- for stdin), got %d arguments", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return bisectReplayRun(cmd.Context(), opts, args[0])
		},
	}
}

func newBisectResetCmd(f *Factory) *cobra.Command {
	opts := &bisectOptions{f: f}
	return &cobra.Command{
		Use:   "reset",
		Short: "End the bisect session",
		Long: `End the bisect session. Its marks stay in the database, no longer open;
"faultline bisect log" before a reset keeps a replayable copy.`,
		Example: `  faultline bisect log > bisect.log && faultline bisect reset`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return bisectResetRun(cmd.Context(), opts)
		},
	}
}

// openBisectStore opens the timeline for writing marks; unlike OpenStore
// it refuses to create a database, since a session needs evidence.
func openBisectStore(ctx context.Context, f *Factory) (timeline.Store, error) {
	if f.storeDSN != "" {
		return f.OpenStore(ctx) // an empty one is refused by dataBounds
	}
	if _, err := os.Stat(f.dbPath); err != nil {
		return nil, usagef("faultline ingest audit --db "+f.dbPath+" audit.log",
			"no timeline at %s: ingest some evidence first, or point --db (or FAULTLINE_DB) at one", f.dbPath)
	}
	return f.OpenStore(ctx)
}

// openBisectData opens the timeline for marks, with the first and last
// instants of its evidence; an empty timeline is refused.
func openBisectData(ctx context.Context, f *Factory) (store timeline.Store, first, last time.Time, err error) {
	if store, err = openBisectStore(ctx, f); err != nil {
		return nil, first, last, err
	}
	if first, last, err = dataBounds(ctx, f, store); err != nil {
		store.Close()
		return nil, first, last, err
	}
	return store, first, last, nil
}

// dataBounds returns the first and last instants of evidence, refusing an
// empty timeline.
func dataBounds(ctx context.Context, f *Factory, store timeline.Reader) (first, last time.Time, err error) {
	first, last, err = store.Bounds(ctx)
	if err != nil {
		return first, last, err
	}
	if last.IsZero() {
		return first, last, usagef("faultline ingest audit "+f.storeFlag()+" audit.log",
			"the timeline at %s holds no evidence to bisect: ingest some first", f.storeName())
	}
	return first, last, nil
}

var errNoBisect = usagef("faultline bisect start --bad end", "no bisect session: run `faultline bisect start`")

// openSession returns the open session or the no-session error.
func openSession(ctx context.Context, store timeline.BisectLog) (*timeline.BisectSession, error) {
	sess, err := store.Bisect(ctx)
	if err != nil {
		return nil, err
	}
	if sess == nil {
		return nil, errNoBisect
	}
	return sess, nil
}

// parseInstant reads an instant: RFC 3339, a duration back from the end of
// the data, or end/now. flag names the flag it came from ("" for an
// argument), for the error.
func parseInstant(flag, s string, end time.Time) (time.Time, error) {
	switch strings.ToLower(s) {
	case "end", "now":
		return end.UTC(), nil
	}
	t, err := parseWhen(flag, s, end)
	if s == "" || err != nil {
		what := instantName(flag)
		return time.Time{}, usagef("faultline bisect bad 2026-05-01T10:03:00Z",
			"invalid %s %q: want RFC 3339 (2026-05-01T10:03:00Z), a duration back from the end of the data (15m), or end", what, s)
	}
	if err := timeline.CheckTime(t); err != nil {
		return time.Time{}, usagef("faultline bisect bad 2026-05-01T10:03:00Z", "invalid %s %q: %v", instantName(flag), s, err)
	}
	return t.UTC(), nil
}

// instantName names where an instant came from, for an error.
func instantName(flag string) string {
	if flag != "" {
		return "--" + flag
	}
	return "instant"
}

// checkMark refuses a mark that contradicts the others (bisect.Check) with
// a usage error that says how to review them.
func checkMark(marks []timeline.BisectMark, m timeline.BisectMark) error {
	if err := bisect.Check(marks, m); err != nil {
		return usagef("faultline bisect log (to review the marks), or faultline bisect start to begin again", "%v", err)
	}
	return nil
}

// notes says, on stderr, what a valid mark does not do: narrow the window,
// or fall inside the data.
func markNotes(w io.Writer, marks []timeline.BisectMark, m timeline.BisectMark, first, last time.Time) {
	lastGood, firstBad := bisect.Bounds(marks)
	switch {
	case m.Kind == timeline.BisectGood && !lastGood.IsZero() && !m.Time.After(lastGood):
		fmt.Fprintf(w, "note: good %s does not narrow the window: the last good instant is %s\n", fmtTime(m.Time, rfc3339Nano), fmtTime(lastGood, rfc3339Nano))
	case m.Kind == timeline.BisectBad && !firstBad.IsZero() && !m.Time.Before(firstBad):
		fmt.Fprintf(w, "note: bad %s does not narrow the window: the first bad instant is %s\n", fmtTime(m.Time, rfc3339Nano), fmtTime(firstBad, rfc3339Nano))
	}
	if m.Time.Before(first) || m.Time.After(last) {
		fmt.Fprintf(w, "note: %s is outside the data (%s .. %s)\n", fmtTime(m.Time, rfc3339Nano), fmtTime(first, rfc3339Nano), fmtTime(last, rfc3339Nano))
	}
}

func bisectStartRun(ctx context.Context, opts *bisectOptions) error {
	f := opts.f
	store, first, last, err := openBisectData(ctx, f)
	if err != nil {
		return err
	}
	defer store.Close()
	now := f.Now()
	var marks []timeline.BisectMark
	for _, fl := range []struct {
		kind timeline.BisectKind
		val  string
	}{{timeline.BisectBad, opts.bad}, {timeline.BisectGood, opts.good}} {
		if fl.val == "" {
			continue
		}
		t, err := parseInstant(string(fl.kind), fl.val, last)
		if err != nil {
			return err
		}
		m := timeline.BisectMark{Kind: fl.kind, Time: t, At: now}
		if err := checkMark(marks, m); err != nil {
			return err
		}
		markNotes(f.IO.ErrOut, marks, m, first, last)
		marks = append(marks, m)
	}
	sess, err := startSession(ctx, f, store, now, marks)
	if err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "Started bisect session %d.\n", sess.ID)
	return printBisectReport(ctx, f.IO.Out, store, sess, first, last, scopeFlags{})
}

func bisectMarkRun(ctx context.Context, opts *bisectOptions, kind timeline.BisectKind, arg string) error {
	f := opts.f
	store, err := openBisectStore(ctx, f)
	if err != nil {
		return err
	}
	defer store.Close()
	sess, err := openSession(ctx, store)
	if err != nil {
		return err
	}
	first, last, err := dataBounds(ctx, f, store)
	if err != nil {
		return err
	}
	t, err := parseInstant("", arg, last)
	if err != nil {
		return err
	}
	m := timeline.BisectMark{Session: sess.ID, Kind: kind, Time: t, Note: cleanNote(opts.note), At: f.Now()}
	if err := checkMark(sess.Marks, m); err != nil {
		return err
	}
	markNotes(f.IO.ErrOut, sess.Marks, m, first, last)
	if err := store.AddBisectMark(ctx, m); err != nil {
		if errors.Is(err, timeline.ErrNoBisect) { // reset or replaced meanwhile
			return errNoBisect
		}
		return err
	}
	sess.Marks = append(sess.Marks, m)
	fmt.Fprintf(f.IO.ErrOut, "Marked %s %s.\n", kind, fmtTime(t, rfc3339Nano))
	return printBisectReport(ctx, f.IO.Out, store, sess, first, last, scopeFlags{})
}

func bisectStatusRun(ctx context.Context, opts *bisectOptions) error {
	f := opts.f
	if err := checkOutput(opts.output, "table", "json", "yaml"); err != nil {
		return err
	}
	store, err := f.OpenStoreReadOnly(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	sess, err := openSession(ctx, store)
	if err != nil {
		return err
	}
	first, last, err := dataBounds(ctx, f, store)
	if err != nil {
		return err
	}
	if structured(opts.output) {
		out, err := bisectStatus(ctx, store, sess, first, last, opts.scope)
		if err != nil {
			return err
		}
		return f.writeData(opts.output, out)
	}
	if err := writeBisectMarks(f.IO.Out, sess); err != nil {
		return err
	}
	return printBisectReport(ctx, f.IO.Out, store, sess, first, last, opts.scope)
}

func bisectLogRun(ctx context.Context, opts *bisectOptions) error {
	store, err := opts.f.OpenStoreReadOnly(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	sess, err := openSession(ctx, store)
	if err != nil {
		return err
	}
	_, err = io.WriteString(opts.f.IO.Out, bisectLog(sess.Marks))
	return err
}

func bisectReplayRun(ctx context.Context, opts *bisectOptions, file string) error {
	f := opts.f
	var (
		r    io.Reader = f.IO.In
		name           = "stdin"
	)
	if file != "-" {
		fh, err := os.Open(file)
		if err != nil {
			return err
		}
		defer fh.Close()
		r, name = fh, file
	}
	lines, err := parseBisectLog(name, r)
	if err != nil {
		return err
	}
	// Only the last session of the log survives a replay.
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i].start {
			lines = lines[i+1:]
			break
		}
	}
	store, first, last, err := openBisectData(ctx, f)
	if err != nil {
		return err
	}
	defer store.Close()
	now := f.Now()
	var marks []timeline.BisectMark
	for _, l := range lines {
		t, err := parseInstant("", l.instant, last)
		if err != nil {
			return atLine(name, l.line, err)
		}
		m := timeline.BisectMark{Kind: l.kind, Time: t, Note: cleanNote(l.note), At: now}
		if err := checkMark(marks, m); err != nil {
			return atLine(name, l.line, err)
		}
		marks = append(marks, m)
	}
	sess, err := startSession(ctx, f, store, now, marks)
	if err != nil {
		return err
	}
	termsafe.Fprintf(f.IO.ErrOut, "Replayed %d marks from %s into bisect session %d.\n", len(marks), name, sess.ID)
	return printBisectReport(ctx, f.IO.Out, store, sess, first, last, scopeFlags{})
}

func bisectResetRun(ctx context.Context, opts *bisectOptions) error {
	f := opts.f
	store, err := openBisectStore(ctx, f)
	if err != nil {
		return err
	}
	defer store.Close()
	sess, err := store.Bisect(ctx)
	if err != nil {
		return err
	}
	if sess == nil {
		fmt.Fprintln(f.IO.ErrOut, "No bisect session to reset.")
		return nil
	}
	if _, err := store.ResetBisect(ctx, f.Now()); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "Ended bisect session %d (%d marks kept in the database).\n", sess.ID, len(sess.Marks))
	return nil
}

// startSession replaces any open session with a new one holding marks, in
// one transaction, and says on stderr which session it replaced.
func startSession(ctx context.Context, f *Factory, store timeline.BisectLog, now time.Time, marks []timeline.BisectMark) (*timeline.BisectSession, error) {
	sess, old, err := bisect.Start(ctx, store, now, marks)
	if err != nil {
		return nil, err
	}
	if old != nil {
		fmt.Fprintf(f.IO.ErrOut, "Replacing bisect session %d (%d marks; they stay in the database).\n", old.ID, len(old.Marks))
	}
	return sess, nil
}

func runAutoBisect(cmd *cobra.Command, f *Factory) error {
	fl := flagsOf(cmd)
	rep, err := fl.run(cmd.Context(), f)
	if err != nil {
		return err
	}
	if structured(fl.output) {
		return f.writeData(fl.output, struct {
			SchemaVersion int                   `json:"schemaVersion"`
			Boundary      *investigate.Boundary `json:"boundary"`
		}{rep.SchemaVersion, rep.Boundary})
	}
	b := rep.Boundary
	if b == nil {
		termsafe.Fprintf(f.IO.Out, "Nothing bad in the evidence (bad = %s).\n", rep.Bad)
		return nil
	}
	ew := &errWriter{w: f.IO.Out}
	ew.printf("last known-good  %s\nearliest bad     %s\n", fmtTime(b.LastGood, rfc3339Milli), fmtTime(b.FirstBad, rfc3339Milli))
	ew.printf("the bad rate rises from %.3g/s to %.3g/s there (log-likelihood ratio %.1f); %d bad observation(s) before it are baseline noise\n\n",
		b.BaselineRate, b.IncidentRate, b.Score, b.Noise)
	tw := tabwriter.NewWriter(f.IO.Out, 0, 8, 2, ' ', 0)
	f.header(tw, "SIDE\tTIME\tOBJECT\tWHAT\tEVIDENCE")
	for _, e := range b.Evidence {
		termsafe.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Side, fmtTime(e.Time, rfc3339Milli), e.Ref, e.What, investigate.EvidenceLink(e.Record, e.Run, e.Line))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ew.printf("\nMark instants yourself with faultline bisect start|good|bad; see what changed with faultline diff.\n")
	return ew.err
}
