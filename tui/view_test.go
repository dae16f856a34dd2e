package tui_test

import (
	"context"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/tui"
)

// salted matches digests: a whole redacted object's digest differs from one
// replay to the next (each timeline has its own salt), a key's does not.
var salted = regexp.MustCompile(`sha256:[0-9a-f]{6,}`)

// unsalted makes a view comparable across replays.
func unsalted(view string) string { return salted.ReplaceAllString(view, "sha256:<digest>") }

var testNow = func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }

// open starts the TUI on a replayed fixture at width x height and lets
// every first query end.
func open(t testing.TB, store tui.Store, width, height int) tea.Model {
	t.Helper()
	m := tui.New(context.Background(), store, tui.Options{Now: testNow, NoColor: true, Source: "test.db", ExportDir: t.TempDir()})
	m2 := drive(t, m, func() tea.Msg { return tea.WindowSizeMsg{Width: width, Height: height} })
	return drive(t, m2, m.Init())
}

// TestViews compares each screen, ANSI-stripped at 120x40, with its golden
// file (go test ./tui -update rewrites them).
func TestViews(t *testing.T) {
	for _, fixture := range []string{"bad-config-rollout", "digest-drift"} {
		t.Run(fixture, func(t *testing.T) {
			m := open(t, replayDB(t, fixture), 120, 40)
			for _, sc := range []struct{ name, key string }{
				{"timeline", "1"}, {"diff", "2"}, {"slice", "3"}, {"controlplane", "4"},
			} {
				t.Run(sc.name, func(t *testing.T) {
					m = press(t, m, sc.key)
					golden.RequireEqual(t, []byte(unsalted(plain(m))))
				})
			}
		})
	}
}

// TestBisectInTheLoop marks the first bad bucket bad and the one before it
// good, and checks the marks reach the store, are drawn, and narrow the
// investigation's window.
func TestBisectInTheLoop(t *testing.T) {
	s := replayDB(t, "bad-config-rollout")
	m := open(t, s, 120, 40)
	m = press(t, m, "f", "b", "left", "g")
	sess, err := s.Bisect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sess == nil || len(sess.Marks) != 2 || sess.Marks[0].Kind != timeline.BisectBad || sess.Marks[1].Kind != timeline.BisectGood {
		t.Fatalf("marks in the store = %+v, want bad then good", sess)
	}
	golden.RequireEqual(t, []byte(unsalted(plain(m))))
	view := plain(m)
	if !strings.Contains(view, "bisect "+sess.Marks[1].Time.UTC().Format("15:04:05.000")+" .. "+sess.Marks[0].Time.UTC().Format("15:04:05.000")) {
		t.Errorf("the bucket line does not show the bisect window:\n%s", view)
	}
	m = press(t, m, "2")
	if v := plain(m); !strings.Contains(v, "window "+sess.Marks[1].Time.UTC().Format("15:04:05.000")) {
		t.Errorf("the diff's window does not start at the good mark:\n%s", v)
	}
	// A good mark after the bad one is refused, in the status line.
	m = press(t, m, "1", "end", "g")
	if v := plain(m); !strings.Contains(v, "error: a good instant must be before the first bad one") {
		t.Errorf("a contradicting mark is not refused on screen:\n%s", v)
	}
}

func TestFilter(t *testing.T) {
	m := open(t, replayDB(t, "bad-config-rollout"), 120, 40)
	m = press(t, m, "/")
	m = typeText(t, m, "code >= ")
	m = press(t, m, "enter")
	if v := plain(m); !strings.Contains(v, "invalid filter") {
		t.Errorf("a broken filter is not shown inline:\n%s", v)
	}
	m = press(t, m, "esc", "/")
	m = typeText(t, m, `verb == "delete"`)
	m = press(t, m, "enter")
	v := plain(m)
	if !strings.Contains(v, `where verb == "delete"`) {
		t.Errorf("the filter is not applied:\n%s", v)
	}
	for _, line := range strings.Split(v, "\n") {
		if strings.HasPrefix(line, "08:") && !strings.Contains(line, " delete ") {
			t.Errorf("a record the filter excludes is shown: %q", line)
		}
	}
}

func TestExport(t *testing.T) {
	m := open(t, replayDB(t, "bad-config-rollout"), 120, 40)
	m = press(t, m, "e")
	v := plain(m)
	i := strings.Index(v, "wrote ")
	if i < 0 {
		t.Fatalf("no export on the status line:\n%s", v)
	}
	path := strings.Fields(v[i+len("wrote "):])[0]
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "# Postmortem draft") || !strings.Contains(string(b), "configmap/trainer-env/LR") {
		t.Errorf("%s is not the postmortem naming the LR change:\n%s", filepath.Base(path), b)
	}
	// The timeline plot is beside it, and linked by its name.
	pngPath := strings.TrimSuffix(path, ".md") + ".png"
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatalf("no plot beside the postmortem: %v", err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("%s: %v", pngPath, err)
	}
	if link := "](" + filepath.Base(pngPath) + ")"; !strings.Contains(string(b), link) {
		t.Errorf("the postmortem does not link its plot (%s)", link)
	}
}

// TestSmallTerminal draws every screen at 80x24: nothing is wider, and
// the status and key lines stay.
func TestSmallTerminal(t *testing.T) {
	m := open(t, replayDB(t, "bad-config-rollout"), 80, 24)
	for _, k := range []string{"1", "2", "enter", "3", "4", "?"} {
		m = press(t, m, k)
		lines := strings.Split(plain(m), "\n")
		if len(lines) != 24 {
			t.Errorf("after %s: %d lines, want 24", k, len(lines))
		}
		for i, l := range lines {
			if n := len([]rune(l)); n > 80 {
				t.Errorf("after %s: line %d is %d wide: %q", k, i, n, l)
			}
		}
	}
}
