package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMissing runs a test that calls Missing in a child process, with CI
// set and unset, and checks that it fails in the one and skips in the other.
func TestMissing(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") != "" {
		Missing(t, "no %s here", "widget")
		return
	}
	for _, tc := range []struct {
		ci       string
		wantFail bool
		want     string
	}{
		{"", false, "--- SKIP: TestMissing"},
		{"1", true, "missing under CI (CI=1), where nothing may skip: no widget here"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestMissing$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTENV_CHILD=1", "CI="+tc.ci)
		out, err := cmd.CombinedOutput()
		if (err != nil) != tc.wantFail {
			t.Errorf("CI=%q: err = %v, want failure %v\n%s", tc.ci, err, tc.wantFail, out)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("CI=%q: output lacks %q:\n%s", tc.ci, tc.want, out)
		}
	}
}
