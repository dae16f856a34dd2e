package dns

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/faultline/faultline/analyze/burst"
	"github.com/faultline/faultline/analyze/prom"
	"github.com/faultline/faultline/timeline"
)

// evidence is the window's CoreDNS counters, of all queries and by
// client.
type evidence struct {
	start, end time.Time
	// since is when the evidence begins: the window's start, or the first
	// sample when the window starts before it (seconds before it are not
	// quiet, only unseen).
	since    time.Time
	labelled bool
	missing  []string
	all      *group
	groups   map[string]*group // by the By label's value
}

// group is the counters of some queries.
type group struct {
	requests, responses, nxdomain, servfail, hits, misses prom.Counter
	latency                                               prom.Histogram
	types                                                 typed
	seconds                                               []burst.Second // requests a second over the window
}

// typed is a counter by query type.
type typed map[string]*prom.Counter

func (t typed) add(typ string, samples []timeline.Sample) {
	c := t[typ]
	if c == nil {
		c = &prom.Counter{}
		t[typ] = c
	}
	c.Add(samples)
}

// totals is each type's queries in [a, b), types of none left out.
func (t typed) totals(a, b time.Time) map[string]int64 {
	out := map[string]int64{}
	for typ, c := range t {
		if n := int64(c.Over(a, b) + 0.5); n > 0 {
			out[typ] = n
		}
	}
	return out
}

func newGroup() *group { return &group{types: typed{}} }

// load reads the CoreDNS series of the window (from prom.Lookback before it
// to prom.Lookback after it, so that its first and last intervals count) into
// the counters.
func load(ctx context.Context, s Store, opt Options, log *slog.Logger) (*evidence, error) {
	from, to := prom.Around(opt.Since, opt.Until)
	ev := &evidence{all: newGroup(), groups: map[string]*group{}}
	var reqs []prom.Loaded
	for _, m := range Metrics {
		set, err := prom.Load(ctx, s, m, from, to)
		if err != nil {
			return nil, err
		}
		if len(set) == 0 {
			ev.missing = append(ev.missing, m)
			continue
		}
		if m == Requests {
			reqs = set
		}
		for _, l := range set {
			ev.add(l, opt.By, log)
		}
	}
	if len(reqs) == 0 {
		return nil, &prom.NoSeriesError{What: "DNS pressure", Metrics: []string{Requests}, Selector: Selector}
	}
	if ev.all.requests.Empty() {
		return nil, &prom.NoSeriesError{What: "DNS pressure", Metrics: []string{Requests}, Selector: Selector, Single: true}
	}
	first, last := prom.Span(reqs)
	ev.start, ev.end = cmpOr(opt.Since, first), cmpOr(opt.Until, last)
	ev.since = ev.start
	if first.After(ev.since) {
		ev.since = first
	}
	sec0, sec1 := ev.start.Unix(), ev.end.Add(time.Second-1).Unix()
	ev.all.seconds = ev.all.requests.PerSecond(sec0, sec1)
	for _, g := range ev.groups {
		g.seconds = g.requests.PerSecond(sec0, sec1)
	}
	return ev, nil
}

func cmpOr(t, or time.Time) time.Time {
	if t.IsZero() {
		return or
	}
	return t
}

// add counts a series into all queries and into its client's.
func (ev *evidence) add(l prom.Loaded, by string, log *slog.Logger) {
	v := l.Series.Labels.Get(by)
	if v != "" {
		ev.labelled = true
	}
	g := ev.groups[v]
	if g == nil {
		g = newGroup()
		ev.groups[v] = g
	}
	for _, g := range []*group{ev.all, g} {
		if !g.add(l) {
			log.Warn("histogram bucket without a numeric le: passed over", "series", l.Series.String())
			return
		}
	}
}

// add counts a series into g by its metric; false for a histogram bucket
// that has no numeric bound.
func (g *group) add(l prom.Loaded) bool {
	lb := l.Series.Labels
	switch l.Series.Metric {
	case Requests:
		g.requests.Add(l.Samples)
		g.types.add(lb.Get("type"), l.Samples)
	case Responses:
		g.responses.Add(l.Samples)
		switch lb.Get("rcode") {
		case "NXDOMAIN":
			g.nxdomain.Add(l.Samples)
		case "SERVFAIL":
			g.servfail.Add(l.Samples)
		}
	case Latency:
		return g.latency.Add(l.Series, l.Samples)
	case CacheHits:
		g.hits.Add(l.Samples)
	case CacheMisses:
		g.misses.Add(l.Samples)
	}
	return true
}

// resets counts the counter resets of all queries.
func (ev *evidence) resets() int {
	g := ev.all
	n := g.requests.Resets + g.responses.Resets + g.hits.Resets + g.misses.Resets
	return n + g.latency.Resets()
}

// values are the groups' label values, in order.
func (ev *evidence) values() []string {
	return slices.Sorted(maps.Keys(ev.groups))
}
