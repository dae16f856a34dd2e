package timeline

import "time"

// GapFinder finds the gaps of at least Min between spans of records, given
// in order of source, then time: one span per record (lo = hi), or, when
// Min is positive, one per bucket of time Min wide, each bucket's first
// and last record. Records closer than Min share a bucket or lie in
// neighbouring ones, so every gap of at least Min runs from one bucket's
// last time to the next held bucket's first: a store reads two times a
// bucket, not every time. A bucket must be floored, also before 1970,
// where integer division truncates up, to stay Min wide.
type GapFinder struct {
	Min time.Duration

	gaps []Gap
	prev int64
	last SourceKind
	any  bool
}

// Add takes the next span: the first and last record times of a bucket of
// src, in nanoseconds.
func (g *GapFinder) Add(src SourceKind, lo, hi int64) {
	if g.any && src == g.last && lo-g.prev >= int64(g.Min) {
		g.gaps = append(g.gaps, Gap{Source: src, Start: FromUnixNS(g.prev), End: FromUnixNS(lo)})
	}
	g.prev, g.last, g.any = hi, src, true
}

// Gaps is the gaps found, in the order of the spans: by source kind, then
// time.
func (g *GapFinder) Gaps() []Gap { return g.gaps }
