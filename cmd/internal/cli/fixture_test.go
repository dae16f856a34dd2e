package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"
)

// fixtureCLI replays a fixture (a bundled name, or a folder of one's own)
// into a timeline of its own and returns a runner of faultline commands on
// it, with its config (the HMAC key) in a temporary folder.
func fixtureCLI(t *testing.T, fixture string) func(args ...string) (stdout string) {
	run, _ := fixtureDB(t, fixture)
	return run
}

// fixtureDB is fixtureCLI that also returns the timeline's path.
func fixtureDB(t *testing.T, fixture string) (func(args ...string) (stdout string), string) {
	t.Helper()
	config, db := t.TempDir(), filepath.Join(t.TempDir(), "t.db")
	run := func(args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		f := &Factory{
			IO: IOStreams{In: bytes.NewReader(nil), Out: &out, ErrOut: &errOut},
			Getenv: func(k string) string {
				if k == "XDG_CONFIG_HOME" {
					return config
				}
				return ""
			},
			Now: func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) },
		}
		code := Run(context.Background(), args, f)
		return out.String(), errOut.String(), code
	}
	if _, stderr, code := run("replay", fixture, "--db", db); code != 0 {
		t.Fatalf("replay %s: exit %d\n%s", fixture, code, stderr)
	}
	return func(args ...string) string {
		t.Helper()
		stdout, stderr, code := run(append([]string{"--db", db}, args...)...)
		if code != 0 {
			t.Fatalf("faultline %v: exit %d\n%s", args, code, stderr)
		}
		return stdout
	}, db
}
