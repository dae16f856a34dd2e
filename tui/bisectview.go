package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/faultline/faultline/analyze/bisect"
	"github.com/faultline/faultline/internal/termsafe"
	"github.com/faultline/faultline/timeline"
)

// bisectMaxVersions is how many of the versions changed in the bisect
// window the bisect screen reads.
const bisectMaxVersions = 1000

type bisectMsg struct {
	id       int
	versions []timeline.ObjectVersion
	more     bool
	err      error
}

// search is the bisect window the marks leave over the data held, as
// faultline bisect sees it (zero before the bounds are read).
func (m *Model) search() (bisect.Window, bool) {
	if m.first.IsZero() {
		return bisect.Window{}, false
	}
	var marks []timeline.BisectMark
	if m.session != nil {
		marks = m.session.Marks
	}
	return bisect.NewWindow(marks, m.first, m.last.Add(-time.Nanosecond)), true
}

// nextInstant is the instant to judge next, as faultline bisect suggests
// it: only once a bad instant is marked.
func (m *Model) nextInstant() (time.Time, bool) {
	w, ok := m.search()
	if !ok {
		return time.Time{}, false
	}
	return w.Suggest()
}

// nextLine says what to judge next, in a line.
func (m *Model) nextLine() string {
	w, ok := m.search()
	if !ok {
		return "bisect: reading the timeline…"
	}
	switch next, found := w.Next(); {
	case w.Done():
		return fmt.Sprintf("bisect done: the first bad instant is %s (window %s or less)", clock(w.FirstBad), bisect.Resolution)
	case w.FirstBad.IsZero():
		return "bisect: mark a bad instant first (b on a bucket the incident was under way)"
	case found:
		return fmt.Sprintf("bisect %s .. %s  next %s (n)  ~%d %s", clock(w.LastGood), clock(w.FirstBad),
			clock(next), w.Steps(), plural(w.Steps(), "step"))
	}
	return "bisect: nothing left to test between the marks and skips"
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// bisectCmd reads the versions changed inside the window.
func (m *Model) bisectCmd(ctx context.Context, id int) tea.Cmd {
	w, ok := m.search()
	if !ok {
		return nil
	}
	since, until := w.Span()
	return func() tea.Msg {
		vs, more, err := latestVersions(ctx, m.store, since, until)
		return bisectMsg{id: id, versions: vs, more: more, err: err}
	}
}

// latestVersions returns the versions of [since, until), newest first: all
// of them, or when there are more than bisectMaxVersions, those of the
// latest span that holds fewer (the store reads versions oldest first).
func latestVersions(ctx context.Context, s Store, since, until time.Time) ([]timeline.ObjectVersion, bool, error) {
	from, more := since, false
	for {
		vs, err := s.Versions(ctx, timeline.ChangesBetween(from, until, bisectMaxVersions))
		if err != nil {
			return nil, false, err
		}
		if len(vs) < bisectMaxVersions || until.Sub(from) < 2 {
			slices.Reverse(vs)
			return vs, more, nil
		}
		more = true
		from = from.Add(until.Sub(from) / 2)
	}
}

// bisectView is the bisect session: the window, the instant to judge next,
// the marks, and the object versions changed inside the window.
func (m *Model) bisectView(height int) string {
	s := m.styles
	w, ok := m.search()
	if !ok {
		return m.waiting(opBounds, "the timeline's bounds")
	}
	var b strings.Builder
	good, bad := clock(w.LastGood), clock(w.FirstBad)
	if w.LastGood.IsZero() {
		good = "not marked (data from " + clock(m.first) + ")"
	}
	if w.FirstBad.IsZero() {
		bad = "not marked (data to " + clock(m.last) + ")"
	}
	sess := "no session: g, b or s on the timeline (1) marks its cursor's bucket"
	if m.session != nil {
		sess = fmt.Sprintf("session %d, %d %s", m.session.ID, len(m.session.Marks), plural(len(m.session.Marks), "mark"))
	}
	b.WriteString(s.Strong.Render("BISECT") + " " + sess + "\n")
	b.WriteString(fmt.Sprintf("  last good %s\n  first bad %s   window %s\n", good, bad, span(w.Hi.Sub(w.Lo))))
	next := m.nextLine()
	if t, ok := m.nextInstant(); ok {
		next = fmt.Sprintf("judge %s: n on the timeline (1) jumps there, then g or b; ~%d %s left", clock(t), w.Steps(), plural(w.Steps(), "step"))
	}
	b.WriteString(s.Strong.Render("NEXT") + " " + next + "\n")
	lines := 4
	if m.session != nil && len(m.session.Marks) > 0 {
		marks := m.session.Marks
		shown := min(len(marks), 3)
		b.WriteString(s.Strong.Render("MARKS") + fmt.Sprintf(" (latest %d of %d)\n", shown, len(marks)))
		for _, mk := range marks[len(marks)-shown:] {
			b.WriteString(termsafe.Field(fmt.Sprintf("  %-4s %s  %s", mk.Kind, stamp(mk.Time), mk.Note)) + "\n")
		}
		lines += 1 + shown
	}
	what := fmt.Sprintf(" %d %s, newest first (↑/↓ scroll)\n", len(m.bisectVersions), plural(len(m.bisectVersions), "object version"))
	if m.bisectMore {
		what = fmt.Sprintf(" the latest %d object versions (↑/↓ scroll)\n", len(m.bisectVersions))
	}
	b.WriteString(s.Strong.Render("CHANGED IN THE WINDOW") + what)
	lines++
	if len(m.bisectVersions) == 0 {
		if m.ops[opBisect] != nil {
			b.WriteString("  " + m.spin.View() + " reading…\n")
		} else {
			b.WriteString(s.Dim.Render("  no object version in the window") + "\n")
		}
		return b.String()
	}
	t := newTable(m.width, []column{{title: "TIME", want: 12, min: 12}, {title: "KIND", want: 14, min: 8},
		{title: "OBJECT", min: 20, flex: true}, {title: "VERSION", want: 10, min: 0}}, 1, 3)
	b.WriteString(s.Header.Render(t.header()) + "\n")
	lines++
	room := max(height-lines, 1)
	from := scrollFrom(m.bisectSel, room, len(m.bisectVersions))
	for i := from; i < len(m.bisectVersions) && i < from+room; i++ {
		v := &m.bisectVersions[i]
		kind := v.Object.Kind
		if kind == "" {
			kind = v.Object.Resource
		}
		name := v.Object.Name
		if v.Object.Namespace != "" {
			name = v.Object.Namespace + "/" + name
		}
		line := t.row(clock(v.Time), kind, name, v.ResourceVersion)
		if i == m.bisectSel {
			line = s.Selected.Render(line)
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// scrollFrom is the first row of a list of n rows shown room at a time so
// that row sel is in view (the list scrolls as the selection moves).
func scrollFrom(sel, room, n int) int {
	return max(min(sel-room+1, n-room), 0)
}
