// Package tui is faultline's interactive investigation: a timeline of bad
// against all records with bisect marks, the changes across the boundary,
// the slice beside its counterexample, and the control plane's load.
//
// The TUI reads only through the Store and the analyzers (it runs no SQL
// of its own and imports no ingester); every query runs in a tea.Cmd, so the
// interface never waits on one, and Esc cancels those under way.
package tui

import (
	"context"
	"io"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/faultline/faultline/timeline"
)

// Store is what the TUI uses: it reads the evidence and the control-plane
// rollup, and writes bisect marks. It never writes evidence nor reads an
// ingester's state.
type Store interface {
	timeline.Reader
	timeline.Rollup
	timeline.BisectLog
}

// Options shape a session.
type Options struct {
	// Bad is the CEL expression of what counts as bad ("": the
	// investigation's default, outcome.DefaultBad).
	Bad string
	// ExportDir is where e writes the postmortem draft ("": the current
	// directory).
	ExportDir string
	// Now is the wall clock for bisect marks (nil: time.Now).
	Now func() time.Time
	// NoColor draws without colours (NO_COLOR).
	NoColor bool
	// Source names the timeline in the title bar (the database path).
	Source string
	// Partial, when the store answers without some of its evidence (a
	// ClickHouse shard down, --allow-partial), says what is left out: the
	// title bar marks every screen PARTIAL, and an exported postmortem
	// opens with it. "" for a whole answer.
	Partial string
}

// Run runs the TUI on the terminal behind in and out until the user quits
// or ctx ends.
func Run(ctx context.Context, store Store, opt Options, in io.Reader, out io.Writer) error {
	m := New(ctx, store, opt)
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out), tea.WithAltScreen())
	_, err := p.Run()
	if err == tea.ErrProgramKilled && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
