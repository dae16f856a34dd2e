package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/faultline/faultline/analyze/controlplane"
	"github.com/faultline/faultline/internal/termsafe"
)

// topClasses is how many classes get a sparkline.
const topClasses = 5

// controlPlaneView shows the request classes, a rate sparkline for each of
// the busiest with its bursts marked (^), and the bursts' fixes with their
// simulated peaks. Both lists scroll: the arrow keys move in the bursts,
// or in the classes after left (right goes back to the bursts).
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
	// The room: the classes get a third (a quarter when small), the rates
	// up to topClasses sparklines, the bursts the rest.
	spark := topClasses
	if height < 30 {
		spark = 2
	}
	classRows := max(height/3-2, 3)
	if height < 30 {
		classRows = max(height/4-1, 3)
	}
	m.cpClasses(&b, r, classRows)
	m.cpRates(&b, r, spark)
	// Bursts and the fixes simulated on them, from the selected one on.
	used := strings.Count(b.String(), "\n") + 1
	// The episodes of slow requests to etcd and the clients shed with no burst of
	// their own keep a few lines below the bursts: the bursts do not
	// explain them.
	slow := 0
	if len(r.Slow) > 0 && height-used > 10 {
		slow = min(len(r.Slow), 2) + 1
	}
	if len(r.Bursts) == 0 {
		b.WriteString(s.Strong.Render("BURSTS") + "\n" + s.Dim.Render("  none: no class jumped by an order of magnitude") + "\n")
		m.cpSlow(&b, r, slow)
		m.cpShed(&b, r, height-used-2-slow)
		return b.String()
	}
	shed := 0
	if len(r.Shed) > 0 && height-used-slow > 12 {
		shed = min(len(r.Shed), 3) + 1
	}
	m.cpBurstList(&b, r, max(height-used-shed-slow, 1))
	m.cpSlow(&b, r, slow)
	m.cpShed(&b, r, shed)
	return b.String()
}

// cpSlow lists, in up to rows lines, the episodes of slow requests to etcd
// from several clients at once, and where they waited.
func (m *Model) cpSlow(b *strings.Builder, r *controlplane.Report, rows int) {
	var lines []string
	for _, sl := range r.Slow {
		lines = append(lines, fmt.Sprintf("  %s .. %s  %s; %d clients, %s requests to etcd over 250ms", clock(sl.Start), clock(sl.End), sl, sl.Clients, count(sl.Requests)))
	}
	m.cpSection(b, "SLOW", " (requests to etcd over 250ms from several steady clients: the server's doing)", lines, rows)
}

// cpShed lists, in up to rows lines, the clients shed (429) with no burst
// of their own: with no burst to blame, the clients a priority level
// rejects at their usual load.
func (m *Model) cpShed(b *strings.Builder, r *controlplane.Report, rows int) {
	var lines []string
	for _, sh := range r.Shed {
		lines = append(lines, fmt.Sprintf("  %s [%s]: %s of %s requests shed, peak %.0f/s", dashIfEmpty(sh.Client), sh.User, count(sh.Throttled), count(sh.Requests), sh.PeakRps))
	}
	m.cpSection(b, "SHED", " (429s with no burst of their own)", lines, rows)
}

// cpSection writes a titled list in up to rows lines (the title one of
// them), each line made safe for the terminal and cut to its width.
func (m *Model) cpSection(b *strings.Builder, title, note string, lines []string, rows int) {
	if len(lines) == 0 || rows < 2 {
		return
	}
	b.WriteString(m.styles.Strong.Render(title) + m.styles.Dim.Render(note) + "\n")
	for i, line := range lines {
		if i == rows-1 {
			break
		}
		b.WriteString(ansi.Truncate(termsafe.Field(line), m.width, "…") + "\n")
	}
}

// focus renders a section title, selected when the arrow keys move in it.
func (m *Model) focus(title string, on bool) string {
	if on {
		return m.styles.Selected.Render(title)
	}
	return m.styles.Strong.Render(title)
}

// cpClasses writes the table of request classes, rows at a time around
// the selected one.
func (m *Model) cpClasses(b *strings.Builder, r *controlplane.Report, rows int) {
	s := m.styles
	t := newTable(m.width, []column{{title: "VERB", want: 7, min: 6}, {title: "RESOURCE", want: 22, min: 14}, {title: "SCOPE", want: 9},
		{title: "COUNT", want: 8, min: 6}, {title: "PEAK/S", want: 8, min: 6}, {title: "P99 MS", want: 8, min: 0},
		{title: "CLIENT [USER]", min: 16, flex: true}}, 1, 3, 4, 2, 5)
	b.WriteString(m.focus("CLASSES", !m.cpBursts) + fmt.Sprintf(" %d/%d (← here, → bursts; ↑/↓ scroll)\n", m.cpSel+1, len(r.Classes)))
	b.WriteString(s.Header.Render(t.header()) + "\n")
	from := scrollFrom(m.cpSel, rows, len(r.Classes))
	for i := from; i < len(r.Classes) && i < from+rows; i++ {
		c := &r.Classes[i]
		line := t.row(strings.ToUpper(c.Verb), resourceOf(c), c.Scope, count(c.Count), fmt.Sprintf("%.0f", c.PeakRps),
			fmt.Sprintf("%.0f", c.P99Ms), dashIfEmpty(c.Client)+" ["+c.User+"]")
		if i == m.cpSel && !m.cpBursts {
			line = s.Selected.Render(line)
		}
		b.WriteString(line + "\n")
	}
}

// cpRates writes the sparklines of the n busiest classes, on one time
// axis.
func (m *Model) cpRates(b *strings.Builder, r *controlplane.Report, n int) {
	s := m.styles
	label := min(30, max(m.width/3, 12))
	b.WriteString(s.Strong.Render("RATE") + fmt.Sprintf(" per class, %s .. %s; ^ marks a burst\n", clock(r.Window.Start), clock(r.Window.End)))
	sparkW := max(m.width-label-2, 10)
	for i := 0; i < len(r.Classes) && i < n; i++ {
		c := &r.Classes[i]
		line, under := m.sparkline(c, sparkW)
		b.WriteString(fit(termsafe.Field(strings.ToUpper(c.Verb)+" "+resourceOf(c)), label) + "  " + s.All.Render(line) + "\n")
		if strings.TrimSpace(under) != "" {
			b.WriteString(strings.Repeat(" ", label+2) + s.Bad.Render(under) + "\n")
		}
	}
}

// cpBurstList writes the bursts in room lines: the selected one whole,
// as many before it as keep it in view, then those after.
func (m *Model) cpBurstList(b *strings.Builder, r *controlplane.Report, room int) {
	b.WriteString(m.focus("BURSTS", m.cpBursts) + fmt.Sprintf(" %d/%d by load (shed together: from the first); fixes (↑/↓ scroll)\n",
		m.burstSel+1, len(r.Bursts)))
	// Each burst takes 1+len(fixes) lines.
	first := m.burstSel
	for n := burstLines(r.Bursts[first]); first > 0 && n+burstLines(r.Bursts[first-1]) <= room/2; first-- {
		n += burstLines(r.Bursts[first-1])
	}
	for i := first; i < len(r.Bursts); i++ {
		m.cpBurst(b, i, r.Bursts[i])
	}
}

// cpBurst writes burst i and its simulated fixes: on a line each, or
// wrapped whole when it is the selected one.
func (m *Model) cpBurst(b *strings.Builder, i int, bu controlplane.Burst) {
	head := fmt.Sprintf("%d. %s .. %s  %s  %.0f/s peak vs %.2f/s before, %d requests from %d client(s)",
		i+1, clock(bu.Start), clock(bu.End), termsafe.Field(bu.Class.Key()), bu.PeakRps, bu.BaselineRps, bu.Requests, bu.Clients)
	prefixes := make([]string, len(bu.Fixes))
	for j, f := range bu.Fixes {
		prefixes[j] = fmt.Sprintf("   fix %-12s -> peak %6.1f/s  ", termsafe.Field(f.Kind), f.SimulatedPeakRps)
	}
	if i != m.burstSel {
		b.WriteString(head + "\n")
		for j, f := range bu.Fixes {
			b.WriteString(prefixes[j] + termsafe.Field(f.Detail) + "\n")
		}
		return
	}
	for j, l := range strings.Split(ansi.Wrap(head, max(m.width-3, 10), ""), "\n") {
		if j > 0 {
			l = "   " + l
		}
		if m.cpBursts {
			l = m.styles.Selected.Render(fit(l, m.width))
		}
		b.WriteString(l + "\n")
	}
	for j, f := range bu.Fixes {
		indent := len(prefixes[j])
		for k, l := range strings.Split(ansi.Wrap(termsafe.Field(f.Detail), max(m.width-indent, 10), ""), "\n") {
			if k == 0 {
				b.WriteString(prefixes[j] + l + "\n")
			} else {
				b.WriteString(strings.Repeat(" ", indent) + l + "\n")
			}
		}
	}
}

func burstLines(b controlplane.Burst) int { return 1 + len(b.Fixes) }

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
