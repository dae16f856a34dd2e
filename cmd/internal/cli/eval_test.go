package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLIEnv(t, nil, args...)
}

// runCLIEnv is runCLI with the environment env (and nothing else).
func runCLIEnv(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := &Factory{IO: IOStreams{Out: &out, ErrOut: &errOut}, Getenv: func(k string) string { return env[k] }, Now: time.Now}
	code = Run(context.Background(), args, f)
	return code, out.String(), errOut.String()
}

func TestEvalUsage(t *testing.T) {
	tests := []struct {
		args []string
		err  string
	}{
		{[]string{"eval"}, "needs at least 1 argument"},
		{[]string{"eval", "../../../fixtures/holdout", "--split", "test"}, `unknown --split "test"`},
		{[]string{"eval", "../../../fixtures/holdout", "-j", "0"}, "-j 0"},
		{[]string{"eval", "../../../fixtures/holdout", "-o", "csv"}, `unknown output "csv"`},
		{[]string{"eval", "../../../fixtures/holdout", "--min", "90"}, "--min 90: want a score from 0 to 1"},
		{[]string{"eval", "no-such-folder"}, "no-such-folder"},
		{[]string{"eval", "../../../docs"}, "no incident folder"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			if code != exitUsage || !strings.Contains(stderr, tt.err) {
				t.Errorf("exit %d, stderr %q; want exit 2 saying %q", code, stderr, tt.err)
			}
		})
	}
}

// faultline eval over the holdout: every incident is scored and the JSON
// has the documented shape (docs/eval.md).
func TestEvalHoldoutJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("replays six recorded incidents")
	}
	code, stdout, stderr := runCLI(t, "eval", "../../../fixtures/holdout", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if diff := cmp.Diff([]string{"controls", "families", "incidents", "overall", "schemaVersion"}, keys(res)); diff != "" {
		t.Errorf("top-level keys (-want +got)\n%s", diff)
	}
	if res["schemaVersion"] != 1.0 {
		t.Errorf("schemaVersion %v, want 1", res["schemaVersion"])
	}
	incidents, _ := res["incidents"].([]any)
	if len(incidents) != 6 {
		t.Fatalf("%d incidents, want the 6 holdouts", len(incidents))
	}
	var paths []string
	for _, x := range incidents {
		in := x.(map[string]any)
		paths = append(paths, in["path"].(string))
		if diff := cmp.Diff([]string{"checks", "control", "details", "family", "path", "seed", "split"}, keys(in)); diff != "" {
			t.Errorf("%v: keys (-want +got)\n%s", in["path"], diff)
		}
		checks := in["checks"].(map[string]any)
		for k, v := range checks {
			if _, ok := v.(bool); !ok {
				t.Errorf("%v: check %s = %v, want a bool", in["path"], k, v)
			}
		}
		details := in["details"].([]any)
		if len(details) != len(checks) {
			t.Errorf("%v: %d details for %d checks", in["path"], len(details), len(checks))
		}
		for _, d := range details {
			if diff := cmp.Diff([]string{"check", "expected", "found", "why"}, keys(d.(map[string]any))); diff != "" {
				t.Errorf("%v: detail keys (-want +got)\n%s", in["path"], diff)
			}
		}
		if in["split"] != "train" || in["control"] != false {
			t.Errorf("%v: split %v control %v, want train, false", in["path"], in["split"], in["control"])
		}
	}
	if !sort.StringsAreSorted(paths) || !strings.HasSuffix(paths[0], "fixtures/holdout/bad-config-rollout") {
		t.Errorf("incidents not sorted by path: %v", paths)
	}
	families := res["families"].([]any)
	if len(families) != 5 {
		t.Errorf("%d families, want 5 (mpi-rank-death has two holdouts)", len(families))
	}
	for _, x := range append(families, res["overall"]) {
		m := x.(map[string]any)
		if m["checks"].(float64) < m["passed"].(float64) || m["score"].(float64) < 0 || m["score"].(float64) > 1 {
			t.Errorf("tally %v does not add up", m)
		}
	}
	if diff := cmp.Diff(map[string]any{"incidents": 0.0, "confidentCauses": 0.0}, res["controls"]); diff != "" {
		t.Errorf("controls (-want +got)\n%s", diff)
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// evalZoo are three quick incidents of the zoo, a quiet control among them.
var evalZoo = []string{
	"../../../fixtures/zoo/control/seed-101",
	"../../../fixtures/zoo/digest-drift/seed-2",
	"../../../fixtures/zoo/rbac-break/seed-1",
}

// TestEvalOnClickHouse: eval --store replays each incident into a database
// of its own on the cluster and scores it as on SQLite, the JSON equal
// field for field (it holds no timings); no database is left behind, also
// of an incident that fails once its database is made.
func TestEvalOnClickHouse(t *testing.T) {
	dsn := clickhousetest.DSN(t)
	lite := evalJSON(t, 0, append([]string{"eval", "-o", "json"}, evalZoo...)...)
	house := evalJSON(t, 0, append([]string{"--store", dsn, "eval", "-o", "json", "-j", "3"}, evalZoo...)...)
	if diff := cmp.Diff(lite, house); diff != "" {
		t.Errorf("eval -o json: SQLite (-) and ClickHouse (+) differ\n%s", diff)
	}
	if n := len(house["incidents"].([]any)); n != len(evalZoo) {
		t.Errorf("%d incidents scored, want %d", n, len(evalZoo))
	}
	broken := brokenIncident(t)
	res := evalJSON(t, exitFailure, "--store", dsn, "eval", "-o", "json", broken)
	want := []any{map[string]any{"path": filepath.ToSlash(broken), "error": "investigate: the timeline is empty"}}
	if diff := cmp.Diff(want, res["errors"]); diff != "" {
		t.Errorf("an incident with no evidence: errors (-want +got)\n%s", diff)
	}
	if left := clickhousetest.Databases(t, dsn, evalDBPrefix); len(left) > 0 {
		t.Errorf("eval --store left databases behind: %v", left)
	}
}

// TestEvalOnClickHouseInterrupted: eval --store interrupted while an
// incident is replayed exits 130, and drops that incident's database.
func TestEvalOnClickHouseInterrupted(t *testing.T) {
	dsn := clickhousetest.DSN(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut bytes.Buffer
	f := &Factory{IO: IOStreams{Out: &out, ErrOut: &errOut}, Getenv: func(string) string { return "" }, Now: time.Now}
	done := make(chan int)
	before := clickhousetest.Databases(t, dsn, evalDBPrefix)
	go func() { done <- Run(ctx, []string{"--store", dsn, "eval", "-j", "1", evalZoo[2]}, f) }()
	for slices.Equal(clickhousetest.Databases(t, dsn, evalDBPrefix), before) {
		select {
		case code := <-done:
			t.Fatalf("eval ended (exit %d) before its database showed: %s", code, errOut.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	if code := <-done; code != exitInterrupt {
		t.Errorf("interrupted: exit %d, want %d; stderr %s", code, exitInterrupt, errOut.String())
	}
	if diff := cmp.Diff(before, clickhousetest.Databases(t, dsn, evalDBPrefix)); diff != "" {
		t.Errorf("interrupted eval --store left databases behind (-before +after)\n%s", diff)
	}
}

// evalJSON runs faultline args, wants exit code, and decodes its -o json.
func evalJSON(t *testing.T, code int, args ...string) map[string]any {
	t.Helper()
	got, stdout, stderr := runCLI(t, args...)
	if got != code {
		t.Fatalf("faultline %s: exit %d, want %d: %s", strings.Join(args, " "), got, code, stderr)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("faultline %s: not JSON: %v\n%s", strings.Join(args, " "), err, stdout)
	}
	return res
}

// brokenIncident is an incident folder whose ground truth loads but whose
// one audit log holds nothing but a bad line: it is ingested (its timeline
// made) and fails at the investigation.
func brokenIncident(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "broken")
	truth, err := os.ReadFile(filepath.Join(evalZoo[1], "expected.json"))
	if err == nil {
		err = os.Mkdir(dir, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "expected.json"), truth, 0o644)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "audit.log"), []byte("not json\n"), 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
