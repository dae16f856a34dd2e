package tui

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/faultline/faultline/timeline"
)

// Update routes a message to its handler.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		return m, m.resize(msg.Width, msg.Height)
	case tea.KeyMsg:
		if m.filtering {
			return m, m.filterKey(msg)
		}
		return m, m.key(msg)
	case spinner.TickMsg:
		var cmd tea.Cmd
		m.spin, cmd = m.spin.Update(msg)
		return m, cmd
	case boundsMsg:
		return m, m.onBounds(msg)
	case histMsg:
		return m, m.onHistogram(msg)
	case rowsMsg:
		if m.finish(opRows, msg.id) {
			if m.fail(msg.err) {
				return m, nil
			}
			m.rows, m.rowSel = msg.rows, min(m.rowSel, max(len(msg.rows)-1, 0))
		}
	case reportMsg:
		if m.finish(opInvestigate, msg.id) && !m.fail(msg.err) {
			m.rep, m.diffSel, m.expanded = msg.rep, 0, map[int]bool{}
			m.status = "investigation ready"
			if next, ok := m.nextInstant(); ok {
				m.status += "; bisect: judge " + clock(next) + " next (n jumps there)"
			}
		}
	case detailMsg:
		if m.finish(opDetail, msg.id) && m.detail != nil && m.detail.rec == msg.d.rec {
			msg.d.off = m.detail.off
			*m.detail = msg.d
		}
	case bisectMsg:
		if m.finish(opBisect, msg.id) && !m.fail(msg.err) {
			m.bisectVersions, m.bisectMore = msg.versions, msg.more
			m.bisectSel = min(m.bisectSel, max(len(msg.versions)-1, 0))
		}
	case cpMsg:
		if m.finish(opControlPlane, msg.id) && !m.fail(msg.err) {
			m.cp = msg.rep
		}
	case sessionMsg:
		return m, m.onSession(msg)
	case exportMsg:
		if m.finish(opExport, msg.id) && !m.fail(msg.err) {
			m.status = "wrote " + msg.path
		}
	}
	return m, nil
}

// fail shows err in the status line and reports whether there was one.
func (m *Model) fail(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, context.Canceled):
		m.status, m.errMsg = "cancelled", ""
	default:
		m.errMsg = err.Error()
	}
	return true
}

func (m *Model) resize(w, h int) tea.Cmd {
	m.width, m.height = w, h
	m.help.Width = w
	m.input.Width = max(w-4, 10)
	if m.since.IsZero() {
		return nil
	}
	return m.rebucket(m.since, m.until)
}

func (m *Model) onBounds(msg boundsMsg) tea.Cmd {
	if !m.finish(opBounds, msg.id) || m.fail(msg.err) {
		return nil
	}
	if msg.last.IsZero() {
		m.errMsg = "the timeline is empty: ingest evidence first (faultline ingest --help)"
		return nil
	}
	m.first, m.last = msg.first, msg.last.Add(time.Nanosecond) // the last record is inside
	return tea.Batch(m.rebucket(m.first, m.last), m.start(opBisect, "reading the bisect window's changes", m.bisectCmd))
}

// rebucket shows [since, until) in as many buckets as the screen has
// columns, keeping the cursor on the instant it was on, and counts them.
func (m *Model) rebucket(since, until time.Time) tea.Cmd {
	var at time.Time
	if m.cursor < len(m.buckets) {
		at = m.buckets[m.cursor].Start
	}
	m.since, m.until = since, until
	n := max(m.histWidth(), 1)
	width := until.Sub(since) / time.Duration(n)
	if width < 1 {
		n, width = max(int(until.Sub(since)), 1), 1
	}
	m.buckets = make([]timeline.Bucket, n)
	for i := range m.buckets {
		end := since.Add(time.Duration(i+1) * width)
		if i == n-1 {
			end = until
		}
		m.buckets[i] = timeline.Bucket{Start: since.Add(time.Duration(i) * width), End: end}
	}
	m.loaded, m.badLoaded = 0, 0
	m.cursor = max(bucketOf(m.buckets, at), 0)
	m.anchor, m.rowSel = nil, 0
	return tea.Batch(m.start(opHistogram, "counting records", m.histogramCmd(0, false)), m.fetchRows())
}

func (m *Model) onHistogram(msg histMsg) tea.Cmd {
	if m.ops[opHistogram] == nil || m.ops[opHistogram].id != msg.id {
		return nil
	}
	if msg.err != nil {
		m.finish(opHistogram, msg.id)
		m.fail(msg.err)
		return nil
	}
	for i, n := range msg.counts {
		if msg.bad {
			m.buckets[msg.from+i].Bad = n
		} else {
			m.buckets[msg.from+i].All = n
		}
	}
	done := msg.from + len(msg.counts)
	bad := msg.bad
	if bad {
		m.badLoaded = done
	} else {
		m.loaded = done
	}
	if len(msg.counts) == 0 || done >= len(m.buckets) {
		if bad || m.badWhere == nil {
			m.badLoaded = m.loaded
			m.finish(opHistogram, msg.id)
			return nil
		}
		done, bad = 0, true // all counted: now the bad
		m.ops[opHistogram].what = "counting bad records"
	}
	o := m.ops[opHistogram]
	ctx, cancel := context.WithCancel(m.ctx)
	o.cancel()
	o.cancel = cancel
	return m.histogramCmd(done, bad)(ctx, o.id)
}

func (m *Model) onSession(msg sessionMsg) tea.Cmd {
	if !m.finish(opMark, msg.id) {
		return nil
	}
	if msg.session != nil || msg.err == nil {
		changed := !sameMarks(m.session, msg.session)
		m.session = msg.session
		if msg.err == nil && msg.note != "" {
			m.status, m.errMsg = msg.note+": re-investigating the narrowed window", ""
			if next, ok := m.nextInstant(); ok {
				m.status = msg.note + "; judge " + clock(next) + " next (n jumps there, 5 shows the window)"
			}
		}
		if changed && !m.first.IsZero() {
			m.bisectSel = 0
			cmd := m.start(opBisect, "reading the bisect window's changes", m.bisectCmd)
			if msg.note != "" {
				cmd = tea.Batch(cmd, m.start(opInvestigate, "investigating the narrowed window", m.investigateCmd))
			}
			return cmd
		}
	}
	m.fail(msg.err)
	return nil
}

func sameMarks(a, b *timeline.BisectSession) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.ID == b.ID && len(a.Marks) == len(b.Marks)
}

// rowsShown is how many record rows the timeline screen has room for.
func (m *Model) rowsShown() int { return max(m.height-m.histHeight()-10, 1) }

func (m *Model) fetchRows() tea.Cmd {
	return m.start(opRows, "reading records", m.rowsCmd(m.rowsShown()))
}

func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	m.errMsg = "" // shown until the next key
	switch {
	case key.Matches(msg, k.Quit):
		m.cancelAll()
		return tea.Quit
	case key.Matches(msg, k.Help):
		m.showHelp, m.helpOff = !m.showHelp, 0
		return nil
	case key.Matches(msg, k.Cancel):
		if m.showHelp {
			m.showHelp = false
			return nil
		}
		if m.detail != nil {
			if o := m.ops[opDetail]; o != nil {
				o.cancel()
				delete(m.ops, opDetail)
			}
			m.detail = nil
			return nil
		}
		if len(m.ops) > 0 {
			m.cancelAll()
			m.status, m.errMsg = "cancelled", ""
		}
		return nil
	case m.showHelp:
		m.helpOff = scrollBy(msg, k, m.helpOff, m.bodyHeight())
	case m.detail != nil:
		m.detail.off = scrollBy(msg, k, m.detail.off, m.bodyHeight())
	case key.Matches(msg, k.NextScreen):
		m.screen = (m.screen + 1) % screenCount
	case key.Matches(msg, k.PrevScreen):
		m.screen = (m.screen + screenCount - 1) % screenCount
	case key.Matches(msg, k.Screen1):
		m.screen = screenTimeline
	case key.Matches(msg, k.Screen2):
		m.screen = screenDiff
	case key.Matches(msg, k.Screen3):
		m.screen = screenSlice
	case key.Matches(msg, k.Screen4):
		m.screen = screenControlPlane
	case key.Matches(msg, k.Screen5):
		m.screen = screenBisect
	case key.Matches(msg, k.Filter):
		m.filtering, m.filterErr = true, ""
		m.input.SetValue("") // the filter applied, not an abandoned edit
		if m.where != nil {
			m.input.SetValue(m.where.String())
		}
		m.input.CursorEnd()
		return m.input.Focus()
	case key.Matches(msg, k.Export):
		return m.start(opExport, "writing the postmortem", m.exportCmd)
	default:
		switch m.screen {
		case screenTimeline:
			return m.timelineKey(msg)
		case screenDiff:
			m.diffKey(msg)
		case screenControlPlane:
			m.cpKey(msg)
		case screenSlice:
			m.sliceOff = max(scrollBy(msg, k, m.sliceOff, m.bodyHeight()), 0)
		case screenBisect:
			m.bisectKey(msg)
		}
	}
	return nil
}

func (m *Model) timelineKey(msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	if len(m.buckets) == 0 {
		return nil
	}
	move := func(to int) tea.Cmd {
		to = min(max(to, 0), len(m.buckets)-1)
		if to == m.cursor {
			return nil
		}
		m.cursor, m.anchor, m.rowSel = to, nil, 0
		return m.fetchRows()
	}
	switch {
	case key.Matches(msg, k.Left):
		return move(m.cursor - 1)
	case key.Matches(msg, k.Right):
		return move(m.cursor + 1)
	case key.Matches(msg, k.Home):
		return move(0)
	case key.Matches(msg, k.End):
		return move(len(m.buckets) - 1)
	case key.Matches(msg, k.FirstBad):
		if m.rep == nil || m.rep.Boundary == nil {
			m.errMsg = "no boundary yet: the investigation is running or found nothing bad"
			return nil
		}
		i := bucketOf(m.buckets, m.rep.Boundary.FirstBad)
		if i < 0 {
			m.errMsg = "the first bad is outside the span shown: zoom out (-)"
			return nil
		}
		return move(i)
	case key.Matches(msg, k.ZoomIn), key.Matches(msg, k.ZoomOut):
		return m.zoom(key.Matches(msg, k.ZoomIn))
	case key.Matches(msg, k.Down):
		if m.rowSel < len(m.rows)-1 {
			m.rowSel++
			return nil
		}
		return m.scroll(1)
	case key.Matches(msg, k.Up):
		if m.rowSel > 0 {
			m.rowSel--
			return nil
		}
		return m.scroll(-1)
	case key.Matches(msg, k.PageDown):
		return m.scroll(m.rowsShown())
	case key.Matches(msg, k.PageUp):
		return m.scroll(-m.rowsShown())
	case key.Matches(msg, k.Good):
		return m.mark(timeline.BisectGood)
	case key.Matches(msg, k.Bad):
		return m.mark(timeline.BisectBad)
	case key.Matches(msg, k.Skip):
		return m.mark(timeline.BisectSkip)
	case key.Matches(msg, k.NextJudge):
		next, ok := m.nextInstant()
		if !ok {
			m.errMsg = "no instant to judge: " + m.nextLine()
			return nil
		}
		i := bucketOf(m.buckets, next)
		if i < 0 {
			m.errMsg = "the instant to judge (" + clock(next) + ") is outside the span shown: zoom out (-)"
			return nil
		}
		m.status = "judge " + clock(next) + ": g if the incident had not begun, b if it was under way"
		return move(i)
	case key.Matches(msg, k.Expand):
		if len(m.rows) == 0 {
			return nil
		}
		r := m.rows[m.rowSel]
		m.detail = &detail{rec: r}
		return m.start(opDetail, "reading the record's evidence", m.detailCmd(r))
	}
	return nil
}

// scrollBy moves a scrolled view's first line by the arrow and page keys
// (the view clamps it to its length).
func scrollBy(msg tea.KeyMsg, k KeyMap, off, page int) int {
	switch {
	case key.Matches(msg, k.Down):
		off++
	case key.Matches(msg, k.Up):
		off--
	case key.Matches(msg, k.PageDown):
		off += page
	case key.Matches(msg, k.PageUp):
		off -= page
	case key.Matches(msg, k.Home):
		off = 0
	}
	return max(off, 0)
}

func (m *Model) bisectKey(msg tea.KeyMsg) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Down):
		m.bisectSel = min(m.bisectSel+1, max(len(m.bisectVersions)-1, 0))
	case key.Matches(msg, k.Up):
		m.bisectSel = max(m.bisectSel-1, 0)
	case key.Matches(msg, k.PageDown):
		m.bisectSel = min(m.bisectSel+m.bodyHeight()/2, max(len(m.bisectVersions)-1, 0))
	case key.Matches(msg, k.PageUp):
		m.bisectSel = max(m.bisectSel-m.bodyHeight()/2, 0)
	}
}

// scroll moves the records shown by n rows: forward from a row already
// read; backward to the bucket's start (records are read forward only).
func (m *Model) scroll(n int) tea.Cmd {
	switch {
	case n > 0 && len(m.rows) > 0:
		if len(m.rows) < m.rowsShown() && n >= len(m.rows)-1 {
			m.rowSel = len(m.rows) - 1 // the bucket's last rows are shown
			return nil
		}
		m.anchor = m.rows[min(n, len(m.rows)-1)]
	case n < 0 && m.anchor != nil:
		m.anchor, m.rowSel = nil, 0
	default:
		return nil
	}
	return m.fetchRows()
}

func (m *Model) zoom(in bool) tea.Cmd {
	if len(m.buckets) == 0 {
		return nil
	}
	d := m.until.Sub(m.since)
	center := m.buckets[m.cursor].Start.Add(m.buckets[m.cursor].End.Sub(m.buckets[m.cursor].Start) / 2)
	if in {
		d /= 2
	} else {
		d *= 2
	}
	full := m.last.Sub(m.first)
	if d >= full {
		return m.rebucket(m.first, m.last)
	}
	if d < time.Duration(len(m.buckets)) {
		m.errMsg = "zoomed in to a nanosecond a column"
		return nil
	}
	since := center.Add(-d / 2)
	if latest := m.last.Add(-d); since.After(latest) {
		since = latest
	}
	if since.Before(m.first) {
		since = m.first
	}
	return m.rebucket(since, since.Add(d))
}

func (m *Model) mark(kind timeline.BisectKind) tea.Cmd {
	at := markInstant(m.buckets[m.cursor])
	m.status = fmt.Sprintf("marking %s %s", kind, clock(at))
	return m.start(opMark, "storing the mark", m.markCmd(kind, at))
}

func (m *Model) diffKey(msg tea.KeyMsg) {
	k := m.keys
	if m.rep == nil {
		return
	}
	switch {
	case key.Matches(msg, k.Down):
		m.diffSel = min(m.diffSel+1, max(len(m.rep.Changes)-1, 0))
	case key.Matches(msg, k.Up):
		m.diffSel = max(m.diffSel-1, 0)
	case key.Matches(msg, k.PageDown):
		m.diffSel = min(m.diffSel+m.bodyHeight()/2, max(len(m.rep.Changes)-1, 0))
	case key.Matches(msg, k.PageUp):
		m.diffSel = max(m.diffSel-m.bodyHeight()/2, 0)
	case key.Matches(msg, k.Expand):
		m.expanded[m.diffSel] = !m.expanded[m.diffSel]
	}
}

// cpKey moves in the control plane's lists: left picks the classes, right
// the bursts; the arrows and pages move in the one picked.
func (m *Model) cpKey(msg tea.KeyMsg) {
	k := m.keys
	if m.cp == nil {
		return
	}
	sel, n := &m.cpSel, len(m.cp.Classes)
	if m.cpBursts {
		sel, n = &m.burstSel, len(m.cp.Bursts)
	}
	switch {
	case key.Matches(msg, k.Left):
		m.cpBursts = false
	case key.Matches(msg, k.Right):
		m.cpBursts = true
	case key.Matches(msg, k.Down):
		*sel = min(*sel+1, max(n-1, 0))
	case key.Matches(msg, k.Up):
		*sel = max(*sel-1, 0)
	case key.Matches(msg, k.PageDown):
		*sel = min(*sel+5, max(n-1, 0))
	case key.Matches(msg, k.PageUp):
		*sel = max(*sel-5, 0)
	case key.Matches(msg, k.Home):
		*sel = 0
	case key.Matches(msg, k.End):
		*sel = max(n-1, 0)
	}
}

// filterKey edits the CEL filter: enter compiles and applies it (an error
// stays on screen, under the input), esc leaves it as it was.
func (m *Model) filterKey(msg tea.KeyMsg) tea.Cmd {
	switch msg.Type {
	case tea.KeyEsc:
		m.filtering, m.filterErr = false, ""
		m.input.Blur()
		return nil
	case tea.KeyEnter:
		expr := m.input.Value()
		var f *timeline.Filter
		if expr != "" {
			var err error
			if f, err = timeline.CompileFilter(expr); err != nil {
				m.filterErr = err.Error()
				return nil
			}
		}
		badWhere, err := combine(f, m.bad)
		if err != nil {
			m.filterErr = err.Error()
			return nil
		}
		m.where, m.badWhere, m.filtering, m.filterErr = f, badWhere, false, ""
		m.input.Blur()
		m.status = "filter: " + expr
		if expr == "" {
			m.status = "filter cleared"
		}
		if m.since.IsZero() {
			return nil
		}
		return m.rebucket(m.since, m.until)
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return cmd
}

// combine is the filter of records that both keep (nil: no filter).
func combine(where, bad *timeline.Filter) (*timeline.Filter, error) {
	switch {
	case bad == nil:
		return nil, nil
	case where == nil:
		return bad, nil
	}
	return timeline.CompileFilter("(" + where.String() + ") && (" + bad.String() + ")")
}
