package tui

import (
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Styles is every style the TUI draws with. Colours are the terminal's
// own ANSI colours, so they follow its theme; with NoColor none is used.
type Styles struct {
	Title, Tab, ActiveTab     lipgloss.Style
	Bad, All, Cursor, Marker  lipgloss.Style
	Good, Header, Dim, Strong lipgloss.Style
	Selected, Error, Status   lipgloss.Style
	Differ                    lipgloss.Style
}

// NewStyles returns the styles for a renderer.
func NewStyles(r *lipgloss.Renderer, noColor bool) Styles {
	if noColor {
		r.SetColorProfile(termenv.Ascii)
	}
	c := func(s string) lipgloss.TerminalColor { return lipgloss.ANSIColor(ansiIndex(s)) }
	return Styles{
		Title:     r.NewStyle().Bold(true),
		Tab:       r.NewStyle().Padding(0, 1),
		ActiveTab: r.NewStyle().Padding(0, 1).Bold(true).Reverse(true),
		Bad:       r.NewStyle().Foreground(c("red")),
		All:       r.NewStyle().Foreground(c("blue")),
		Cursor:    r.NewStyle().Reverse(true),
		Marker:    r.NewStyle().Bold(true).Foreground(c("yellow")),
		Good:      r.NewStyle().Foreground(c("green")),
		Header:    r.NewStyle().Bold(true).Underline(true),
		Dim:       r.NewStyle().Faint(true),
		Strong:    r.NewStyle().Bold(true),
		Selected:  r.NewStyle().Reverse(true),
		Error:     r.NewStyle().Foreground(c("red")).Bold(true),
		Status:    r.NewStyle().Faint(true),
		Differ:    r.NewStyle().Bold(true).Foreground(c("magenta")),
	}
}

// ansiIndex maps a basic colour name to its ANSI index (0-7).
func ansiIndex(name string) uint {
	for i, n := range []string{"black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"} {
		if n == name {
			return uint(i)
		}
	}
	return 7
}
