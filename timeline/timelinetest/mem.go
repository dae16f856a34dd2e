// Package timelinetest holds a timeline in memory for tests of analyses
// judged on a handful of records and versions.
package timelinetest

import (
	"context"
	"iter"
	"slices"
	"time"

	"github.com/faultline/faultline/timeline"
)

// Mem is a timeline in memory. Records honours a query's Since, Until,
// Where, Desc and Limit; Versions its Resource, Namespace and Name (every
// version is history).
type Mem struct {
	Recs []*timeline.Record // kept in time order by Add
	Vers []timeline.ObjectVersion
}

// Add adds records, keeping them in time order.
func (m *Mem) Add(rs ...*timeline.Record) *Mem {
	m.Recs = append(m.Recs, rs...)
	slices.SortStableFunc(m.Recs, func(a, b *timeline.Record) int { return a.Time.Compare(b.Time) })
	return m
}

// Records yields the records matching q.
func (m *Mem) Records(_ context.Context, q timeline.Query) iter.Seq2[*timeline.Record, error] {
	return func(yield func(*timeline.Record, error) bool) {
		rs := slices.Clone(m.Recs)
		if q.Desc {
			slices.Reverse(rs)
		}
		n := 0
		for _, r := range rs {
			if (!q.Since.IsZero() && r.Time.Before(q.Since)) || (!q.Until.IsZero() && !r.Time.Before(q.Until)) {
				continue
			}
			if q.Where != nil {
				if ok, _ := q.Where.Match(r); !ok {
					continue
				}
			}
			if q.Fields != 0 {
				c := *r
				q.Keep(&c)
				r = &c
			}
			if !yield(r, nil) {
				return
			}
			if n++; q.Limit > 0 && n == q.Limit {
				return
			}
		}
	}
}

// Versions returns the versions of q's resource, in the order added.
func (m *Mem) Versions(_ context.Context, q timeline.VersionQuery) ([]timeline.ObjectVersion, error) {
	var out []timeline.ObjectVersion
	for _, v := range m.Vers {
		if (q.Resource == "" || v.Object.Resource == q.Resource) && (q.Namespace == "" || v.Object.Namespace == q.Namespace) &&
			(q.Name == "" || v.Object.Name == q.Name) {
			out = append(out, v)
		}
	}
	return out, nil
}

// Bounds are the first and last record's times.
func (m *Mem) Bounds(context.Context) (time.Time, time.Time, error) {
	if len(m.Recs) == 0 {
		return time.Time{}, time.Time{}, nil
	}
	return m.Recs[0].Time, m.Recs[len(m.Recs)-1].Time, nil
}
