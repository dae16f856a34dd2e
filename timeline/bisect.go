package timeline

import (
	"slices"
	"time"
)

// BisectResolution is how narrow a bisect window gets before the search is
// done: the first bad instant is then known to within it.
const BisectResolution = time.Second

// BisectSearch is the span a bisect session still has to search: after Lo
// (exclusive) up to Hi (inclusive), with the skipped instants inside it.
// Where good or bad is not marked, the bound is the start or end of the
// data. The CLI (faultline bisect) and the TUI suggest the same next
// instant from it.
type BisectSearch struct {
	LastGood, FirstBad time.Time // as marked; zero if not
	Lo, Hi             time.Time
	Skips              []time.Time // sorted, distinct, inside (Lo, Hi)
}

// NewBisectSearch is the search left by marks over data held from first to
// last.
func NewBisectSearch(marks []BisectMark, first, last time.Time) BisectSearch {
	w := BisectSearch{Lo: first.Add(-1), Hi: last}
	w.LastGood, w.FirstBad = BisectWindow(marks)
	if !w.LastGood.IsZero() {
		w.Lo = w.LastGood
	}
	if !w.FirstBad.IsZero() {
		w.Hi = w.FirstBad
	}
	for _, m := range marks {
		if m.Kind == BisectSkip && m.Time.After(w.Lo) && m.Time.Before(w.Hi) {
			w.Skips = append(w.Skips, m.Time)
		}
	}
	slices.SortFunc(w.Skips, func(a, b time.Time) int { return a.Compare(b) })
	w.Skips = slices.Compact(w.Skips)
	return w
}

// Done reports whether the search has reached BisectResolution.
func (w BisectSearch) Done() bool {
	return !w.LastGood.IsZero() && !w.FirstBad.IsZero() && w.Hi.Sub(w.Lo) <= BisectResolution
}

// Steps is roughly how many more halvings take the window to
// BisectResolution.
func (w BisectSearch) Steps() int {
	n := 0
	for d := w.Hi.Sub(w.Lo); d > BisectResolution; d = (d + 1) / 2 {
		n++
	}
	return n
}

// Next suggests the instant to judge next: the window's midpoint, or if a
// skipped instant lies near it, the instant nearest the midpoint (earlier
// first) that keeps clear of every skip by a sixteenth of the window; if
// skips leave no such instant, the middle of the widest span between marks
// and skips. It is rounded to a whole second (or millisecond, microsecond)
// where the window is wide enough for that to change little.
func (w BisectSearch) Next() (time.Time, bool) {
	width := w.Hi.Sub(w.Lo)
	if w.Done() || width < 2 {
		return time.Time{}, false
	}
	mid := w.Lo.Add(width / 2)
	step, clearance := width/32, width/16
	clear := func(p time.Time) bool {
		for _, s := range w.Skips {
			if p.Sub(s).Abs() < clearance {
				return false
			}
		}
		return p.After(w.Lo) && p.Before(w.Hi)
	}
	span := width
	found := false
	for k := 0; k <= 16 && !found && step > 0; k++ {
		for _, p := range []time.Time{mid.Add(-time.Duration(k) * step), mid.Add(time.Duration(k) * step)} {
			if clear(p) {
				mid, found = p, true
				break
			}
		}
	}
	if !found && len(w.Skips) > 0 {
		pts := append(append([]time.Time{w.Lo}, w.Skips...), w.Hi)
		span = 0
		for i := 0; i+1 < len(pts); i++ {
			if d := pts[i+1].Sub(pts[i]); d > span {
				span, mid = d, pts[i].Add(d/2)
			}
		}
		if span < 2 {
			return time.Time{}, false
		}
	}
	for _, unit := range []time.Duration{time.Second, time.Millisecond, time.Microsecond} {
		if span >= 32*unit {
			return mid.Round(unit).UTC(), true
		}
	}
	return mid.UTC(), true
}
