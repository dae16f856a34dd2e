// Package burst finds the seconds where a count jumps an order of
// magnitude over its own recent rate: the apiserver's request bursts
// (analyze/controlplane) and DNS query storms (analyze/dns) are found by
// the same rule.
package burst

import (
	"math"
	"sort"
)

// The rule. A second is a burst's start when its count is at least
// MinRate, at least Ratio times the baseline (the rate over the
// BaselineWindow seconds before it) and significant under it (Poisson,
// p < PValue); the burst runs while the count stays at Ratio times the
// baseline, dips of up to Bridge seconds bridged. A second less than
// MinHistory seconds after the start of the evidence is never a start: at
// the start of the evidence everything "appears".
const (
	Ratio          = 10
	PValue         = 1e-6
	MinRate        = 5   // a second: below this nothing is "hammered"
	BaselineWindow = 300 // seconds
	MinHistory     = 60  // seconds
	Bridge         = 5   // seconds
)

// Second is a count in one second.
type Second struct {
	Sec   int64 // Unix seconds
	Count int64
}

// Span is one burst.
type Span struct {
	Start, End int64 // its first and last second (inclusive)
	Sum        int64 // the counts of its seconds that kept the rate up
	Peak       int64 // its largest second
	PeakAt     int64
	Baseline   float64 // the rate before it, a second
}

// Detect finds the bursts of secs (oldest first, seconds without a count
// may be left out) in evidence that starts at dataStart.
func Detect(secs []Second, dataStart int64) []Span {
	prefix := make([]int64, len(secs)+1)
	for i, x := range secs {
		prefix[i+1] = prefix[i] + x.Count
	}
	var out []Span
	for i := 0; i < len(secs); i++ {
		t, n := secs[i].Sec, secs[i].Count
		if t-dataStart < MinHistory {
			continue // no baseline yet: the start of the evidence is not a jump
		}
		base := baseline(secs, prefix, i, dataStart)
		thr := Ratio * base
		if float64(n) < MinRate || float64(n) < thr || PoissonSF(n, base) >= PValue {
			continue
		}
		sp, j := extend(secs, i, thr)
		sp.Baseline = base
		out = append(out, sp)
		i = j - 1
	}
	return out
}

// extend grows the burst that starts at secs[i] while the rate stays at
// thr, bridging dips of up to Bridge seconds; it returns the burst and
// the index of the first second after it.
func extend(secs []Second, i int, thr float64) (Span, int) {
	t, n := secs[i].Sec, secs[i].Count
	sp := Span{Start: t, End: t, Sum: n, Peak: n, PeakAt: t}
	j := i + 1
	for ; j < len(secs) && secs[j].Sec-sp.End <= Bridge; j++ {
		m := secs[j].Count
		if float64(m) < thr {
			continue
		}
		sp.End, sp.Sum = secs[j].Sec, sp.Sum+m
		if m > sp.Peak {
			sp.Peak, sp.PeakAt = m, secs[j].Sec
		}
	}
	for j < len(secs) && secs[j].Sec <= sp.End {
		j++
	}
	return sp, j
}

// baseline is the rate over the BaselineWindow seconds before secs[i] (or
// the evidence before it, when there is less), with a floor of one count
// per window (nothing seen is not "zero forever").
func baseline(secs []Second, prefix []int64, i int, dataStart int64) float64 {
	t := secs[i].Sec
	window := min(int64(BaselineWindow), t-dataStart)
	k := sort.Search(i, func(k int) bool { return secs[k].Sec >= t-window })
	n := prefix[i] - prefix[k]
	return math.Max(float64(n), 1) / float64(window)
}

// PoissonSF is P(X >= n) for X ~ Poisson(lambda).
func PoissonSF(n int64, lambda float64) float64 {
	if n <= 0 {
		return 1
	}
	// 1 - CDF(n-1), summed term by term.
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
