package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/faultline/faultline/internal/testenv"
	"github.com/faultline/faultline/timeline/sqlite"
	"github.com/faultline/faultline/tui"
)

// TestBadAgreement: the outcome classifier is the one definition of bad.
// On each top-level fixture and a few zoo incidents, timeline --where
// 'bad', the TUI histogram's bad total, bisect status and investigate see
// the same bad observations (failed object states, of source "status",
// included: timeline once said "No records match." for them while the
// TUI jumped to a bucket with "0 bad").
func TestBadAgreement(t *testing.T) {
	if testing.Short() {
		t.Skip("replays every fixture")
	}
	replay := fixtureDB
	if testenv.RaceEnabled {
		// The counts compared do not depend on the race detector, and
		// under it each replay and command runs several times slower:
		// they run in a faultline built without it. The TUI's histogram
		// still runs in-process, under it.
		replay = plainFixtureDB(plainBinary(t))
	}
	for _, name := range badAgreementFixtures(t) {
		t.Run(filepath.Base(name), func(t *testing.T) { checkBadAgreement(t, name, replay) })
	}
}

// plainFixtureDB is fixtureDB through run, a faultline process
// (plainBinary).
func plainFixtureDB(run cliRunner) func(t *testing.T, fixture string) (func(args ...string) string, string) {
	return func(t *testing.T, fixture string) (func(args ...string) string, string) {
		t.Helper()
		db := filepath.Join(t.TempDir(), "t.db")
		if code, _, stderr := run(t, "replay", fixture, "--db", db); code != 0 {
			t.Fatalf("replay %s: exit %d\n%s", fixture, code, stderr)
		}
		return func(args ...string) string {
			t.Helper()
			code, stdout, stderr := run(t, append([]string{"--db", db}, args...)...)
			if code != 0 {
				t.Fatalf("faultline %v: exit %d\n%s", args, code, stderr)
			}
			return stdout
		}, db
	}
}

// badAgreementFixtures returns every top-level fixture and the zoo
// incidents where the bad is a node's state or a drain's evictions.
func badAgreementFixtures(t *testing.T) []string {
	t.Helper()
	var names []string
	tops, err := filepath.Glob("../../../fixtures/*/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tops {
		names = append(names, filepath.Base(filepath.Dir(p)))
	}
	for _, z := range []string{"taint-evict", "node-failure"} { // a node's state, a drain's evictions
		names = append(names, filepath.Join("../../../fixtures/zoo", z))
	}
	if len(names) < 5 {
		t.Fatalf("found %d fixtures: %v", len(names), names)
	}
	return names
}

// checkBadAgreement replays the fixture name (with fixtureDB) and checks
// that timeline's mark, investigate, bisect status and the TUI's histogram
// count as many bad observations as timeline --where bad yields.
func checkBadAgreement(t *testing.T, name string, fixtureDB func(*testing.T, string) (func(args ...string) string, string)) {
	fl, db := fixtureDB(t, name)
	recs, states := timelineWhereBad(t, fl)
	marked := timelineMarkedBad(t, fl)

	// investigate.
	var rep struct {
		BadObservations int `json:"badObservations"`
	}
	if err := json.Unmarshal([]byte(fl("investigate", "-o", "json")), &rep); err != nil {
		t.Fatal(err)
	}

	// bisect status, over a session with no marks: the whole data.
	fl("bisect", "start")
	var st bisectStatusJSON
	if err := json.Unmarshal([]byte(fl("bisect", "status", "-o", "json")), &st); err != nil {
		t.Fatal(err)
	}

	// The TUI's histogram.
	histBad := tuiBadTotal(t, db)

	t.Logf("%d bad (%d of them object states)", len(recs), states)
	for _, c := range []struct {
		who string
		n   int64
	}{
		{"timeline -o json (marked bad)", int64(marked)},
		{"investigate badObservations", int64(rep.BadObservations)},
		{"bisect status bad", int64(st.Bad)},
		{"TUI histogram bad total", histBad},
	} {
		if c.n != int64(len(recs)) {
			t.Errorf("%s = %d, timeline --where bad = %d", c.who, c.n, len(recs))
		}
	}
}

// timelineWhereBad returns the records and states timeline --where bad
// yields, each of which must be marked bad, and how many of them are
// object states (source "status").
func timelineWhereBad(t *testing.T, fl func(args ...string) string) ([]recordJSON, int) {
	t.Helper()
	var recs []recordJSON
	if err := json.Unmarshal([]byte(fl("timeline", "--where", "bad", "-o", "json")), &recs); err != nil {
		t.Fatal(err)
	}
	states := 0
	for _, r := range recs {
		if !r.Bad {
			t.Errorf("timeline --where bad yields a record not marked bad: %+v", r)
		}
		if r.Source == "status" {
			states++
		}
	}
	return recs, states
}

// timelineMarkedBad counts the mark outside --where 'bad': on every record
// that looks bad and every object state.
func timelineMarkedBad(t *testing.T, fl func(args ...string) string) int {
	t.Helper()
	var all []recordJSON
	wide := `bad || code >= 400 || type == "Warning" || source == "status"`
	if err := json.Unmarshal([]byte(fl("timeline", "--where", wide, "-o", "json")), &all); err != nil {
		t.Fatal(err)
	}
	marked := 0
	for _, r := range all {
		if r.Bad {
			marked++
		}
	}
	return marked
}

// tuiBadTotal opens the TUI's model on the timeline, lets it count its
// histogram, and returns the bad total.
func tuiBadTotal(t *testing.T, db string) int64 {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, db, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := tui.New(ctx, s, tui.Options{NoColor: true, Now: func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }})
	var model tea.Model = m
	model, _ = model.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	msgs := make(chan tea.Msg, 64)
	pending := 0
	run := func(c tea.Cmd) {
		if c != nil {
			pending++
			go func() { msgs <- c() }()
		}
	}
	run(model.Init())
	deadline := time.After(3 * time.Minute)
	for pending > 0 {
		select {
		case msg := <-msgs:
			pending--
			switch msg := msg.(type) {
			case nil, spinner.TickMsg, tea.QuitMsg:
			case tea.BatchMsg:
				for _, c := range msg {
					run(c)
				}
			default:
				var next tea.Cmd
				model, next = model.Update(msg)
				run(next)
			}
		case <-deadline:
			t.Fatal("the TUI never settled")
		}
	}
	n, done := m.BadCounted()
	if !done {
		t.Fatal("the TUI did not count every bucket's bad")
	}
	return n
}
