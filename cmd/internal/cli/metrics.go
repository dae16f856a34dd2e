package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/ingest/metrics"
	"github.com/faultline/faultline/internal/termsafe"
	"github.com/faultline/faultline/timeline"
)

type ingestMetricsOptions struct {
	f                  *Factory
	paths              []string
	format             string
	strict             bool
	at                 string
	url, query         string
	since, until, step string
	rate               float64
}

func newIngestMetricsCmd(f *Factory) *cobra.Command {
	opts := &ingestMetricsOptions{f: f}
	cmd := &cobra.Command{
		Use:   "metrics [PATH...]",
		Short: "Ingest Prometheus evidence: query_range JSON, /metrics snapshots, or a live Prometheus",
		Long: `Ingest Prometheus samples into the timeline as series (a metric and its
labels) and raw samples (docs/metrics.md). Each PATH is one of:
  - JSON saved from /api/v1/query_range (a matrix) or /api/v1/query (a vector)
  - a /metrics snapshot in the text exposition format or OpenMetrics
    (curl .../metrics > file); a sample's time is its own timestamp, else
    --time, else the file's modification time, and the summary says which.
The format is told from the content (--format to force it).

With --prometheus URL --query Q, the server is read live through
query_range (GET only), in chunks of at most 11,000 points per series,
at most --rate queries a second. Each chunk is committed with a cursor
for (URL, query): run the same command again and it continues where it
stopped. Ctrl-C keeps what was committed.

Ingest is idempotent: a sample already held (same series and time) is
counted as a duplicate. A bad series or sample is reported as
FILE:LINE: field: problem (or with the query named) and skipped; --strict
stops at the first.`,
		Example: `  curl -s 'http://prometheus:9090/api/v1/query_range?query=up&start=...&end=...&step=15s' > up.json
  faultline ingest metrics up.json
  curl -s http://coredns:9153/metrics > coredns.prom && faultline ingest metrics coredns.prom
  faultline ingest metrics --prometheus http://127.0.0.1:9090 --query 'coredns_dns_requests_total' --since 2h --step 15s`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.paths = args
			return ingestMetricsRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.format, "format", "auto", "input format: auto, api, text or openmetrics")
	fl.BoolVar(&opts.strict, "strict", false, "stop at the first bad series or sample (exit 1)")
	fl.StringVar(&opts.at, "time", "", "time of snapshot samples without their own timestamp (RFC 3339; default: the file's mtime)")
	fl.StringVar(&opts.url, "prometheus", "", "read a live Prometheus at this URL (with --query)")
	fl.StringVar(&opts.query, "query", "", "the PromQL query to read live")
	fl.StringVar(&opts.since, "since", "2h", "live: start of the range (RFC 3339 or a duration back from --until)")
	fl.StringVar(&opts.until, "until", "now", "live: end of the range (RFC 3339, a duration back from now, or now)")
	fl.StringVar(&opts.step, "step", "15s", "live: query resolution step")
	fl.Float64Var(&opts.rate, "rate", metrics.DefaultRate, "live: at most this many queries a second")
	return cmd
}

func ingestMetricsRun(ctx context.Context, opts *ingestMetricsOptions) error {
	live := opts.url != "" || opts.query != ""
	switch {
	case live && (opts.url == "" || opts.query == ""):
		return usagef("faultline ingest metrics --prometheus http://127.0.0.1:9090 --query up --since 2h",
			"--prometheus and --query go together")
	case live && len(opts.paths) > 0:
		return usagef("faultline ingest metrics --prometheus URL --query Q", "give files or --prometheus, not both")
	case !live && len(opts.paths) == 0:
		return usagef("faultline ingest metrics up.json", "nothing to ingest: give files, or --prometheus URL --query Q")
	}
	if live {
		return ingestMetricsLive(ctx, opts)
	}
	mo, err := opts.fileOptions()
	if err != nil {
		return err
	}
	return ingestFilesRun(ctx, opts.f, func(ctx context.Context, store timeline.Appender) ([]timeline.IngestRun, error) {
		mo.OnRun = func(fr metrics.FileRun) { printMetricsRun(opts.f.IO.ErrOut, fr) }
		_, err := metrics.Ingest(ctx, store, opts.paths, mo)
		return nil, err // each run summarised by OnRun
	})
}

// fileOptions checks the flags of a file ingest.
func (opts *ingestMetricsOptions) fileOptions() (metrics.Options, error) {
	f := opts.f
	mo := metrics.Options{Strict: opts.strict, Now: f.Now, OnSkip: func(b *input.Skip) { f.warnf("%s", b) }}
	switch opts.format {
	case "auto":
	case "api", "text", "openmetrics":
		mo.Format = metrics.Format(opts.format)
	default:
		return mo, usagef("faultline ingest metrics --format openmetrics snapshot.txt", "invalid --format %q: want auto, api, text or openmetrics", opts.format)
	}
	if opts.at != "" {
		t, err := time.Parse(time.RFC3339Nano, opts.at)
		if err != nil {
			return mo, usagef("faultline ingest metrics --time 2026-05-01T10:00:00Z snapshot.prom", "invalid --time %q: want RFC 3339", opts.at)
		}
		mo.Time = t
	}
	return mo, nil
}

// ingestMetricsLive reads a live Prometheus.
func ingestMetricsLive(ctx context.Context, opts *ingestMetricsOptions) error {
	f := opts.f
	l, err := opts.live()
	if err != nil {
		return err
	}
	store, err := f.OpenStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	l.OnSkip = func(b *input.Skip) { f.warnf("%s", b) }
	l.OnChunk = func(c metrics.Chunk) {
		termsafe.Fprintf(f.IO.ErrOut, "chunk %s .. %s: %s series, %s samples\n", c.Start.Format(time.RFC3339), c.End.Format(time.RFC3339),
			humanInt(c.Series), humanInt(c.Samples))
	}
	run, err := metrics.IngestLive(ctx, store, l)
	if run != nil {
		printMetricsRun(f.IO.ErrOut, metrics.FileRun{Run: run, Format: metrics.FormatAPI, Times: metrics.TimeAPI})
	}
	if err != nil {
		return err
	}
	return analyze(ctx, store)
}

// live checks the flags of a live read.
func (opts *ingestMetricsOptions) live() (metrics.Live, error) {
	hint := "faultline ingest metrics --prometheus http://127.0.0.1:9090 --query up --since 2h --step 15s"
	now := opts.f.Now().UTC()
	until := now
	if opts.until != "now" {
		t, err := parseWhen("until", opts.until, now)
		if err != nil {
			return metrics.Live{}, err
		}
		until = t
	}
	since, err := parseWhen("since", opts.since, until)
	if err != nil {
		return metrics.Live{}, err
	}
	step, ok := parseDuration(opts.step)
	switch {
	case !ok || step <= 0:
		return metrics.Live{}, usagef(hint, "invalid --step %q: want a duration such as 15s", opts.step)
	case !since.Before(until):
		return metrics.Live{}, usagef(hint, "--since %s is not before --until %s", since.Format(time.RFC3339), until.Format(time.RFC3339))
	case opts.rate <= 0:
		return metrics.Live{}, usagef(hint+" --rate 2", "invalid --rate %g: want queries a second, above 0", opts.rate)
	}
	return metrics.Live{URL: opts.url, Query: opts.query, Since: since, Until: until, Step: step, Rate: opts.rate, Strict: opts.strict}, nil
}

// printMetricsRun summarises a metrics run on stderr.
func printMetricsRun(w io.Writer, fr metrics.FileRun) {
	r := fr.Run
	termsafe.Fprintf(w, "%s %s (%s): %s series, %s samples added, %s duplicates skipped, %s bad",
		r.Status, displayPath(r.Path), fr.Format, humanInt(fr.Series), humanInt(r.Records), humanInt(r.Duplicates), humanInt(r.BadLines))
	if !r.First.IsZero() {
		fmt.Fprintf(w, "; %s .. %s", r.First.Format(time.RFC3339), r.Last.Format(time.RFC3339))
	}
	switch fr.Times {
	case metrics.TimeAPI, metrics.TimeOwn:
		fmt.Fprintf(w, "; times: %s\n", fr.Times)
	case "":
		fmt.Fprintln(w)
	default:
		fmt.Fprintf(w, "; samples without a timestamp at %s (%s)\n", fr.Fallback.Format(time.RFC3339), fr.Times)
	}
}
