package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/faultline/faultline/analyze/objdiff"
	"github.com/faultline/faultline/internal/termsafe"
	"github.com/faultline/faultline/timeline"
)

// detail is a record opened in full: its fields, its evidence and, where
// the store holds versions of its object, the object's change at the
// version standing at the record's instant.
type detail struct {
	rec *timeline.Record
	off int // first line shown

	loaded  bool
	run     *timeline.IngestRun // the run that read the record; nil if unknown
	version *timeline.ObjectVersion
	prev    *timeline.ObjectVersion // the version before it; nil for the first
	changes []objdiff.Change
	err     error
}

type detailMsg struct {
	id int
	d  detail
}

// detailCmd reads what a record's detail shows beyond the record: its
// ingest run and its object's versions.
func (m *Model) detailCmd(r *timeline.Record) func(ctx context.Context, id int) tea.Cmd {
	return func(ctx context.Context, id int) tea.Cmd {
		return func() tea.Msg {
			d := detail{rec: r, loaded: true}
			d.err = loadDetail(ctx, m.store, &d)
			return detailMsg{id: id, d: d}
		}
	}
}

func loadDetail(ctx context.Context, s Store, d *detail) error {
	r := d.rec
	runs, err := s.Runs(ctx)
	if err != nil {
		return err
	}
	for i := range runs {
		if runs[i].ID == r.Evidence.Run {
			d.run = &runs[i]
		}
	}
	o := r.Object
	if o.Resource == "" || o.Name == "" {
		return nil
	}
	vs, err := s.Versions(ctx, timeline.VersionQuery{Group: o.Group, Resource: o.Resource, Namespace: o.Namespace, Name: o.Name, UID: o.UID, History: true})
	if err != nil {
		return err
	}
	// The version the record made (read from the same evidence line), or
	// else the one standing at the record's instant: the latest at or
	// before it.
	at := -1
	for i := range vs {
		if vs[i].Evidence == r.Evidence {
			at = i
			break
		}
		if !vs[i].Time.After(r.Time) {
			at = i
		}
	}
	if at < 0 {
		return nil
	}
	d.version = &vs[at]
	var prevContent []byte
	if at > 0 && vs[at-1].Object.UID == vs[at].Object.UID {
		d.prev = &vs[at-1]
		prevContent = vs[at-1].Content
	}
	if d.prev == nil {
		return nil
	}
	d.changes, err = objdiff.DiffJSON(prevContent, d.version.Content, objdiff.Options{})
	return err
}

// detailView draws the open record, scrolled to d.off, in height lines.
func (m *Model) detailView(height int) string {
	lines := m.detailLines()
	d := m.detail
	d.off = min(d.off, max(len(lines)-height+1, 0))
	head := m.styles.Dim.Render(fmt.Sprintf("record %d  (esc closes; ↑/↓ pgup/pgdown scroll; line %d of %d)", d.rec.ID, d.off+1, len(lines)))
	return head + "\n" + strings.Join(lines[d.off:min(len(lines), d.off+height-1)], "\n")
}

// detailLines are the record's detail, each line escaped and wrapped to the
// screen's width.
func (m *Model) detailLines() []string {
	t := &detailText{styles: m.styles, width: max(m.width-2, 20)}
	m.detailRecord(t)
	t.section("EVIDENCE")
	m.detailEvidence(t)
	t.section("OBJECT DIFF at this version")
	m.detailDiff(t)
	t.section("MORE")
	detailMore(t, m.detail.rec)
	return t.out
}

// detailText gathers the lines of the detail pane: section titles, and
// fields whose values wrap under their label.
type detailText struct {
	styles Styles
	width  int
	out    []string
}

func (t *detailText) line(l string) { t.out = append(t.out, l) }

func (t *detailText) section(title string) { t.out = append(t.out, "", t.styles.Strong.Render(title)) }

// field adds name: value, wrapped under the label; an empty value adds
// nothing.
func (t *detailText) field(name, value string) {
	if value == "" {
		return
	}
	const label = 12
	text := ansi.Hardwrap(termsafe.Field(value), max(t.width-label-2, 10), true)
	for i, l := range strings.Split(text, "\n") {
		if i == 0 {
			t.line(fmt.Sprintf("  %-*s %s", label-1, name, l))
		} else {
			t.line(strings.Repeat(" ", label+2) + l)
		}
	}
}

// detailRecord adds the record's headline and its main fields.
func (m *Model) detailRecord(t *detailText) {
	r := m.detail.rec
	t.line(m.styles.Strong.Render("RECORD") + " " + termsafe.Field(fmt.Sprintf("%s %s %s", r.Source, r.Verb, objectOf(r))))
	t.field("time", stamp(r.Time)+"  ("+r.Time.UTC().Format(time.RFC3339Nano)+")")
	t.field("object", objectOf(r))
	t.field("verb", r.Verb)
	t.field("code", code(r.Code))
	t.field("user", r.User)
	t.field("user agent", r.UserAgent)
	t.field("type", r.Type)
	t.field("reason", r.Reason)
	t.field("message", r.Message)
	if m.bad != nil {
		if bad, err := m.bad.Match(r); err == nil {
			t.field("bad", map[bool]string{true: "yes", false: "no"}[bad])
		}
	}
}

// detailEvidence adds where the record was read: file, run and line.
func (m *Model) detailEvidence(t *detailText) {
	d, r := m.detail, m.detail.rec
	switch {
	case !d.loaded:
		t.line("  " + m.spin.View() + " reading…")
	case d.run != nil:
		t.field("file", d.run.Path)
		t.field("run", fmt.Sprintf("%d (%s ingest)", d.run.ID, d.run.Source))
		if win := d.run.Window(); !win.Unbounded() {
			t.field("window", fmt.Sprintf("the run kept only the requests received %s (%d events left out)", win, d.run.Outside))
		}
		t.field("line", fmt.Sprint(r.Evidence.Line))
	default:
		t.field("run", fmt.Sprintf("%d, line %d (the run is not in the store)", r.Evidence.Run, r.Evidence.Line))
	}
}

// detailDiff adds the object's version at the record and what changed
// from the version before.
func (m *Model) detailDiff(t *detailText) {
	s, d := m.styles, m.detail
	switch {
	case !d.loaded:
		t.line("  " + m.spin.View() + " reading…")
	case d.err != nil:
		t.line(s.Error.Render("  " + oneLine(d.err.Error())))
	case d.version == nil:
		t.line(s.Dim.Render("  no version of this object at or before the record's instant"))
	case d.prev == nil:
		t.field("version", fmt.Sprintf("%s at %s, the first seen: nothing earlier to diff against",
			dashIfEmpty(d.version.ResourceVersion), stamp(d.version.Time)))
	default:
		t.field("version", fmt.Sprintf("%s at %s", dashIfEmpty(d.version.ResourceVersion), stamp(d.version.Time)))
		t.field("from", fmt.Sprintf("%s at %s", dashIfEmpty(d.prev.ResourceVersion), stamp(d.prev.Time)))
		if len(d.changes) == 0 {
			t.line(s.Dim.Render("  no change but noise (status, resourceVersion, managedFields, timestamps)"))
		}
		for _, c := range d.changes {
			line := fmt.Sprintf("%s: %s -> %s", c.Path, dashIfEmpty(c.From), dashIfEmpty(c.To))
			for _, l := range strings.Split(ansi.Hardwrap(termsafe.Field(line), max(t.width-4, 10), true), "\n") {
				t.line("    " + l)
			}
		}
	}
}

// detailMore adds the record's remaining fields.
func detailMore(t *detailText, r *timeline.Record) {
	t.field("source", string(r.Source))
	t.field("kind", r.Object.Kind)
	t.field("api", strings.Trim(r.Object.Group+"/"+r.Object.Version, "/"))
	t.field("uid", r.Object.UID)
	t.field("source ip", r.SourceIP)
	t.field("level", r.Level)
	if r.Latency > 0 {
		t.field("latency", r.Latency.String())
	}
	t.field("stage", r.Stage())
	t.field("audit id", r.AuditID)
	t.field("request", r.URI)
	if len(r.Extra) > 0 {
		t.field("extra", compactJSON(r.Extra))
	}
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}
