package tui

import (
	"io"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Styles is every style the TUI draws with. Colours are the terminal's
// own ANSI colours, so they follow its theme. With NoColor (NO_COLOR) no
// colour is used, but bold, faint, underline and reverse stay: the active
// tab, the selected row and the cursor are drawn in reverse video, and bad
// records in bold, so nothing that colour marked disappears.
type Styles struct {
	Title, Tab, ActiveTab     lipgloss.Style
	Bad, All, Cursor, Marker  lipgloss.Style
	Good, Header, Dim, Strong lipgloss.Style
	Selected, Error, Status   lipgloss.Style
	Differ                    lipgloss.Style
}

// NewStyles returns the styles for a renderer. With noColor the renderer is
// replaced by one that draws attributes and no colour: NO_COLOR also makes
// lipgloss's own renderer drop every attribute (termenv's Ascii profile),
// reverse video included.
func NewStyles(r *lipgloss.Renderer, noColor bool) Styles {
	c := func(s string) lipgloss.TerminalColor { return lipgloss.ANSIColor(ansiIndex(s)) }
	bad := r.NewStyle()
	if noColor {
		r = lipgloss.NewRenderer(io.Discard)
		r.SetColorProfile(termenv.ANSI)
		c = func(string) lipgloss.TerminalColor { return lipgloss.NoColor{} }
		bad = r.NewStyle().Bold(true)
	}
	return Styles{
		Title:     r.NewStyle().Bold(true),
		Tab:       r.NewStyle().Padding(0, 1),
		ActiveTab: r.NewStyle().Padding(0, 1).Bold(true).Reverse(true),
		Bad:       bad.Foreground(c("red")),
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
