package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/faultline/faultline/internal/termsafe"
)

// View draws the screen: a title bar with the tabs, the current screen, a
// status line (what runs, the last message or error) and the keys.
//
// The screens escape each data string (termsafe.Field) before they style
// it, so that a name or message cannot break a row. The finished frame
// passes termsafe.Styled as well: only the styles' own SGR sequences reach
// the terminal, whatever a screen forgot to escape.
func (m *Model) View() string {
	return termsafe.Styled(m.frame())
}

// frame is the screen before its last check.
func (m *Model) frame() string {
	body := m.bodyHeight()
	var screen string
	switch {
	case m.showHelp:
		screen = m.helpView(body)
	case m.detail != nil:
		screen = m.detailView(body)
	case m.screen == screenTimeline:
		screen = m.timelineView()
	case m.screen == screenDiff:
		screen = m.diffView(body)
	case m.screen == screenSlice:
		screen = m.sliceView(body)
	case m.screen == screenControlPlane:
		screen = m.controlPlaneView(body)
	case m.screen == screenBisect:
		screen = m.bisectView(body)
	}
	lines := strings.Split(screen, "\n")
	if len(lines) > body {
		lines = lines[:body]
	}
	for len(lines) < body {
		lines = append(lines, "")
	}
	for i, l := range lines {
		lines[i] = fit(l, m.width)
	}
	return strings.Join(append(append([]string{m.titleView()}, lines...), m.statusView()...), "\n")
}

// bodyHeight is the room between the title bar and the two bottom lines.
func (m *Model) bodyHeight() int { return max(m.height-3, 1) }

func (m *Model) titleView() string {
	s := m.styles
	title := s.Title.Render("faultline")
	if m.opt.Partial != "" {
		// Beside the name, so that no width drops it.
		title += " " + s.Error.Render("PARTIAL")
	}
	tabs := []string{title}
	for i, name := range screenNames {
		st := s.Tab
		if screen(i) == m.screen {
			st = s.ActiveTab
		}
		tabs = append(tabs, st.Render(name))
	}
	left := strings.Join(tabs, " ")
	right := s.Dim.Render(termsafe.Field(m.opt.Source))
	gap := m.width - lipgloss.Width(left) - lipgloss.Width(right)
	if gap < 1 && lipgloss.Width(left) <= m.width {
		return fit(left, m.width) // the source goes first
	}
	if gap < 1 {
		// Narrow: the tabs keep their numbers and the active one its
		// name; the source goes.
		tabs = []string{title}
		for i, name := range screenNames {
			if screen(i) == m.screen {
				tabs = append(tabs, s.ActiveTab.Render(name))
			} else {
				tabs = append(tabs, s.Tab.Render(name[:1]))
			}
		}
		return fit(strings.Join(tabs, " "), m.width)
	}
	return left + strings.Repeat(" ", gap) + right
}

// statusView is the status line and the key line; while filtering, the
// input and its error (or help) instead.
func (m *Model) statusView() []string {
	s := m.styles
	if m.filtering {
		under := s.Dim.Render("enter: apply  esc: back  empty: no filter  fields: faultline timeline --help")
		if m.filterErr != "" {
			under = s.Error.Render(oneLine(m.filterErr))
		}
		return []string{fit(m.input.View(), m.width), fit(under, m.width)}
	}
	var status string
	switch {
	case m.errMsg != "":
		status = s.Error.Render("error: " + oneLine(m.errMsg))
	case m.busy() != "":
		status = m.spin.View() + " " + m.busy() + "… (esc cancels)"
	default:
		status = s.Status.Render(oneLine(m.status))
	}
	keys := m.help.ShortHelpView(m.keys.ShortHelp())
	return []string{fit(status, m.width), fit(keys, m.width)}
}

// helpView is every key with its help, in one column (groups apart), so
// that nothing is cut on a narrow terminal; it scrolls (↑/↓) when taller
// than the room. Quit and help come first.
func (m *Model) helpView(height int) string {
	s := m.styles
	lines := []string{s.Strong.Render("KEYS") + s.Dim.Render("  (? or esc closes; ↑/↓ scroll)")}
	for i, group := range m.keys.FullHelp() {
		if i > 0 {
			lines = append(lines, "")
		}
		for _, k := range group {
			h := k.Help()
			keys := strings.ReplaceAll(strings.Join(k.Keys(), "/"), " ", "space")
			lines = append(lines, fmt.Sprintf("  %-16s %s", keys, h.Desc))
		}
	}
	m.helpOff = min(m.helpOff, max(len(lines)-height, 0))
	return strings.Join(lines[m.helpOff:], "\n")
}
