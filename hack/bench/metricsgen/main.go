// Command metricsgen writes synthetic Prometheus evidence for benchmarks of
// faultline ingest metrics, from one set of series a GPU training cluster
// exports: CoreDNS request counters and latency histograms, node-exporter's
// conntrack gauges, DCGM's Xid gauges, cAdvisor's container CPU counters and
// the apiserver's request counters, with the labels those exporters give
// them.
//
//   - -format api writes one /api/v1/query_range answer (resultType matrix):
//     -series series of -points values -step apart, as Prometheus writes it
//     (labels sorted, times in seconds, values as strings).
//   - -format text and -format openmetrics write -points /metrics snapshots
//     into the folder -o, one file a scrape (scrape-00001.prom ...), each
//     with -series samples and no timestamps, the file's modification time
//     set to the scrape's time, as `curl …/metrics > file` every -step
//     leaves them. OpenMetrics names counters' families without _total and
//     ends each file with # EOF.
//
// Counters grow and gauges wander; every value depends only on the flags.
//
// Usage:
//
//	metricsgen -format api -series 1000 -points 1000 -o query_range.json
//	metricsgen -format text -series 10000 -points 100 -o scrapes/
//	metricsgen -format api -series 3 -points 2 | jq .
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/faultline/faultline/hack/bench/internal/gencmd"
)

func main() { gencmd.Main(run) }

const hint = "metricsgen -format api -series 1000 -points 1000 -o query_range.json"

type options struct {
	format string
	series int
	points int
	step   time.Duration
	start  time.Time
	seed   uint64
	out    string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("metricsgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.format, "format", "api", "api (query_range JSON), text (exposition format 0.0.4) or openmetrics")
	fs.IntVar(&o.series, "series", 1000, "series: of the matrix (api), or samples in each snapshot (text, openmetrics)")
	fs.IntVar(&o.points, "points", 1000, "values per series (api), or snapshots (text, openmetrics)")
	fs.DurationVar(&o.step, "step", 15*time.Second, "time between two values or two scrapes")
	start := fs.String("start", "2026-12-01T00:00:00Z", "time of the first value or scrape (RFC 3339)")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed: the output depends only on the flags")
	fs.StringVar(&o.out, "o", "", "api: output file (default stdout); text, openmetrics: output folder (required)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: metricsgen [flags]\n\nWrites a query_range JSON answer, or a folder of /metrics snapshots (text or\nOpenMetrics, one a scrape), over the series of a GPU training cluster.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.format != "api" && o.format != "text" && o.format != "openmetrics":
		return o, fmt.Errorf("invalid -format %q: want api, text or openmetrics", o.format)
	case o.series < 1 || o.points < 1:
		return o, fmt.Errorf("invalid -series %d or -points %d: want 1 or more", o.series, o.points)
	case o.step <= 0 || o.step%time.Millisecond != 0:
		return o, fmt.Errorf("invalid -step %s: want a whole number of milliseconds above 0", o.step)
	case o.format != "api" && o.out == "":
		return o, fmt.Errorf("-format %s writes a folder of snapshots: give it with -o", o.format)
	}
	if o.start, err = time.Parse(time.RFC3339Nano, *start); err != nil {
		return o, fmt.Errorf("invalid -start %q: want RFC 3339 (2026-12-01T00:00:00Z)", *start)
	}
	o.start = o.start.UTC().Truncate(time.Millisecond)
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return gencmd.UsageCode(err, stderr, hint)
	}
	set := newSet(o.series, o.seed)
	if o.format != "api" {
		return gencmd.Code(writeSnapshots(ctx, o, set), stderr)
	}
	return gencmd.Code(gencmd.Output(o.out, stdout, func(w io.Writer) error { return writeAPI(ctx, w, o, set) }), stderr)
}

// writeSnapshots writes one file a scrape into o.out, each dated by its
// modification time.
func writeSnapshots(ctx context.Context, o options, set *seriesSet) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	for p := range o.points {
		if err := ctx.Err(); err != nil {
			return err
		}
		at := o.start.Add(time.Duration(p) * o.step)
		name := filepath.Join(o.out, fmt.Sprintf("scrape-%05d.prom", p+1))
		f, err := os.Create(name)
		if err != nil {
			return err
		}
		w := bufio.NewWriterSize(f, 1<<20)
		writeExposition(w, o.format == "openmetrics", set, p)
		err = w.Flush()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chtimes(name, at, at)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
