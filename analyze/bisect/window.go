package bisect

import (
	"slices"
	"time"

	"github.com/faultline/faultline/timeline"
)

// Resolution is how narrow a window gets before the search is done: the
// first bad instant is then known to within it.
const Resolution = time.Second

// Window is the span a session still has to search: after Lo (exclusive)
// up to Hi (inclusive), with the skipped instants inside it. Where good or
// bad is not marked, the bound is the start or end of the data.
type Window struct {
	LastGood, FirstBad time.Time // as marked; zero if not
	Lo, Hi             time.Time
	Skips              []time.Time // sorted, distinct, inside (Lo, Hi)
}

// NewWindow is the window marks leave over data held from first to last.
func NewWindow(marks []timeline.BisectMark, first, last time.Time) Window {
	w := Window{Lo: first.Add(-1), Hi: last}
	w.LastGood, w.FirstBad = Bounds(marks)
	if !w.LastGood.IsZero() {
		w.Lo = w.LastGood
	}
	if !w.FirstBad.IsZero() {
		w.Hi = w.FirstBad
	}
	for _, m := range marks {
		if m.Kind == timeline.BisectSkip && m.Time.After(w.Lo) && m.Time.Before(w.Hi) {
			w.Skips = append(w.Skips, m.Time)
		}
	}
	slices.SortFunc(w.Skips, func(a, b time.Time) int { return a.Compare(b) })
	w.Skips = slices.Compact(w.Skips)
	return w
}

// Bounds returns the last good and the first bad instant among marks, zero
// where none is: the span a bisect has narrowed to.
func Bounds(marks []timeline.BisectMark) (lastGood, firstBad time.Time) {
	for _, m := range marks {
		switch m.Kind {
		case timeline.BisectGood:
			if lastGood.IsZero() || m.Time.After(lastGood) {
				lastGood = m.Time
			}
		case timeline.BisectBad:
			if firstBad.IsZero() || m.Time.Before(firstBad) {
				firstBad = m.Time
			}
		}
	}
	return lastGood, firstBad
}

// Span is the window as a half-open query span: (Lo, Hi] as [since, until).
func (w Window) Span() (since, until time.Time) { return w.Lo.Add(1), w.Hi.Add(1) }

// Done reports whether the search has reached Resolution.
func (w Window) Done() bool {
	return !w.LastGood.IsZero() && !w.FirstBad.IsZero() && w.Hi.Sub(w.Lo) <= Resolution
}

// Steps is roughly how many more halvings take the window to Resolution.
func (w Window) Steps() int {
	n := 0
	for d := w.Hi.Sub(w.Lo); d > Resolution; d = (d + 1) / 2 {
		n++
	}
	return n
}

// Suggest is the instant to judge next as a session suggests it: Next,
// once a bad instant is marked (before that, the user is asked for one).
func (w Window) Suggest() (time.Time, bool) {
	if w.FirstBad.IsZero() {
		return time.Time{}, false
	}
	return w.Next()
}

// Next is the instant to judge next: the window's midpoint, or if a
// skipped instant lies near it, the instant nearest the midpoint (earlier
// first) that keeps clear of every skip by a sixteenth of the window; if
// skips leave no such instant, the middle of the widest span between marks
// and skips. It is rounded to a whole second (or millisecond, microsecond)
// where the window is wide enough for that to change little.
func (w Window) Next() (time.Time, bool) {
	width := w.Hi.Sub(w.Lo)
	if w.Done() || width < 2 {
		return time.Time{}, false
	}
	mid, found := w.clearOfSkips(w.Lo.Add(width/2), width/32, width/16)
	span := width
	if !found && len(w.Skips) > 0 {
		if span, mid = w.widestGap(); span < 2 {
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

// clearOfSkips returns the instant nearest mid, in steps of step (earlier
// first), at least clearance from every skip and inside the window; mid
// unchanged and false if none is within 16 steps.
func (w Window) clearOfSkips(mid time.Time, step, clearance time.Duration) (time.Time, bool) {
	clear := func(p time.Time) bool {
		for _, s := range w.Skips {
			if p.Sub(s).Abs() < clearance {
				return false
			}
		}
		return p.After(w.Lo) && p.Before(w.Hi)
	}
	for k := 0; k <= 16 && step > 0; k++ {
		for _, p := range []time.Time{mid.Add(-time.Duration(k) * step), mid.Add(time.Duration(k) * step)} {
			if clear(p) {
				return p, true
			}
		}
	}
	return mid, false
}

// widestGap returns the widest span between the window's bounds and skips,
// and its middle.
func (w Window) widestGap() (span time.Duration, mid time.Time) {
	pts := append(append([]time.Time{w.Lo}, w.Skips...), w.Hi)
	for i := 0; i+1 < len(pts); i++ {
		if d := pts[i+1].Sub(pts[i]); d > span {
			span, mid = d, pts[i].Add(d/2)
		}
	}
	return span, mid
}
