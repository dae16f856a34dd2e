package prom

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/faultline/faultline/timeline"
)

// Histogram is the sum of a histogram's _bucket series by their upper
// bound (le), as sum by (le) (rate(x_bucket[...])) is.
type Histogram struct {
	byLE map[float64]*Counter
}

// Add adds a _bucket series: its le label and its samples. A series
// whose le is not a number is passed over, and Add says so.
func (h *Histogram) Add(s *timeline.Series, samples []timeline.Sample) bool {
	le, err := strconv.ParseFloat(s.Labels.Get("le"), 64)
	if err != nil || math.IsNaN(le) {
		return false
	}
	if h.byLE == nil {
		h.byLE = map[float64]*Counter{}
	}
	c := h.byLE[le]
	if c == nil {
		c = &Counter{}
		h.byLE[le] = c
	}
	c.Add(samples)
	return true
}

// Empty says whether the histogram has no bucket.
func (h *Histogram) Empty() bool { return h == nil || len(h.byLE) == 0 }

// Quantile is the q-quantile of what the histogram observed in [a, b), or
// NaN when it observed nothing there or has no +Inf bucket.
func (h *Histogram) Quantile(q float64, a, b time.Time) float64 {
	if h.Empty() {
		return math.NaN()
	}
	bs := make([]Bucket, 0, len(h.byLE))
	for le, c := range h.byLE {
		bs = append(bs, Bucket{UpperBound: le, Count: c.Over(a, b)})
	}
	return BucketQuantile(q, bs)
}

// Bucket is a cumulative histogram bucket.
type Bucket struct {
	UpperBound float64
	Count      float64
}

// BucketQuantile is Prometheus's histogram_quantile over cumulative
// buckets (in any order): the bucket the q-th observation falls in,
// interpolated linearly within it (from 0 for the first bucket); in the
// +Inf bucket, the largest finite bound. NaN without a +Inf bucket, with
// fewer than two buckets, or with no observation. Counts that fall from
// one bucket to the next (increases taken at other instants) are made
// monotonic first, as Prometheus does.
func BucketQuantile(q float64, bs []Bucket) float64 {
	if math.IsNaN(q) || q < 0 || q > 1 {
		return math.NaN()
	}
	bs = slices.Clone(bs)
	slices.SortFunc(bs, func(x, y Bucket) int {
		switch {
		case x.UpperBound < y.UpperBound:
			return -1
		case x.UpperBound > y.UpperBound:
			return 1
		}
		return 0
	})
	if len(bs) < 2 || !math.IsInf(bs[len(bs)-1].UpperBound, 1) {
		return math.NaN()
	}
	for i := 1; i < len(bs); i++ {
		bs[i].Count = math.Max(bs[i].Count, bs[i-1].Count)
	}
	total := bs[len(bs)-1].Count
	if total <= 0 {
		return math.NaN()
	}
	rank := q * total
	i, _ := slices.BinarySearchFunc(bs, rank, func(b Bucket, r float64) int {
		if b.Count < r {
			return -1
		}
		return 1
	})
	switch {
	case i >= len(bs)-1:
		return bs[len(bs)-2].UpperBound
	case i == 0 && bs[0].UpperBound <= 0:
		return bs[0].UpperBound
	}
	start, end, count := 0.0, bs[i].UpperBound, bs[i].Count
	if i > 0 {
		start, count, rank = bs[i-1].UpperBound, count-bs[i-1].Count, rank-bs[i-1].Count
	}
	if count <= 0 {
		return end
	}
	return start + (end-start)*(rank/count)
}

// Resets counts the resets seen in the histogram's buckets.
func (h *Histogram) Resets() int {
	if h == nil {
		return 0
	}
	n := 0
	for _, c := range h.byLE {
		n += c.Resets
	}
	return n
}
