package versions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// TestFullDiskReportsWhatWasCommitted: a versions file is committed as it
// is read; when a commit fails, the run (returned and stored) counts what
// the timeline holds and is marked failed (issue 15, items 14 and 21).
func TestFullDiskReportsWhatWasCommitted(t *testing.T) {
	const n = 50_000
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"type":"artifact","time":"2026-05-01T09:%02d:%02dZ","kind":"dataset","name":"d%d","version":"v%d"}`+"\n", i/60%60, i%60, i%7, i)
	}
	path := filepath.Join(t.TempDir(), "versions.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	s := sqlitetest.New(t)
	ctx := context.Background()
	runs, err := Ingest(ctx, &timelinetest.FullDisk{Appender: s, Commits: 1}, []string{path}, Options{BatchSize: 20_000})
	if !errors.Is(err, timelinetest.ErrDiskFull) {
		t.Fatalf("err = %v, want the disk-full error", err)
	}
	var held int64
	for _, err := range s.Records(ctx, timeline.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		held++
	}
	if held == 0 || held >= n {
		t.Fatalf("the timeline holds %d of %d entries, want the first commit's", held, n)
	}
	stored, err := s.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []timeline.IngestRun{runs[0], stored[0]} {
		if r.Records != held || r.Lines != held || r.Status != timeline.RunFailed {
			t.Errorf("run says %d records of %d lines, %s: want the %d held, failed", r.Records, r.Lines, r.Status, held)
		}
	}
}
