package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := &Factory{IO: IOStreams{Out: &out, ErrOut: &errOut}, Getenv: func(string) string { return "" }, Now: time.Now}
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
