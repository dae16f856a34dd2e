package nodelogs

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

	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// linkFlaps is n dmesg lines that each match (a link going down and up),
// a second apart, between lines that match nothing.
func linkFlaps(n int) string {
	var b strings.Builder
	for i := range n {
		at := t0.Add(time.Duration(i) * time.Second).Format("2006-01-02T15:04:05,000000+00:00")
		state := [...]string{"Down", "Up"}[i%2]
		fmt.Fprintf(&b, "%s usb 1-1: device descriptor read/64, error -71\n%s eth0: Link is %s\n", at, at, state)
	}
	return b.String()
}

func count(t *testing.T, s timeline.Reader) int64 {
	t.Helper()
	var n int64
	for _, err := range s.Records(context.Background(), timeline.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// TestNodeLogCancelKeepsWhatWasCommitted plays `(cat gpu-0086.dmesg; sleep 30) |
// faultline ingest nodelogs --node gpu-0086 -` through a FIFO, then
// Ctrl-C: the lines that came are committed within about a second (a quiet
// pipe commits by time), and the cancel returns promptly with them kept.
func TestNodeLogCancelKeepsWhatWasCommitted(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "gpu-0086.fifo")
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
		f.WriteString(linkFlaps(20))
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
		runs, err := Ingest(ctx, s, []File{{Path: fifo}}, Options{})
		done <- result{runs, err}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for count(t, s) < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 20 records committed after 5 s of a quiet pipe", count(t, s))
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	select {
	case r := <-done:
		if !errors.Is(r.err, context.Canceled) || len(r.runs) != 1 || r.runs[0].Records != 20 || r.runs[0].Status != timeline.RunFailed {
			t.Errorf("runs %+v, err %v: want 20 records kept and context.Canceled", r.runs, r.err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Ingest still blocked on the pipe 3 s after the cancel")
	}
	if f, ok := <-writer; ok {
		f.Close()
	}
	if n := count(t, s); n != 20 {
		t.Errorf("the timeline holds %d records after the cancel, want 20", n)
	}
}

// TestNodeLogFullDiskReportsWhatWasCommitted: when a commit fails, the run
// (returned and stored) counts what the timeline holds and is failed.
func TestNodeLogFullDiskReportsWhatWasCommitted(t *testing.T) {
	const n = 30_000
	path := filepath.Join(t.TempDir(), "gpu-0086.dmesg")
	if err := os.WriteFile(path, []byte(linkFlaps(n)), 0o644); err != nil {
		t.Fatal(err)
	}
	s := sqlitetest.New(t)
	ctx := context.Background()
	runs, err := Ingest(ctx, &timelinetest.FullDisk{Appender: s, Commits: 1}, []File{{Path: path}}, Options{BatchSize: 10_000})
	if !errors.Is(err, timelinetest.ErrDiskFull) {
		t.Fatalf("err = %v, want the disk-full error", err)
	}
	held := count(t, s)
	if held == 0 || held >= n {
		t.Fatalf("the timeline holds %d of %d records, want the first commit's", held, n)
	}
	stored, err := s.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []timeline.IngestRun{runs[0], stored[0]} {
		if r.Records != held || r.Status != timeline.RunFailed {
			t.Errorf("run says %d records, %s: want the %d held, failed", r.Records, r.Status, held)
		}
	}
}

// TestNodeLogDamagedGzipKeepsWhatDecoded: a cut .gz keeps every record before the
// cut, and the damage is one bad line naming the file.
func TestNodeLogDamagedGzipKeepsWhatDecoded(t *testing.T) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(linkFlaps(5000)))
	zw.Close()
	path := filepath.Join(t.TempDir(), "gpu-0086.dmesg.gz")
	if err := os.WriteFile(path, b.Bytes()[:b.Len()*9/10], 0o644); err != nil {
		t.Fatal(err)
	}
	var bad []string
	runs, err := Ingest(context.Background(), sqlitetest.New(t), []File{{Path: path}}, Options{OnSkip: func(s *input.Skip) { bad = append(bad, s.Error()) }})
	if err != nil {
		t.Fatal(err)
	}
	if r := runs[0]; r.Records < 2500 || r.BadLines != 1 || len(bad) != 1 || !strings.Contains(bad[0], "file: gzip: unexpected EOF") {
		t.Errorf("run %+v, bad %q: want most records and the damage named", r, bad)
	}
}
