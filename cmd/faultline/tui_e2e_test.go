package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testenv"
	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
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
	tmux := needTmux(t)
	dir := t.TempDir()
	where := []string{"--db", filepath.Join(dir, "incident.db")}
	term := startReplayInTmux(t, tmux, dir, where)
	term.waitFor("investigation ready", 3*time.Minute)

	checkFitsWithReverseVideo(t, term)
	checkHelpShowsQuit(t, term)
	checkBurstsScroll(t, term)
	checkRecordOpensWithEvidence(t, term)
	next := markBadShowsNext(t, term)
	checkTopChangeIsInjected(t, term)

	term.keys("q")
	term.waitFor("EXITED 0", 10*time.Second)

	checkBisectAgreesWithTUI(t, where, next)
}

// TestTUIInTmuxOnClickHouse is the same session on a ClickHouse store
// (--store): the replay, the investigation, a bad mark made in the TUI and
// its next instant, which faultline bisect then reads back from the
// cluster and agrees with.
func TestTUIInTmuxOnClickHouse(t *testing.T) {
	tmux := needTmux(t)
	where := []string{"--store", clickhousetest.DSN(t)}
	term := startReplayInTmux(t, tmux, t.TempDir(), where)
	term.waitFor("investigation ready", 3*time.Minute)
	checkFitsWithReverseVideo(t, term)
	if title, _, _ := strings.Cut(term.capture(), "\n"); strings.Contains(title, "PARTIAL") {
		t.Errorf("every shard is up, yet the title says PARTIAL: %q", title)
	}
	next := markBadShowsNext(t, term)
	term.keys("q")
	term.waitFor("EXITED 0", 10*time.Second)
	checkBisectAgreesWithTUI(t, where, next)
}

// needTmux returns the tmux binary, or skips the test (fails it under CI)
// when there is none; with -short it skips: the tests replay a fixture.
func needTmux(t *testing.T) string {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		testenv.Missing(t, "tmux not installed (apt-get install tmux)")
	}
	if testing.Short() {
		t.Skip("replays a fixture in a terminal")
	}
	return tmux
}

// tmuxTerm is one tmux session of 80x24 on its own server socket.
type tmuxTerm struct {
	t       *testing.T
	tmux    string
	sock    string
	session string
}

// startReplayInTmux starts faultline replay bad-config-rollout in dir on a
// new tmux server of its own, killed when the test ends; the shell prints
// EXITED and the exit code when faultline exits.
func startReplayInTmux(t *testing.T, tmux, dir string, where []string) *tmuxTerm {
	t.Helper()
	term := &tmuxTerm{
		t:       t,
		tmux:    tmux,
		sock:    filepath.Join(dir, "tmux.sock"),
		session: fmt.Sprintf("faultline-e2e-%d", os.Getpid()),
	}
	var flags string
	for _, w := range where {
		flags += fmt.Sprintf(" %q", w)
	}
	script := fmt.Sprintf("cd %q && FAULTLINE_AS_MAIN=1 NO_COLOR=1 TERM=xterm-256color %q%s replay bad-config-rollout 2>/dev/null; echo EXITED $?; sleep 600",
		dir, os.Args[0], flags)
	term.run("new-session", "-d", "-s", term.session, "-x", "80", "-y", "24", "sh", "-c", script)
	t.Cleanup(func() { exec.Command(tmux, "-S", term.sock, "kill-server").Run() })
	return term
}

// run runs tmux against the session's server and fails the test if it fails.
func (term *tmuxTerm) run(args ...string) string {
	term.t.Helper()
	out, err := exec.Command(term.tmux, append([]string{"-S", term.sock}, args...)...).CombinedOutput()
	if err != nil {
		term.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// capture returns the screen as plain text.
func (term *tmuxTerm) capture() string {
	term.t.Helper()
	return term.run("capture-pane", "-p", "-t", term.session)
}

// waitFor polls the screen until it shows what, and fails the test after d.
func (term *tmuxTerm) waitFor(what string, d time.Duration) string {
	term.t.Helper()
	deadline := time.Now().Add(d)
	for {
		screen := term.capture()
		if strings.Contains(screen, what) {
			return screen
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("%q not on screen after %s:\n%s", what, d, screen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// keys sends keys to the session.
func (term *tmuxTerm) keys(k ...string) {
	term.t.Helper()
	term.run(append([]string{"send-keys", "-t", term.session}, k...)...)
}

// checkFitsWithReverseVideo: nothing is wider than the terminal, and
// NO_COLOR keeps the active tab in reverse video.
func checkFitsWithReverseVideo(t *testing.T, term *tmuxTerm) {
	t.Helper()
	screen := term.capture()
	for i, l := range strings.Split(strings.TrimRight(screen, "\n"), "\n") {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("line %d is %d wide: %q", i, n, l)
		}
	}
	if styled := term.run("capture-pane", "-p", "-e", "-t", term.session); !regexp.MustCompile(`\x1b\[([0-9]+;)*7(;[0-9]+)*m`).MatchString(styled) {
		t.Errorf("no reverse video on the screen under NO_COLOR:\n%q", styled)
	}
}

// checkHelpShowsQuit: help is one column, quit in it; esc closes it.
func checkHelpShowsQuit(t *testing.T, term *tmuxTerm) {
	t.Helper()
	term.keys("?")
	screen := term.waitFor("KEYS", 10*time.Second)
	if !regexp.MustCompile(`(?m)^\s+q/ctrl\+c\s+quit`).MatchString(screen) {
		t.Errorf("the help does not show how to quit:\n%s", screen)
	}
	term.keys("Escape")
	// Wait for the help to close: an Escape and a key sent together read
	// as one Alt+key.
	term.waitFor("REASON / MESSAGE", 10*time.Second)
}

// checkBurstsScroll: the control plane's bursts scroll.
func checkBurstsScroll(t *testing.T, term *tmuxTerm) {
	t.Helper()
	term.keys("4")
	term.waitFor("BURSTS 1/", 10*time.Second)
	term.keys("Down", "Down")
	screen := term.waitFor("BURSTS 3/", 10*time.Second)
	if !strings.Contains(screen, "\n3. ") {
		t.Errorf("the third burst is not in view after scrolling:\n%s", screen)
	}
}

// checkRecordOpensWithEvidence: a record opens in full, with its evidence;
// esc closes it.
func checkRecordOpensWithEvidence(t *testing.T, term *tmuxTerm) {
	t.Helper()
	term.keys("1")
	term.waitFor("REASON / MESSAGE", 10*time.Second)
	term.keys("f", "Enter")
	screen := term.waitFor("EVIDENCE", 10*time.Second)
	for _, want := range []string{"RECORD ", "time ", "line "} {
		if !strings.Contains(screen, want) {
			t.Errorf("the record's detail lacks %q:\n%s", want, screen)
		}
	}
	term.keys("Escape")
	term.waitFor("REASON / MESSAGE", 10*time.Second)
}

// markBadShowsNext marks the instant under the cursor bad and returns the
// next instant to judge (15:04:05.000) the timeline suggests, after
// checking the bisect screen suggests the same.
func markBadShowsNext(t *testing.T, term *tmuxTerm) string {
	t.Helper()
	term.keys("b")
	screen := term.waitFor("bisect - ..", 10*time.Second)
	next := regexp.MustCompile(`next (\d\d:\d\d:\d\d\.\d{3}) \(n\)`).FindStringSubmatch(screen)
	if next == nil {
		t.Fatalf("no next instant to judge after a mark:\n%s", screen)
	}
	term.waitFor("investigation ready", time.Minute)
	term.keys("5")
	term.waitFor("NEXT judge "+next[1], 10*time.Second)
	return next[1]
}

// checkTopChangeIsInjected: the diff's top change, opened, is the injected
// ConfigMap change.
func checkTopChangeIsInjected(t *testing.T, term *tmuxTerm) {
	t.Helper()
	term.keys("2")
	term.waitFor("DIMENSION", 10*time.Second)
	term.keys("Enter")
	term.waitFor("ConfigMap/ml/trainer-env  configmap/trainer-env/LR", 10*time.Second)
}

// checkBisectAgreesWithTUI: after the TUI quits, faultline bisect log holds
// its mark and faultline bisect status suggests next, as the TUI did.
func checkBisectAgreesWithTUI(t *testing.T, where []string, next string) {
	t.Helper()
	faultline := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(os.Args[0], append(slices.Clone(where), args...)...)
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
	if got := status.Next.UTC().Format("15:04:05.000"); got != next {
		t.Errorf("the TUI suggests %s, faultline bisect status %s", next, got)
	}
}
