package tui

import (
	"fmt"
	"strings"

	"github.com/faultline/faultline/analyze/controlplane"
	"github.com/faultline/faultline/internal/termsafe"
)

// topClasses is how many classes get a sparkline.
const topClasses = 5

// controlPlaneView shows the request classes, a rate sparkline for each of
// the busiest with its bursts marked (^), and the bursts' fixes with their
// simulated peaks.
func (m *Model) controlPlaneView(height int) string {
	s := m.styles
	if m.cp == nil {
		return m.waiting(opControlPlane, "the control-plane analysis")
	}
	r := m.cp
	var b strings.Builder
	b.WriteString(fmt.Sprintf("%s %d requests, %d classes, %d bursts   %s .. %s\n", s.Strong.Render("CONTROL PLANE"),
		r.Requests, len(r.Classes), len(r.Bursts), clock(r.Window.Start), clock(r.Window.End)))
	if len(r.Classes) == 0 {
		b.WriteString(s.Dim.Render("  no audited API requests in the evidence") + "\n")
		return b.String()
	}
	// The classes table: a third of the room.
	cols := []int{7, 22, 9, 8, 8, 8}
	rest := max(m.width-sum(cols)-len(cols), 10)
	b.WriteString(s.Header.Render(row(cols, rest, "VERB", "RESOURCE", "SCOPE", "COUNT", "PEAK/S", "P99 MS", "CLIENT [USER]")) + "\n")
	shown := max(height/3-2, 3)
	from := max(min(m.cpSel-shown+1, len(r.Classes)-shown), 0)
	for i := from; i < len(r.Classes) && i < from+shown; i++ {
		c := &r.Classes[i]
		line := row(cols, rest, strings.ToUpper(c.Verb), resourceOf(c), c.Scope, count(c.Count), fmt.Sprintf("%.0f", c.PeakRps),
			fmt.Sprintf("%.0f", c.P99Ms), dashIfEmpty(c.Client)+" ["+c.User+"]")
		if i == m.cpSel {
			line = s.Selected.Render(line)
		}
		b.WriteString(line + "\n")
	}
	// Sparklines of the busiest classes, on one time axis.
	b.WriteString("\n" + s.Strong.Render("RATE") + fmt.Sprintf(" per class, %s .. %s; ^ marks a burst\n", clock(r.Window.Start), clock(r.Window.End)))
	sparkW := max(m.width-32, 10)
	for i := 0; i < len(r.Classes) && i < topClasses; i++ {
		c := &r.Classes[i]
		line, under := m.sparkline(c, sparkW)
		b.WriteString(fit(termsafe.Field(strings.ToUpper(c.Verb)+" "+resourceOf(c)), 30) + "  " + s.All.Render(line) + "\n")
		if strings.TrimSpace(under) != "" {
			b.WriteString(strings.Repeat(" ", 32) + s.Bad.Render(under) + "\n")
		}
	}
	// Bursts and the fixes simulated on them.
	b.WriteString("\n" + s.Strong.Render("BURSTS") + " by load on apiserver and etcd, and simulated fixes\n")
	if len(r.Bursts) == 0 {
		b.WriteString(s.Dim.Render("  none: no class jumped by an order of magnitude") + "\n")
	}
	for i, bu := range r.Bursts {
		b.WriteString(fmt.Sprintf("%d. %s .. %s  %s  %.0f/s peak vs %.2f/s before, %d requests from %d client(s)\n",
			i+1, clock(bu.Start), clock(bu.End), termsafe.Field(bu.Class.Key()), bu.PeakRps, bu.BaselineRps, bu.Requests, bu.Clients))
		for _, f := range bu.Fixes {
			b.WriteString(fmt.Sprintf("   fix %-12s -> peak %6.1f/s  %s\n", termsafe.Field(f.Kind), f.SimulatedPeakRps, termsafe.Field(f.Detail)))
		}
	}
	return b.String()
}

func resourceOf(c *controlplane.Class) string {
	if c.Subresource != "" {
		return c.Resource + "/" + c.Subresource
	}
	return c.Resource
}

var sparks = []rune("▁▂▃▄▅▆▇█")

// sparkline draws a class's rate over the report's window in w columns
// (the peak second of each column, scaled to the class's peak), and under
// it a ^ under each column that a burst of the class covers.
func (m *Model) sparkline(c *controlplane.Class, w int) (line, under string) {
	r := m.cp
	start, end := r.Window.Start.Unix(), r.Window.End.Unix()+1
	width := max((end-start+int64(w)-1)/int64(w), 1)
	peaks := make([]int64, w)
	var top int64 = 1
	for _, sc := range c.Series() {
		i := (sc.Sec - start) / width
		if i < 0 || i >= int64(w) {
			continue
		}
		peaks[i] = max(peaks[i], sc.Count)
		top = max(top, sc.Count)
	}
	var lb, ub strings.Builder
	bursts := make([]bool, w)
	for _, bu := range r.Bursts {
		if bu.Class.Key() != c.Key() || bu.Class.Group != c.Group {
			continue
		}
		for i := (bu.Start.Unix() - start) / width; i <= (bu.End.Unix()-start)/width && i < int64(w); i++ {
			if i >= 0 {
				bursts[i] = true
			}
		}
	}
	for i, p := range peaks {
		switch {
		case p == 0:
			lb.WriteRune(' ')
		default:
			lb.WriteRune(sparks[min(int(p*int64(len(sparks)-1)/top), len(sparks)-1)])
		}
		if bursts[i] {
			ub.WriteRune('^')
		} else {
			ub.WriteRune(' ')
		}
	}
	return lb.String(), ub.String()
}
