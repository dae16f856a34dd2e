package alerts

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/faultline/faultline/analyze/dns"
	"github.com/faultline/faultline/analyze/network"
	"github.com/faultline/faultline/analyze/prom"
	"github.com/faultline/faultline/timeline"
)

// versionReader is the store role node versions are read through.
type versionReader interface {
	Versions(ctx context.Context, q timeline.VersionQuery) ([]timeline.ObjectVersion, error)
}

// SeriesStore is the store role metric signals are read through: the
// series (faultline ingest metrics), and the nodes' versions that name a
// series' node and its pool.
type SeriesStore interface {
	prom.Reader
	versionReader
}

// conntrackDrop counts the packets conntrack dropped (node_exporter).
const conntrackDrop = "node_nf_conntrack_stat_drop"

// SuggestMetrics are the metrics the DNS and network candidates read.
var SuggestMetrics = []string{dns.Requests, dns.Responses, dns.Latency,
	network.ConntrackEntries, network.ConntrackLimit, conntrackDrop, network.RetransSegs, network.OutSegs, network.CarrierChanges}

// NotReadError is a metric signal whose metric was not read from the
// timeline (Evidence.ReadSeries reads it).
type NotReadError struct {
	Alert, Metric string
}

func (e *NotReadError) Error() string {
	return fmt.Sprintf("%s: metric %s was not read from the timeline", e.Alert, e.Metric)
}

// ReadSeries reads the stored series of the metrics (SuggestMetrics when
// none are named) over the evidence's span and prom.Lookback around it,
// the nodes that name a series' node and pool, and, once CoreDNS's
// requests are read, the DNS pressure over the span (its bursts and
// fixes). A metric read already is not read again; one with no series is
// read as none.
func (ev *Evidence) ReadSeries(ctx context.Context, s SeriesStore, metrics ...string) error {
	if len(metrics) == 0 {
		metrics = SuggestMetrics
	}
	if ev.pools == nil {
		if err := ev.readPools(ctx, s); err != nil {
			return err
		}
	}
	if ev.nodes == nil {
		nodes, err := network.ReadNodes(ctx, s, time.Time{})
		if err != nil {
			return err
		}
		ev.nodes = nodes
	}
	if ev.series == nil {
		ev.series = map[string][]prom.Loaded{}
	}
	from, to := prom.Around(ev.Start, ev.End)
	for _, m := range metrics {
		if _, ok := ev.series[m]; ok {
			continue
		}
		set, err := prom.Load(ctx, s, m, from, to)
		if err != nil {
			return err
		}
		ev.series[m] = set
	}
	if ev.DNS != nil || len(ev.series[dns.Requests]) == 0 {
		return nil
	}
	rep, err := dns.Run(ctx, s, dns.Options{Since: ev.Start, Until: ev.End})
	var none *prom.NoSeriesError
	switch {
	case errors.As(err, &none): // one sample a series: no rate, no fixes
	case err != nil:
		return fmt.Errorf("DNS pressure: %w", err)
	default:
		ev.DNS = rep
	}
	return nil
}

// has says whether the metric has series in the evidence.
func (ev *Evidence) has(metric string) bool { return len(ev.series[metric]) > 0 }

// evaluateMetric computes a metric signal at every evaluation time, as
// its PromQL would over the stored series.
func (ev *Evidence) evaluateMetric(d *Definition, step time.Duration) ([]Point, error) {
	sig := &d.Signal
	num, err := ev.selected(d.Name, sig.Series, d.Slice)
	if err != nil {
		return nil, err
	}
	var den []prom.Loaded
	if sig.Per != nil {
		if den, err = ev.selected(d.Name, sig.Per, d.Slice); err != nil {
			return nil, err
		}
	}
	grid, err := ev.Grid(step)
	if err != nil {
		return nil, err
	}
	at := metricValue(sig, num, den)
	out := make([]Point, len(grid))
	for i, t := range grid {
		out[i].T = t
		out[i].V, out[i].OK = at(t)
	}
	return out, nil
}

// selected are the series of sel in the slice: pool and node by the
// series' node (network.Nodes), any other key by the label of its name.
func (ev *Evidence) selected(alert string, sel *Selector, slice map[string]string) ([]prom.Loaded, error) {
	set, ok := ev.series[sel.Metric]
	if !ok {
		return nil, &NotReadError{Alert: alert, Metric: sel.Metric}
	}
	var out []prom.Loaded
	for _, l := range set {
		if ev.seriesIn(l.Series.Labels, sel.Match, slice) {
			out = append(out, l)
		}
	}
	return out, nil
}

func (ev *Evidence) seriesIn(ls timeline.Labels, match, slice map[string]string) bool {
	for k, v := range match {
		if ls.Get(k) != v {
			return false
		}
	}
	for k, v := range slice {
		ok := true
		switch k {
		case "pool":
			node, _ := ev.nodes.NodeOf(ls)
			ok = node != "" && ev.pools[node] == v
		case "node":
			node, _ := ev.nodes.NodeOf(ls)
			ok = node == v
		default:
			ok = ls.Get(k) == v
		}
		if !ok {
			return false
		}
	}
	return true
}

// metricValue is the signal's value at t over the window (t - window, t]:
// none where the window is not within the series' samples (a ratio's:
// its denominator's), where PromQL has no rate, nor where a ratio has
// nothing to divide by.
func metricValue(sig *Signal, num, den []prom.Loaded) func(time.Time) (float64, bool) {
	w := sig.Window.D()
	spanOf := num
	if sig.Kind == KindMetricRatio {
		spanOf = den // a numerator of no series counts none (PromQL: or vector(0))
	}
	first, last := prom.Span(spanOf)
	covered := func(t time.Time) bool {
		return !first.IsZero() && !t.Add(-w).Before(first) && !t.After(last)
	}
	switch sig.Kind {
	case KindMetricRate:
		c := counterOf(num)
		return func(t time.Time) (float64, bool) {
			return c.Over(t.Add(-w), t) / w.Seconds(), covered(t)
		}
	case KindMetricRatio:
		n, d := counterOf(num), counterOf(den)
		return func(t time.Time) (float64, bool) {
			of := d.Over(t.Add(-w), t)
			return n.Over(t.Add(-w), t) / of, covered(t) && of > 0
		}
	case KindMetricQuantile:
		var h prom.Histogram
		for _, l := range num {
			h.Add(l.Series, l.Samples)
		}
		return func(t time.Time) (float64, bool) {
			q := h.Quantile(sig.Quantile, t.Add(-w), t)
			return q, covered(t) && !math.IsNaN(q)
		}
	}
	return usageOf(num, den)
}

func counterOf(set []prom.Loaded) *prom.Counter {
	c := &prom.Counter{}
	for _, l := range set {
		c.Add(l.Samples)
	}
	return c
}

// usageOf is max(num / den): each gauge over the one of the same labels,
// at its last sample within prom.Lookback, the fullest.
func usageOf(num, den []prom.Loaded) func(time.Time) (float64, bool) {
	limits := map[int64][]timeline.Sample{}
	for _, l := range den {
		limits[timeline.SeriesID("", l.Series.Labels)] = l.Samples
	}
	return func(t time.Time) (float64, bool) {
		best, ok := 0.0, false
		for _, l := range num {
			v, okV := latest(l.Samples, t)
			limit, okL := latest(limits[timeline.SeriesID("", l.Series.Labels)], t)
			if !okV || !okL || limit <= 0 {
				continue
			}
			if u := v / limit; !ok || u > best {
				best, ok = u, true
			}
		}
		return best, ok
	}
}

// latest is the value of the last sample at or before t, if within
// prom.Lookback of it (samples oldest first).
func latest(samples []timeline.Sample, t time.Time) (float64, bool) {
	i := sort.Search(len(samples), func(i int) bool { return samples[i].Time.After(t) })
	if i == 0 || t.Sub(samples[i-1].Time) > prom.Lookback || math.IsNaN(samples[i-1].Value) {
		return 0, false
	}
	return samples[i-1].Value, true
}
