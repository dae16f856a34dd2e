package tui

import (
	"fmt"
	"sort"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/internal/termsafe"
)

// sliceView puts the smallest affected slice beside the known-good
// counterexample; the dimensions in which they differ stand out (≠). Under
// 100 columns the counterexample goes under the slice, before the other
// slices and the unit counts, so it is never the part cut off; the screen
// scrolls (↑/↓) when it is taller than the room.
func (m *Model) sliceView(height int) string {
	s := m.styles
	if m.rep == nil {
		return m.waiting(opInvestigate, "the investigation")
	}
	r := m.rep
	if r.Slice == nil {
		return m.boundaryLine() + "\n" + s.Dim.Render("  no slice: the bad units share no identity apart from the good ones")
	}
	differs := map[string]investigate.Differ{}
	if r.Counterexample != nil {
		for _, d := range r.Counterexample.Differs {
			differs[d.Dimension] = d
		}
	}
	narrow := m.width < 100
	half := max((m.width-3)/2, 20)
	if narrow {
		half = m.width
	}

	var left strings.Builder
	left.WriteString(s.Strong.Render("SLICE") + fmt.Sprintf("  %d of %d units bad  coverage %.0f%%  precision %.2f\n",
		r.Slice.Bad, r.Slice.Total, 100*r.Slice.Coverage, r.Slice.Precision))
	left.WriteString(s.Header.Render(fit("  DIMENSION = VALUE", half)) + "\n")
	for _, d := range sortedKeys(r.Slice.Where) {
		line := fit(fmt.Sprintf("  %s = %s", termsafe.Field(d), termsafe.Field(investigate.ShortID(r.Slice.Where[d]))), half)
		if _, ok := differs[d]; ok {
			line = s.Differ.Render(fit("≠ "+strings.TrimPrefix(line, "  "), half))
		}
		left.WriteString(line + "\n")
	}
	var rest strings.Builder
	for _, o := range r.Slice.Others {
		rest.WriteString(fit(fmt.Sprintf("  also %s (%d of %g bad)", termsafe.Field(o.Where.String()), int(o.Bad), o.Total), half) + "\n")
	}
	rest.WriteString(fmt.Sprintf("\nunits: %d bad, %d good, %d noise, %d unknown\n", r.Units.Bad, r.Units.Good, r.Units.Noise, r.Units.Unknown))

	var right strings.Builder
	c := r.Counterexample
	if c == nil {
		right.WriteString(s.Strong.Render("COUNTEREXAMPLE") + "  none: no known-good unit in the evidence\n")
	} else {
		right.WriteString(s.Strong.Render("COUNTEREXAMPLE") + " " + s.Good.Render(termsafe.Field(c.Ref)) + " stayed good\n")
		width := half
		if !narrow {
			width = max(m.width-half-3, 20)
		}
		t := newTable(width, []column{{title: "DIMENSION", want: 26, min: 12}, {title: "BAD SLICE", want: 20, min: 12},
			{title: "COUNTEREXAMPLE", min: 19, flex: true}}, 1, 0)
		right.WriteString(s.Header.Render(t.header()) + "\n")
		for _, d := range c.Differs {
			line := t.row(d.Dimension, investigate.ShortID(d.Bad), investigate.ShortID(d.Good))
			if _, in := r.Slice.Where[d.Dimension]; in {
				line = s.Differ.Render(line)
			}
			right.WriteString(line + "\n")
		}
		if c.InSlice {
			right.WriteString(s.Dim.Render("it matches the whole slice: identity alone does not explain the failure") + "\n")
		}
	}
	var out string
	if narrow {
		out = m.boundaryLine() + "\n" + left.String() + "\n" + right.String() + rest.String()
	} else {
		joined := lipgloss.JoinHorizontal(lipgloss.Top, lipgloss.NewStyle().Width(half).Render(left.String()+rest.String()), " │ ", right.String())
		out = m.boundaryLine() + "\n\n" + joined
	}
	if len(r.Confirmation) > 0 {
		out += "\n\n" + s.Strong.Render("CONFIRMATION") + "\n" + lipgloss.NewStyle().Width(m.width-2).Render(termsafe.Field(r.Confirmation[0]))
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	m.sliceOff = min(m.sliceOff, max(len(lines)-height, 0))
	return strings.Join(lines[m.sliceOff:], "\n")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
