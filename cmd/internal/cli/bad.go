package cli

import (
	"context"
	"iter"
	"slices"
	"time"

	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
)

// classify runs the outcome classifier, the one definition of bad that
// timeline, bisect, the TUI and investigate share, over [since, until).
func classify(ctx context.Context, store outcome.Store, since, until time.Time) (*outcome.Outcomes, error) {
	return outcome.Read(ctx, store, outcome.Options{Since: since, Until: until})
}

// withStates yields the records of q and the object states the classifier
// read (records of source "status", not stored), merged in q's order, each
// marked bad as classified; q.Where and q.Limit apply to both. q.Bad must
// hold the classifier's bad set.
func withStates(ctx context.Context, store timeline.Reader, q timeline.Query, states []outcome.Observation) iter.Seq2[*timeline.Record, error] {
	return func(yield func(*timeline.Record, error) bool) {
		var st []*timeline.Record
		for i := range states {
			r := states[i].Record()
			if (!q.Since.IsZero() && r.Time.Before(q.Since)) || (!q.Until.IsZero() && !r.Time.Before(q.Until)) {
				continue
			}
			if q.Where != nil {
				if ok, _ := q.Where.Match(r); !ok {
					continue
				}
			}
			st = append(st, r)
		}
		if q.Desc {
			slices.Reverse(st)
		}
		// before: whether state s comes before record r in q's order.
		before := func(s, r *timeline.Record) bool {
			if q.Desc {
				return s.Time.After(r.Time)
			}
			return s.Time.Before(r.Time)
		}
		n := 0
		emit := func(r *timeline.Record) bool {
			if !yield(r, nil) {
				return false
			}
			n++
			return q.Limit <= 0 || n < q.Limit
		}
		for r, err := range store.Records(ctx, q) {
			if err != nil {
				yield(nil, err)
				return
			}
			for len(st) > 0 && before(st[0], r) {
				if !emit(st[0]) {
					return
				}
				st = st[1:]
			}
			if !emit(r) {
				return
			}
		}
		for _, s := range st {
			if !emit(s) {
				return
			}
		}
	}
}
