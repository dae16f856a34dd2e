package dns

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/faultline/faultline/analyze/burst"
	"github.com/faultline/faultline/analyze/prom"
)

// stats measures g over [a, b).
func (g *group) stats(a, b time.Time) Stats {
	n := g.requests.Over(a, b)
	st := Stats{Requests: int64(math.Round(n))}
	if secs := b.Sub(a).Seconds(); secs > 0 {
		st.Rps = prom.Round(n/secs, 2)
	}
	if !g.latency.Empty() {
		if p := g.latency.Quantile(0.99, a, b); !math.IsNaN(p) {
			ms := prom.Round(p*1000, 2)
			st.P99Ms = &ms
		}
	}
	if !g.responses.Empty() {
		all := g.responses.Over(a, b)
		st.ServfailShare = prom.Share(g.servfail.Over(a, b), all)
		st.NxdomainShare = prom.Share(g.nxdomain.Over(a, b), all)
	}
	if !g.hits.Empty() || !g.misses.Empty() {
		hits := g.hits.Over(a, b)
		st.CacheHitRatio = prom.Share(hits, hits+g.misses.Over(a, b))
	}
	return st
}

// peakOf is the busiest second: its count and time (the first of equals).
func peakOf(secs []burst.Second) (int64, time.Time) {
	var best burst.Second
	for _, s := range secs {
		if s.Count > best.Count {
			best = s
		}
	}
	if best.Count == 0 {
		return 0, time.Time{}
	}
	return best.Count, time.Unix(best.Sec, 0).UTC()
}

// clients measures each client of queries in the window, the most first.
func clients(ev *evidence, total int64) []Client {
	out := []Client{}
	for _, v := range ev.values() {
		g := ev.groups[v]
		st := g.stats(ev.start, ev.end)
		if st.Requests == 0 {
			continue // a client of cache metrics only, say
		}
		c := Client{Value: v, Stats: st}
		if total > 0 {
			c.Share = prom.Round(float64(st.Requests)/float64(total), 4)
		}
		peak, at := peakOf(g.seconds)
		c.PeakRps, c.PeakAt = float64(peak), at
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b Client) int {
		return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.Value, b.Value))
	})
	return out
}

// bursts finds each client's bursts (all queries' when none is labelled),
// the most queries first.
func bursts(ev *evidence) []Burst {
	out := []Burst{}
	for _, v := range ev.values() {
		g := ev.groups[v]
		for _, sp := range burst.Detect(g.seconds, ev.since.Unix()) {
			a, b := time.Unix(sp.Start, 0).UTC(), time.Unix(sp.End+1, 0).UTC()
			out = append(out, Burst{Start: a, End: b, Client: v, PeakRps: float64(sp.Peak),
				BaselineRps: prom.Round(sp.Baseline, 2), Stats: g.stats(a, b), Types: g.types.totals(a, b),
				Fixes: fixes(g, ev.all, a, b, float64(sp.Peak))})
		}
	}
	slices.SortStableFunc(out, func(x, y Burst) int {
		return cmp.Or(cmp.Compare(y.Requests, x.Requests), x.Start.Compare(y.Start), cmp.Compare(x.Client, y.Client))
	})
	return out
}
