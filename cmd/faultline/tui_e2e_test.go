package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTUIInTmux runs faultline replay bad-config-rollout on a real terminal
// (tmux, 120x40; package tmux): the TUI opens after the replay; f walks to
// the boundary, b marks it bad, 2 opens the diff, whose top row must be the
// injected ConfigMap change, and the mark must be in faultline bisect log.
func TestTUIInTmux(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux not installed (apt-get install tmux)")
	}
	if testing.Short() {
		t.Skip("replays a fixture in a terminal")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "incident.db")
	session := fmt.Sprintf("faultline-e2e-%d", os.Getpid())
	sock := filepath.Join(dir, "tmux.sock")
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	script := fmt.Sprintf("cd %q && FAULTLINE_AS_MAIN=1 NO_COLOR=1 TERM=xterm-256color %q --db %q replay bad-config-rollout 2>/dev/null; echo EXITED $?; sleep 600",
		dir, os.Args[0], db)
	run("new-session", "-d", "-s", session, "-x", "120", "-y", "40", "sh", "-c", script)
	t.Cleanup(func() { exec.Command(tmux, "-S", sock, "kill-server").Run() })

	capture := func() string { return run("capture-pane", "-p", "-t", session) }
	waitFor := func(what string, d time.Duration) string {
		t.Helper()
		deadline := time.Now().Add(d)
		for {
			screen := capture()
			if strings.Contains(screen, what) {
				return screen
			}
			if time.Now().After(deadline) {
				t.Fatalf("%q not on screen after %s:\n%s", what, d, screen)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("investigation ready", 3*time.Minute)
	run("send-keys", "-t", session, "f")
	waitFor("bucket 77/", 10*time.Second)
	run("send-keys", "-t", session, "b")
	waitFor("bisect - ..", 10*time.Second)
	waitFor("investigation ready", time.Minute)
	run("send-keys", "-t", session, "2")
	screen := waitFor("DIMENSION", 10*time.Second)
	lines := strings.Split(screen, "\n")
	var top string
	for i, l := range lines {
		if strings.HasPrefix(l, "#") && i+1 < len(lines) {
			top = lines[i+1]
		}
	}
	if !strings.Contains(top, "ConfigMap/ml/trainer-env") || !strings.Contains(top, "configmap/trainer-env/LR") {
		t.Errorf("the diff's top change is not the injected ConfigMap change:\n%s", screen)
	}
	run("send-keys", "-t", session, "q")
	waitFor("EXITED 0", 10*time.Second)

	log := exec.Command(os.Args[0], "--db", db, "bisect", "log")
	log.Env = append(os.Environ(), "FAULTLINE_AS_MAIN=1")
	out, err := log.CombinedOutput()
	if err != nil {
		t.Fatalf("bisect log: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "bad") {
		t.Errorf("bisect log does not hold the mark made in the TUI:\n%s", out)
	}
}
