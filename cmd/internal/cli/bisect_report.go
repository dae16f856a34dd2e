// The bisect report: what faultline bisect start, good, bad, skip, replay
// and status print about the window, in text or as JSON/YAML.

package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/faultline/faultline/analyze/actor"
	"github.com/faultline/faultline/analyze/bisect"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/internal/termsafe"
	"github.com/faultline/faultline/timeline"
)

// markJSON is the stable JSON form of a mark.
type markJSON struct {
	Kind timeline.BisectKind `json:"kind"`
	Time time.Time           `json:"time"`
	Note string              `json:"note,omitempty"`
	At   time.Time           `json:"at"`
}

type bisectStatusJSON struct {
	Session  int64      `json:"session"`
	Started  time.Time  `json:"started"`
	LastGood *time.Time `json:"lastGood"` // null until marked
	FirstBad *time.Time `json:"firstBad"`
	Next     *time.Time `json:"next"` // null when done or waiting for a bad mark
	Steps    int        `json:"steps"`
	Marks    []markJSON `json:"marks"`
	// Changes are the objects changed inside the window (the latest
	// bisectMaxObjects), newest last, each with who made its last version.
	Changes []windowChangeJSON `json:"changes"`
	// Bad counts the bad observations inside the window, by the outcome
	// classifier (as investigate and timeline --where 'bad' count them).
	Bad int `json:"bad"`
}

// bisectStatus is the session, its window and what changed inside it, for
// bisect status -o json|yaml.
func bisectStatus(ctx context.Context, store timeline.Reader, sess *timeline.BisectSession, first, last time.Time, scope scopeFlags) (*bisectStatusJSON, error) {
	w := bisect.NewWindow(sess.Marks, first, last)
	out := &bisectStatusJSON{Session: sess.ID, Started: sess.Started.UTC(), Steps: w.Steps(), Marks: []markJSON{}}
	opt := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		u := t.UTC()
		return &u
	}
	out.LastGood, out.FirstBad = opt(w.LastGood), opt(w.FirstBad)
	if next, ok := w.Suggest(); ok {
		out.Next = opt(next)
	}
	for _, m := range sess.Marks {
		out.Marks = append(out.Marks, markJSON{Kind: m.Kind, Time: m.Time.UTC(), Note: m.Note, At: m.At.UTC()})
	}
	since, until := w.Span()
	versions, err := store.Versions(ctx, timeline.ChangesBetween(since, until, bisectMaxVersions))
	if err != nil {
		return nil, err
	}
	groups, _, err := windowChanges(ctx, store, scope.versions(versions))
	if err != nil {
		return nil, err
	}
	classified, err := classify(ctx, store, since, until)
	if err != nil {
		return nil, err
	}
	out.Bad = len(scope.observations(classified.Bad))
	out.Changes = []windowChangeJSON{}
	for _, g := range groups {
		out.Changes = append(out.Changes, windowChangeJSON{Kind: g.kind, Name: g.name, Versions: g.n,
			First: g.first.UTC(), Last: g.last.UTC(), By: g.actor.By, UserAgent: g.actor.UserAgent})
	}
	return out, nil
}

// writeBisectMarks prints the session's marks, one a line, for bisect
// status.
func writeBisectMarks(out io.Writer, sess *timeline.BisectSession) error {
	fmt.Fprintf(out, "Bisect session %d, started %s, %d marks:\n", sess.ID, sess.Started.UTC().Format(time.RFC3339), len(sess.Marks))
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	for _, m := range sess.Marks {
		termsafe.Fprintf(tw, "  %s\t%s\tmarked %s", m.Kind, fmtTime(m.Time, rfc3339Nano), m.At.UTC().Format(time.RFC3339))
		if m.Note != "" {
			termsafe.Fprintf(tw, "\t# %s", m.Note)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// printBisectReport prints the window, what changed and happened inside
// it, and the instant to judge next.
func printBisectReport(ctx context.Context, out io.Writer, store timeline.Reader, sess *timeline.BisectSession, first, last time.Time, scope scopeFlags) error {
	w := bisect.NewWindow(sess.Marks, first, last)
	since, until := w.Span()
	versions, err := store.Versions(ctx, timeline.ChangesBetween(since, until, bisectMaxVersions))
	if err != nil {
		return err
	}
	records, err := store.CountRecords(ctx, since, until)
	if err != nil {
		return err
	}
	classified, err := classify(ctx, store, since, until)
	if err != nil {
		return err
	}
	versions, bad := scope.versions(versions), scope.observations(classified.Bad)

	bw := bufio.NewWriter(out)
	writeBisectWindow(bw, w, first, last)
	more := ""
	if len(versions) == bisectMaxVersions {
		more = "+"
	}
	if err := writeWindowChanges(ctx, bw, store, versions, more); err != nil {
		return err
	}
	total := writeWindowRecords(bw, records)
	if err := writeWindowBad(ctx, bw, store, classified, bad, since, until, scope); err != nil {
		return err
	}
	writeBisectNext(bw, w, len(versions), more, total)
	return bw.Flush()
}

// writeBisectWindow prints the window and its bounds, marked or not.
func writeBisectWindow(bw *bufio.Writer, w bisect.Window, first, last time.Time) {
	good := fmtTime(w.LastGood, rfc3339Nano)
	if w.LastGood.IsZero() {
		good = "not marked: the data starts at " + fmtTime(first, rfc3339Nano)
	}
	firstBad := fmtTime(w.FirstBad, rfc3339Nano)
	if w.FirstBad.IsZero() {
		firstBad = "not marked: the data ends at " + fmtTime(last, rfc3339Nano)
	}
	fmt.Fprintf(bw, "Window: %s\n  last good  %s\n  first bad  %s\n", w.Hi.Sub(w.Lo), good, firstBad)
}

// writeWindowChanges prints the object versions of the window, grouped by
// object; more is "+" when there may be more than were read.
func writeWindowChanges(ctx context.Context, bw *bufio.Writer, store timeline.Reader, versions []timeline.ObjectVersion, more string) error {
	groups, earlier, err := windowChanges(ctx, store, versions)
	if err != nil {
		return err
	}
	if len(versions) == 0 {
		fmt.Fprintln(bw, "Changed in the window: no object versions")
		return nil
	}
	nobj := len(groups) + earlier
	fmt.Fprintf(bw, "Changed in the window: %d%s %s of %d%s %s\n", len(versions), more, plural(len(versions), "version"),
		nobj, more, plural(nobj, "object"))
	tw := tabwriter.NewWriter(bw, 0, 8, 2, ' ', 0)
	if earlier > 0 {
		fmt.Fprintf(tw, "  ... %d earlier objects\n", earlier)
	}
	for _, g := range groups {
		unit := plural(g.n, "version")
		when := fmtTime(g.last, rfc3339Nano)
		if g.n > 1 {
			when = fmtTime(g.first, rfc3339Nano) + " .. " + when
		}
		termsafe.Fprintf(tw, "  %s\t%s\t%d %s\t%s\t%s\n", g.kind, g.name, g.n, unit, when, g.actor)
	}
	tw.Flush()
	return nil
}

// writeWindowRecords prints the records of the window by source, and
// returns their total.
func writeWindowRecords(bw *bufio.Writer, records map[timeline.SourceKind]int64) int64 {
	var total int64
	srcs := make([]string, 0, len(records))
	for s, n := range records {
		total += n
		srcs = append(srcs, fmt.Sprintf("%s %s", s, humanInt(n)))
	}
	slices.Sort(srcs)
	if total == 0 {
		fmt.Fprintln(bw, "Records in the window: none")
	} else {
		termsafe.Fprintf(bw, "Records in the window: %s (%s)\n", humanInt(total), strings.Join(srcs, ", "))
	}
	return total
}

// writeWindowBad counts the bad observations of [since, until) and lists
// the first of them, as timeline --where 'bad' would.
func writeWindowBad(ctx context.Context, bw *bufio.Writer, store timeline.Reader, classified *outcome.Outcomes, bad []outcome.Observation,
	since, until time.Time, scope scopeFlags) error {
	if len(bad) == 0 {
		fmt.Fprintln(bw, "Bad in the window: none (as investigate and timeline --where 'bad' count them)")
		return nil
	}
	fmt.Fprintf(bw, "Bad in the window: %s %s (as investigate and timeline --where 'bad' count them); the first:\n",
		humanInt(int64(len(bad))), plural(len(bad), "observation"))
	var tbl strings.Builder
	p := newRecordPrinter(&tbl, "table")
	isBad, err := timeline.CompileFilter(scope.scopedKeepingCluster("bad"))
	if err != nil {
		return err // a constant and a quoted name: a bug
	}
	q := timeline.Query{Since: since, Until: until, Where: isBad, Bad: classified.BadRecordIDs(), Limit: bisectMaxHints}
	for r, err := range withStates(ctx, store, q, classified.States) {
		if err != nil {
			return err
		}
		if err := p.print(r); err != nil {
			return err
		}
	}
	if err := p.close(); err != nil {
		return err
	}
	for line := range strings.Lines(tbl.String()) {
		bw.WriteString("  " + line)
	}
	fmt.Fprintf(bw, "  all of them: faultline timeline --since %s --until %s --where 'bad'\n", fmtTime(since, rfc3339Nano), fmtTime(until, rfc3339Nano))
	return nil
}

// writeBisectNext says what to do next: judge the suggested instant, mark
// a bad one first, or reset when the search is done.
func writeBisectNext(bw *bufio.Writer, w bisect.Window, versions int, more string, records int64) {
	switch next, ok := w.Next(); {
	case w.Done():
		fmt.Fprintf(bw, "First bad instant: %s (the window is %s or less). Run faultline bisect reset when done.\n",
			fmtTime(w.FirstBad, rfc3339Nano), bisect.Resolution)
	case w.FirstBad.IsZero():
		fmt.Fprintln(bw, "Waiting for a bad instant: the first you know the incident was under way.")
		fmt.Fprintln(bw, "next: faultline bisect bad INSTANT   (end: the end of the data)")
	case ok:
		fmt.Fprintf(bw, "Bisecting: %d%s %s and %s %s left to test (roughly %d %s to a %s window)\n",
			versions, more, plural(versions, "version"), humanInt(records), plural(int(records), "record"),
			w.Steps(), plural(w.Steps(), "step"), bisect.Resolution)
		fmt.Fprintf(bw, "next: faultline bisect good|bad %s\n", fmtTime(next, rfc3339Nano))
	default:
		fmt.Fprintln(bw, "Nothing left to test between the marks and skips.")
	}
}

// versionGroup is one object's versions inside a window.
type versionGroup struct {
	kind, name  string
	n           int
	first, last time.Time
	latest      timeline.ObjectVersion // the last version, whose actor is named
	actor       actor.Actor
}

// windowChangeJSON is one object changed inside a bisect window.
type windowChangeJSON struct {
	Kind      string    `json:"kind"`
	Name      string    `json:"name"` // namespace/name
	Versions  int       `json:"versions"`
	First     time.Time `json:"first"`
	Last      time.Time `json:"last"`
	By        string    `json:"by,omitempty"` // who made the last version; empty: no audit record
	UserAgent string    `json:"userAgent,omitempty"`
}

// windowChanges groups the versions of a window by object, newest last,
// at most bisectMaxObjects of them, each with who made its last version.
func windowChanges(ctx context.Context, store timeline.Reader, versions []timeline.ObjectVersion) (groups []versionGroup, earlier int, err error) {
	groups = groupVersions(versions)
	if len(groups) > bisectMaxObjects {
		earlier = len(groups) - bisectMaxObjects
		groups = groups[earlier:]
	}
	for i := range groups {
		if groups[i].actor, err = actor.OfVersion(ctx, store, &groups[i].latest); err != nil {
			return nil, 0, err
		}
	}
	return groups, earlier, nil
}

// groupVersions groups versions (oldest first) by object, ordered by their
// latest version, newest last.
func groupVersions(vs []timeline.ObjectVersion) []versionGroup {
	idx := map[string]int{}
	var out []versionGroup
	for _, v := range vs {
		o := v.Object
		kind := o.Kind
		if kind == "" {
			kind = o.Resource
		}
		name := o.Name
		if o.Namespace != "" {
			name = o.Namespace + "/" + name
		}
		key := kind + "\x00" + name
		i, ok := idx[key]
		if !ok {
			i = len(out)
			idx[key] = i
			out = append(out, versionGroup{kind: kind, name: name, first: v.Time})
		}
		out[i].n++
		out[i].last, out[i].latest = v.Time, v
	}
	slices.SortStableFunc(out, func(a, b versionGroup) int {
		if c := a.last.Compare(b.last); c != 0 {
			return c
		}
		if c := strings.Compare(a.kind, b.kind); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	return out
}
