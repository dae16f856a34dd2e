package cli

import (
	"bytes"
	"context"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/investigate"
)

var updateReports = flag.Bool("update", false, "rewrite the golden files of TestReportGoldens")

// reportFixtures are the incidents whose text report has a golden: every
// top-level fixture with a truth (expected.json), and seed 1 of each zoo
// family.
func reportFixtures(t *testing.T) map[string]string {
	t.Helper()
	root := filepath.Join("..", "..", "..", "fixtures")
	dirs := map[string]string{}
	top, err := filepath.Glob(filepath.Join(root, "*", "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range top {
		dirs[filepath.Base(filepath.Dir(e))] = filepath.Dir(e)
	}
	zoo, err := filepath.Glob(filepath.Join(root, "zoo", "*", "seed-1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range zoo {
		dirs["zoo-"+filepath.Base(filepath.Dir(d))] = d
	}
	if len(top) < 5 || len(zoo) < 14 {
		t.Fatalf("found %d top-level fixtures and %d zoo families: is the tree whole?", len(top), len(zoo))
	}
	return dirs
}

// replayReport replays the incident folder dir into a timeline of its own
// and investigates it.
func replayReport(t *testing.T, dir string) *investigate.Report {
	t.Helper()
	ctx := context.Background()
	work := t.TempDir()
	logger := slog.New(slog.DiscardHandler)
	load := incidentLoader{logger: logger, now: func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) },
		warnf: func(string, ...any) {}, key: []byte("report-test-key-0123456789abcdef")}
	db := filepath.Join(work, "faultline.db")
	if _, err := load.ingest(ctx, os.DirFS(dir), dir, load.sqliteAt(db)); err != nil {
		t.Fatal(err)
	}
	rep, _, err := analyzeIncident(ctx, sqliteReadOnly(db, logger))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestReportGoldens writes the text report of each fixture as a pipe gets
// it (UTC, whole values) and compares it with its golden
// (testdata/TestReportGoldens/NAME.golden; go test -run TestReportGoldens
// -update rewrites them). It also asserts the layout: the headline first,
// of three to six lines, and every line within 100 columns.
func TestReportGoldens(t *testing.T) {
	if testing.Short() {
		t.Skip("replays every fixture and one zoo incident of each family: not with -short")
	}
	for name, dir := range reportFixtures(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each replay waits mostly on its database's syncs
			rep := replayReport(t, dir)
			var out bytes.Buffer
			if err := writeReport(&out, rep, textLayout{Width: reportWidth}); err != nil {
				t.Fatal(err)
			}
			checkReportLayout(t, out.String())
			golden := filepath.Join("testdata", "TestReportGoldens", name+".golden")
			if *updateReports {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -run TestReportGoldens -update writes it)", err)
			}
			if diff := cmp.Diff(string(want), out.String()); diff != "" {
				t.Errorf("report of %s (-want +got):\n%s", name, diff)
			}
		})
	}
}

// checkReportLayout asserts what every text report owes its reader: the
// headline first (BROKE or NOTHING, then SINCE), three to six lines before
// the first blank one, every line within 100 columns but for a command's
// word too long for any line (a pinned image digest), and the glossary
// named last.
func checkReportLayout(t *testing.T, report string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(report, "\n"), "\n")
	if !strings.HasPrefix(lines[0], "BROKE ") && !strings.HasPrefix(lines[0], "NOTHING ") {
		t.Errorf("the report opens with %q, not its headline", lines[0])
	}
	head := 0
	for head < len(lines) && lines[head] != "" {
		head++
	}
	if head < 3 || head > 6 {
		t.Errorf("the headline has %d lines, want 3 to 6:\n%s", head, strings.Join(lines[:head], "\n"))
	}
	since := false
	for _, l := range lines[:head] {
		since = since || strings.HasPrefix(l, "SINCE ")
	}
	if !since && !strings.HasPrefix(lines[0], "NOTHING") {
		t.Errorf("the headline says nothing of since when:\n%s", strings.Join(lines[:head], "\n"))
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > reportWidth && !oneWord(l) {
			t.Errorf("line %d is %d columns wide, over %d:\n%s", i+1, w, reportWidth, l)
		}
	}
	if last := lines[len(lines)-1]; last != glossaryLine {
		t.Errorf("the report ends with %q, want the glossary line", last)
	}
}

// oneWord says whether a line holds a single word (a command's line may
// end with its continuation " \"): a line that cannot be broken.
func oneWord(l string) bool {
	return !strings.Contains(strings.TrimSuffix(strings.TrimSpace(l), ` \`), " ")
}
