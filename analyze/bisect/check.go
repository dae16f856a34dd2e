package bisect

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/timeline"
)

// ContradictionError refuses a mark that contradicts the others: every
// good instant must be before every bad one. Bound is the instant it
// contradicts, the first bad for a good mark, the last good for a bad one.
type ContradictionError struct {
	Mark  timeline.BisectMark
	Bound time.Time
}

func (e *ContradictionError) Error() string {
	rel := "is after"
	if e.Mark.Kind == timeline.BisectBad {
		rel = "is before"
	}
	if e.Mark.Time.Equal(e.Bound) {
		rel = "is the same instant as"
	}
	if e.Mark.Kind == timeline.BisectGood {
		return fmt.Sprintf("a good instant must be before the bad one: good %s %s bad %s", Instant(e.Mark.Time), rel, Instant(e.Bound))
	}
	return fmt.Sprintf("a bad instant must be after the good one: bad %s %s good %s", Instant(e.Mark.Time), rel, Instant(e.Bound))
}

// Check returns a *ContradictionError if m contradicts marks, else nil.
// Skips never contradict.
func Check(marks []timeline.BisectMark, m timeline.BisectMark) error {
	lastGood, firstBad := Bounds(marks)
	switch {
	case m.Kind == timeline.BisectGood && !firstBad.IsZero() && !m.Time.Before(firstBad):
		return &ContradictionError{Mark: m, Bound: firstBad}
	case m.Kind == timeline.BisectBad && !lastGood.IsZero() && !m.Time.After(lastGood):
		return &ContradictionError{Mark: m, Bound: lastGood}
	}
	return nil
}

// Instant is how a session writes an instant: RFC 3339 in UTC, with as
// many fractional digits as it has.
func Instant(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
