package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/internal/termsafe"
)

// diffView lists the changes across the boundary, ranked; enter expands
// one to its from/to in full, why it ranks, and its evidence. The list
// scrolls with the selection. When narrow, FROM, DIMENSION and OBJECT give
// way; TO and AT never do.
func (m *Model) diffView(height int) string {
	s := m.styles
	if m.rep == nil {
		return m.waiting(opInvestigate, "the investigation")
	}
	var b strings.Builder
	b.WriteString(m.boundaryLine() + "\n")
	if len(m.rep.Changes) == 0 {
		b.WriteString(s.Dim.Render("  no change of identity across the boundary") + "\n")
		return b.String()
	}
	t := newTable(m.width, []column{{title: "#", want: 3, min: 2}, {title: "OBJECT", want: 32, min: 16},
		{title: "DIMENSION", want: 34, min: 16}, {title: "FROM", want: 21, min: 8}, {title: "TO", want: 21, min: 21},
		{title: "AT", want: 12, min: 12}}, 3, 1, 2, 0)
	b.WriteString(s.Header.Render(t.header()) + "\n")
	// Each change's lines, so that the selected one (expanded or not)
	// stays in view.
	var lines []string
	selFirst, selLast := 0, 0
	for i, c := range m.rep.Changes {
		if i == m.diffSel {
			selFirst = len(lines)
		}
		line := t.row(fmt.Sprint(c.Rank), c.Ref, c.Dimension, investigate.ShortID(c.From), investigate.ShortID(c.To), clock(c.At))
		if i == m.diffSel {
			line = s.Selected.Render(line)
		}
		lines = append(lines, line)
		if m.expanded[i] {
			for _, l := range append([]string{termsafe.Field(c.Ref + "  " + c.Dimension)}, changeDetail(c)...) {
				for _, wl := range strings.Split(ansi.Hardwrap(l, max(m.width-5, 10), true), "\n") {
					lines = append(lines, "     "+s.Dim.Render(wl))
				}
			}
		}
		if i == m.diffSel {
			selLast = len(lines) - 1
		}
	}
	room := max(height-2, 1)
	from := 0
	if selLast >= room {
		from = min(selFirst, selLast-room+1)
	}
	for _, l := range lines[from:min(len(lines), from+room)] {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// changeDetail is an expanded change: what it is, why it ranks, evidence.
func changeDetail(c investigate.Suspect) []string {
	ev := "no evidence line (a difference between units, not a version)"
	if c.Run != 0 {
		ev = fmt.Sprintf("evidence: ingest run %d, line %d", c.Run, c.Line)
	}
	return []string{
		fmt.Sprintf("%s at %s, score %.2f, %d object(s) made it", termsafe.Field(c.Kind), stamp(c.At), c.Score, max(c.Objects, 1)),
		"from " + termsafe.Field(dashIfEmpty(c.From)),
		"to   " + termsafe.Field(dashIfEmpty(c.To)),
		"why  " + termsafe.Field(c.Why),
		ev,
	}
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// boundaryLine says where the investigation puts the boundary, and over
// which window it looked.
func (m *Model) boundaryLine() string {
	s := m.styles
	r := m.rep
	if r.Boundary == nil {
		return s.Dim.Render("nothing bad in the evidence (bad = " + termsafe.Field(r.Bad) + ")")
	}
	b := r.Boundary
	from, to := clock(r.Window.Start), clock(r.Window.End)
	if m.width < 100 {
		from, to = r.Window.Start.UTC().Format(time.TimeOnly), r.Window.End.UTC().Format(time.TimeOnly)
	}
	return fmt.Sprintf("%s last good %s  %s first bad %s  window %s .. %s",
		s.Good.Render("●"), clock(b.LastGood), s.Bad.Render("●"), clock(b.FirstBad), from, to)
}

// waiting stands in for a screen whose analysis has not arrived.
func (m *Model) waiting(kind opKind, what string) string {
	if m.ops[kind] != nil {
		return "\n  " + m.spin.View() + " waiting for " + what + "… (esc cancels)"
	}
	return "\n  " + m.styles.Dim.Render("no "+what+": see the status line")
}
