package kube

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

func podJSON(i int) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"w-%d","namespace":"ml","uid":"p%d","resourceVersion":"%d","creationTimestamp":"2026-05-01T10:00:00Z"}}`, i, i, i+1)
}

func podYAML(i int) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: w-%d\n  namespace: ml\n  uid: p%d\n  resourceVersion: \"%d\"\n", i, i, i+1)
}

func ingestDump(t *testing.T, name string, data []byte) (versions, badCount int64, bad []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s := sqlitetest.New(t)
	runs, err := IngestFiles(context.Background(), s, []string{path}, FileOptions{OnSkip: func(s *input.Skip) {
		bad = append(bad, fmt.Sprintf("document %d: %v", s.Doc, s.Err))
	}})
	if err != nil {
		t.Fatal(err)
	}
	if runs[0].Status != timeline.RunDone {
		t.Errorf("run status %q, want done: bad input is no failed run", runs[0].Status)
	}
	return runs[0].Versions, runs[0].BadLines, bad
}

// TestDumpKeepsEveryGoodPart breaks dumps the ways real ones break. Every
// good document and item is kept, and every bad one counted and named.
// Before, one bad YAML document dropped every later one, a truncated JSON
// List kept none of its complete items, and non-object items were skipped
// without being counted.
func TestDumpKeepsEveryGoodPart(t *testing.T) {
	list := func(items ...string) string {
		return `{"apiVersion":"v1","kind":"List","items":[` + strings.Join(items, ",") + `]}`
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	for i := range 200 {
		zw.Write([]byte("---\n" + podYAML(i)))
	}
	zw.Close()
	cutGz := gz.Bytes()[:gz.Len()*3/4]
	for _, tc := range []struct {
		name     string
		file     string
		data     []byte
		versions int64 // at least, for the damaged stream
		bad      []string
		badHas   string // instead of bad: the one bad message holds this
	}{
		{"bad YAML document in the middle", "d.yaml", []byte(podYAML(1) + "---\nkind: [unclosed\n---\n" + podYAML(2) + "---\n" + podYAML(3)), 3,
			[]string{"document 2: line 9: yaml: line 1: did not find expected ',' or ']'"}, ""},
		{"truncated JSON List", "l.json", []byte(list(podJSON(1), podJSON(2), podJSON(3))[:len(list(podJSON(1), podJSON(2), podJSON(3)))-40]), 2,
			nil, "document 1: items[2]: json: truncated at byte"},
		{"non-object List items", "n.json", []byte(list(podJSON(1), `"a string"`, `42`, podJSON(2))), 2,
			[]string{"document 1: items[1]: a JSON string, not an object", "document 1: items[2]: a JSON number, not an object"}, ""},
		{"YAML List with a non-object item", "n.yaml", []byte("apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(podYAML(1), "\n", "\n  ") + "\n- just a string\n"), 1,
			[]string{"document 1: items[1]: a YAML string, not an object"}, ""},
		{"items not an array", "i.json", []byte(`{"kind":"List","items":{"a":1}}` + "\n" + podJSON(1)), 1,
			[]string{"document 1: items: want an array, got a JSON object"}, ""},
		{"concatenated JSON values", "c.json", []byte(podJSON(1) + "\n" + list(podJSON(2), podJSON(3)) + "\n" + `"stray"`), 3,
			[]string{"document 3: a JSON string, not an object"}, ""},
		{"scalar YAML document", "s.yaml", []byte(podYAML(1) + "---\njust words\n---\n" + podYAML(2)), 2,
			[]string{"document 2: line 9: a YAML string, not an object"}, ""},
		{"damaged gzip of YAML documents", "g.yaml.gz", cutGz, 100, nil, "gzip: unexpected EOF"},
		{"YAML alias bomb between good documents", "b.yaml", []byte(podYAML(1) + "---\nbig: &big " + strings.Repeat("x", 2<<20) + "\ncopies: [" + strings.Repeat("*big, ", 599) + "*big]\n---\n" + podYAML(2)), 2,
			nil, "document 2: line 9: aliases expand to over"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			versions, badCount, bad := ingestDump(t, tc.file, tc.data)
			if versions < tc.versions || (tc.file != "g.yaml.gz" && versions != tc.versions) {
				t.Errorf("%d object versions kept, want %d", versions, tc.versions)
			}
			if tc.badHas != "" {
				if len(bad) != 1 || !strings.Contains(bad[0], tc.badHas) {
					t.Errorf("bad %q: want one holding %q", bad, tc.badHas)
				}
			} else if diff := cmp.Diff(tc.bad, bad); diff != "" {
				t.Errorf("bad (-want +got)\n%s", diff)
			}
			if badCount != int64(len(bad)) {
				t.Errorf("run counts %d bad, %d reported", badCount, len(bad))
			}
		})
	}
}

// TestLargeListMemoryStaysBounded ingests a generated List of about 30 MB.
// Its items are decoded one at a time, so the heap never holds the
// document: before, the whole List was unmarshalled at once (a 35 MB dump
// peaked at 746 MB).
func TestLargeListMemoryStaysBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a 30 MB dump")
	}
	var b bytes.Buffer
	b.WriteString(`{"apiVersion":"v1","kind":"List","items":[`)
	pad := strings.Repeat("x", 900)
	n := 0
	for ; b.Len() < 30<<20; n++ {
		if n > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c-%d","namespace":"ml","uid":"c%d","resourceVersion":"%d"},"data":{"pad":"%s"}}`, n, n, n+1, pad)
	}
	b.WriteString("]}")
	size := b.Len()
	path := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	b = bytes.Buffer{}
	s := sqlitetest.New(t)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	runs, err := IngestFiles(context.Background(), s, []string{path}, FileOptions{})
	close(stop)
	<-sampled
	if err != nil {
		t.Fatal(err)
	}
	if runs[0].Versions != int64(n) {
		t.Errorf("%d versions, want %d", runs[0].Versions, n)
	}
	grew := int64(peak) - int64(base)
	t.Logf("%d MB dump, %d items: heap grew by at most %d MB", size>>20, n, grew>>20)
	if grew > int64(size) {
		t.Errorf("heap grew by %d MB ingesting a %d MB dump: the List is not streamed", grew>>20, size>>20)
	}
}

// FuzzDumpReader: no input, however broken, panics the dump reader, and
// every object it yields is an object (a JSON object or YAML mapping).
func FuzzDumpReader(f *testing.F) {
	f.Add([]byte(podJSON(1)))
	f.Add([]byte(`{"apiVersion":"v1","kind":"List","items":[` + podJSON(1) + `,"s",4,null,[1]]}`))
	f.Add([]byte(`{"kind":"List","items":{"a":[1,{"b":2}]}}` + "\n" + podJSON(2)))
	f.Add([]byte(`[` + podJSON(1) + `,` + podJSON(2)))
	f.Add([]byte(podYAML(1) + "---\nkind: [unclosed\n---\n" + podYAML(2) + "...\n--- " + `{"kind":"Pod"}` + "\n"))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- a: 1\n- x\n"))
	f.Add([]byte("a: &a [1, 2]\nb: *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := &dumpReader{
			r: bufio.NewReaderSize(bytes.NewReader(data), 64),
			obj: func(_ int, m map[string]any) {
				if m == nil {
					t.Fatal("a nil object")
				}
			},
			bad:  func(int, error) {},
			stop: func() bool { return false },
		}
		if err := d.read(); err != nil {
			t.Fatalf("read returned %v: only cancellation may end it with an error", err)
		}
	})
}
