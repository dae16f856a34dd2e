package audit

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

// auditLines returns n good lines with audit IDs prefix-1..prefix-n.
func auditLines(prefix string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(goodLine(fmt.Sprintf("%s-%d", prefix, i)) + "\n")
	}
	return b.String()
}

func gzipOf(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

// completeLines is how many whole lines a (damaged) gzip stream decodes to:
// what zcat recovers from it, less an incomplete last line.
func completeLines(t *testing.T, data []byte) int64 {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	out.ReadFrom(zr) // the error is the damage
	return int64(bytes.Count(out.Bytes(), []byte("\n")))
}

// TestNoPanicNoLossOnDamagedGzip ingests a directory of rotated logs in
// which the middle file is a damaged .gz. Every line decoded before the
// fault is kept (before: up to a 256-line chunk was lost, and a truncated
// stream kept 768 of the 953 lines zcat recovers), the damage is one bad
// line naming the file and the byte where it surfaced, and the walk goes on
// to the later files (before: it stopped there).
func TestNoPanicNoLossOnDamagedGzip(t *testing.T) {
	const n = 1000
	full := gzipOf(auditLines("mid", n))
	badCRC := bytes.Clone(full)
	badCRC[len(badCRC)-8] ^= 0xff
	for _, tc := range []struct {
		name    string
		data    []byte
		wantBad string
	}{
		{"truncated", full[:len(full)*19/20], "gzip: unexpected EOF at byte"},
		{"bad CRC", badCRC, "gzip: gzip: invalid checksum"},
		{"trailing garbage", append(bytes.Clone(full), "garbage after the stream ends"...), "gzip: gzip: invalid header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "audit-1.log"), []byte(auditLines("old", 10)), 0o644)
			os.WriteFile(filepath.Join(dir, "audit-2.log.gz"), tc.data, 0o644)
			os.WriteFile(filepath.Join(dir, "audit-3.log"), []byte(auditLines("new", 10)), 0o644)
			kept := completeLines(t, tc.data)
			s := sqlitetest.New(t)
			var bad []*input.Skip
			runs, err := Ingest(context.Background(), s, []string{dir}, Options{OnSkip: func(b *input.Skip) { bad = append(bad, b) }})
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, r := range runs {
				got = append(got, r.Records)
			}
			if diff := cmp.Diff([]int64{10, kept, 10}, got); diff != "" {
				t.Errorf("records per file (-want +got)\n%s", diff)
			}
			if len(bad) != 1 || !strings.HasSuffix(bad[0].Path, "audit-2.log.gz") || bad[0].Line != kept+1 ||
				!strings.Contains(bad[0].Error(), tc.wantBad) {
				t.Fatalf("bad lines %v, want one at line %d containing %q", bad, kept+1, tc.wantBad)
			}
			if runs[1].BadLines != 1 {
				t.Errorf("the damaged file's run counts %d bad lines", runs[1].BadLines)
			}
		})
	}
}

// TestFirstLineSniffing: a first line that opens a JSON value without
// closing it is either the start of a multi-line document or a truncated
// audit event. Before, it was always taken for a document: a JSON-lines
// file with a truncated first line lost all its lines as one bad "line", or
// failed as a document over the size limit. Now the document must parse, or
// the lines are read one by one.
func TestFirstLineSniffing(t *testing.T) {
	truncated := `{"kind":"Event","auditID":"t1","verb":"get","user":{"username":"u"`
	pretty := "{\n  \"kind\": \"EventList\",\n  \"items\": [\n    " + goodLine("p1") + ",\n    " + goodLine("p2") + "\n  ]\n}\n"
	for _, tc := range []struct {
		name    string
		data    string
		maxLine int
		records int64
		badAt   []int64
	}{
		{"truncated first line", truncated + "\n" + auditLines("g", 100), 0, 100, []int64{1}},
		{"truncated first line, file over the limit", truncated + "\n" + auditLines("g", 100), 4096, 100, []int64{1}},
		{"pretty-printed EventList", pretty, 0, 2, nil},
		{"pretty-printed array", "[\n" + goodLine("a1") + ",\n" + goodLine("a2") + "\n]\n", 0, 2, nil},
		{"compact EventList head, an item a line", `{"kind":"EventList","items":[` + "\n" + goodLine("c1") + ",\n" + goodLine("c2") + "\n]}\n", 0, 2, nil},
		{"truncated pretty document is one bad document", pretty[:len(pretty)/2], 0, 0, []int64{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			os.WriteFile(path, []byte(tc.data), 0o644)
			s := sqlitetest.New(t)
			var badAt []int64
			runs, err := Ingest(context.Background(), s, []string{path}, Options{MaxLine: tc.maxLine,
				OnSkip: func(b *input.Skip) { badAt = append(badAt, b.Line) }})
			if err != nil {
				t.Fatal(err)
			}
			if runs[0].Records != tc.records {
				t.Errorf("%d records, want %d", runs[0].Records, tc.records)
			}
			if diff := cmp.Diff(tc.badAt, badAt); diff != "" {
				t.Errorf("bad lines (-want +got)\n%s", diff)
			}
		})
	}
}

// TestSkippedFilesAreNamed: a file of a directory with no audit record in
// its first lines used to be skipped with exit status 0 and a debug log.
// Now the good files are ingested and an *input.SkippedError names each skipped
// file with its first bad line's problem; an empty file is no loss.
func TestSkippedFilesAreNamed(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "audit.log"), []byte(auditLines("g", 3)), 0o644)
	os.WriteFile(filepath.Join(dir, "audit-0.log"), []byte(strings.Repeat("not json\n", 20)+auditLines("late", 3)), 0o644)
	os.WriteFile(filepath.Join(dir, "audit-empty.log"), nil, 0o644)
	s := sqlitetest.New(t)
	runs, err := Ingest(context.Background(), s, []string{dir}, Options{})
	var se *input.SkippedError
	if !errors.As(err, &se) {
		t.Fatalf("err %v, want an *input.SkippedError", err)
	}
	want := filepath.Join(dir, "audit-0.log") + `: none of its first 16 lines is an audit record (line 1: line: not a JSON object (starts with "n"))`
	if len(se.Files) != 1 || se.Files[0].Path+": "+se.Files[0].Err.Error() != want {
		t.Errorf("skipped %v\nwant %s", se.Files, want)
	}
	if len(runs) != 1 || runs[0].Records != 3 {
		t.Errorf("runs %+v: want the good file's 3 records", runs)
	}
}

// TestSlowPipeCommitsByTimeAndStopsOnCancel plays `(head -n 20 audit.log;
// sleep 30) | faultline ingest audit -` through a FIFO. Before, nothing was
// committed until 256 lines or 1 MiB arrived, and Ctrl-C waited for the
// pipe to close, then kept 0 records. Now the 20 records are committed
// within about a second, and cancelling returns promptly with them kept.
func TestSlowPipeCommitsByTimeAndStopsOnCancel(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "audit.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	writer := make(chan *os.File, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			close(writer)
			return
		}
		f.Write([]byte(auditLines("slow", 20)))
		writer <- f // held open: the pipe trickles, it does not end
	}()
	s := sqlitetest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		runs []timeline.IngestRun
		err  error
	}
	done := make(chan result, 1)
	go func() {
		runs, err := Ingest(ctx, s, []string{fifo}, Options{})
		done <- result{runs, err}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(records(t, s)) < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 20 records committed after 5 s of a quiet pipe", len(records(t, s)))
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	select {
	case r := <-done:
		if !errors.Is(r.err, context.Canceled) || len(r.runs) != 1 || r.runs[0].Records != 20 {
			t.Errorf("runs %+v, err %v: want 20 records and context.Canceled", r.runs, r.err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Ingest still blocked on the pipe 3 s after the cancel")
	}
	if f, ok := <-writer; ok {
		f.Close()
	}
}

// TestCommitByTimeOnlyForStreams: a stream (Size unknown) commits a batch
// that has waited commitEvery; a file of known size commits by batch size
// alone, however long the batch has been open.
func TestCommitByTimeOnlyForStreams(t *testing.T) {
	long := time.Now().Add(-time.Hour)
	for _, tc := range []struct {
		name string
		size int64
		open bool
		want bool
	}{
		{"stream, batch open for an hour", -1, true, true},
		{"file, batch open for an hour", 1 << 30, true, false},
		{"stream, no batch open", -1, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &writer{src: &input.Source{Size: tc.size}, lastCommit: long}
			if tc.open {
				w.batch = sqlitetestBatch(t)
			}
			if got := w.due(); got != tc.want {
				t.Errorf("due() = %v, want %v", got, tc.want)
			}
		})
	}
}

// sqlitetestBatch is an open batch of a fresh test timeline.
func sqlitetestBatch(t *testing.T) timeline.Batch {
	t.Helper()
	b, err := sqlitetest.New(t).Batch(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Rollback() })
	return b
}
