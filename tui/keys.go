package tui

import "github.com/charmbracelet/bubbles/key"

// KeyMap is every key the TUI answers, with its help text.
type KeyMap struct {
	Left, Right, Up, Down  key.Binding
	PageUp, PageDown       key.Binding
	Home, End              key.Binding
	ZoomIn, ZoomOut        key.Binding
	FirstBad, NextJudge    key.Binding
	Good, Bad, Skip        key.Binding
	Expand                 key.Binding
	Filter, Export         key.Binding
	NextScreen, PrevScreen key.Binding
	Screen1, Screen2       key.Binding
	Screen3, Screen4       key.Binding
	Screen5                key.Binding
	Cancel, Help, Quit     key.Binding
}

// DefaultKeys are the keys, in k9s's and git bisect's habits.
func DefaultKeys() KeyMap {
	k := func(help string, keys ...string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(keys[0], help))
	}
	return KeyMap{
		Left: k("earlier bucket (control plane: classes)", "left", "h"), Right: k("later bucket (control plane: bursts)", "right", "l"),
		Up: k("row up", "up", "k"), Down: k("row down", "down", "j"),
		PageUp: k("page up", "pgup"), PageDown: k("page down", "pgdown", " "),
		Home: k("first bucket", "home"), End: k("last bucket", "end"),
		ZoomIn: k("zoom in", "+", "="), ZoomOut: k("zoom out", "-"),
		FirstBad: k("jump to the first bad", "f"), NextJudge: k("next to judge", "n"),
		Good: k("mark good", "g"), Bad: k("mark bad", "b"), Skip: k("mark skip", "s"),
		Expand: k("open (a record, a change)", "enter"),
		Filter: k("filter (CEL)", "/"), Export: k("export postmortem", "e"),
		NextScreen: k("next screen", "tab"), PrevScreen: k("previous screen", "shift+tab"),
		Screen1: k("timeline", "1"), Screen2: k("diff", "2"), Screen3: k("slice", "3"), Screen4: k("control plane", "4"),
		Screen5: k("bisect", "5"),
		Cancel:  k("close, back, cancel", "esc"), Help: k("keys", "?"), Quit: k("quit", "q", "ctrl+c"),
	}
}

// ShortHelp is the one-line help (bubbles help.KeyMap): help and quit
// first, so a narrow terminal never cuts them off.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Help, k.Quit, k.NextScreen, k.Expand, k.Good, k.Bad, k.NextJudge, k.Filter, k.Export}
}

// FullHelp is every key, in groups (bubbles help.KeyMap): leaving and
// moving between screens first.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Quit, k.Help, k.Cancel},
		{k.NextScreen, k.PrevScreen, k.Screen1, k.Screen2, k.Screen3, k.Screen4, k.Screen5},
		{k.Left, k.Right, k.Home, k.End, k.FirstBad, k.ZoomIn, k.ZoomOut},
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Expand},
		{k.Good, k.Bad, k.Skip, k.NextJudge, k.Filter, k.Export},
	}
}
