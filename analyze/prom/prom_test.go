package prom

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/faultline/faultline/analyze/burst"
	"github.com/faultline/faultline/analyze/prom/promtest"
	"github.com/faultline/faultline/timeline"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func samples(step float64, vs ...float64) []timeline.Sample {
	out := make([]timeline.Sample, len(vs))
	for i, v := range vs {
		out[i] = timeline.Sample{Time: at(float64(i) * step), Value: v}
	}
	return out
}

func TestIncreases(t *testing.T) {
	ns := func(sec float64) int64 { return at(sec).UnixNano() }
	tests := []struct {
		name   string
		in     []timeline.Sample
		want   []Increase
		resets int
	}{
		{"none", nil, nil, 0},
		{"one sample", samples(15, 7), nil, 0},
		{"steady", samples(15, 10, 20, 20), []Increase{{ns(0), ns(15), 10}, {ns(15), ns(30), 0}}, 0},
		{"a reset counts the new value", samples(15, 100, 200, 50, 80), []Increase{{ns(0), ns(15), 100}, {ns(15), ns(30), 50}, {ns(30), ns(45), 30}}, 1},
		{"NaN passed over", samples(15, 10, math.NaN(), 40), []Increase{{ns(0), ns(30), 30}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, resets := Increases(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			if resets != tt.resets {
				t.Errorf("resets = %d, want %d", resets, tt.resets)
			}
		})
	}
}

func TestCounter(t *testing.T) {
	var c Counter
	c.Add(samples(10, 0, 100, 300)) // 10/s, then 20/s
	c.Add(samples(20, 1000, 5))     // a reset: 5 over [0, 20)
	if c.Resets != 1 {
		t.Errorf("resets = %d, want 1", c.Resets)
	}
	for _, tt := range []struct {
		a, b float64
		want float64
	}{{0, 20, 305}, {5, 15, 50 + 100 + 2.5}, {20, 40, 0}, {-10, 0, 0}} {
		if got := c.Over(at(tt.a), at(tt.b)); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("Over(%g, %g) = %g, want %g", tt.a, tt.b, got, tt.want)
		}
	}
	secs := c.PerSecond(t0.Unix(), t0.Unix()+20)
	var sum int64
	for _, s := range secs {
		sum += s.Count
	}
	if sum != 305 {
		t.Errorf("PerSecond sums to %d, want 305", sum)
	}
	if diff := cmp.Diff(burst.Second{Sec: t0.Unix() + 19, Count: 20}, secs[len(secs)-1]); diff != "" {
		t.Errorf("last second (-want +got)\n%s", diff)
	}
	if (&Counter{}).Empty() != true || c.Empty() {
		t.Error("Empty is wrong")
	}
}

func TestBucketQuantile(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name string
		q    float64
		bs   []Bucket
		want float64
	}{
		{"interpolated in its bucket", 0.5, []Bucket{{0.1, 50}, {0.2, 100}, {inf, 100}}, 0.1},
		{"from zero in the first", 0.25, []Bucket{{0.1, 50}, {0.2, 100}, {inf, 100}}, 0.05},
		{"any order", 0.75, []Bucket{{inf, 100}, {0.2, 100}, {0.1, 50}}, 0.15},
		{"in +Inf: the largest finite bound", 0.99, []Bucket{{0.1, 50}, {0.2, 90}, {inf, 100}}, 0.2},
		{"no +Inf", 0.5, []Bucket{{0.1, 50}, {0.2, 100}}, math.NaN()},
		{"nothing observed", 0.5, []Bucket{{0.1, 0}, {inf, 0}}, math.NaN()},
		{"made monotonic", 0.5, []Bucket{{0.1, 60}, {0.2, 50}, {inf, 100}}, 0.1 * 50 / 60},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, BucketQuantile(tt.q, tt.bs), cmpopts.EquateNaNs(), cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestHistogramQuantile(t *testing.T) {
	var h Histogram
	bucket := func(le string) *timeline.Series {
		return timeline.NewSeries("x_bucket", timeline.NewLabels(map[string]string{"le": le}))
	}
	h.Add(bucket("0.1"), samples(60, 0, 90))
	h.Add(bucket("1"), samples(60, 0, 99))
	h.Add(bucket("+Inf"), samples(60, 0, 100))
	if h.Add(bucket("fast"), samples(60, 0, 1)) {
		t.Error("a bucket with le=fast was added")
	}
	// The 99th of 100 observations is the 9th of 9 in (0.1, 1].
	if got := h.Quantile(0.99, at(0), at(60)); math.Abs(got-1) > 1e-9 {
		t.Errorf("p99 = %g, want 1", got)
	}
	if got := h.Quantile(0.99, at(60), at(120)); !math.IsNaN(got) {
		t.Errorf("p99 after the samples = %g, want NaN", got)
	}
}

func TestLoad(t *testing.T) {
	s := &promtest.Store{}
	a := s.AddSeries("x_total", samples(15, 1, 2, 3), "job", "a")
	s.AddSeries("x_total", samples(15, 5), "job", "b") // only at 0 s
	s.AddSeries("y_total", samples(15, 1, 2), "job", "a")
	got, err := Load(context.Background(), s, "x_total", at(10), at(31))
	if err != nil {
		t.Fatal(err)
	}
	want := []Loaded{{Series: a, Samples: []timeline.Sample{{Series: a.ID, Time: at(15), Value: 2}, {Series: a.ID, Time: at(30), Value: 3}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	first, last := Span(got)
	if first != at(15) || last != at(30) {
		t.Errorf("Span = %v, %v; want 15 s, 30 s", first, last)
	}
	if got, _ := Load(context.Background(), s, "z_total", time.Time{}, time.Time{}); got != nil {
		t.Errorf("Load of no series = %v, want nil", got)
	}
}
