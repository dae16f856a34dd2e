package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/cardinality"
	"github.com/faultline/faultline/analyze/controlplane"
	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/analyze/prom"
	"github.com/faultline/faultline/timeline/clickhouse"
	"github.com/faultline/faultline/timeline/sqlite"
)

// Exit codes, in one place.
const (
	exitOK        = 0
	exitFailure   = 1
	exitUsage     = 2
	exitInterrupt = 130
)

// usageError is a mistake in how a command was called: exit 2, with a hint.
type usageError struct {
	msg  string
	hint string
}

func (e *usageError) Error() string { return e.msg }

func usagef(hint, format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...), hint: hint}
}

// evalFailedError is an evaluation that printed its scores but failed:
// some incidents could not be scored, or the overall score is below the bar
// set with --min. Exit 1.
type evalFailedError struct {
	unscored, incidents int
	below               bool
	score, min          float64
}

func (e *evalFailedError) Error() string {
	var parts []string
	if e.unscored > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d incidents could not be scored (NOT SCORED in the output)", e.unscored, e.incidents))
	}
	if e.below {
		parts = append(parts, fmt.Sprintf("overall score %.3f is below --min %g", e.score, e.min))
	}
	return "eval: " + strings.Join(parts, "; ")
}

// exitCode reports err on w and returns the process exit code.
func exitCode(err error, w io.Writer) int {
	var ue *usageError
	var ef *evalFailedError
	var pe *sqlite.PathError
	var expr *outcome.ExprError
	var where *controlplane.WhereError
	var shard *clickhouse.ShardError
	var dsn *clickhouse.DSNError
	var noSeries *prom.NoSeriesError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(w, "interrupted: what was committed is kept; rerun to complete it")
		return exitInterrupt
	case errors.As(err, &ef):
		fmt.Fprintf(w, "error: %s\n", ef)
		return exitFailure
	case errors.As(err, &pe):
		// The store refuses the path; only the CLI knows it came from --db.
		fmt.Fprintf(w, "error: invalid --db (or FAULTLINE_DB) %q: %s\nTry: --db ./faultline.db\n", pe.Path, pe.Reason)
		return exitUsage
	case errors.As(err, &expr) && expr.Ref == "":
		// The analyzers name their options; the flags are the CLI's.
		fmt.Fprintf(w, "error: --%s: %v\nTry: faultline investigate --bad 'reason == \"OOMKilled\"'\n", expr.Which, expr.Err)
		return exitUsage
	case errors.As(err, &expr):
		fmt.Fprintf(w, "error: --%s on %s at %s: %v\n", expr.Which, expr.Ref, expr.At.Format(time.RFC3339), expr.Err)
		return exitFailure
	case errors.As(err, &where):
		fmt.Fprintf(w, "error: --where %q: %v\nTry: faultline controlplane --where 'verb == \"list\" && scope == \"cluster\"'\n", where.Expr, where.Err)
		return exitUsage
	case errors.Is(err, investigate.ErrOnlySeries):
		fmt.Fprintf(w, "error: %v; investigate reads audit records, Events, objects and node logs\n"+
			"Try: faultline dns, faultline network or faultline cardinality, which read the series; or faultline ingest --help\n", err)
		return exitFailure
	case errors.Is(err, investigate.ErrNoEvidence):
		fmt.Fprintf(w, "error: %v: ingest evidence first\nTry: faultline ingest --help\n", err)
		return exitFailure
	case errors.As(err, &noSeries):
		fmt.Fprintf(w, "error: %s\nTry: %s\n", err, ingestSeriesHint(noSeries))
		return exitFailure
	case errors.Is(err, cardinality.ErrNoSeries):
		fmt.Fprintf(w, "error: %v: ingest Prometheus evidence first (query_range JSON or a /metrics snapshot), or read a saved /api/v1/status/tsdb\nTry: faultline ingest metrics query_range.json, or faultline cardinality --tsdb-status tsdb.json\n", err)
		return exitFailure
	case errors.As(err, &shard):
		fmt.Fprintf(w, "error: %s\nTry: start the shard again, or add --allow-partial for an answer from the others, marked partial\n", err)
		return exitFailure
	case errors.As(err, &dsn):
		fmt.Fprintf(w, "error: invalid --store (or FAULTLINE_STORE): %s\n", dsn)
		return exitUsage
	case errors.As(err, &ue):
		fmt.Fprintf(w, "error: %s\n", ue.msg)
		if ue.hint != "" {
			fmt.Fprintf(w, "Try: %s\n", ue.hint)
		}
		return exitUsage
	}
	fmt.Fprintf(w, "error: %s\n", err)
	return exitFailure
}

// ingestSeriesHint says how to ingest the series an analysis found none
// of: from a live Prometheus over a range (a rate needs two samples), or
// from query_range JSON saved before.
func ingestSeriesHint(e *prom.NoSeriesError) string {
	h := "faultline ingest metrics --prometheus http://prometheus:9090 --query '" + e.Selector + "' --since 2h --step 15s" +
		" (or save /api/v1/query_range JSON and: faultline ingest metrics FILE)"
	if e.Single {
		h += "; a single /metrics snapshot gives one sample a series: ingest a range, or snapshots taken at several times"
	}
	if e.What == "network pressure" {
		h += "; node logs: faultline ingest nodelogs DIR"
	}
	return h
}
