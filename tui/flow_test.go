package tui_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/faultline/faultline/tui"
)

// TestFlow runs the real program loop: open, move the cursor to the first
// bad bucket, mark it bad, filter, export, quit.
func TestFlow(t *testing.T) {
	s := replayDB(t, "bad-config-rollout")
	m := tui.New(context.Background(), s, tui.Options{Now: testNow, NoColor: true, Source: "test.db", ExportDir: t.TempDir()})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 40))
	waitFor := func(what string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains([]byte(ansi.Strip(string(b))), []byte(what)) },
			teatest.WithDuration(time.Minute), teatest.WithCheckInterval(20*time.Millisecond))
	}
	waitFor("investigation ready")
	tm.Send(tea.KeyMsg{Type: tea.KeyRight})
	waitFor("bucket 2/113")
	tm.Type("f")
	waitFor("bucket 77/113")
	tm.Type("b")
	waitFor("investigating the narrowed window")
	waitFor("investigation ready")
	tm.Type("/")
	tm.Type(`code == 429`)
	tm.Send(tea.KeyMsg{Type: tea.KeyEnter})
	waitFor("where code == 429")
	tm.Type("e")
	waitFor("wrote ")
	tm.Type("q")
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	sess, err := s.Bisect(context.Background())
	if err != nil || sess == nil || len(sess.Marks) != 1 || !strings.Contains(sess.Marks[0].Note, "tui") {
		t.Errorf("bisect session after the flow = %+v, %v; want one mark made by the tui", sess, err)
	}
}
