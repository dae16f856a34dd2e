// Package incidentplot draws an investigation as one picture: bad against
// all observations per time bucket, the last-good and first-bad lines, the
// incident and its episodes as shaded spans, each ranked change as a
// numbered marker with a key below, and, when the leading cause is a burst
// of API requests, that request class's rate beside the peak its simulated
// fix would have left.
//
// Collect reads what the picture needs through the Store role it declares
// (the histogram and the control-plane rollup; no SQL of its own); Write
// draws SVG or PNG with gonum.org/v1/plot. faultline investigate --plot and
// the TUI's export use it.
package incidentplot

import (
	"context"
	"fmt"
	"iter"
	"os"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/controlplane"
	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
)

// Store is what a plot reads: the histogram of records, what the outcome
// classifier reads, and what the control-plane analysis reads.
type Store interface {
	Histogram(ctx context.Context, q timeline.HistogramQuery) ([]timeline.Bucket, error)
	Records(ctx context.Context, q timeline.Query) iter.Seq2[*timeline.Record, error]
	controlplane.Store
}

// Options shape what Collect reads.
type Options struct {
	// Good is the investigation's --good ("": outcome.DefaultGood): the
	// object states it matches are observations too.
	Good string
}

// Buckets is how many time buckets the histogram is drawn with.
const Buckets = 120

// Data is what a plot draws.
type Data struct {
	Report *investigate.Report
	// Buckets count, over the report's window, all observations (the
	// records, and the object states the outcome classifier read) and the
	// bad ones among them, as the investigation saw them.
	Buckets []timeline.Bucket
	Load    *Load // nil unless the leading cause is a burst
}

// Load is the offending request class behind a load-shaped cause.
type Load struct {
	Class      string // "LIST nodes (cluster) by CLIENT"
	Rate       []controlplane.SecondCount
	Start, End time.Time // the burst
	PeakRps    float64
	Fix        *controlplane.Fix // the first simulated fix, if any
}

// Collect buckets the report's window: all the records (the store's
// histogram) and the object states, against the observations the outcome
// classifier calls bad under the report's expression (the one definition
// of bad investigate uses). When a suspect carries control-plane load
// evidence, it also reads that class's per-second rate and its simulated
// fixes.
func Collect(ctx context.Context, s Store, rep *investigate.Report, opt Options) (*Data, error) {
	d := &Data{Report: rep}
	since, until := rep.Window.Start, rep.Window.End
	if since.IsZero() || until.IsZero() {
		return d, nil
	}
	// Until is exclusive: a nanosecond more keeps the last record.
	until = until.Add(time.Nanosecond)
	b, err := s.Histogram(ctx, timeline.HistogramQuery{Since: since, Until: until, Buckets: Buckets})
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	bad := rep.Bad
	if bad == outcome.DefaultBad {
		bad = "" // the classifier queries the default's halves apart, each on its index
	}
	out, err := outcome.Read(ctx, s, outcome.Options{Bad: bad, Good: opt.Good, Since: since, Until: until})
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	at := func(t time.Time) *timeline.Bucket {
		for i := range b {
			if !t.Before(b[i].Start) && t.Before(b[i].End) {
				return &b[i]
			}
		}
		return nil
	}
	for _, o := range out.Bad {
		if k := at(o.Time); k != nil {
			k.Bad++
			if o.Source == outcome.SourceStatus {
				k.All++ // a state is no record: count it among all too
			}
		}
	}
	for _, o := range out.Good {
		if k := at(o.Time); k != nil && o.Source == outcome.SourceStatus {
			k.All++
		}
	}
	d.Buckets = b
	if d.Load, err = collectLoad(ctx, s, rep); err != nil {
		return nil, err
	}
	return d, nil
}

// collectLoad finds the burst named by the first suspect with load
// evidence, over the span investigate looked at for it.
func collectLoad(ctx context.Context, s Store, rep *investigate.Report) (*Load, error) {
	if rep.Boundary == nil {
		return nil, nil
	}
	for _, c := range rep.Changes {
		l := c.Load
		if l == nil {
			continue
		}
		since, until := c.At.Add(-time.Minute), rep.Boundary.IncidentEnd.Add(time.Minute)
		cp, err := controlplane.Analyze(ctx, s, controlplane.Options{Since: since, Until: until,
			Where: func(k *controlplane.Class) bool { return k.Client == l.Client && k.User == l.User }})
		if err != nil {
			return nil, fmt.Errorf("plot: control-plane rate: %w", err)
		}
		for _, b := range cp.Bursts {
			if class, _, _ := strings.Cut(b.Class.Key(), " by "); class != l.Class {
				continue
			}
			out := &Load{Class: l.Class + " by " + l.Client, Rate: b.Class.Series(), Start: b.Start, End: b.End, PeakRps: b.PeakRps}
			if len(b.Fixes) > 0 {
				f := b.Fixes[0]
				out.Fix = &f
			}
			return out, nil
		}
		return nil, nil
	}
	return nil, nil
}

// WriteFile collects and draws the report's plot to path, in the format
// its extension names (Format); a file left half-written is removed.
func WriteFile(ctx context.Context, s Store, rep *investigate.Report, opt Options, path string) error {
	format, ok := Format(path)
	if !ok {
		return fmt.Errorf("plot %s: want a .svg or .png file", path)
	}
	d, err := Collect(ctx, s, rep, opt)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	err = Write(f, d, format)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}
