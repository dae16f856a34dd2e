package tui_test

import (
	"context"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/faultline/faultline/analyze/bisect"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/tui"
)

// replayDir matches the folder a fixture is replayed from (an evidence
// file's path), which changes from one test binary to the next.
var replayDir = regexp.MustCompile(`faultline-tui-test-[0-9]+`)

// evidenceFile matches a record's evidence file in its detail, wrapped
// where the replay folder's name makes it long.
var evidenceFile = regexp.MustCompile(`(?m)^  file .*\n(^ {14}\S.*\n)*`)

// unsalted makes a view comparable across replays: it masks the replay
// folder only. Digests stay: object digests are sha256 of the redacted
// body, which the tests' store redacts without a key (redact.NoKey), so
// they are the same on every replay, and a swapped from/to shows.
func unsalted(view string) string {
	view = evidenceFile.ReplaceAllString(view, "  file        <the replayed evidence file>\n")
	return replayDir.ReplaceAllString(view, "faultline-tui-test-N")
}

var testNow = func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }

// open starts the TUI on a replayed fixture at width x height and lets
// every first query end.
func open(t testing.TB, store tui.Store, width, height int) tea.Model {
	t.Helper()
	m := tui.New(context.Background(), store, tui.Options{Now: testNow, NoColor: true, Source: "test.db", ExportDir: t.TempDir()})
	m2 := drive(t, m, func() tea.Msg { return tea.WindowSizeMsg{Width: width, Height: height} })
	return drive(t, m2, m.Init())
}

// TestViews compares each screen, ANSI-stripped at 80x24 and at 120x40,
// with its golden file (go test ./tui -update rewrites them): the screens
// in turn, an opened record, an expanded change, the control plane's
// bursts scrolled, the bisect screen after a mark, and the keys.
func TestViews(t *testing.T) {
	steps := []struct {
		name string
		keys []string
	}{
		{"timeline", []string{"1"}},
		{"record", []string{"f", "down", "enter"}},
		{"diff", []string{"esc", "2"}},
		{"diff-expanded", []string{"enter"}},
		{"slice", []string{"enter", "3"}},
		{"controlplane", []string{"4"}},
		{"controlplane-scrolled", []string{"down", "down", "down"}},
		{"controlplane-classes", []string{"left", "down"}},
		{"bisect-marked", []string{"1", "f", "b"}},
		{"bisect", []string{"5"}},
		{"help", []string{"?"}},
	}
	for _, fixture := range []string{"bad-config-rollout", "digest-drift"} {
		t.Run(fixture, func(t *testing.T) {
			for _, size := range []struct{ w, h int }{{80, 24}, {120, 40}} {
				t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
					m := open(t, replayDB(t, fixture), size.w, size.h)
					for _, st := range steps {
						t.Run(st.name, func(t *testing.T) {
							m = press(t, m, st.keys...)
							golden.RequireEqual(t, []byte(unsalted(plain(m))))
						})
					}
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
	if v := plain(m); !strings.Contains(v, "error: a good instant must be before the bad one") {
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

// TestPartialMarked: with a partial store every screen's title bar says
// PARTIAL, at any width, and the exported postmortem opens with what is
// left out; without, neither does.
func TestPartialMarked(t *testing.T) {
	const what = "clickhouse shard 2 (127.0.0.1:39312) is unavailable"
	store := replayDB(t, "bad-config-rollout")
	for _, partial := range []string{what, ""} {
		dir := t.TempDir()
		start := func(w, h int) tea.Model {
			m := tui.New(context.Background(), store, tui.Options{Now: testNow, NoColor: true, Source: "test.db", ExportDir: dir, Partial: partial})
			m2 := drive(t, m, func() tea.Msg { return tea.WindowSizeMsg{Width: w, Height: h} })
			return drive(t, m2, m.Init())
		}
		for _, size := range []struct{ w, h int }{{120, 40}, {40, 12}} {
			m := start(size.w, size.h)
			for _, k := range []string{"1", "2", "3", "4", "5", "?"} {
				m = press(t, m, k)
				title, _, _ := strings.Cut(plain(m), "\n")
				if got := strings.Contains(title, "PARTIAL"); got != (partial != "") {
					t.Errorf("Partial %q, %dx%d, screen %s: title %q; want PARTIAL in it: %v", partial, size.w, size.h, k, title, partial != "")
				}
			}
		}
		m := press(t, start(120, 40), "e")
		v := plain(m)
		i := strings.Index(v, "wrote ")
		if i < 0 {
			t.Fatalf("no export on the status line:\n%s", v)
		}
		b, err := os.ReadFile(strings.Fields(v[i+len("wrote "):])[0])
		if err != nil {
			t.Fatal(err)
		}
		note := "> **Partial answer:** " + what + ".\n\n# Postmortem draft"
		if got := strings.HasPrefix(string(b), note); got != (partial != "") {
			t.Errorf("Partial %q: the postmortem begins %q; want it to begin with the note: %v", partial, firstLine(string(b)), partial != "")
		}
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// TestSmallTerminal draws every screen at 80x24: nothing is wider, and
// the status and key lines stay.
func TestSmallTerminal(t *testing.T) {
	m := open(t, replayDB(t, "bad-config-rollout"), 80, 24)
	for _, k := range []string{"1", "enter", "esc", "f", "b", "2", "enter", "3", "4", "down", "5", "?"} {
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

// TestRecordDetail opens the record of the injected ConfigMap change
// (found with a filter, then the buckets walked to it): its detail holds
// its fields, its evidence (file and line) and the object's diff at that
// version, the changed LR key among it; esc closes it.
func TestRecordDetail(t *testing.T) {
	for _, size := range []struct{ w, h int }{{80, 24}, {120, 40}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			m := open(t, replayDB(t, "bad-config-rollout"), size.w, size.h)
			m = press(t, m, "/")
			m = typeText(t, m, `resource == "configmaps" && name == "trainer-env" && verb in ["update", "patch"]`)
			m = press(t, m, "enter", "home")
			for i := 0; !strings.Contains(plain(m), "configmaps/ml/trainer"); i++ {
				if i > 200 {
					t.Fatalf("no bucket shows the ConfigMap's update:\n%s", plain(m))
				}
				m = press(t, m, "right")
			}
			m = press(t, m, "enter")
			v := plain(m)
			golden.RequireEqual(t, []byte(unsalted(v)))
			for _, want := range []string{"configmaps/ml/trainer-env", "EVIDENCE", "audit.log", "line ", "data.LR"} {
				if !strings.Contains(v, want) {
					t.Errorf("the record's detail lacks %q:\n%s", want, v)
				}
			}
			if v := plain(press(t, m, "esc")); strings.Contains(v, "EVIDENCE") || !strings.Contains(v, "REASON / MESSAGE") {
				t.Errorf("esc does not close the detail:\n%s", v)
			}
		})
	}
}

// TestNoColorKeepsReverse draws with NoColor (NO_COLOR): no colour SGR
// reaches the screen, but the active tab and the selected row are still
// drawn in reverse video.
func TestNoColorKeepsReverse(t *testing.T) {
	m := open(t, replayDB(t, "bad-config-rollout"), 80, 24)
	for _, k := range []string{"1", "2", "4", "5"} {
		m = press(t, m, k)
		v := m.View()
		if colour := regexp.MustCompile(`\x1b\[[0-9;]*(;|\[)(3[0-7]|4[0-7]|9[0-7]|38|48)[;m]`); colour.MatchString(v) {
			t.Errorf("screen %s: a colour reaches the screen under NO_COLOR: %q", k, colour.FindString(v))
		}
		reverse := regexp.MustCompile(`\x1b\[([0-9]+;)*7(;[0-9]+)*m`)
		lines := strings.Split(v, "\n")
		if !reverse.MatchString(lines[0]) {
			t.Errorf("screen %s: the active tab is not in reverse video: %q", k, lines[0])
		}
		if n := len(reverse.FindAllString(strings.Join(lines[1:], "\n"), -1)); n == 0 {
			t.Errorf("screen %s: no selected row in reverse video:\n%s", k, v)
		}
	}
}

// TestNextInstantIsTheCLIs checks that after a mark the TUI suggests the
// instant faultline bisect suggests (bisect.Window.Next over the
// stored marks and the data's bounds), on the timeline and the bisect
// screen.
func TestNextInstantIsTheCLIs(t *testing.T) {
	s := replayDB(t, "bad-config-rollout")
	m := open(t, s, 80, 24)
	m = press(t, m, "f", "b")
	ctx := context.Background()
	sess, err := s.Bisect(ctx)
	if err != nil || sess == nil {
		t.Fatalf("no session after a mark: %v", err)
	}
	first, last, err := s.Bounds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next, ok := bisect.NewWindow(sess.Marks, first, last).Next()
	if !ok {
		t.Fatal("the CLI's search suggests nothing")
	}
	want := next.UTC().Format("15:04:05.000")
	if v := plain(m); !strings.Contains(v, "next "+want) {
		t.Errorf("the timeline does not suggest %s:\n%s", want, v)
	}
	if v := plain(press(t, m, "5")); !strings.Contains(v, "judge "+want) {
		t.Errorf("the bisect screen does not suggest %s:\n%s", want, v)
	}
	// n moves the cursor to the bucket holding it.
	m = press(t, m, "1", "n")
	if v := plain(m); !strings.Contains(v, "judge "+want+": g if") {
		t.Errorf("n does not jump to %s:\n%s", want, v)
	}
}
