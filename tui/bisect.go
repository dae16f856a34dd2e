package tui

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/analyze/bisect"
	"github.com/faultline/faultline/timeline"
)

// checkMark refuses a mark that contradicts the others, in faultline
// bisect's words (bisect.Check), with where to review the marks.
func checkMark(marks []timeline.BisectMark, m timeline.BisectMark) error {
	if err := bisect.Check(marks, m); err != nil {
		return fmt.Errorf("%w: faultline bisect log shows the marks", err)
	}
	return nil
}

// markInstant is the instant a mark on bucket b stands for: its end. A
// bucket judged good was still good at its end; one judged bad had the
// incident under way by then.
func markInstant(b timeline.Bucket) time.Time { return b.End }

// bucketOf returns the bucket holding t (Start <= t < End), or -1.
func bucketOf(buckets []timeline.Bucket, t time.Time) int {
	for i, b := range buckets {
		if !t.Before(b.Start) && t.Before(b.End) {
			return i
		}
	}
	return -1
}

// markedBucket returns the bucket a mark was made on (Start < t <= End),
// or -1.
func markedBucket(buckets []timeline.Bucket, t time.Time) int {
	for i, b := range buckets {
		if t.After(b.Start) && !t.After(b.End) {
			return i
		}
	}
	return -1
}
