// Output helpers shared by the verbs, in one place (cli/cli's cmdutil):
// how a time, an empty value, a count and a plural read in text output,
// and a writer that keeps its first error. The -o json|yaml and
// --no-headers habits are in habits.go.

package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/slice"
	"github.com/faultline/faultline/internal/termsafe"
)

// Layouts of fmtTime: RFC 3339 in UTC, to the second, to the millisecond,
// or with as many fractional digits as the instant has (what faultline
// bisect prints and reads back).
const (
	rfc3339Sec   = time.RFC3339
	rfc3339Milli = "2006-01-02T15:04:05.000Z07:00"
	rfc3339Nano  = time.RFC3339Nano
)

// fmtTime writes t in UTC in layout, "-" for the zero time.
func fmtTime(t time.Time, layout string) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(layout)
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = termsafe.Fprintf(e.w, format, args...)
	}
}

// sliceText writes a slice (a conjunction of dimension=value) as
// "a=x & b=y", dimensions in name order: the investigation's slice and
// the cube's causes alike.
func sliceText(where map[string]string) string { return slice.Element(where).String() }

// dash stands "-" for an empty value in a table.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// plural is word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// humanBytes writes n bytes in the largest binary unit: 1.5 MiB.
func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// humanInt writes 1234567 as 1,234,567.
func humanInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// humanAge is a span in the largest unit that reads well: "3 days",
// "5h0m0s".
func humanAge(d time.Duration) string {
	if days := int(d / (24 * time.Hour)); days >= 1 {
		return fmt.Sprintf("%d %s", days, plural(days, "day"))
	}
	return d.Round(time.Second).String()
}
