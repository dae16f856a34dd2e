// Output helpers shared by the verbs, in one place (cli/cli's cmdutil):
// how a time, an empty value, a count and a plural read in text output,
// a writer that keeps its first error, and the mark of a partial answer
// (--allow-partial) in every structured output. The -o json|yaml encoding
// and the --no-headers habit are in habits.go.

package cli

import (
	"bytes"
	"encoding/json"
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

// ---- partial answers (--allow-partial) ----
//
// With --allow-partial and a shard of --store down, an answer leaves out
// the records that shard holds, and every output says so. The marks are
// made here, for every command:
//
//   - -o json and -o yaml: a top-level field "partial" (the last in JSON;
//     YAML sorts its keys) lists the shards left out, {"shard": 2,
//     "address": "127.0.0.1:19002", "error": "..."}. An answer that is an
//     array (timeline, history) has no room for a field, so it becomes
//     {"items": [...], "partial": [...]}, the shape of kubectl's List.
//     Refusing it would contradict --allow-partial, and an extra element
//     would pass for an item; a consumer that wants the array of a whole
//     answer meets an object instead, and notices.
//   - -o jsonl: a last line {"partial": [...]}, after the records: what is
//     known of the shards when the answer is complete. A consumer of the
//     records sees an object with no id (jq 'select(.partial)' finds it).
//   - tables, text and Markdown: the warning on stderr after the answer
//     (Run), and nothing on stdout, as kubectl prints its warnings: stdout
//     carries results only, and a line there would pass for a row to awk,
//     cut or sort, with --no-headers too.
//
// An answer with every shard up has no mark: its output is the same, byte
// for byte, as without --allow-partial.

// partialShard is a shard a partial answer leaves out, as the outputs name
// it.
type partialShard struct {
	Shard   int    `json:"shard"` // 1-based, as system.clusters numbers them
	Address string `json:"address"`
	Error   string `json:"error"`
}

// partialText says which shards every answer leaves out, for the TUI's
// mark: "" when none.
func (f *Factory) partialText() string {
	var parts []string
	for _, se := range f.partial {
		parts = append(parts, se.Error())
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "; ") + "; every figure leaves out the records it holds"
}

// partialShards lists the shards the store left out of every answer (none
// when the answer is whole).
func (f *Factory) partialShards() []partialShard {
	var out []partialShard
	for _, se := range f.partial {
		ps := partialShard{Shard: se.Shard, Address: se.Addr}
		if se.Err != nil {
			ps.Error = se.Err.Error()
		}
		out = append(out, ps)
	}
	return out
}

// writeData prints the answer v on stdout as -o json or yaml (encodeData),
// marked partial when the store left shards out. Every command prints its
// structured answer with it.
func (f *Factory) writeData(format string, v any) error {
	shards := f.partialShards()
	if len(shards) == 0 {
		return encodeData(f.IO.Out, format, v)
	}
	j, err := compactJSON(v)
	if err != nil {
		return err
	}
	p, err := compactJSON(shards)
	if err != nil {
		return err
	}
	return encodeData(f.IO.Out, format, markPartial(j, p))
}

// markPartial adds the shards left out, p (JSON), to the JSON answer j: a
// last field "partial" of an object, or {"items": j, "partial": p} for
// any other value (an array, null).
func markPartial(j, p []byte) json.RawMessage {
	j = bytes.TrimSpace(j)
	var out []byte
	switch {
	case len(j) >= 2 && j[0] == '{' && len(bytes.TrimSpace(j[1:len(j)-1])) == 0:
		out = append([]byte(`{"partial":`), p...)
	case len(j) >= 2 && j[0] == '{':
		out = append(append(j[:len(j)-1:len(j)-1], `,"partial":`...), p...)
	default:
		out = append(append(append([]byte(`{"items":`), j...), `,"partial":`...), p...)
	}
	return append(out, '}')
}

// compactJSON is v's JSON on one line, with <, > and & left as they are
// (as writeJSON leaves them).
func compactJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// A list streamed item by item (timeline -o json, yaml) is marked the way
// writeData marks an array: listStart opens it, before the first item,
// and listEnd closes it after n items.

// listStart opens a streamed list: "[" for JSON, nothing for YAML's
// "- item" lines; a partial one opens the object that wraps its items.
func listStart(format string, partial bool) string {
	switch {
	case format == "json" && partial:
		return "{\"items\": [\n"
	case format == "json":
		return "[\n"
	case format == "yaml" && partial:
		return "items:\n"
	}
	return ""
}

// listEnd closes a streamed list of n items (jsonl: records, one a
// line, no list), and adds the shards left out, if any.
func listEnd(format string, n int, shards []partialShard) (string, error) {
	if len(shards) == 0 {
		switch {
		case format == "jsonl", format == "yaml" && n > 0:
			return "", nil
		case format == "json" && n > 0:
			return "\n]\n", nil
		}
		return "[]\n", nil
	}
	switch format {
	case "json":
		p, err := compactJSON(shards)
		end := "\n]"
		if n == 0 {
			end = "{\"items\": []"
		}
		return end + ",\n\"partial\": " + string(p) + "}\n", err
	case "yaml":
		p, err := toYAML(map[string][]partialShard{"partial": shards})
		if n == 0 {
			return "items: []\n" + string(p), err
		}
		return string(p), err
	}
	p, err := compactJSON(map[string][]partialShard{"partial": shards})
	return string(p) + "\n", err
}
