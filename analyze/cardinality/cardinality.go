// Package cardinality measures the telemetry's own load: how many series
// each metric and each label makes, which label multiplies a metric's
// series most, which label values churn between two instants, which scrape
// targets grew, and a fix for the worst label (drop it at scrape, or
// aggregate it away with a recording rule) with the series it would save.
//
// It reads the series ingested from Prometheus evidence through the
// SeriesLister role, or a saved /api/v1/status/tsdb answer (ReadTSDBStatus).
// It never prints, never imports an ingester and runs no SQL.
package cardinality

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"
	"time"

	"github.com/faultline/faultline/timeline"
)

// SeriesLister is what the analysis reads: the series a query selects.
type SeriesLister interface {
	Series(ctx context.Context, q timeline.SeriesQuery) iter.Seq2[*timeline.Series, error]
}

// DefaultLookback is how far back from an instant a sample keeps its
// series present, as Prometheus's query.lookback-delta.
const DefaultLookback = 5 * time.Minute

// DefaultTop is how many metrics, labels, pairs and targets a report
// lists when Options.Top is 0.
const DefaultTop = 10

// Options say what to measure.
type Options struct {
	// At is the instant measured: the series with a sample in (At -
	// Lookback, At]. Zero: every series held, whenever its samples.
	At time.Time
	// Vs, when set, is the instant At is compared with: the churn
	// between them and the targets that grew. It needs At.
	Vs       time.Time
	Lookback time.Duration // 0: DefaultLookback
	Metric   string        // only this metric ("": all)
	Top      int           // 0: DefaultTop; < 0: all
	Logger   *slog.Logger  // nil: discard
}

func (o *Options) top() int {
	if o.Top == 0 {
		return DefaultTop
	}
	return o.Top
}

func (o *Options) lookback() time.Duration {
	if o.Lookback <= 0 {
		return DefaultLookback
	}
	return o.Lookback
}

// ErrNoSeries is the answer of a timeline that holds no series (of the
// metric asked for, if one was).
var ErrNoSeries = errors.New("no series ingested")

// OptionError is an option that cannot be honoured; Field names it as
// Options does.
type OptionError struct {
	Field  string
	Reason string
}

func (e *OptionError) Error() string { return e.Field + ": " + e.Reason }

// Run measures the series of s as o says.
func Run(ctx context.Context, s SeriesLister, o Options) (*Report, error) {
	if !o.Vs.IsZero() && o.At.IsZero() {
		return nil, &OptionError{Field: "Vs", Reason: "needs At, the instant to compare with it"}
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The two instants are read side by side: each read is mostly the
	// store's, on a connection of its own.
	var then instant
	var wg sync.WaitGroup
	if !o.Vs.IsZero() {
		wg.Go(func() { then = readInstant(ctx, s, o.Metric, o.Vs, o.lookback(), false) })
	}
	now := readInstant(ctx, s, o.Metric, o.At, o.lookback(), true)
	wg.Wait()
	if err := cmp.Or(now.err, then.err); err != nil {
		return nil, err
	}
	log.Debug("cardinality: series read", "at", o.At, "series", len(now.series), "vs", o.Vs, "seriesVs", len(then.series))
	if len(now.series) == 0 {
		if err := checkAny(ctx, s, o.Metric); err != nil {
			return nil, err
		}
	}
	rep := newReport("timeline", o)
	snap := now.snap
	snap.fill(rep, o.top())
	if !o.Vs.IsZero() {
		rep.Churn = churn(now.series, then.series, snap, then.snap, o.top())
	}
	rep.Targets = targets(snap, then.snap, o.top())
	rep.Worst = worst(snap, o.top())
	return rep, nil
}

// instant is the series present at one instant, and their counts.
type instant struct {
	series []*timeline.Series
	snap   *snapshot
	err    error
}

func readInstant(ctx context.Context, s SeriesLister, metric string, at time.Time, lookback time.Duration, full bool) instant {
	series, err := readSet(ctx, s, metric, at, lookback)
	if err != nil {
		return instant{err: err}
	}
	return instant{series: series, snap: measure(series, full)}
}

// readSet reads the series present at at (within lookback), or every
// series held for a zero at.
func readSet(ctx context.Context, s SeriesLister, metric string, at time.Time, lookback time.Duration) ([]*timeline.Series, error) {
	q := timeline.SeriesQuery{Metric: metric}
	if !at.IsZero() {
		// Prometheus's lookback is left-open: (at - lookback, at].
		q.Since, q.Until = at.Add(-lookback+time.Nanosecond), at.Add(time.Nanosecond)
	}
	var out []*timeline.Series
	for sr, err := range s.Series(ctx, q) {
		if err != nil {
			return nil, fmt.Errorf("cardinality: %w", err)
		}
		out = append(out, sr)
		if len(out)%65536 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// checkAny returns ErrNoSeries when s holds no series of metric at all.
func checkAny(ctx context.Context, s SeriesLister, metric string) error {
	for _, err := range s.Series(ctx, timeline.SeriesQuery{Metric: metric}) {
		if err != nil {
			return fmt.Errorf("cardinality: %w", err)
		}
		return nil
	}
	if metric != "" {
		return fmt.Errorf("metric %q: %w", metric, ErrNoSeries)
	}
	return ErrNoSeries
}

func newReport(source string, o Options) *Report {
	rep := &Report{Source: source, At: o.At, Vs: o.Vs, Metric: o.Metric,
		Metrics: []Metric{}, Labels: []Label{}, Pairs: []Pair{}, Targets: []Target{}}
	if !o.At.IsZero() {
		rep.LookbackSeconds = o.lookback().Seconds()
	}
	return rep
}
