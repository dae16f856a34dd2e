// Package boundary finds the earliest known-bad instant: the change point
// where the rate of bad observations departs from its baseline. It is not
// simply the first bad observation: a lone failure an hour earlier is the
// baseline's noise, not the incident.
//
// The method is a Poisson scan statistic (Kulldorff's, in one dimension):
// among all windows of time, the one whose count of bad observations is
// most unlikely under the rate seen over the whole span, scored by the
// log-likelihood ratio of "a higher rate inside, the baseline outside"
// against "one rate throughout". The window's start is then carried back
// over bad observations that came too soon after one another to be the
// baseline's (each gap shorter than the baseline rate before the window
// would produce with probability Alpha), so a first failure a few seconds
// ahead of the avalanche it caused is the boundary, and noise a minute
// earlier is not.
package boundary

import (
	"math"
	"sort"
	"time"
)

// Alpha is the significance with which an earlier bad observation is
// joined to the incident: the chance that the baseline alone would put a
// bad observation that close.
const Alpha = 0.05

// maxBins bounds the scan's resolution: it costs maxBins² steps.
const maxBins = 2000

// Result is the change point.
type Result struct {
	Found bool
	// First and Last index the bad observations of the incident window.
	First, Last int
	// FirstBad is the time of the first bad observation of the incident.
	FirstBad time.Time
	// End is the time of the last bad observation of the incident window.
	End time.Time
	// BaselineRate and IncidentRate are bad observations per second outside
	// and inside the window.
	BaselineRate, IncidentRate float64
	// Score is the log-likelihood ratio of the window (0 when not found).
	Score float64
}

// Find returns the incident window among bad observation times (sorted;
// an unsorted slice is sorted in a copy, and indexes refer to that order)
// over the span [from, to]. With fewer than two observations the first one
// is the boundary, with a score of zero.
func Find(times []time.Time, from, to time.Time) Result {
	n := len(times)
	if n == 0 {
		return Result{}
	}
	if !sort.SliceIsSorted(times, func(i, j int) bool { return times[i].Before(times[j]) }) {
		times = append([]time.Time(nil), times...)
		sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	}
	if from.IsZero() || times[0].Before(from) {
		from = times[0]
	}
	if to.IsZero() || times[n-1].After(to) {
		to = times[n-1]
	}
	span := to.Sub(from).Seconds()
	if n < 2 || span <= 0 {
		return Result{Found: true, First: 0, Last: n - 1, FirstBad: times[0], End: times[n-1]}
	}

	count, prefix, width := bin(times, from, span)
	best, bi, bj := scan(count, prefix, span, width)
	if bi < 0 {
		return Result{Found: true, First: 0, Last: n - 1, FirstBad: times[0], End: times[n-1]}
	}
	first := prefix[bi]
	last := prefix[bj+1] - 1
	inside := float64(last - first + 1)
	length := math.Max(times[last].Sub(times[first]).Seconds(), width)
	// The baseline is the rate before the window: what came after an
	// incident (its aftermath, a recovery's own failures) says nothing about
	// what was normal before it. One observation is added, so that a quiet
	// stretch is "at most one per stretch", not "never".
	before := times[first].Sub(from).Seconds()
	baseline := (float64(first) + 1) / math.Max(before, width)
	first = carryBack(times, first, baseline)
	return Result{
		Found: true, First: first, Last: last, FirstBad: times[first], End: times[last],
		BaselineRate: baseline, IncidentRate: inside / length, Score: best,
	}
}

// bin counts the observations in bins of equal width over the span from
// from (at most maxBins, four per observation), with the counts' prefix
// sums.
func bin(times []time.Time, from time.Time, span float64) (count, prefix []int, width float64) {
	bins := min(maxBins, max(1, len(times)*4))
	width = span / float64(bins)
	count = make([]int, bins)
	for _, t := range times {
		b := int(t.Sub(from).Seconds() / width)
		count[min(max(b, 0), bins-1)]++
	}
	prefix = make([]int, len(count)+1)
	for i, c := range count {
		prefix[i+1] = prefix[i] + c
	}
	return count, prefix, width
}

// scan returns the window of bins [bi, bj], starting and ending on a bad
// observation, with the highest log-likelihood ratio (best) of a higher
// rate inside it; bi is -1 when no window holds more than the mean.
func scan(count, prefix []int, span, width float64) (best float64, bi, bj int) {
	N := float64(prefix[len(prefix)-1])
	bins := len(count)
	best, bi, bj = 0.0, -1, -1
	for i := 0; i < bins; i++ {
		if count[i] == 0 {
			continue // a window starts on a bad observation
		}
		for j := i; j < bins; j++ {
			if count[j] == 0 {
				continue // and ends on one
			}
			in := float64(prefix[j+1] - prefix[i])
			length := float64(j-i+1) * width
			exp := N * length / span
			if in <= exp {
				continue
			}
			out := N - in
			llr := in * math.Log(in/exp)
			if out > 0 {
				llr += out * math.Log(out/(N-exp))
			}
			// Ties go to the longer, then the earlier window.
			if llr > best+1e-9 || (math.Abs(llr-best) <= 1e-9 && bi >= 0 && j-i > bj-bi) {
				best, bi, bj = llr, i, j
			}
		}
	}
	return best, bi, bj
}

// carryBack carries the window's start back over bad observations too
// close to one another to be the baseline's: each gap shorter than the
// baseline rate would give with probability Alpha.
func carryBack(times []time.Time, first int, baseline float64) int {
	for first > 0 {
		gap := times[first].Sub(times[first-1]).Seconds()
		if 1-math.Exp(-baseline*gap) >= Alpha {
			break
		}
		first--
	}
	return first
}
