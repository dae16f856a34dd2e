// Command auditgen writes a synthetic kube-apiserver audit log for benchmarks
// and ingest tests: JSON Lines, one audit.k8s.io/v1 Event per line, shaped the
// way kube-apiserver writes them with --audit-log-format=json (field order,
// omitted empty fields, HTML-escaped "&" in requestURI, microsecond UTC
// timestamps, Go duration strings in latency annotations).
//
// The cluster it describes is a GPU training cluster: -nodes kubelets renewing
// leases and patching status, MPI training jobs (kubeflow.org MPIJobs) in
// llm-pretrain and vision-train whose worker pods talk to the API server with
// their service-account tokens, the scheduler, the controller manager, the
// mpi-operator, Prometheus and a few admins.
//
// The output is fully determined by the flags: the same -seed gives
// byte-identical output. Lines are written in stageTimestamp order, as a
// single apiserver's log backend writes them, so a request's RequestReceived
// line comes before its ResponseComplete line with other requests in between,
// and a watch's ResponseComplete comes minutes after its ResponseStarted.
// Requests still open when the line budget is reached are completed at the
// end; -lines counts every line written.
//
// Secret and ConfigMap contents carry markers so tests can check that values
// never reach a database: every Secret data value is the base64 encoding of
// "SECRETVALUE-" + 32 hex digits (so the encoded value starts with
// "U0VDUkVUVkFMVUUt"), and every ConfigMap data value is "CMVALUE-" + 32 hex
// digits.
//
// Usage:
//
//	auditgen -lines 1000000 -seed 1 -o audit.log.gz
//	auditgen -lines 200000 -burst 600s:60s:20 > audit.log
package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes, as in the rest of faultline.
const (
	exitOK        = 0
	exitFailure   = 1
	exitUsage     = 2
	exitInterrupt = 130
)

// usageError is a flag value that is wrong; run prints it with a hint.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	var ue *usageError
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "error: %s\nTry: auditgen -lines 100000 -seed 1 -burst 600s:60s:20 -o audit.log.gz\n", ue.msg)
		return exitUsage
	case err != nil: // the flag package has already printed the error and usage
		return exitUsage
	}

	log := slog.New(slog.NewTextHandler(stderr, nil))
	out := opts.out
	if out == "" || out == "-" {
		out = "stdout"
	}
	began := time.Now()
	n, err := writeLog(ctx, opts, stdout)
	if err != nil {
		if ctx.Err() != nil {
			log.Error("interrupted", "lines", n, "out", out)
			return exitInterrupt
		}
		log.Error("writing audit log", "out", out, "lines", n, "err", err)
		return exitFailure
	}
	log.Info("wrote audit log", "lines", n, "out", out, "seed", opts.seed,
		"elapsed", time.Since(began).Round(time.Millisecond))
	return exitOK
}

// options are the command's flag values.
type options struct {
	lines  int
	seed   uint64
	start  time.Time
	rate   float64 // requests per second outside the burst
	nodes  int
	rr     float64 // fraction of requests audited at RequestResponse level
	stages float64 // fraction of requests that also log RequestReceived
	out    string  // "" or "-" for stdout; *.gz is gzip-compressed
	burst  burst
}

// burst is a window in which node and worker clients fan out: the request
// rate is multiplied, latencies grow, and 429s and 5xx become common.
type burst struct {
	offset, length time.Duration
	mult           float64 // 0 when there is no burst
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("auditgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: auditgen [flags]\n\nWrites a synthetic kube-apiserver audit log (JSON Lines, audit.k8s.io/v1 Events).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	var o options
	var start, burstSpec string
	fs.IntVar(&o.lines, "lines", 1000000, "number of audit lines to write")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed; the output is fully determined by the flags")
	fs.StringVar(&start, "start", "2026-05-01T10:00:00Z", "time of the first request (RFC 3339)")
	fs.Float64Var(&o.rate, "rate", 300, "baseline requests per second")
	fs.IntVar(&o.nodes, "nodes", 1000, "number of nodes (kubelets)")
	fs.Float64Var(&o.rr, "rr", 0.05, "fraction of lines at RequestResponse level")
	fs.Float64Var(&o.stages, "stages", 0.3, "fraction of requests that also log a RequestReceived line")
	fs.StringVar(&o.out, "o", "", "output path (default stdout); a path ending in .gz is gzip-compressed")
	fs.StringVar(&burstSpec, "burst", "", "optional START_OFFSET:DURATION:MULTIPLIER, e.g. 600s:60s:20: a window where node and worker clients fan out")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, &usageError{fmt.Sprintf("unexpected argument %q: auditgen takes flags only", fs.Arg(0))}
	}
	t, err := time.Parse(time.RFC3339, start)
	if err != nil {
		return o, &usageError{fmt.Sprintf("invalid -start %q: want RFC 3339, e.g. 2026-05-01T10:00:00Z", start)}
	}
	o.start = t.UTC()
	if o.lines < 0 {
		return o, &usageError{fmt.Sprintf("invalid -lines %d: want 0 or more", o.lines)}
	}
	if !(o.rate > 0) || math.IsInf(o.rate, 0) {
		return o, &usageError{fmt.Sprintf("invalid -rate %v: want a positive number of requests per second", o.rate)}
	}
	if o.nodes < 1 || o.nodes > 99999 {
		return o, &usageError{fmt.Sprintf("invalid -nodes %d: want 1 to 99999", o.nodes)}
	}
	if !(o.rr >= 0 && o.rr <= 1) {
		return o, &usageError{fmt.Sprintf("invalid -rr %v: want a fraction between 0 and 1", o.rr)}
	}
	if !(o.stages >= 0 && o.stages <= 1) {
		return o, &usageError{fmt.Sprintf("invalid -stages %v: want a fraction between 0 and 1", o.stages)}
	}
	if o.burst, err = parseBurst(burstSpec); err != nil {
		return o, err
	}
	return o, nil
}

// parseBurst parses START_OFFSET:DURATION:MULTIPLIER; "" means no burst.
// maxBurst bounds a burst's multiplier: a million times the base rate is
// already past any apiserver; more only overflows the arithmetic.
const maxBurst = 1e6

func parseBurst(s string) (burst, error) {
	if s == "" {
		return burst{}, nil
	}
	bad := func(why string) (burst, error) {
		return burst{}, &usageError{fmt.Sprintf("invalid -burst %q: %s; want START_OFFSET:DURATION:MULTIPLIER, e.g. 600s:60s:20", s, why)}
	}
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return bad("want three fields")
	}
	off, err := time.ParseDuration(parts[0])
	if err != nil || off < 0 {
		return bad("START_OFFSET is not a duration of 0 or more")
	}
	length, err := time.ParseDuration(parts[1])
	if err != nil || length <= 0 {
		return bad("DURATION is not a positive duration")
	}
	mult, err := strconv.ParseFloat(parts[2], 64)
	if err != nil || !(mult >= 1) || mult > maxBurst {
		return bad(fmt.Sprintf("MULTIPLIER is not a number from 1 to %g", float64(maxBurst)))
	}
	return burst{offset: off, length: length, mult: mult}, nil
}

// writeLog writes the log to opts.out (or stdout) and returns the number of
// lines written.
func writeLog(ctx context.Context, opts options, stdout io.Writer) (n int, err error) {
	var w io.Writer = stdout
	if opts.out != "" && opts.out != "-" {
		f, err := os.Create(opts.out)
		if err != nil {
			return 0, err
		}
		defer func() {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}()
		w = f
		if strings.HasSuffix(opts.out, ".gz") {
			zw, err := gzip.NewWriterLevel(f, gzip.BestSpeed)
			if err != nil {
				return 0, err
			}
			defer func() {
				if cerr := zw.Close(); err == nil {
					err = cerr
				}
			}()
			w = zw
		}
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	n, err = newGenerator(opts).run(ctx, bw)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return n, err
}
