package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/clickhouse"
)

// shardDown is a shard left out of an answer, and its mark as decoded from
// -o json or yaml. The error holds what JSON and YAML must escape.
var (
	shardDown = &clickhouse.ShardError{Shard: 2, Addr: "127.0.0.1:19002", Err: errors.New(`dial: <refused> & "gone": 'x'`)}
	downMark  = []any{map[string]any{"shard": 2.0, "address": "127.0.0.1:19002", "error": `dial: <refused> & "gone": 'x'`}}
)

// TestWriteDataMarksPartial: an answer that leaves a shard out carries the
// shard in -o json and yaml, as the field "partial" of an object or beside
// the "items" of anything else; a whole answer is what encodeData writes.
func TestWriteDataMarksPartial(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want any // decoded, partial
	}{
		{"object", struct {
			A string `json:"a"`
		}{"<b>"}, map[string]any{"a": "<b>", "partial": downMark}},
		{"empty object", struct{}{}, map[string]any{"partial": downMark}},
		{"map", map[string]int{"n": 1}, map[string]any{"n": 1.0, "partial": downMark}},
		{"array", []string{"x", "y"}, map[string]any{"items": []any{"x", "y"}, "partial": downMark}},
		{"empty array", []string{}, map[string]any{"items": []any{}, "partial": downMark}},
		{"null", []string(nil), map[string]any{"items": nil, "partial": downMark}},
	} {
		for _, format := range []string{"json", "yaml"} {
			t.Run(tc.name+" "+format, func(t *testing.T) {
				var want, whole, part bytes.Buffer
				if err := encodeData(&want, format, tc.v); err != nil {
					t.Fatal(err)
				}
				if err := (&Factory{IO: IOStreams{Out: &whole}}).writeData(format, tc.v); err != nil {
					t.Fatal(err)
				}
				if whole.String() != want.String() {
					t.Errorf("whole answer:\n%s\nwant it as encodeData writes it:\n%s", whole.String(), want.String())
				}
				f := &Factory{IO: IOStreams{Out: &part}, partial: []*clickhouse.ShardError{shardDown}}
				if err := f.writeData(format, tc.v); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, decode(t, format, part.Bytes())); diff != "" {
					t.Errorf("partial answer (-want +got)\n%s\n%s", diff, part.String())
				}
			})
		}
	}
}

// TestRecordListMarksPartial: timeline's records, streamed, are marked as
// writeData marks an array (json, yaml) or by a last line (jsonl); with no
// shard left out, the output is as it always was.
func TestRecordListMarksPartial(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	records := []timeline.Record{
		{ID: 1, Time: t0, Source: timeline.SourceEvent, Reason: "BackOff"},
		{ID: 2, Time: t0.Add(time.Second), Source: timeline.SourceEvent, Reason: "Killing"},
	}
	for _, format := range []string{"json", "yaml", "jsonl"} {
		for _, n := range []int{0, 2} {
			for _, partial := range []bool{false, true} {
				t.Run(format+" "+strings.Repeat("record ", n)+map[bool]string{true: "partial"}[partial], func(t *testing.T) {
					var b bytes.Buffer
					p := newRecordPrinter(&b, format)
					if partial {
						p.partial = (&Factory{partial: []*clickhouse.ShardError{shardDown}}).partialShards()
					}
					for i := range n {
						if err := p.print(&records[i]); err != nil {
							t.Fatal(err)
						}
					}
					if err := p.close(); err != nil {
						t.Fatal(err)
					}
					checkRecordList(t, format, n, partial, b.Bytes())
				})
			}
		}
	}
}

// checkRecordList checks the records' output out: n records, marked when
// partial.
func checkRecordList(t *testing.T, format string, n int, partial bool, out []byte) {
	t.Helper()
	var items []any
	var mark any
	switch {
	case format == "jsonl":
		lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		if len(out) == 0 {
			lines = nil
		}
		for _, l := range lines {
			items = append(items, decode(t, "json", []byte(l)))
		}
		if partial && len(items) > 0 {
			mark, items = items[len(items)-1].(map[string]any)["partial"], items[:len(items)-1]
		}
	case partial:
		m, _ := decode(t, format, out).(map[string]any)
		items, _ = m["items"].([]any)
		mark = m["partial"]
	default:
		items, _ = decode(t, format, out).([]any)
	}
	if len(items) != n {
		t.Errorf("%d records, want %d:\n%s", len(items), n, out)
	}
	if want := map[bool]any{true: downMark}[partial]; !cmp.Equal(want, mark) {
		t.Errorf("mark %v, want %v:\n%s", mark, want, out)
	}
	if whole := map[string]string{"json": "[]\n", "yaml": "[]\n", "jsonl": ""}[format]; !partial && n == 0 && string(out) != whole {
		t.Errorf("no records: %q, want %q as always", out, whole)
	}
}

// decode reads one JSON or YAML document.
func decode(t *testing.T, format string, b []byte) any {
	t.Helper()
	var v any
	err := json.Unmarshal(b, &v)
	if format == "yaml" {
		err = yaml.Unmarshal(b, &v)
	}
	if err != nil {
		t.Fatalf("not %s: %v\n%s", format, err, b)
	}
	return v
}
