// Package termsafe makes strings from strangers safe to print on a
// terminal.
//
// Audit records carry strings that any API client chooses: a user agent,
// an object's name, a status message. Printed raw, they are instructions to
// the terminal, not text: an ESC sequence sets the window title (OSC 0),
// writes the clipboard (OSC 52) or moves the cursor and erases lines, which
// forges the output around it; a C1 control (U+009B is CSI) does the same on
// terminals that honour them; a carriage return overwrites the start of a
// line; a bidi override (U+202E) shows text in an order other than the one
// it has. termsafe renders each of them visibly instead, as an escape a
// reader can reverse by eye: \x1b, \r, \u009b, \u202e, and \xff for a byte
// that is not UTF-8. It never drops one: a reader investigating an incident
// should see that a client sent something odd, not a tidied copy.
//
// A backslash is left as it is, so the escapes are not strictly reversible;
// they need only be unmistakable, and a literal "\x1b" in the input is
// harmless to print.
//
// Three policies, by what the caller prints:
//
//   - [Field] is one value on a line or in a table cell: a newline or tab in
//     it would fake a new row or column, so they are escaped too.
//   - [Writer] is a stream of text the program composed: newlines and tabs
//     are the program's own layout and pass; everything else above is
//     escaped, whatever field forgot to be.
//   - [Styled] is a TUI frame: like the Writer, but the program's own
//     colours (SGR sequences, ESC [ ... m, which lipgloss emits) survive.
//
// JSON and YAML encoders escape control characters themselves; their output
// should bypass the Writer (see [Raw]) so that it stays byte-identical.
package termsafe

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// policy says which layout characters a context keeps.
type policy struct {
	sgr  bool      // ESC [ params m: colours and emphasis, nothing else
	pass [256]bool // the bytes that print as they are: printable ASCII, and the layout kept
}

func newPolicy(newline, tab, sgr bool) *policy {
	p := &policy{sgr: sgr}
	for c := 0x20; c < 0x7f; c++ {
		p.pass[c] = true
	}
	p.pass['\n'], p.pass['\t'] = newline, tab
	return p
}

var (
	field  = newPolicy(false, false, false)
	text   = newPolicy(true, true, false)
	styled = newPolicy(true, false, true)
)

// Field returns s safe to print as one value in a line or a table cell:
// every control character, newlines and tabs included, C1 controls, bidi
// controls and bytes that are not UTF-8 are escaped.
func Field(s string) string { return field.string(s) }

// Text returns s safe to print as text of several lines: like [Field], but
// newlines and tabs are kept.
func Text(s string) string { return text.string(s) }

// Styled returns a rendered screen safe to print: like [Text], except that
// tabs are escaped (they break a laid-out frame) and well-formed SGR
// sequences (ESC [ digits ; : m), the program's own styling, are kept.
// Data strings should still go through [Field] before they are styled: an
// SGR sequence in data could hide text.
func Styled(s string) string { return styled.string(s) }

func (p *policy) string(s string) string {
	if clean(p, s) == len(s) {
		return s
	}
	b, _ := p.append(make([]byte, 0, len(s)+16), []byte(s), true)
	return string(b)
}

// clean returns the length of the prefix of s that needs no escape under
// p and no decoding: the whole of it, in the common case.
func clean[T string | []byte](p *policy, s T) int {
	for i := 0; i < len(s); i++ {
		if !p.pass[s[i]] {
			return i
		}
	}
	return len(s)
}

// append appends src to dst with everything p does not keep escaped. It
// returns how many bytes of src it consumed: all of them when final, else
// all but the first bytes of a UTF-8 sequence that src ends in the middle of,
// which the caller holds for the next call.
func (p *policy) append(dst, src []byte, final bool) ([]byte, int) {
	i := 0
	for i < len(src) {
		j := i
		for j < len(src) && p.pass[src[j]] {
			j++
		}
		dst = append(dst, src[i:j]...)
		if i = j; i == len(src) {
			break
		}
		c := src[i]
		switch {
		case c == 0x1b && p.sgr && sgrLen(src[i:]) > 0:
			n := sgrLen(src[i:])
			dst = append(dst, src[i:i+n]...)
			i += n
		case c < 0x80:
			dst = appendByte(dst, c)
			i++
		default:
			if !final && !utf8.FullRune(src[i:]) {
				return dst, i
			}
			r, size := utf8.DecodeRune(src[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				dst = appendByte(dst, c)
			case unsafeRune(r):
				dst = appendRune(dst, r)
			default:
				dst = append(dst, src[i:i+size]...)
			}
			i += size
		}
	}
	return dst, i
}

// unsafeRune reports the non-ASCII runes a terminal acts on or that change
// how the text around them reads.
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f: // C1 controls: U+009B is CSI, U+009D OSC
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // bidi embeddings, overrides, isolates
		return true
	case r == 0x200e, r == 0x200f, r == 0x061c: // bidi marks
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	}
	return false
}

const hexDigits = "0123456789abcdef"

func appendByte(dst []byte, c byte) []byte {
	switch c {
	case '\n':
		return append(dst, `\n`...)
	case '\r':
		return append(dst, `\r`...)
	case '\t':
		return append(dst, `\t`...)
	}
	return append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
}

func appendRune(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// sgrLen is the length of the SGR sequence b starts with, or 0.
func sgrLen(b []byte) int {
	if len(b) < 3 || b[0] != 0x1b || b[1] != '[' {
		return 0
	}
	for i := 2; i < len(b); i++ {
		switch c := b[i]; {
		case c == 'm':
			return i + 1
		case c >= '0' && c <= '9', c == ';', c == ':':
		default:
			return 0
		}
	}
	return 0
}

// Writer escapes what it writes as [Text] does. It is meant to sit between
// a program's text output and the terminal, so that a field rendered
// without [Field] still cannot reach the terminal raw.
type Writer struct {
	w     io.Writer
	carry []byte // the start of a UTF-8 sequence split across writes
	buf   []byte
}

// NewWriter returns a Writer that writes the escaped text to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p and writes it. A UTF-8 sequence split across two writes
// is held until the second; [Writer.Flush] writes what is held at the end.
func (w *Writer) Write(p []byte) (int, error) {
	if len(w.carry) == 0 && clean(text, p) == len(p) {
		if _, err := w.w.Write(p); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	src := p
	if len(w.carry) > 0 {
		src = append(w.carry, p...)
		w.carry = nil
	}
	out, n := text.append(w.buf[:0], src, false)
	if n < len(src) {
		w.carry = append([]byte(nil), src[n:]...)
	}
	w.buf = out[:0]
	if len(out) > 0 {
		if _, err := w.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes, escaped, an incomplete UTF-8 sequence the last write
// ended in.
func (w *Writer) Flush() error {
	if len(w.carry) == 0 {
		return nil
	}
	out, _ := text.append(w.buf[:0], w.carry, true)
	w.carry = nil
	_, err := w.w.Write(out)
	return err
}

// Raw returns the writer that w escapes for, after flushing w, or w itself
// if it is not a [*Writer]. It is for output that escapes its own control
// characters (JSON, YAML) and for a TUI that draws its own escapes.
func Raw(w io.Writer) io.Writer {
	if tw, ok := w.(*Writer); ok {
		tw.Flush()
		return tw.w
	}
	return w
}

// Unsafe names the first thing in s that a terminal would act on, and where
// ("ESC at byte 3"), or returns "" if there is none. Newlines and tabs are
// safe; so are SGR sequences if sgr. Tests use it to check that output is
// clean whatever its input held.
func Unsafe(s string, sgr bool) string {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n', c == '\t', c >= 0x20 && c < 0x7f:
			i++
			continue
		case c == 0x1b && sgr && sgrLen([]byte(s[i:])) > 0:
			i += sgrLen([]byte(s[i:]))
			continue
		case c < 0x80:
			return fmt.Sprintf("%s at byte %d", c0Name(c), i)
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return fmt.Sprintf("invalid UTF-8 at byte %d", i)
		case unsafeRune(r):
			return fmt.Sprintf("%U at byte %d", r, i)
		}
		i += size
	}
	return ""
}

func c0Name(c byte) string {
	switch c {
	case 0x1b:
		return "ESC"
	case 0x07:
		return "BEL"
	case '\r':
		return "CR"
	case 0x7f:
		return "DEL"
	}
	return string(appendByte(nil, c))
}
