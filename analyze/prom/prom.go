// Package prom does the arithmetic of Prometheus over the series a store
// holds (faultline ingest metrics): a counter's increases with its resets
// handled, as increase() and rate() do; a histogram's quantile, as
// histogram_quantile() does; and the reading of a metric's series with
// their samples. The DNS and network analyses share it. It never prints
// and never imports an ingester.
package prom

import (
	"context"
	"fmt"
	"iter"
	"math"
	"strings"
	"time"

	"github.com/faultline/faultline/timeline"
)

// Reader is the store role the analyses read series through.
type Reader interface {
	Series(ctx context.Context, q timeline.SeriesQuery) iter.Seq2[*timeline.Series, error]
	Samples(ctx context.Context, series []int64, since, until time.Time) iter.Seq2[timeline.Sample, error]
}

// Loaded is a series with its samples in a span, oldest first.
type Loaded struct {
	Series  *timeline.Series
	Samples []timeline.Sample
}

// Load reads the series of metric with a sample in [since, until) (zero:
// unbounded), and their samples there, in the store's order of series.
func Load(ctx context.Context, r Reader, metric string, since, until time.Time) ([]Loaded, error) {
	var out []Loaded
	at := map[int64]int{}
	var ids []int64
	for s, err := range r.Series(ctx, timeline.SeriesQuery{Metric: metric, Since: since, Until: until}) {
		if err != nil {
			return nil, fmt.Errorf("series of %s: %w", metric, err)
		}
		at[s.ID] = len(out)
		ids = append(ids, s.ID)
		out = append(out, Loaded{Series: s})
	}
	if len(ids) == 0 {
		return nil, nil
	}
	for sm, err := range r.Samples(ctx, ids, since, until) {
		if err != nil {
			return nil, fmt.Errorf("samples of %s: %w", metric, err)
		}
		if i, ok := at[sm.Series]; ok {
			out[i].Samples = append(out[i].Samples, sm)
		}
	}
	return out, nil
}

// Span is the first and last sample time of the series (zero when none
// has a sample).
func Span(sets ...[]Loaded) (first, last time.Time) {
	for _, set := range sets {
		for _, l := range set {
			if len(l.Samples) == 0 {
				continue
			}
			if a := l.Samples[0].Time; first.IsZero() || a.Before(first) {
				first = a
			}
			if b := l.Samples[len(l.Samples)-1].Time; b.After(last) {
				last = b
			}
		}
	}
	return first, last
}

// NoSeriesError is an analysis that found none of the series it needs,
// or only series of one sample each (a rate needs two).
type NoSeriesError struct {
	What    string   // what the analysis is: "DNS pressure"
	Metrics []string // the metrics it looked for
	// Selector is a PromQL selector of the series it reads, to ask a
	// Prometheus for them.
	Selector string
	Single   bool // there were series, of one sample each
}

func (e *NoSeriesError) Error() string {
	if e.Single {
		return fmt.Sprintf("%s: each series of %s has a single sample in the window, and a rate needs two", e.What, strings.Join(e.Metrics, ", "))
	}
	return fmt.Sprintf("%s: no series of %s in the timeline", e.What, strings.Join(e.Metrics, ", "))
}

// Share is num/den rounded to four places, or nil when den is not
// positive (nothing to take a share of).
func Share(num, den float64) *float64 {
	if den <= 0 || math.IsNaN(num) || math.IsNaN(den) {
		return nil
	}
	v := Round(num/den, 4)
	return &v
}

// Round rounds x to places decimal places.
func Round(x float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(x*p) / p
}

// Lookback is how far beyond a window samples are read, so that the
// intervals its bounds cut count: Prometheus's default lookback.
const Lookback = 5 * time.Minute

// Around is the span to read for the window [since, until): Lookback
// wider on each bounded side.
func Around(since, until time.Time) (from, to time.Time) {
	if !since.IsZero() {
		from = since.Add(-Lookback)
	}
	if !until.IsZero() {
		to = until.Add(Lookback)
	}
	return from, to
}
