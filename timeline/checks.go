package timeline

import "fmt"

// MaxBuckets bounds a histogram: more columns than any screen holds.
const MaxBuckets = 100_000

// Spans checks q and returns its empty buckets, the first one's start and
// their width in nanoseconds: the last may be narrower, ending at Until.
func (q HistogramQuery) Spans() (out []Bucket, lo, width int64, err error) {
	if err := CheckTime(q.Since); err != nil {
		return nil, 0, 0, fmt.Errorf("histogram: %w", withField(err, "histogram bound"))
	}
	if err := CheckTime(q.Until); err != nil {
		return nil, 0, 0, fmt.Errorf("histogram: %w", withField(err, "histogram bound"))
	}
	lo, hi := q.Since.UnixNano(), q.Until.UnixNano()
	if q.Since.IsZero() || q.Until.IsZero() || hi <= lo || hi-lo < 0 {
		return nil, 0, 0, fmt.Errorf("histogram: want Since before Until, got %s .. %s", q.Since, q.Until)
	}
	if q.Buckets < 1 || q.Buckets > MaxBuckets {
		return nil, 0, 0, fmt.Errorf("histogram: want 1 to %d buckets, got %d", MaxBuckets, q.Buckets)
	}
	n := int64(q.Buckets)
	width = (hi - lo + n - 1) / n
	out = make([]Bucket, q.Buckets)
	for i := range out {
		start, end := lo+int64(i)*width, min(lo+int64(i+1)*width, hi)
		out[i] = Bucket{Start: FromUnixNS(start), End: FromUnixNS(max(start, end))}
	}
	return out, lo, width, nil
}

// withField names the field of a *TimeRangeError.
func withField(err error, field string) error {
	if te, ok := err.(*TimeRangeError); ok {
		te.Field = field
	}
	return err
}

// Check refuses a mark a store cannot hold: an unknown kind, or a time out
// of range.
func (m BisectMark) Check() error {
	switch m.Kind {
	case BisectGood, BisectBad, BisectSkip:
	default:
		return fmt.Errorf("unknown kind %q", m.Kind)
	}
	return withField(CheckTime(m.Time), "bisect mark")
}
