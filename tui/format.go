package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/faultline/faultline/internal/termsafe"
)

// clock formats an instant of the data as a time of day, UTC.
func clock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("15:04:05.000")
}

// stamp formats an instant in full, UTC.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// fit pads or truncates s (which may hold ANSI styles) to exactly w cells.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := ansi.StringWidth(s)
	if n > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-n)
}

// oneLine is a message (an error quoting its input, a path) on one line:
// its line breaks are spaces, then it is escaped as a field.
func oneLine(s string) string {
	return termsafe.Field(strings.NewReplacer("\r\n", " ", "\n", " ").Replace(s))
}

// count formats a count in at most five cells: 987, 12.3k, 4.56M.
func count(n int64) string {
	switch {
	case n < 10_000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	default:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	}
}

// span formats a duration briefly.
func span(d time.Duration) string {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.String()
	}
}
