package tui

import (
	"strings"

	"github.com/faultline/faultline/internal/termsafe"
)

// column is one column of a table: the width it wants, the narrowest it
// may get (0: it may be dropped), and whether it takes the room left.
type column struct {
	title     string
	want, min int
	// flex takes whatever room the others leave (at least min).
	flex bool
}

// table lays out columns in a width. When they do not fit, the columns
// named in giveWay, in that order, shrink to their min; then those whose
// min is 0 are dropped, in the same order. The columns not named never
// give way: the key ones (a diff's TO and AT) stay whole.
type table struct {
	cols   []column
	widths []int // 0: dropped
}

func newTable(width int, cols []column, giveWay ...int) table {
	w := make([]int, len(cols))
	used := func() int {
		n, shown := 0, 0
		for _, x := range w {
			if x > 0 {
				n += x
				shown++
			}
		}
		return n + max(shown-1, 0)
	}
	flex := -1
	for i, c := range cols {
		w[i] = c.want
		if c.flex {
			flex, w[i] = i, max(c.min, 1)
		}
	}
	for _, i := range giveWay {
		if over := used() - width; over > 0 && cols[i].min > 0 {
			w[i] -= min(over, w[i]-cols[i].min)
		}
	}
	for _, i := range giveWay {
		if over := used() - width; over > 0 && cols[i].min == 0 && i != flex {
			w[i] = 0
		}
	}
	if flex >= 0 {
		w[flex] += max(width-used(), 0)
	}
	return table{cols: cols, widths: w}
}

// header is the titles, laid out as a row.
func (t table) header() string {
	titles := make([]string, len(t.cols))
	for i, c := range t.cols {
		titles[i] = c.title
	}
	return t.row(titles...)
}

// row lays out cells (data: each is escaped as a field first, so a newline
// or an escape in one cannot break the row), skipping dropped columns.
func (t table) row(cells ...string) string {
	var b strings.Builder
	for i, c := range cells {
		if i >= len(t.widths) || t.widths[i] == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(fit(termsafe.Field(c), t.widths[i]))
	}
	return b.String()
}

// shown reports whether column i is drawn.
func (t table) shown(i int) bool { return i < len(t.widths) && t.widths[i] > 0 }
