package cli

import (
	"context"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/internal/termsafe"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite"
	"github.com/faultline/faultline/tui"
)

// The TUI's soft memory limit, and SQLite's page cache per connection.
const (
	tuiMemoryLimit = 192 << 20
	tuiCacheKiB    = 4 << 10
)

type tuiOptions struct {
	f   *Factory
	bad string
}

func newTUICmd(f *Factory) *cobra.Command {
	opts := &tuiOptions{f: f}
	cmd := &cobra.Command{
		Use:   "tui",
		Short: "Investigate interactively: timeline, bisect marks, diff, slice, control plane",
		Long: `Open an interactive investigation over the timeline.

  1 Timeline       bad (█) against all (▒) records per time bucket; left/right
                   move the cursor, +/- zoom, f jumps to the first bad; below,
                   the records of the bucket under the cursor
  2 Diff           the changes of identity across the boundary, ranked;
                   enter shows a change's from/to and its evidence
  3 Slice          the smallest affected slice beside its known-good
                   counterexample, the dimensions where they differ marked ≠
  4 Control plane  request classes, rate sparklines with bursts marked, and
                   the fixes simulated on them

g, b and s mark the bucket under the cursor good, bad or skipped, as git
bisect does: the marks are stored in the timeline (faultline bisect log
shows them) and each one re-runs the investigation over the narrowed window.
/ filters records with CEL (as faultline timeline --where), e writes the
postmortem draft (as faultline investigate -o markdown), ? lists every key,
esc cancels a query under way, q quits. NO_COLOR is honoured.

` + badHelp,
		Example: `  faultline replay bad-config-rollout --db incident.db   # opens the TUI on a terminal
  faultline --db incident.db tui
  faultline --db incident.db tui --bad 'reason == "OOMKilled"'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return tuiRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.bad, "bad", "", "CEL over record fields: what counts as bad (default: see --help)")
	return cmd
}

// tuiRun opens the timeline for reading and for bisect marks, and runs the
// TUI on the terminal.
func tuiRun(ctx context.Context, opts *tuiOptions) error {
	f := opts.f
	if !f.IO.StdoutIsTTY {
		return usagef("faultline investigate (for pipes and files)", "faultline tui needs a terminal: stdout is not one")
	}
	// A soft memory limit (unless GOMEMLIMIT says otherwise): the TUI stays
	// open for hours, and the analyses it runs in the background over a large
	// timeline would otherwise leave the heap at twice what they need.
	if f.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(tuiMemoryLimit)
	}
	probe, err := openBisectStore(ctx, f) // it exists and is migrated
	if err != nil {
		return err
	}
	probe.Close()
	var store timeline.Store
	if f.storeDSN != "" {
		store, err = f.OpenStore(ctx)
	} else {
		store, err = sqlite.Open(ctx, f.dbPath, sqlite.Options{Logger: f.Logger(), CacheKiB: tuiCacheKiB, Key: f.Key()})
	}
	if err != nil {
		return err
	}
	defer store.Close()
	return tui.Run(ctx, store, tui.Options{Bad: opts.bad, Now: f.Now, NoColor: f.Getenv("NO_COLOR") != "", Source: f.storeName(),
		Partial: f.partialText()},
		f.IO.In, termsafe.Raw(f.IO.Out)) // the TUI draws its own escapes, and escapes its data
}
