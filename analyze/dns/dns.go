// Package dns measures DNS pressure from the CoreDNS series a store holds
// (faultline ingest metrics): the query rate over time, latency p99, the
// SERVFAIL and NXDOMAIN shares and the cache hit ratio, by client where a
// label names it (CoreDNS's view, or any label the caller names); the
// bursts, found by the rule the apiserver's request bursts are
// (analyze/burst), with the client behind each; and the fixes, each with
// the share of queries it would take off CoreDNS, computed from the
// evidence. Counters become rates with their resets handled, histograms
// quantiles as histogram_quantile does (analyze/prom). It never prints
// and never imports an ingester.
package dns

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/faultline/faultline/analyze/prom"
)

// The CoreDNS metrics read.
const (
	Requests    = "coredns_dns_requests_total"
	Responses   = "coredns_dns_responses_total"
	Latency     = "coredns_dns_request_duration_seconds_bucket"
	CacheHits   = "coredns_cache_hits_total"
	CacheMisses = "coredns_cache_misses_total"
)

// Metrics are the metrics read, Requests first (the one needed).
var Metrics = []string{Requests, Responses, Latency, CacheHits, CacheMisses}

// Selector selects the series read, and more, from a Prometheus.
const Selector = `{__name__=~"coredns_dns_.*|coredns_cache_.*"}`

// DefaultBy is the label that names a query's client when the caller
// names none: CoreDNS's view (the view plugin picks a server block by the
// client's address, a view a namespace or a team).
const DefaultBy = "view"

// Store is the role the analysis reads: the series.
type Store interface {
	prom.Reader
}

// Options bound the window (zero: all the evidence), name the client
// label (By, default DefaultBy), and the step of the rate over time (0:
// the window over 60, at least a minute).
type Options struct {
	Since, Until time.Time
	By           string
	Step         time.Duration
	Logger       *slog.Logger
}

// Report is DNS pressure over a window.
type Report struct {
	Window      Window  `json:"window"`
	StepSeconds float64 `json:"stepSeconds"`
	// By is the label queries were told apart by; Labelled says whether
	// any series carries it (if not, Clients is empty and bursts are of
	// all queries).
	By       string `json:"by"`
	Labelled bool   `json:"labelled"`
	// Summary is the whole window; PeakRps its busiest second.
	Summary Stats     `json:"summary"`
	PeakRps float64   `json:"peakRps"`
	PeakAt  time.Time `json:"peakAt,omitzero"`
	// Types counts the queries by type (A, AAAA, SRV...).
	Types map[string]int64 `json:"types"`
	// Over is the window step by step.
	Over    []Point  `json:"over"`
	Clients []Client `json:"clients"`
	// Bursts are the most queries first.
	Bursts []Burst `json:"bursts"`
	// Fixes are for the whole window, the most queries removed first.
	Fixes []Fix `json:"fixes"`
	// Missing are the metrics of Metrics with no series: what they
	// measure is null.
	Missing []string `json:"missing"`
	// CounterResets counts the resets seen (a CoreDNS restarted).
	CounterResets int `json:"counterResets"`
}

// Window is the span analysed.
type Window struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Stats are DNS figures over a span; a figure whose metric is missing,
// or that has nothing to be a share of, is null.
type Stats struct {
	Requests      int64    `json:"requests"`
	Rps           float64  `json:"rps"`
	P99Ms         *float64 `json:"p99Ms"`
	ServfailShare *float64 `json:"servfailShare"`
	NxdomainShare *float64 `json:"nxdomainShare"`
	CacheHitRatio *float64 `json:"cacheHitRatio"`
}

// Point is one step of the window.
type Point struct {
	Time time.Time `json:"time"`
	Stats
}

// Client is the queries of one value of the By label.
type Client struct {
	Value string `json:"value"`
	Stats
	Share   float64   `json:"share"` // of all queries
	PeakRps float64   `json:"peakRps"`
	PeakAt  time.Time `json:"peakAt,omitzero"`
}

// Burst is a client's query rate jumping an order of magnitude over its
// own last five minutes.
type Burst struct {
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	Client      string    `json:"client"` // the By label's value; "" when not labelled
	PeakRps     float64   `json:"peakRps"`
	BaselineRps float64   `json:"baselineRps"`
	Stats
	Types map[string]int64 `json:"types"`
	Fixes []Fix            `json:"fixes"`
}

// Fix is one way to take queries off CoreDNS, with the share of its
// queries the evidence says it would remove.
type Fix struct {
	Kind     string `json:"kind"` // nodelocaldns, ndots, autopath
	Detail   string `json:"detail"`
	Evidence string `json:"evidence"`
	// RemovesShare is the share of the queries it would take off CoreDNS
	// (null when the metric it is computed from is missing);
	// RemovesQueries that many of the span's queries, and
	// SimulatedPeakRps the peak that would remain.
	RemovesShare     *float64 `json:"removesShare"`
	RemovesQueries   int64    `json:"removesQueries"`
	SimulatedPeakRps float64  `json:"simulatedPeakRps"`
	// UpperBound says the share is at most what the fix removes (and the
	// peak at least what would remain): the evidence bounds it without
	// measuring it.
	UpperBound bool   `json:"upperBound,omitempty"`
	Tradeoff   string `json:"tradeoff"`
}

// UpTo is "up to " for a share that is an upper bound, else "".
func (f Fix) UpTo() string {
	if f.UpperBound {
		return "up to "
	}
	return ""
}

// Run reads the window's CoreDNS series and measures them.
func Run(ctx context.Context, s Store, opt Options) (*Report, error) {
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opt.By == "" {
		opt.By = DefaultBy
	}
	ev, err := load(ctx, s, opt, log)
	if err != nil {
		return nil, err
	}
	rep := &Report{By: opt.By, Labelled: ev.labelled, Missing: ev.missing, CounterResets: ev.resets(),
		Over: []Point{}, Clients: []Client{}, Bursts: []Burst{}, Types: ev.all.types.totals(ev.start, ev.end)}
	rep.Window = Window{ev.start, ev.end}
	step := stepOf(opt.Step, ev.end.Sub(ev.start))
	rep.StepSeconds = step.Seconds()
	rep.Summary = ev.all.stats(ev.start, ev.end)
	peak, peakAt := peakOf(ev.all.seconds)
	rep.PeakRps, rep.PeakAt = float64(peak), peakAt
	for a := ev.start; a.Before(ev.end); a = a.Add(step) {
		rep.Over = append(rep.Over, Point{Time: a, Stats: ev.all.stats(a, minTime(a.Add(step), ev.end))})
	}
	if ev.labelled {
		rep.Clients = clients(ev, rep.Summary.Requests)
	}
	rep.Bursts = bursts(ev)
	rep.Fixes = fixes(ev.all, ev.all, ev.start, ev.end, float64(peak))
	return rep, nil
}

// stepOf is the step asked for, or the span over 60 rounded up to whole
// minutes, at least one.
func stepOf(step, span time.Duration) time.Duration {
	if step > 0 {
		return step
	}
	s := span / 60
	if r := s % time.Minute; r != 0 {
		s += time.Minute - r
	}
	return max(time.Minute, s)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
