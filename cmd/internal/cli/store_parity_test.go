package cli

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/fixtures"
	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
)

// TestStoreParity replays every recorded fixture and every incident of the
// zoo into a SQLite file and into a ClickHouse database of its own, and
// finds the same investigate -o json, controlplane -o json and timeline -o
// jsonl on both, byte for byte once their lines are sorted (records of one
// nanosecond may come in another order).
func TestStoreParity(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 78 incidents twice: not with -short")
	}
	clickhousetest.DSN(t) // the cluster is there (else skip, or fail under CI)
	fxs, err := fixtures.List()
	if err != nil {
		t.Fatal(err)
	}
	var incidents []string
	for _, fx := range fxs {
		incidents = append(incidents, fx.Name)
	}
	zoo, err := filepath.Glob("../../../fixtures/zoo/*/seed-*")
	if err != nil || len(zoo) == 0 {
		t.Fatalf("no zoo incidents: %v", err)
	}
	if raceEnabled {
		// Under -race (CI) the 72 zoo replays outlast go test's timeout
		// (45 minutes): one incident per family there; all of them
		// without -race.
		zoo = onePerFamily(zoo)
	}
	incidents = append(incidents, zoo...)
	for _, name := range incidents {
		t.Run(strings.TrimPrefix(name, "../../../fixtures/"), func(t *testing.T) {
			t.Parallel()
			db, dsn := filepath.Join(t.TempDir(), "f.db"), clickhousetest.DSN(t)
			for _, where := range [][]string{{"--db", db}, {"--store", dsn}} {
				if code, _, stderr := runCLI(t, append(where, "replay", name)...); code != 0 {
					t.Fatalf("%s replay %s: exit %d: %s", where[0], name, code, stderr)
				}
			}
			for _, cmd := range [][]string{{"investigate", "-o", "json"}, {"controlplane", "-o", "json"}, {"timeline", "-o", "jsonl"}} {
				lite := sortedOutput(t, append([]string{"--db", db}, cmd...))
				house := sortedOutput(t, append([]string{"--store", dsn}, cmd...))
				if lite != house {
					t.Errorf("%s differs: SQLite %d bytes, ClickHouse %d bytes; first difference:\n%s",
						strings.Join(cmd, " "), len(lite), len(house), firstDiff(lite, house))
				}
			}
		})
	}
}

// sortedOutput runs faultline args and returns its output, lines sorted.
func sortedOutput(t *testing.T, args []string) string {
	t.Helper()
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("faultline %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	lines := strings.Split(stdout, "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// firstDiff shows the first line where a and b differ.
func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return "sqlite:     " + la[i] + "\nclickhouse: " + lb[i]
		}
	}
	return "one is a prefix of the other"
}

// onePerFamily keeps the first incident of each zoo family (the folder
// above seed-N).
func onePerFamily(zoo []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, dir := range zoo {
		if family := filepath.Dir(dir); !seen[family] {
			seen[family] = true
			out = append(out, dir)
		}
	}
	return out
}
