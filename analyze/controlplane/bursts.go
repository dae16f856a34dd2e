package controlplane

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// baselineWindow is how far back a second's baseline rate is taken from.
const baselineWindow = 300 // seconds

// bursts finds, per class, the seconds whose count jumps an order of
// magnitude over the class's own rate in the five minutes before, and is
// significant under it (Poisson, p < 1e-6); a burst runs while the rate
// stays that high (gaps of up to five seconds bridged). Bursts are ranked
// by the load they put on the apiserver and etcd (see load).
func bursts(classes []*Class, starts []podStart, jitter time.Duration, dataStart int64) []Burst {
	out := []Burst{}
	for _, c := range classes {
		secs := make([]int64, len(c.series))
		for i, x := range c.series {
			secs[i] = x.Sec
		}
		prefix := c.prefix
		for i := 0; i < len(secs); i++ {
			t := secs[i]
			n := c.series[i].Count
			if t-dataStart < minHistory {
				continue // no baseline yet: the start of the evidence is not a jump
			}
			base := baseline(secs, prefix, i, dataStart)
			thr := burstRatio * base
			if float64(n) < burstMinRate || float64(n) < thr || poissonSF(n, base) >= burstPValue {
				continue
			}
			// Extend while the rate stays an order of magnitude up, bridging
			// dips of up to five seconds.
			end, sum, peak, peakAt := t, n, n, t
			j := i + 1
			for ; j < len(secs) && secs[j]-end <= 5; j++ {
				m := c.series[j].Count
				if float64(m) < thr {
					continue
				}
				end, sum = secs[j], sum+m
				if m > peak {
					peak, peakAt = m, secs[j]
				}
			}
			for j < len(secs) && secs[j] <= end {
				j++
			}
			b := Burst{Start: time.Unix(t, 0).UTC(), End: time.Unix(end+1, 0).UTC(), PeakRps: float64(peak),
				BaselineRps: base, Requests: sum, Class: *c}
			b.Class.PeakRps, b.Class.PeakAt = float64(peak), time.Unix(peakAt, 0).UTC()
			b.Clients = clientsIn(c, t, end)
			b.Amplification, b.AmplifiedBy = amplification(sum, b.Clients, starts, t, end)
			b.Fixes = fixes(c, classes, t, end, jitter, starts)
			b.Load = load(c, sum)
			b.FanOut = fanOut(&b)
			out = append(out, b)
			i = j - 1
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

// minHistory is how much evidence must precede a second before it can be
// judged a jump: at the start of the evidence every class "appears".
const minHistory = 60 // seconds

// baseline is the class's rate over the five minutes before secs[i] (or
// the evidence before it, when there is less), with a floor of one request
// per window (nothing seen is not "zero forever").
func baseline(secs, prefix []int64, i int, dataStart int64) float64 {
	t := secs[i]
	window := min(int64(baselineWindow), t-dataStart)
	k := sort.Search(i, func(k int) bool { return secs[k] >= t-window })
	n := prefix[i] - prefix[k]
	return math.Max(float64(n), 1) / float64(window)
}

// poissonSF is P(X >= n) for X ~ Poisson(lambda).
func poissonSF(n int64, lambda float64) float64 {
	if n <= 0 {
		return 1
	}
	// 1 - CDF(n-1), summed in log space for stability.
	term := math.Exp(-lambda)
	cdf := term
	for k := int64(1); k < n; k++ {
		term *= lambda / float64(k)
		cdf += term
		if term < 1e-300 {
			break
		}
	}
	return math.Max(0, 1-cdf)
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
