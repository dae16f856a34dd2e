// Package cardinality measures the telemetry's own load: how many series
// each metric and each label makes, which label multiplies a metric's
// series most, which label values churn between two instants, which scrape
// targets grew, and a fix for the worst label (drop it at scrape, or
// aggregate it away with a recording rule) with the series it would save.
//
// It reads the series ingested from Prometheus evidence through the
// PresenceReader role (the series present at both instants in one read,
// their labels as interned ids) where the store has it, else through
// SeriesLister, or a saved /api/v1/status/tsdb answer (ReadTSDBStatus).
// It never prints, never imports an ingester and runs no SQL.
package cardinality

import (
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

// PresenceReader is the read a store may offer beside Series: the series
// present in each of a few spans, with their labels as interned ids, in
// one query and without their samples. Run takes it when the store has
// it; the answer is the same as from reading Series span by span.
type PresenceReader interface {
	PresentSeries(ctx context.Context, q timeline.PresenceQuery) (*timeline.SeriesTable, error)
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
	tab, err := readTable(ctx, s, o)
	if err != nil {
		return nil, err
	}
	// The two instants are counted side by side.
	var then *snapshot
	var wg sync.WaitGroup
	if !o.Vs.IsZero() {
		wg.Go(func() { then = measure(tab, bitVs, false) })
	}
	now := measure(tab, bitAt, true)
	wg.Wait()
	log.Debug("cardinality: series read", "at", o.At, "series", now.n, "vs", o.Vs, "rows", len(tab.Rows))
	if now.n == 0 {
		if err := checkAny(ctx, s, o.Metric); err != nil {
			return nil, err
		}
	}
	rep := newReport("timeline", o)
	now.fill(rep, o.top())
	if then != nil {
		rep.Churn = churn(tab, now, then, o.top())
	}
	rep.Targets = targets(now, then, o.top())
	rep.Worst = worst(now, o.top())
	return rep, nil
}

// The bits of a table row for the series present at At and at Vs: the
// spans of the PresenceQuery, in that order.
const (
	bitAt uint8 = 1 << iota
	bitVs
)

// presenceQuery asks for the series present at At (within the lookback)
// and at Vs, or every series held for a zero At.
func presenceQuery(o Options) timeline.PresenceQuery {
	q := timeline.PresenceQuery{Metric: o.Metric}
	if o.At.IsZero() {
		q.Spans = []timeline.Span{{}}
		return q
	}
	// Prometheus's lookback is left-open: (at - lookback, at].
	lookback := func(at time.Time) timeline.Span {
		return timeline.Span{Since: at.Add(-o.lookback() + time.Nanosecond), Until: at.Add(time.Nanosecond)}
	}
	q.Spans = append(q.Spans, lookback(o.At))
	if !o.Vs.IsZero() {
		q.Spans = append(q.Spans, lookback(o.Vs))
	}
	return q
}

// readTable reads the series present at At and Vs: in one read from a
// PresenceReader, else span by span (tableOf).
func readTable(ctx context.Context, s SeriesLister, o Options) (*timeline.SeriesTable, error) {
	q := presenceQuery(o)
	pr, ok := s.(PresenceReader)
	if !ok {
		return tableOf(ctx, s, q)
	}
	tab, err := pr.PresentSeries(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("cardinality: %w", err)
	}
	return tab, nil
}

// tableOf answers q from the Series of each of its spans.
func tableOf(ctx context.Context, s SeriesLister, q timeline.PresenceQuery) (*timeline.SeriesTable, error) {
	var b timeline.SeriesTableBuilder
	n := 0
	for i, sp := range q.Spans {
		for sr, err := range s.Series(ctx, timeline.SeriesQuery{Metric: q.Metric, Since: sp.Since, Until: sp.Until}) {
			if err != nil {
				return nil, fmt.Errorf("cardinality: %w", err)
			}
			b.Add(sr, 1<<i)
			if n++; n%65536 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
		}
	}
	return b.Table(), nil
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
