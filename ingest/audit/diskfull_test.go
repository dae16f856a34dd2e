package audit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// TestFullDiskReportsWhatWasCommitted: when a batch fails to commit, the
// run (returned and stored) counts what the timeline holds, not what was
// read, and is marked failed. It used to report 31,005 records when 15,536
// were committed, and the run was left "running".
func TestFullDiskReportsWhatWasCommitted(t *testing.T) {
	var lines []string
	const n = 20000 // 4 chunks of chunkBytes: a commit after each
	for i := range n {
		lines = append(lines, fmt.Sprintf(`{"kind":"Event","level":"Metadata","auditID":"a%05d","stage":"ResponseComplete","verb":"get","user":{"username":"u"},"requestReceivedTimestamp":"2026-05-01T10:00:%02dZ"}`, i, i%60))
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := sqlitetest.New(t)
	runs, err := Ingest(context.Background(), &timelinetest.FullDisk{Appender: s, Commits: 2}, []string{path}, Options{BatchSize: 1000, Workers: 1})
	if !errors.Is(err, timelinetest.ErrDiskFull) {
		t.Fatalf("err = %v, want the disk-full error", err)
	}
	held := int64(len(records(t, s)))
	if held == 0 || held >= n {
		t.Fatalf("the timeline holds %d of %d records, want the first batches'", held, n)
	}
	stored, err := s.Runs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	type counts struct {
		Status         timeline.RunStatus
		Lines, Records int64
	}
	want := counts{timeline.RunFailed, held, held}
	for name, r := range map[string]timeline.IngestRun{"returned": runs[0], "stored": stored[0]} {
		if diff := cmp.Diff(want, counts{r.Status, r.Lines, r.Records}); diff != "" {
			t.Errorf("%s run (-want +got)\n%s", name, diff)
		}
	}
}
