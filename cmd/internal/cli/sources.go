package cli

import (
	"context"
	"fmt"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/internal/termsafe"
	"github.com/faultline/faultline/timeline"
)

type sourcesOptions struct {
	f      *Factory
	output string
	gap    time.Duration
}

func newSourcesCmd(f *Factory) *cobra.Command {
	opts := &sourcesOptions{f: f}
	cmd := &cobra.Command{
		Use:   "sources",
		Short: "Show what evidence the timeline holds, and where it has gaps",
		Long: `Show the evidence the timeline holds: per source kind, the time it covers and
how many records it holds; per ingest run, the file it read (size, sha256),
its time range, records, duplicates skipped and bad lines, and the records
kept in conflict with another (CONFLICTS); and the gaps in
time where a source delivered no records. A conclusion is only as good as its
evidence: a gap during the incident window is a blind spot.`,
		Example: `  faultline sources
  faultline sources --gap 1m
  faultline sources -o json | jq '.runs[] | select(.badLines > 0)'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return sourcesRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.output, "output", "o", "table", "output format: table, json or yaml")
	addNoHeaders(cmd, f)
	cmd.Flags().DurationVar(&opts.gap, "gap", 5*time.Minute, "report spans of at least this long with no records")
	return cmd
}

// sourceSummary is one source kind's evidence.
type sourceSummary struct {
	Source  timeline.SourceKind `json:"source"`
	First   time.Time           `json:"first,omitzero"`
	Last    time.Time           `json:"last,omitzero"`
	Records int64               `json:"records"`
	Runs    int                 `json:"runs"`
	Bad     int64               `json:"badLines"`
}

type gapJSON struct {
	Source   timeline.SourceKind `json:"source"`
	Start    time.Time           `json:"start"`
	End      time.Time           `json:"end"`
	Duration string              `json:"duration"`
}

type sourcesJSON struct {
	Sources []sourceSummary      `json:"sources"`
	Runs    []timeline.IngestRun `json:"runs"`
	Gaps    []gapJSON            `json:"gaps"`
}

func summarize(runs []timeline.IngestRun) []sourceSummary {
	by := map[timeline.SourceKind]*sourceSummary{}
	for _, r := range runs {
		s := by[r.Source]
		if s == nil {
			s = &sourceSummary{Source: r.Source}
			by[r.Source] = s
		}
		s.Runs++
		s.Records += r.Records
		s.Bad += r.BadLines
		if !r.First.IsZero() && (s.First.IsZero() || r.First.Before(s.First)) {
			s.First = r.First
		}
		if r.Last.After(s.Last) {
			s.Last = r.Last
		}
	}
	out := make([]sourceSummary, 0, len(by))
	for _, s := range by {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Source < out[j].Source })
	return out
}

func sourcesRun(ctx context.Context, opts *sourcesOptions) error {
	if err := checkOutput(opts.output, "table", "json", "yaml"); err != nil {
		return err
	}
	store, err := opts.f.OpenStoreReadOnly(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	runs, err := store.Runs(ctx)
	if err != nil {
		return err
	}
	gaps, err := store.Gaps(ctx, opts.gap)
	if err != nil {
		return err
	}
	out := sourcesJSON{Sources: summarize(runs), Runs: runs, Gaps: []gapJSON{}}
	if out.Runs == nil {
		out.Runs = []timeline.IngestRun{}
	}
	for _, g := range gaps {
		out.Gaps = append(out.Gaps, gapJSON{Source: g.Source, Start: g.Start, End: g.End, Duration: g.End.Sub(g.Start).Round(time.Second).String()})
	}
	if structured(opts.output) {
		return opts.f.writeData(opts.output, out)
	}
	return printSources(opts.f, &out, opts.gap)
}

func printSources(f *Factory, s *sourcesJSON, gap time.Duration) error {
	w := f.IO.Out
	if len(s.Runs) == 0 {
		fmt.Fprintln(w, "No evidence yet. Try: faultline ingest audit PATH")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	f.header(tw, "SOURCE\tFIRST\tLAST\tRECORDS\tRUNS\tBAD LINES")
	for _, x := range s.Sources {
		termsafe.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", x.Source, fmtTime(x.First, rfc3339Sec), fmtTime(x.Last, rfc3339Sec), humanInt(x.Records), x.Runs, humanInt(x.Bad))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	f.header(tw, "RUN\tSOURCE\tSTATUS\tPATH\tSIZE\tSHA256\tFIRST\tLAST\tRECORDS\tVERSIONS\tDUPLICATES\tBAD LINES")
	for _, r := range s.Runs {
		sum := r.SHA256
		if len(sum) > 12 {
			sum = sum[:12]
		}
		termsafe.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Source, r.Status, displayPath(r.Path),
			humanBytes(r.Size), dash(sum), fmtTime(r.First, rfc3339Sec), fmtTime(r.Last, rfc3339Sec), humanInt(r.Records), humanInt(r.Versions),
			humanInt(r.Duplicates), humanInt(r.BadLines))
	}
	tw.Flush()
	for _, r := range s.Runs {
		if r.Conflicts > 0 {
			fmt.Fprintf(w, "CONFLICTS: run %d kept %s record(s) that share a natural key (audit ID and time) with a record of another request (user, verb, object or code differ); both are kept\n",
				r.ID, humanInt(r.Conflicts))
		}
		if win := r.Window(); !win.Unbounded() {
			fmt.Fprintf(w, "WINDOW: run %d kept only the requests received %s; it read %s audit event(s) outside it and did not store them\n",
				r.ID, win, humanInt(r.Outside))
		}
	}
	fmt.Fprintln(w)
	if len(s.Gaps) == 0 {
		fmt.Fprintf(w, "No gaps of %s or more.\n", gap)
		return nil
	}
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "GAPS (>= %s)\tSTART\tEND\tLENGTH\n", gap)
	for _, g := range s.Gaps {
		termsafe.Fprintf(tw, "%s\t%s\t%s\t%s\n", g.Source, fmtTime(g.Start, rfc3339Sec), fmtTime(g.End, rfc3339Sec), g.Duration)
	}
	return tw.Flush()
}
