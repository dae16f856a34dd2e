package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/faultline/faultline/internal/termsafe"
)

// reportWidth is the columns a line of a text report may take.
const reportWidth = 100

// textLayout says how a text report is laid out for where it goes.
type textLayout struct {
	Width int // columns a line may take
	// TTY is a terminal: a value too long for its row is cut with "…",
	// and times are also given in Loc. On a pipe, values are whole
	// (wrapped onto the next lines) and times are UTC only.
	TTY bool
	Loc *time.Location
}

// reportLayout is the layout of a text report on stdout.
func (f *Factory) reportLayout() textLayout {
	return textLayout{Width: reportWidth, TTY: f.IO.StdoutIsTTY, Loc: time.Local}
}

// textWriter writes a report's lines within the layout's width, keeping
// the first write error. Its values are escaped as termsafe fields before
// they are laid out, so a value from the evidence can neither move the
// cursor nor add a line.
type textWriter struct {
	w   io.Writer
	lay textLayout
	err error
}

func (t *textWriter) sprintf(format string, args ...any) string {
	for i, a := range args {
		switch v := a.(type) {
		case string:
			args[i] = termsafe.Field(v)
		case error:
			args[i] = termsafe.Field(v.Error())
		}
	}
	return fmt.Sprintf(format, args...)
}

// nbsp joins words that a line must not be broken between; it is written
// as a space.
const nbsp = "\u00a0"

func (t *textWriter) write(lines ...string) {
	for _, l := range lines {
		if t.err == nil {
			_, t.err = io.WriteString(t.w, strings.TrimRight(strings.ReplaceAll(l, nbsp, " "), " ")+"\n")
		}
	}
}

// blank writes an empty line.
func (t *textWriter) blank() { t.write("") }

// prose writes a line of text, wrapped at spaces within the width; the
// lines after the first are indented by hang columns. A word longer than a
// line stays whole on a pipe, and is cut with "…" on a terminal.
func (t *textWriter) prose(hang int, format string, args ...any) {
	t.write(wrapWords(t.sprintf(format, args...), t.lay.Width, hang, t.lay.TTY)...)
}

// row writes one row of a listing: on a terminal cut with "…" at the
// width, on a pipe whole, wrapped like prose.
func (t *textWriter) row(hang int, format string, args ...any) {
	s := t.sprintf(format, args...)
	if t.lay.TTY {
		t.write(ansi.Truncate(s, t.lay.Width, "…"))
		return
	}
	t.write(wrapWords(s, t.lay.Width, hang, false)...)
}

// command writes a command line to paste after prefix: never cut, and
// wrapped with the shell's line continuation (" \") at spaces outside
// single quotes, so that a paste still runs it as one command.
func (t *textWriter) command(prefix, cmd string) {
	t.write(wrapCommand(prefix+termsafe.Field(cmd), t.lay.Width, ansi.StringWidth(prefix)+2)...)
}

// wrapWords breaks s at spaces into lines of at most width columns, the
// lines after the first indented by hang spaces. A word that does not fit
// a line of its own is cut with "…" when cut is set, else left whole.
func wrapWords(s string, width, hang int, cut bool) []string {
	var lines []string
	indent := ""
	for {
		line := indent + s
		if ansi.StringWidth(line) <= width {
			return append(lines, line)
		}
		// The last space that leaves the line within the width, past the
		// line's own indentation.
		lead := len(line) - len(strings.TrimLeft(line, " "))
		brk := -1
		for i := lead + 1; i < len(line); i++ {
			if line[i] == ' ' && line[i-1] != ' ' && ansi.StringWidth(line[:i]) <= width {
				brk = i
			}
			if ansi.StringWidth(line[:i]) > width {
				break
			}
		}
		if brk < 0 {
			if cut {
				return append(lines, ansi.Truncate(line, width, "…"))
			}
			// The word is longer than the line: whole, up to the next space.
			next := strings.Index(line[lead:], " ")
			if next < 0 {
				return append(lines, line)
			}
			brk = lead + next
		}
		lines = append(lines, strings.TrimRight(line[:brk], " "))
		s = strings.TrimLeft(line[brk:], " ")
		if s == "" {
			return lines
		}
		indent = strings.Repeat(" ", hang)
	}
}

// wrapCommand breaks a command line into lines of at most width columns
// (less the continuation " \") at spaces outside single quotes; a word too
// long stays whole.
func wrapCommand(s string, width, hang int) []string {
	var lines []string
	indent := ""
	for {
		line := indent + s
		if ansi.StringWidth(line) <= width {
			return append(lines, line)
		}
		lead := len(line) - len(strings.TrimLeft(line, " "))
		brk, quoted := -1, false
		for i := lead; i < len(line); i++ {
			switch {
			case line[i] == '\\' && !quoted: // an escaped character, as in '\''
				i++
				continue
			case line[i] == '\'':
				quoted = !quoted
			case line[i] == ' ' && !quoted && i > lead:
				if ansi.StringWidth(line[:i])+2 <= width || brk < 0 {
					brk = i
				}
			}
			if brk >= 0 && ansi.StringWidth(line[:i])+2 > width {
				break
			}
		}
		if brk < 0 {
			return append(lines, line)
		}
		lines = append(lines, strings.TrimRight(line[:brk], " ")+" \\")
		s = strings.TrimLeft(line[brk:], " ")
		indent = strings.Repeat(" ", hang)
	}
}
