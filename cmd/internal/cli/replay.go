package cli

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/fixtures"
	"github.com/faultline/faultline/ingest/audit"
)

type replayOptions struct {
	f     *Factory
	name  string
	dbSet bool
}

func newReplayCmd(f *Factory) *cobra.Command {
	opts := &replayOptions{f: f}
	cmd := &cobra.Command{
		Use:   "replay [NAME|DIR]",
		Short: "Replay a recorded incident offline",
		Long: `Replay a recorded incident: ingest its evidence into a fresh timeline and show
what it holds. Without arguments, list the incidents bundled in faultline.

NAME is a bundled incident; DIR is a folder of your own in the same format
(an audit log, *.log or *.log.gz, and a README.md). The timeline goes to a
new temporary database unless --db is given; its path is printed so you can
go on exploring it.`,
		Example: `  faultline replay
  faultline replay sample-audit
  faultline replay ./incidents/2026-05-01-apf-storm --db storm.db`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("faultline replay sample-audit", "replay takes one incident, got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return replayList(f)
			}
			opts.name = args[0]
			opts.dbSet = cmd.Flags().Changed("db") || f.Getenv("FAULTLINE_DB") != ""
			return replayRun(cmd.Context(), opts)
		},
	}
	return cmd
}

func replayList(f *Factory) error {
	list, err := fixtures.List()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSUMMARY")
	for _, fx := range list {
		fmt.Fprintf(tw, "%s\t%s\n", fx.Name, fx.Summary)
	}
	return tw.Flush()
}

// replayRun copies the fixture's evidence to a work folder, ingests it, and
// shows the sources.
func replayRun(ctx context.Context, opts *replayOptions) error {
	f := opts.f
	var fsys fs.FS
	if fi, err := os.Stat(opts.name); err == nil && fi.IsDir() {
		fsys = os.DirFS(opts.name)
	} else {
		fx, err := fixtures.Load(opts.name)
		if err != nil {
			return usagef("faultline replay", "%v: see the list with faultline replay, or give a folder", err)
		}
		fsys = fx.FS
	}
	work, err := os.MkdirTemp("", "faultline-replay-")
	if err != nil {
		return err
	}
	var logs []string
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !strings.HasSuffix(p, ".log") && !strings.HasSuffix(p, ".log.gz") {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(work, filepath.Base(p))
		logs = append(logs, dst)
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		return fmt.Errorf("replay %s: %w", opts.name, err)
	}
	if len(logs) == 0 {
		return fmt.Errorf("replay %s: no audit log (*.log, *.log.gz) in it", opts.name)
	}
	if !opts.dbSet {
		f.dbPath = filepath.Join(work, "faultline.db")
	}
	store, err := f.OpenStore(ctx)
	if err != nil {
		return err
	}
	runs, err := audit.Ingest(ctx, store, logs, audit.Options{Logger: f.Logger(),
		OnBadLine: func(b *audit.BadLine) { fmt.Fprintf(f.IO.ErrOut, "warning: %s\n", b) }})
	if err == nil {
		err = store.Analyze(ctx)
	}
	store.Close()
	for _, r := range runs {
		printRunSummary(f.IO.ErrOut, &r, 20)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(f.IO.Out, "Replayed %s into %s\n\n", opts.name, f.dbPath)
	if err := sourcesRun(ctx, &sourcesOptions{f: f, output: "table", gap: 5 * time.Minute}); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.Out, "\nExplore it:\n  faultline --db %s timeline --where 'code >= 429'\n", f.dbPath)
	return nil
}
