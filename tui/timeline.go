package tui

import (
	"fmt"
	"math"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/faultline/faultline/timeline"
)

// Histogram geometry: a count label, then one column per bucket.
const labelWidth = 6

func (m *Model) histWidth() int  { return max(m.width-labelWidth-1, 1) }
func (m *Model) histHeight() int { return min(max((m.height-9)/3, 3), 10) }

// timelineView is the histogram of bad against all records, its markers
// and axis, the selected bucket, and a screenful of its records.
func (m *Model) timelineView() string {
	if len(m.buckets) == 0 {
		return "\n  " + m.spin.View() + " reading the timeline…"
	}
	var b strings.Builder
	m.histogramView(&b)
	m.bucketLine(&b)
	m.recordsView(&b)
	return b.String()
}

// Cell styles of the histogram; cellCursor is added on the cursor's column.
const (
	cellDim = iota
	cellAll
	cellBad
	cellCursor
)

// cellStyles is the style of each cell kind, with and without the cursor.
type cellStyles [cellBad + cellCursor + 1]lipgloss.Style

// histogramView draws the bars: a bucket's bad records (█) stacked under
// the rest (▒), scaled to the fullest bucket; the cursor's column stands
// out; columns not yet counted are dots.
func (m *Model) histogramView(b *strings.Builder) {
	s := m.styles
	styles := cellStyles{cellDim: s.Dim, cellAll: s.All, cellBad: s.Bad,
		cellDim + cellCursor: s.Dim.Inherit(s.Cursor), cellAll + cellCursor: s.All.Inherit(s.Cursor), cellBad + cellCursor: s.Bad.Inherit(s.Cursor)}
	h := m.histHeight()
	var top int64 = 1
	for _, bk := range m.buckets[:m.loaded] {
		top = max(top, bk.All)
	}
	height := func(n int64) int {
		if n <= 0 {
			return 0
		}
		return max(int(math.Ceil(float64(n)*float64(h)/float64(top))), 1)
	}
	for row := range h {
		label := ""
		switch row {
		case 0:
			label = count(top)
		case h - 1:
			label = "0"
		}
		b.WriteString(fmt.Sprintf("%*s ", labelWidth, label))
		m.histogramRow(b, &styles, h-row, height)
		b.WriteByte('\n')
	}
	m.histogramMarks(b)
	b.WriteString(strings.Repeat(" ", labelWidth+1+m.cursor) + s.Marker.Render("▲") + "\n")
	// The axis: the span's ends and its middle.
	w := len(m.buckets)
	left, mid, right := clock(m.since), clock(m.buckets[w/2].Start), clock(m.until)
	axis := []byte(strings.Repeat(" ", max(w, len(left)+len(right)+1)))
	copy(axis, left)
	if w >= 3*len(mid)+4 {
		copy(axis[w/2-len(mid)/2:], mid)
	}
	copy(axis[len(axis)-len(right):], right)
	b.WriteString(strings.Repeat(" ", labelWidth+1) + string(axis) + "\n")
}

// histogramRow writes the cells of one row of the histogram, level rows
// above the axis; height is a count's height in rows.
func (m *Model) histogramRow(b *strings.Builder, styles *cellStyles, level int, height func(int64) int) {
	// Cells of one style are drawn as one run: a style per cell would cost
	// more than a frame's budget on a wide screen.
	var run strings.Builder
	runStyle := -1
	flush := func() {
		if run.Len() > 0 {
			b.WriteString(styles[runStyle].Render(run.String()))
			run.Reset()
		}
	}
	for i, bk := range m.buckets {
		c, st := " ", cellAll
		switch {
		case i >= m.loaded:
			if level == 1 {
				c = "·"
			}
			st = cellDim
		case i < m.badLoaded && height(bk.Bad) >= level:
			c, st = "█", cellBad
		case height(bk.All) >= level:
			c = "▒"
		}
		if i == m.cursor {
			st += cellCursor
		}
		if st != runStyle {
			flush()
			runStyle = st
		}
		run.WriteString(c)
	}
	flush()
}

// histogramMarks writes the markers under the histogram: the
// investigation's boundary (G last good, B first bad) and the bisect
// marks (g, b, s), which win.
func (m *Model) histogramMarks(b *strings.Builder) {
	s := m.styles
	marks := make([]string, len(m.buckets))
	if m.rep != nil && m.rep.Boundary != nil {
		if i := bucketOf(m.buckets, m.rep.Boundary.LastGood); i >= 0 {
			marks[i] = s.Good.Render("G")
		}
		if i := bucketOf(m.buckets, m.rep.Boundary.FirstBad); i >= 0 {
			marks[i] = s.Bad.Render("B")
		}
	}
	if m.session != nil {
		for _, mk := range m.session.Marks {
			if i := markedBucket(m.buckets, mk.Time); i >= 0 {
				marks[i] = s.Marker.Render(string(mk.Kind[:1]))
			}
		}
	}
	b.WriteString(fmt.Sprintf("%*s ", labelWidth, "marks"))
	for _, mk := range marks {
		if mk == "" {
			mk = " "
		}
		b.WriteString(mk)
	}
	b.WriteByte('\n')
}

// bucketLine says what the cursor is on and what narrows the view.
func (m *Model) bucketLine(b *strings.Builder) {
	s := m.styles
	bk := m.buckets[m.cursor]
	counted := "counting…"
	switch {
	case m.cursor < m.badLoaded:
		counted = fmt.Sprintf("%d records, %s", bk.All, s.Bad.Render(fmt.Sprintf("%d bad", bk.Bad)))
	case m.cursor < m.loaded:
		counted = fmt.Sprintf("%d records, counting bad…", bk.All)
	}
	line := fmt.Sprintf("%s %d/%d  %s .. %s (%s)  %s", s.Strong.Render("bucket"), m.cursor+1, len(m.buckets),
		clock(bk.Start), clock(bk.End), span(bk.End.Sub(bk.Start)), counted)
	if zoom := float64(m.last.Sub(m.first)) / float64(m.until.Sub(m.since)); zoom > 1.01 {
		line += fmt.Sprintf("  zoom ×%.0f", zoom)
	}
	if m.where != nil {
		line += "  where " + m.where.String()
	}
	b.WriteString(line + "\n")
	b.WriteString(s.Marker.Render("»") + " " + m.nextLine() + "\n")
}

// recordsView draws the rows read for the selected bucket: only those that
// fit are ever read. When narrow, USER, OBJECT and VERB shrink, then
// SOURCE goes; the time, the code and the reason stay.
func (m *Model) recordsView(b *strings.Builder) {
	s := m.styles
	t := newTable(m.width, []column{{title: "TIME", want: 12, min: 12}, {title: "SOURCE", want: 6}, {title: "VERB", want: 9, min: 6},
		{title: "CODE", want: 4, min: 4}, {title: "OBJECT", want: 44, min: 24}, {title: "USER", want: 24, min: 10},
		{title: "REASON / MESSAGE", min: 16, flex: true}}, 5, 4, 2, 1)
	b.WriteString(s.Header.Render(t.header()) + "\n")
	if len(m.rows) == 0 {
		if m.ops[opRows] == nil {
			b.WriteString(s.Dim.Render("  no records in this bucket") + "\n")
		} else {
			b.WriteString(s.Dim.Render("  "+m.spin.View()+" reading records…") + "\n")
		}
		return
	}
	for i, r := range m.rows {
		line := t.row(clock(r.Time), string(r.Source), r.Verb, code(r.Code), objectOf(r), r.User, reasonOf(r))
		bad := false
		if m.bad != nil {
			bad, _ = m.bad.Match(r)
		}
		switch {
		case i == m.rowSel:
			line = s.Selected.Render(line)
		case bad:
			line = s.Bad.Render(line)
		}
		b.WriteString(line + "\n")
	}
}

func code(c int) string {
	if c == 0 {
		return ""
	}
	return fmt.Sprint(c)
}

func objectOf(r *timeline.Record) string {
	o := r.Object
	parts := []string{}
	res := o.Resource
	if res == "" {
		res = strings.ToLower(o.Kind)
	}
	if o.Subresource != "" {
		res += "/" + o.Subresource
	}
	for _, p := range []string{res, o.Namespace, o.Name} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "/")
}

func reasonOf(r *timeline.Record) string {
	switch {
	case r.Reason != "" && r.Message != "":
		return r.Reason + ": " + r.Message
	case r.Reason != "":
		return r.Reason
	default:
		return r.Message
	}
}
