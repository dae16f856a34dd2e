package testenv

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// PlainFaultline builds faultline without the race detector into a
// temporary folder of t's and returns its path. Tests built with -race
// that run faultline as a process many times over, to check what it
// answers or what a kill -9 leaves, run this one: what they check does not
// depend on the detector (the tests in-process check the goroutines under
// it), and each run under it is several times slower. Under -race such
// runs took most of a local hack/test run's time (hack/cluster/README.md).
func PlainFaultline(t testing.TB) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		Missing(t, "no go tool to build faultline without -race: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "faultline")
	build := exec.Command(goTool, "build", "-o", bin, "github.com/faultline/faultline/cmd/faultline")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build faultline: %v\n%s", err, out)
	}
	return bin
}
