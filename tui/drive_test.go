package tui_test

import (
	"testing"
	"time"

	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// drive feeds the messages of cmd (and of the commands they lead to) to
// m until none is left, as the program loop would; spinner ticks are
// dropped, so the loop ends.
func drive(t testing.TB, m tea.Model, cmd tea.Cmd) tea.Model {
	t.Helper()
	msgs := make(chan tea.Msg, 64)
	pending := 0
	run := func(c tea.Cmd) {
		if c == nil {
			return
		}
		pending++
		go func() { msgs <- c() }()
	}
	run(cmd)
	deadline := time.After(2 * time.Minute)
	for pending > 0 {
		select {
		case msg := <-msgs:
			pending--
			switch msg := msg.(type) {
			case nil, spinner.TickMsg:
			case tea.BatchMsg:
				for _, c := range msg {
					run(c)
				}
			case tea.QuitMsg:
			default:
				var next tea.Cmd
				m, next = m.Update(msg)
				run(next)
			}
		case <-deadline:
			t.Fatal("the model never settled")
		}
	}
	return m
}

// press sends keys one at a time, letting each settle.
func press(t testing.TB, m tea.Model, keys ...string) tea.Model {
	t.Helper()
	for _, k := range keys {
		m = drive(t, m, func() tea.Msg { return keyMsg(k) })
	}
	return m
}

func keyMsg(k string) tea.KeyMsg {
	switch k {
	case "left":
		return tea.KeyMsg{Type: tea.KeyLeft}
	case "right":
		return tea.KeyMsg{Type: tea.KeyRight}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "home":
		return tea.KeyMsg{Type: tea.KeyHome}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

func typeText(t testing.TB, m tea.Model, s string) tea.Model {
	for _, r := range s {
		m = drive(t, m, func() tea.Msg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}} })
	}
	return m
}

func plain(m tea.Model) string { return ansi.Strip(m.View()) }
