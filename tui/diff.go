package tui

import (
	"fmt"
	"strings"

	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/internal/termsafe"
)

// diffView lists the changes across the boundary, ranked; enter expands
// one to its from/to in full, why it ranks, and its evidence.
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
	cols := []int{3, 32, 34, 21, 21}
	rest := max(m.width-sum(cols)-len(cols), 8)
	b.WriteString(s.Header.Render(row(cols, rest, "#", "OBJECT", "DIMENSION", "FROM", "TO", "AT")) + "\n")
	lines := 2
	for i, c := range m.rep.Changes {
		if lines >= height {
			break
		}
		line := row(cols, rest, fmt.Sprint(c.Rank), c.Ref, c.Dimension, investigate.ShortID(c.From), investigate.ShortID(c.To), clock(c.At))
		if i == m.diffSel {
			line = s.Selected.Render(line)
		}
		b.WriteString(line + "\n")
		lines++
		if !m.expanded[i] {
			continue
		}
		for _, l := range changeDetail(c) {
			b.WriteString("     " + s.Dim.Render(l) + "\n")
			lines++
		}
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
	return fmt.Sprintf("%s last good %s  %s first bad %s   window %s .. %s",
		s.Good.Render("●"), clock(b.LastGood), s.Bad.Render("●"), clock(b.FirstBad), clock(r.Window.Start), clock(r.Window.End))
}

// waiting stands in for a screen whose analysis has not arrived.
func (m *Model) waiting(kind opKind, what string) string {
	if m.ops[kind] != nil {
		return "\n  " + m.spin.View() + " waiting for " + what + "… (esc cancels)"
	}
	return "\n  " + m.styles.Dim.Render("no "+what+": see the status line")
}
