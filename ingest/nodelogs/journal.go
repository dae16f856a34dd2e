package nodelogs

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// journalEntry holds the fields of a journald JSON export line
// (journalctl -o json; systemd.journal-fields(7) documents them) that a
// record needs.
type journalEntry struct {
	message    gjson.Result
	realtime   string // __REALTIME_TIMESTAMP
	hostname   string // _HOSTNAME
	transport  string // _TRANSPORT
	identifier string // SYSLOG_IDENTIFIER
	unit       string // _SYSTEMD_UNIT
}

// parseJournal picks the fields of one valid JSON object in one pass.
func parseJournal(line []byte) journalEntry {
	var j journalEntry
	gjson.ParseBytes(line).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "MESSAGE":
			j.message = v
		case "__REALTIME_TIMESTAMP":
			j.realtime = v.String()
		case "_HOSTNAME":
			j.hostname = v.String()
		case "_TRANSPORT":
			j.transport = v.String()
		case "SYSLOG_IDENTIFIER":
			j.identifier = v.String()
		case "_SYSTEMD_UNIT":
			j.unit = v.String()
		}
		return true
	})
	return j
}

// text returns MESSAGE: a string, or an array of byte values (journald's
// form for a message that is not UTF-8, decoded here with invalid bytes
// replaced); "" for a null or absent one (journalctl leaves out values
// over its size limit).
func (j *journalEntry) text() (string, error) {
	switch {
	case j.message.Type == gjson.String:
		return j.message.Str, nil
	case j.message.IsArray():
		var b []byte
		var bad bool
		j.message.ForEach(func(_, v gjson.Result) bool {
			n := v.Int()
			if v.Type != gjson.Number || n < 0 || n > 255 || v.Raw != fmt.Sprint(n) {
				bad = true
				return false
			}
			b = append(b, byte(n))
			return true
		})
		if bad {
			return "", &FieldError{Field: "MESSAGE", Problem: "want a string or an array of byte values (0 to 255)"}
		}
		if !utf8.Valid(b) {
			return strings.ToValidUTF8(string(b), "\uFFFD"), nil
		}
		return string(b), nil
	case j.message.Type == gjson.Null:
		return "", nil
	}
	return "", &FieldError{Field: "MESSAGE", Problem: fmt.Sprintf("want a string or an array of byte values, got %s", jsonType(j.message))}
}

func jsonType(v gjson.Result) string {
	switch v.Type {
	case gjson.Number:
		return "a number"
	case gjson.True, gjson.False:
		return "a boolean"
	}
	if v.IsObject() {
		return "an object"
	}
	return "nothing"
}

// component names who logged the entry: "kernel" for the kernel's ring
// buffer, else the syslog identifier or the systemd unit (kubelet,
// containerd); "" when the entry says neither.
func (j *journalEntry) component() string {
	switch {
	case j.transport == "kernel" || j.identifier == "kernel":
		return ComponentKernel
	case j.identifier != "":
		return j.identifier
	}
	return strings.TrimSuffix(j.unit, ".service")
}

var messageKey = []byte(`MESSAGE"`)

// journalGate is mayMatch for a journal line: only its message can match,
// so the gate reads that where it stands in the line, unparsed. No key
// holds a character JSON escapes; a \u escape may spell one, and an array
// of byte values hides them all: those pass, for the parser to decide. So
// does a line with no MESSAGE key found, or one of another kind, if it
// holds a key at all: the parser names what is wrong with it. Every MESSAGE key is read (a nested
// or repeated one too), so that the gate never drops what a parse would
// keep.
func journalGate(line []byte) bool {
	seen := false
	for from := 0; ; {
		i := bytes.Index(line[from:], messageKey)
		if i < 0 {
			return !seen && mayMatch(line)
		}
		at := from + i
		from = at + len(messageKey)
		if at == 0 || line[at-1] != '"' || !keyStart(line[:at-1]) {
			continue
		}
		rest := bytes.TrimLeft(line[from:], " \t")
		if len(rest) == 0 || rest[0] != ':' {
			continue
		}
		seen = true
		rest = bytes.TrimLeft(rest[1:], " \t")
		if len(rest) > 0 && rest[0] == '[' {
			return true
		}
		switch {
		case len(rest) > 0 && rest[0] == '"':
			raw := stringBody(rest[1:])
			if mayMatch(raw) || bytes.Contains(raw, []byte(`\u`)) {
				return true
			}
		case !bytes.HasPrefix(rest, []byte("null")):
			return mayMatch(line) // no message the parser reads: it says so
		}
	}
}

// keyStart reports whether a JSON key can start after b: b ends in '{' or
// ',' (blanks aside), not inside a string value.
func keyStart(b []byte) bool {
	b = bytes.TrimRight(b, " \t")
	return len(b) > 0 && (b[len(b)-1] == '{' || b[len(b)-1] == ',')
}

// stringBody is b up to the quote that ends the JSON string it starts
// (the rest of b when none does).
func stringBody(b []byte) []byte {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return b
		}
		q := i + j
		n := 0 // backslashes before the quote
		for k := q - 1; k >= 0 && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return b[:q]
		}
		i = q + 1
	}
}
