package controlplane

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/burst"
)

// bursts finds, per class, the seconds whose count jumps an order of
// magnitude over the class's own rate in the five minutes before, and is
// significant under it (analyze/burst: the rule DNS storms are found by
// too). Bursts are ranked by the load they put on the apiserver and etcd
// (see load).
func bursts(classes []*Class, starts []podStart, jitter time.Duration, dataStart int64) []Burst {
	out := []Burst{}
	for _, c := range classes {
		for _, sp := range burst.Detect(c.series, dataStart) {
			t, end := sp.Start, sp.End
			b := Burst{Start: time.Unix(t, 0).UTC(), End: time.Unix(end+1, 0).UTC(), PeakRps: float64(sp.Peak),
				BaselineRps: sp.Baseline, Requests: sp.Sum, Class: *c}
			b.Class.PeakRps, b.Class.PeakAt = float64(sp.Peak), time.Unix(sp.PeakAt, 0).UTC()
			b.Clients = clientsIn(c, t, end)
			b.Amplification, b.AmplifiedBy = amplification(sp.Sum, b.Clients, starts, t, end)
			b.Fixes = fixes(c, classes, t, end, jitter, starts)
			b.Load = load(c, sp.Sum)
			b.FanOut = fanOut(&b)
			out = append(out, b)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return heavier(&out[i], &out[j]) })
	return out
}

// heavier orders bursts by load, then by apiserver time, then by start.
func heavier(a, b *Burst) bool {
	switch {
	case a.Load.Score != b.Load.Score:
		return a.Load.Score > b.Load.Score
	case a.Load.ApiserverSeconds != b.Load.ApiserverSeconds:
		return a.Load.ApiserverSeconds > b.Load.ApiserverSeconds
	}
	return a.Start.Before(b.Start)
}

func clientsIn(c *Class, from, to int64) int {
	n := 0
	for _, span := range c.users {
		if span[1]+60 > from && span[0] <= to {
			n++
		}
	}
	return n
}

func amplification(requests int64, clients int, starts []podStart, from, to int64) (float64, string) {
	pods := 0
	for _, s := range starts {
		if t := s.created.Unix(); t >= from-120 && t <= to {
			pods++
		}
	}
	switch {
	case pods > 0:
		return float64(requests) / float64(pods), "pod"
	case clients > 0:
		return float64(requests) / float64(clients), "client"
	}
	return 0, ""
}

// fanOut draws the burst's way from its clients to etcd; the LISTs that
// reach etcd are the burst's own (Load.EtcdReads), not its class's.
func fanOut(b *Burst) string {
	c := &b.Class
	etcd := ""
	if b.Load.EtcdReads > 0 {
		etcd = fmt.Sprintf(" -> etcd (%d LISTs not served from the watch cache)", b.Load.EtcdReads)
	}
	return fmt.Sprintf("%d clients (%s, %s) -> apiserver %s %s/%s at %.0f/s peak (baseline %.2f/s)%s",
		b.Clients, dash(c.Client), c.User, strings.ToUpper(c.Verb), c.Scope, resourceName(c), b.PeakRps, b.BaselineRps, etcd)
}

func resourceName(c *Class) string {
	if c.Subresource != "" {
		return c.Resource + "/" + c.Subresource
	}
	return c.Resource
}
