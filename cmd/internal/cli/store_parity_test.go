package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/fixtures"
	"github.com/faultline/faultline/internal/testenv"
	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
)

// TestStoreParity replays every recorded fixture and every incident of the
// zoo into a SQLite file and into a ClickHouse database of its own, and
// finds the same investigate -o json, controlplane -o json and timeline -o
// jsonl on both, byte for byte once their lines are sorted (records of one
// nanosecond may come in another order).
func TestStoreParity(t *testing.T) {
	if testing.Short() {
		t.Skip("replays every fixture and zoo incident twice: not with -short")
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
	run := runCLI
	if testenv.RaceEnabled {
		// Under -race (CI) the zoo's replays outlast go test's timeout:
		// one incident per family there, all of them without -race. And
		// the replays run a faultline built without -race: this test
		// checks answers, which the race detector does not change, and in
		// CI its package took 41 of the run's 46 minutes, nearly all of it
		// these replays in-process under -race. The same code runs
		// in-process under -race in TestEvalOnClickHouse and
		// TestIngestAndTimelineOnClickHouse.
		zoo = onePerFamily(zoo)
		run = plainBinary(t)
	}
	incidents = append(incidents, zoo...)
	for _, name := range incidents {
		t.Run(strings.TrimPrefix(name, "../../../fixtures/"), func(t *testing.T) {
			t.Parallel()
			db, dsn := filepath.Join(t.TempDir(), "f.db"), clickhousetest.DSN(t)
			for _, where := range [][]string{{"--db", db}, {"--store", dsn}} {
				if code, _, stderr := run(t, append(where, "replay", name)...); code != 0 {
					t.Fatalf("%s replay %s: exit %d: %s", where[0], name, code, stderr)
				}
			}
			for _, cmd := range [][]string{{"investigate", "-o", "json"}, {"controlplane", "-o", "json"}, {"timeline", "-o", "jsonl"}} {
				lite := sortedOutput(t, run, append([]string{"--db", db}, cmd...))
				house := sortedOutput(t, run, append([]string{"--store", dsn}, cmd...))
				if lite != house {
					t.Errorf("%s differs: SQLite %d bytes, ClickHouse %d bytes; first difference:\n%s",
						strings.Join(cmd, " "), len(lite), len(house), firstDiff(lite, house))
				}
			}
			// The other analyses, which may also refuse (a quiet day has
			// no slice): the same exit code and the same answer.
			more := [][]string{{"slice", "-o", "json"}, {"counterexample", "-o", "json"}, {"diff", "-o", "json"},
				{"nodehealth", "-o", "json"}, {"alerts", "suggest"}}
			if ref := somePod(t, run, db); ref != "" {
				more = append(more, []string{"identity", ref, "-o", "json"}, []string{"history", ref, "-o", "json"})
			}
			for _, cmd := range more {
				lc, lite := sortedAnswer(t, run, append([]string{"--db", db}, cmd...))
				hc, house := sortedAnswer(t, run, append([]string{"--store", dsn}, cmd...))
				if lc != hc || lite != house {
					t.Errorf("%s differs: SQLite exit %d, %d bytes; ClickHouse exit %d, %d bytes; first difference:\n%s",
						strings.Join(cmd, " "), lc, len(lite), hc, len(house), firstDiff(lite, house))
				}
			}
		})
	}
}

// somePod names a pod of the timeline in db, pod/NAMESPACE/NAME, or "".
func somePod(t *testing.T, run cliRunner, db string) string {
	t.Helper()
	code, stdout, stderr := run(t, "--db", db, "timeline", "-o", "jsonl", "--limit", "1",
		"--where", `resource == "pods" && ns != "" && name != ""`)
	if code != 0 {
		t.Fatalf("find a pod: exit %d: %s", code, stderr)
	}
	var rec struct {
		Object struct{ Namespace, Name string }
	}
	if line, _, _ := strings.Cut(stdout, "\n"); line == "" || json.Unmarshal([]byte(line), &rec) != nil || rec.Object.Name == "" {
		return ""
	}
	return "pod/" + rec.Object.Namespace + "/" + rec.Object.Name
}

// sortedAnswer runs faultline args and returns its exit code and its
// output, lines sorted; on a failure, the output is its stderr's error
// line, since the rest (diagnostics, hints) may name the store.
func sortedAnswer(t *testing.T, run cliRunner, args []string) (int, string) {
	t.Helper()
	code, stdout, stderr := run(t, args...)
	if code != 0 {
		for line := range strings.Lines(stderr) {
			if strings.HasPrefix(line, "error: ") {
				return code, strings.TrimSuffix(line, "\n")
			}
		}
		return code, stderr
	}
	return code, sortLines(stdout)
}

// cliRunner runs faultline with args and gives its exit code and output.
type cliRunner func(t *testing.T, args ...string) (code int, stdout, stderr string)

// plainBinary builds faultline without -race into a temporary folder and
// returns a runner that executes it with an environment of its own (no
// FAULTLINE_* variable, a fresh HOME), as runCLI runs it in-process.
func plainBinary(t *testing.T) cliRunner {
	t.Helper()
	bin, dir := testenv.PlainFaultline(t), t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "TMPDIR=" + os.TempDir()}
	return func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			return exit.ExitCode(), out.String(), errOut.String()
		case err != nil:
			t.Fatalf("faultline %s: %v", strings.Join(args, " "), err)
		}
		return 0, out.String(), errOut.String()
	}
}

// sortedOutput runs faultline args and returns its output, lines sorted.
func sortedOutput(t *testing.T, run cliRunner, args []string) string {
	t.Helper()
	code, stdout, stderr := run(t, args...)
	if code != 0 {
		t.Fatalf("faultline %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	return sortLines(stdout)
}

// sortLines sorts the lines of s: records of one nanosecond may come in
// another order from each store.
func sortLines(s string) string {
	lines := strings.Split(s, "\n")
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
