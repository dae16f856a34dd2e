package metrics_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/ingest/metrics"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

// snapshots writes n text snapshots of the same series (one sample each),
// scraped 15 s apart by their mtimes, and returns their paths.
func snapshots(t *testing.T, n, series int) []string {
	t.Helper()
	dir := t.TempDir()
	t0 := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	var paths []string
	for i := range n {
		var b strings.Builder
		b.WriteString("# TYPE requests_total counter\n")
		for j := range series {
			fmt.Fprintf(&b, "requests_total{pod=\"p%d\"} %d\n", j, i*series+j)
		}
		p := filepath.Join(dir, fmt.Sprintf("scrape-%03d.prom", i))
		if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		mt := t0.Add(time.Duration(i) * 15 * time.Second)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

type runCounts struct {
	Path                       string
	Status                     timeline.RunStatus
	Lines, Records, Duplicates int64
}

func storedRuns(t *testing.T, s interface {
	Runs(context.Context) ([]timeline.IngestRun, error)
}) []runCounts {
	t.Helper()
	runs, err := s.Runs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []runCounts
	for _, r := range runs {
		out = append(out, runCounts{filepath.Base(r.Path), r.Status, r.Lines, r.Records, r.Duplicates})
	}
	return out
}

// The snapshots of one ingest metrics share their transactions in SQLite
// (one commit for many files): still each file is a run of its own with
// its own counts, ended once its samples are committed, and a second ingest
// of the same files finds every sample held, each counted to its file.
func TestSnapshotsAreRunsOfTheirOwn(t *testing.T) {
	ctx := context.Background()
	s := sqlitetest.New(t)
	paths := snapshots(t, 5, 300)
	for pass, want := range []struct{ records, dups int64 }{{300, 0}, {0, 300}} {
		var heard []string
		runs, err := metrics.Ingest(ctx, s, paths, metrics.Options{OnRun: func(fr metrics.FileRun) {
			// Heard once committed: its samples are there to read.
			n := countSamples(t, s, fr.Run.First, fr.Run.Last.Add(time.Nanosecond))
			heard = append(heard, fmt.Sprintf("%s %s %d/%d", filepath.Base(fr.Run.Path), fr.Run.Status, n, fr.Series))
		}})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != len(paths) {
			t.Fatalf("pass %d: %d runs, want %d", pass+1, len(runs), len(paths))
		}
		var wantHeard []string
		for _, p := range paths {
			wantHeard = append(wantHeard, filepath.Base(p)+" done 300/300")
		}
		if diff := cmp.Diff(wantHeard, heard); diff != "" {
			t.Errorf("pass %d: OnRun heard (-want +got):\n%s", pass+1, diff)
		}
		got := storedRuns(t, s)[pass*len(paths):]
		var wantRuns []runCounts
		for _, p := range paths {
			wantRuns = append(wantRuns, runCounts{filepath.Base(p), timeline.RunDone, 300, want.records, want.dups})
		}
		if diff := cmp.Diff(wantRuns, got); diff != "" {
			t.Errorf("pass %d: stored runs (-want +got):\n%s", pass+1, diff)
		}
	}
}

// A file that fails in the middle of the ingest ends failed and ends the
// ingest, as with every ingester (input.Each); the files read before it,
// which shared its transaction, keep their samples and end done.
func TestAFailedFileAmongSnapshots(t *testing.T) {
	ctx := context.Background()
	s := sqlitetest.New(t)
	paths := snapshots(t, 4, 50)
	// A NUL byte: not a text snapshot at all.
	if err := os.WriteFile(paths[1], []byte("requests_total{pod=\"p0\"} 1\n\x00\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runs, err := metrics.Ingest(ctx, s, paths, metrics.Options{})
	if err == nil || !strings.Contains(err.Error(), filepath.Base(paths[1])) {
		t.Fatalf("error %v, want one naming %s", err, paths[1])
	}
	if len(runs) != 2 {
		t.Fatalf("%d runs, want 2", len(runs))
	}
	got := storedRuns(t, s)
	want := []runCounts{
		{filepath.Base(paths[0]), timeline.RunDone, 50, 50, 0},
		{filepath.Base(paths[1]), timeline.RunFailed, 0, 0, 0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stored runs (-want +got):\n%s", diff)
	}
	if n := countSamples(t, s, time.Time{}, time.Time{}); n != 50 {
		t.Errorf("%d samples stored, want 50", n)
	}
}

// countSamples counts the samples the store holds from since until before
// until (zero: unbounded).
func countSamples(t *testing.T, s timeline.SeriesReader, since, until time.Time) int {
	t.Helper()
	ctx := context.Background()
	var ids []int64
	for sr, err := range s.Series(ctx, timeline.SeriesQuery{}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sr.ID)
	}
	n := 0
	for _, err := range s.Samples(ctx, ids, since, until) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}
