// The bisect log: the text faultline bisect log prints and faultline bisect
// replay reads back, one command per mark, notes as trailing comments.

package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/faultline/faultline/timeline"
)

// cleanNote makes a note fit on one log line.
func cleanNote(s string) string {
	return strings.TrimSpace(strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s))
}

// bisectLog renders marks as the commands that make them.
func bisectLog(marks []timeline.BisectMark) string {
	var b strings.Builder
	b.WriteString("faultline bisect start\n")
	for _, m := range marks {
		fmt.Fprintf(&b, "faultline bisect %s %s", m.Kind, fmtTime(m.Time, rfc3339Nano))
		if m.Note != "" {
			b.WriteString("  # " + m.Note)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// logLine is one command of a bisect log.
type logLine struct {
	line    int
	start   bool
	kind    timeline.BisectKind
	instant string
	note    string
}

// parseBisectLog reads the commands of a bisect log. Errors name name:line.
func parseBisectLog(name string, r io.Reader) ([]logLine, error) {
	var out []logLine
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		l := logLine{line: n}
		if i := strings.Index(text, "#"); i > 0 && (text[i-1] == ' ' || text[i-1] == '\t') {
			text, l.note = strings.TrimSpace(text[:i]), strings.TrimSpace(text[i+1:])
		}
		fields := strings.Fields(text)
		if len(fields) < 3 || fields[0] != "faultline" || fields[1] != "bisect" {
			return nil, usagef("faultline bisect log > bisect.log",
				"%s:%d: want a bisect command (faultline bisect start|good|bad|skip ...), got %q", name, n, text)
		}
		switch verb := fields[2]; verb {
		case "start":
			if len(fields) != 3 {
				return nil, usagef("faultline bisect log > bisect.log", "%s:%d: start takes no arguments in a log, got %q", name, n, fields[3])
			}
			l.start = true
		case "good", "bad", "skip":
			if len(fields) != 4 {
				return nil, usagef("faultline bisect log > bisect.log",
					"%s:%d: want one instant after %q (a note follows a #), got %d words", name, n, verb, len(fields)-3)
			}
			l.kind, l.instant = timeline.BisectKind(verb), fields[3]
		default:
			return nil, usagef("faultline bisect log > bisect.log", "%s:%d: unknown bisect command %q: want start, good, bad or skip", name, n, verb)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// atLine prefixes a usage error with the log line it came from.
func atLine(name string, line int, err error) error {
	hint := "faultline bisect log > bisect.log"
	if ue, ok := errors.AsType[*usageError](err); ok {
		hint = ue.hint
	}
	return usagef(hint, "%s:%d: %v", name, line, err)
}
