package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// TestFullDiskLeavesNoTransactionOpen: when a commit of an object dump
// fails, the run counts what was committed, is marked failed (items 14 and
// 21 of issue 15), and no transaction is left open: the next ingest into
// the same timeline writes the rest.
func TestFullDiskLeavesNoTransactionOpen(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"apiVersion":"v1","kind":"List","items":[`)
	const n = 45_000 // three batches of 20,000 at most
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-%d","namespace":"ns","uid":"u-%d","resourceVersion":"%d"}}`, i, i, i+1)
	}
	b.WriteString("]}\n")
	dir := t.TempDir()
	path := filepath.Join(dir, "pods.json")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(dir, "t.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	opt := FileOptions{Now: time.Now, BatchSize: 20_000}
	runs, err := IngestFiles(ctx, &timelinetest.FullDisk{Appender: s, Commits: 1}, []string{path}, opt)
	if !errors.Is(err, timelinetest.ErrDiskFull) {
		t.Fatalf("err = %v, want the disk-full error", err)
	}
	held, err := s.Versions(ctx, timeline.VersionQuery{Resource: "pods"})
	if err != nil {
		t.Fatal(err)
	}
	if len(held) == 0 || len(held) >= n || runs[0].Versions != int64(len(held)) || runs[0].Status != timeline.RunFailed {
		t.Fatalf("run %d versions, %s; the timeline holds %d of %d: want the run to count what is held, failed",
			runs[0].Versions, runs[0].Status, len(held), n)
	}
	// No transaction left open: a one-pod ingest gets the writer lock at
	// once (a minute is only the bound of a wait that would never end, far
	// above the milliseconds it takes however loaded the machine)...
	one := filepath.Join(dir, "one.json")
	if err := os.WriteFile(one, []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-0","namespace":"ns","uid":"u-0","resourceVersion":"1"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := IngestFiles(ctx, s, []string{one}, opt); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a one-pod ingest still waits for the writer lock after a minute")
	}
	// ... and a second ingest of the dump writes the rest.
	if _, err := IngestFiles(ctx, s, []string{path}, opt); err != nil {
		t.Fatal(err)
	}
	if all, _ := s.Versions(ctx, timeline.VersionQuery{Resource: "pods"}); len(all) != n {
		t.Errorf("after the rerun the timeline holds %d of %d versions", len(all), n)
	}
}
