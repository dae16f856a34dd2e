package timeline

import (
	"fmt"
	"math"
	"time"
)

// Span is the times [Since, Until); a zero end is unbounded.
type Span struct {
	Since, Until time.Time
}

// Contains reports whether t lies in the span.
func (sp Span) Contains(t time.Time) bool {
	return (sp.Since.IsZero() || !t.Before(sp.Since)) && (sp.Until.IsZero() || t.Before(sp.Until))
}

// Unbounded reports whether the span holds every time.
func (sp Span) Unbounded() bool { return sp.Since.IsZero() && sp.Until.IsZero() }

// String names the span as messages say it: "in [since, until)", "from
// since", "before until", or "" when it is unbounded.
func (sp Span) String() string {
	const layout = time.RFC3339Nano
	switch {
	case sp.Unbounded():
		return ""
	case sp.Until.IsZero():
		return "from " + sp.Since.UTC().Format(layout)
	case sp.Since.IsZero():
		return "before " + sp.Until.UTC().Format(layout)
	}
	return "in [" + sp.Since.UTC().Format(layout) + ", " + sp.Until.UTC().Format(layout) + ")"
}

// NS is the span's bounds in nanoseconds (BoundNS), an unbounded end as
// the extreme: math.MinInt64 takes in the records with no time.
func (sp Span) NS() (lo, hi int64) {
	lo, hi = math.MinInt64, math.MaxInt64
	if !sp.Since.IsZero() {
		lo = BoundNS(sp.Since)
	}
	if !sp.Until.IsZero() {
		hi = BoundNS(sp.Until)
	}
	return lo, hi
}

// MaxSpans is how many spans a PresenceQuery may ask about: a row's
// presence is one bit a span.
const MaxSpans = 8

// PresenceQuery asks which series of Metric ("": all) have a sample in
// each of Spans: what a count of the series present at a few instants
// needs, without their samples.
type PresenceQuery struct {
	Metric string
	Spans  []Span
}

// Check says whether q can be answered.
func (q *PresenceQuery) Check() error {
	if len(q.Spans) == 0 || len(q.Spans) > MaxSpans {
		return fmt.Errorf("presence query: %d spans: want 1 to %d", len(q.Spans), MaxSpans)
	}
	return nil
}

// SeriesTable is the answer to a PresenceQuery: the series with a sample
// in at least one of its spans, in no particular order, their metric and
// labels as ids into one table of strings, so that a count by label
// compares and hashes integers, not strings. Its rows hold no pointers:
// a table of millions of series costs the collector nothing to scan.
type SeriesTable struct {
	// Strings are the metrics, label names and values by id; id 0 is no
	// string. It may hold strings no row uses.
	Strings []string
	Rows    []SeriesRow
	// Pairs are the rows' labels, one row after the other: name id, then
	// value id, in the order of Labels (by name).
	Pairs []uint32
}

// SeriesRow is one series of a SeriesTable.
type SeriesRow struct {
	ID     int64
	Metric uint32
	// In has bit i set when the series has a sample in the query's
	// Spans[i].
	In uint8
	// Start and End bound the row's labels in the table's Pairs.
	Start, End uint32
}

// Labels are the label pairs of row r: name id, value id, ...
func (t *SeriesTable) Labels(r *SeriesRow) []uint32 { return t.Pairs[r.Start:r.End:r.End] }

// Series is row i as a Series.
func (t *SeriesTable) Series(i int) *Series {
	r := &t.Rows[i]
	s := &Series{ID: r.ID, Metric: t.Strings[r.Metric]}
	pairs := t.Labels(r)
	for j := 0; j+1 < len(pairs); j += 2 {
		s.Labels = append(s.Labels, Label{Name: t.Strings[pairs[j]], Value: t.Strings[pairs[j+1]]})
	}
	return s
}

// SeriesTableBuilder makes a SeriesTable of Series, interning their
// strings: for a store that reads strings, and for a table made of
// SeriesReader answers.
type SeriesTableBuilder struct {
	t    SeriesTable
	ids  map[string]uint32
	rows map[int64]int // row index by series ID
}

// Add adds s as present in the spans of the bits of in (OR-ed into
// those of a series added before).
func (b *SeriesTableBuilder) Add(s *Series, in uint8) {
	if b.ids == nil {
		b.ids, b.rows, b.t.Strings = map[string]uint32{}, map[int64]int{}, []string{""}
	}
	if i, ok := b.rows[s.ID]; ok {
		b.t.Rows[i].In |= in
		return
	}
	r := SeriesRow{ID: s.ID, Metric: b.intern(s.Metric), In: in, Start: uint32(len(b.t.Pairs))}
	for _, l := range s.Labels {
		b.t.Pairs = append(b.t.Pairs, b.intern(l.Name), b.intern(l.Value))
	}
	r.End = uint32(len(b.t.Pairs))
	b.rows[s.ID] = len(b.t.Rows)
	b.t.Rows = append(b.t.Rows, r)
}

func (b *SeriesTableBuilder) intern(s string) uint32 {
	id, ok := b.ids[s]
	if !ok {
		id = uint32(len(b.t.Strings))
		b.ids[s] = id
		b.t.Strings = append(b.t.Strings, s)
	}
	return id
}

// Table returns the table built.
func (b *SeriesTableBuilder) Table() *SeriesTable {
	if b.t.Strings == nil {
		b.t.Strings = []string{""}
	}
	return &b.t
}
