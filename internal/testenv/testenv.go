// Package testenv says what a test does when something it needs from
// outside the repository is missing: a tool (tmux, promtool, chattr), a
// data set (../shared/data), or a running service (hack/cluster).
//
// On a developer's machine the test skips, saying how to get what it
// needs. Under CI (CI set, as .ci/run sets it) it fails: there a skip would
// turn a missing dependency green.
//
// It also says whether the tests run under -race (RaceEnabled), and builds
// faultline without it for the tests that run it as a process many times
// over (PlainFaultline).
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// InCI reports whether the tests run under CI.
func InCI() bool { return os.Getenv("CI") != "" }

// Missing ends the test for want of something outside the repository: a
// skip on a developer's machine, a failure under CI.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("missing under CI (CI=%s), where nothing may skip: %s", os.Getenv("CI"), msg)
	}
	t.Skip(msg)
}
