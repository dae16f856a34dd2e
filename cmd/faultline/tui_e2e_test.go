package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testenv"
)

// TestTUIInTmux runs faultline replay bad-config-rollout on a real terminal
// of 80x24 (tmux; package tmux), with NO_COLOR, as an on-call engineer on a
// laptop would: the TUI opens after the replay; ? shows the keys, quit
// among them; the control plane's bursts scroll; enter opens a record with
// its evidence and esc closes it; f walks to the boundary and b marks it
// bad, after which the timeline and the bisect screen suggest the instant
// to judge next, the same faultline bisect status suggests; the diff's top
// change, opened, is the injected ConfigMap change; q quits, and the mark
// is in faultline bisect log.
func TestTUIInTmux(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		testenv.Missing(t, "tmux not installed (apt-get install tmux)")
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
	run("new-session", "-d", "-s", session, "-x", "80", "-y", "24", "sh", "-c", script)
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
	keys := func(k ...string) { run(append([]string{"send-keys", "-t", session}, k...)...) }
	waitFor("investigation ready", 3*time.Minute)

	// Nothing is wider than the terminal, and NO_COLOR keeps the active
	// tab in reverse video.
	screen := capture()
	for i, l := range strings.Split(strings.TrimRight(screen, "\n"), "\n") {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("line %d is %d wide: %q", i, n, l)
		}
	}
	if styled := run("capture-pane", "-p", "-e", "-t", session); !regexp.MustCompile(`\x1b\[([0-9]+;)*7(;[0-9]+)*m`).MatchString(styled) {
		t.Errorf("no reverse video on the screen under NO_COLOR:\n%q", styled)
	}

	// Help: one column, quit in it.
	keys("?")
	screen = waitFor("KEYS", 10*time.Second)
	if !regexp.MustCompile(`(?m)^\s+q/ctrl\+c\s+quit`).MatchString(screen) {
		t.Errorf("the help does not show how to quit:\n%s", screen)
	}
	keys("Escape")
	// Wait for the help to close: an Escape and a key sent together read
	// as one Alt+key.
	waitFor("REASON / MESSAGE", 10*time.Second)

	// The control plane's bursts scroll.
	keys("4")
	waitFor("BURSTS 1/", 10*time.Second)
	keys("Down", "Down")
	screen = waitFor("BURSTS 3/", 10*time.Second)
	if !strings.Contains(screen, "\n3. ") {
		t.Errorf("the third burst is not in view after scrolling:\n%s", screen)
	}

	// A record opens in full, with its evidence; esc closes it.
	keys("1")
	waitFor("REASON / MESSAGE", 10*time.Second)
	keys("f", "Enter")
	screen = waitFor("EVIDENCE", 10*time.Second)
	for _, want := range []string{"RECORD ", "time ", "line "} {
		if !strings.Contains(screen, want) {
			t.Errorf("the record's detail lacks %q:\n%s", want, screen)
		}
	}
	keys("Escape")
	waitFor("REASON / MESSAGE", 10*time.Second)

	// A bad mark: the next instant to judge is suggested.
	keys("b")
	screen = waitFor("bisect - ..", 10*time.Second)
	next := regexp.MustCompile(`next (\d\d:\d\d:\d\d\.\d{3}) \(n\)`).FindStringSubmatch(screen)
	if next == nil {
		t.Fatalf("no next instant to judge after a mark:\n%s", screen)
	}
	waitFor("investigation ready", time.Minute)
	keys("5")
	waitFor("NEXT judge "+next[1], 10*time.Second)

	// The diff's top change, opened, is the injected ConfigMap change.
	keys("2")
	waitFor("DIMENSION", 10*time.Second)
	keys("Enter")
	waitFor("ConfigMap/ml/trainer-env  configmap/trainer-env/LR", 10*time.Second)

	keys("q")
	waitFor("EXITED 0", 10*time.Second)

	faultline := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(os.Args[0], append([]string{"--db", db}, args...)...)
		cmd.Env = append(os.Environ(), "FAULTLINE_AS_MAIN=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("faultline %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := faultline("bisect", "log"); !strings.Contains(out, "bad") {
		t.Errorf("bisect log does not hold the mark made in the TUI:\n%s", out)
	}
	var status struct {
		Next *time.Time `json:"next"`
	}
	out := faultline("bisect", "status", "-o", "json")
	if err := json.Unmarshal([]byte(out), &status); err != nil || status.Next == nil {
		t.Fatalf("bisect status -o json has no next instant (%v):\n%s", err, out)
	}
	if got := status.Next.UTC().Format("15:04:05.000"); got != next[1] {
		t.Errorf("the TUI suggests %s, faultline bisect status %s", next[1], got)
	}
}
