package prom

import (
	"math"
	"sort"
	"time"

	"github.com/faultline/faultline/analyze/burst"
	"github.com/faultline/faultline/timeline"
)

// Increase is what a counter gained between two samples: over (From, To].
type Increase struct {
	From, To int64 // Unix nanoseconds
	Value    float64
}

// Increases turns a counter's samples (oldest first) into its increases
// between consecutive samples. A value below the one before is a reset
// (the process restarted): the counter counted from zero, so the new
// value is the increase, as Prometheus's rate() takes it. NaN and
// infinite samples are passed over. It also returns how many resets it
// saw.
func Increases(samples []timeline.Sample) (incs []Increase, resets int) {
	prev, have := 0.0, false
	var prevAt int64
	for _, s := range samples {
		if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
			continue
		}
		at := s.Time.UnixNano()
		if have && at > prevAt {
			d := s.Value - prev
			if d < 0 {
				d, resets = s.Value, resets+1
			}
			incs = append(incs, Increase{From: prevAt, To: at, Value: d})
		}
		prev, prevAt, have = s.Value, at, true
	}
	return incs, resets
}

// Counter is the sum of some counter series: each series' increases,
// spread evenly over the time between its samples.
type Counter struct {
	runs   [][]Increase
	Resets int // resets seen in its series
}

// Add adds a series' samples.
func (c *Counter) Add(samples []timeline.Sample) {
	incs, resets := Increases(samples)
	c.Resets += resets
	if len(incs) > 0 {
		c.runs = append(c.runs, incs)
	}
}

// Empty says whether the counter has no increase at all (no series, or
// series of one sample).
func (c *Counter) Empty() bool { return c == nil || len(c.runs) == 0 }

// Over is what the counter gained in [a, b): each increase counts by the
// share of its interval that lies in the span.
func (c *Counter) Over(a, b time.Time) float64 {
	if c == nil {
		return 0
	}
	lo, hi := a.UnixNano(), b.UnixNano()
	sum := 0.0
	for _, run := range c.runs {
		i := sort.Search(len(run), func(i int) bool { return run[i].To > lo })
		for ; i < len(run) && run[i].From < hi; i++ {
			in := min(run[i].To, hi) - max(run[i].From, lo)
			if in > 0 {
				sum += run[i].Value * float64(in) / float64(run[i].To-run[i].From)
			}
		}
	}
	return sum
}

// PerSecond is the counter's gain in each second of [from, to) (Unix
// seconds), rounded to whole counts so that the counts sum to the gain;
// seconds of no count are left out. It is the burst detector's input:
// between two samples the rate is taken as even, so a burst is placed to
// the scrape interval, no finer.
func (c *Counter) PerSecond(from, to int64) []burst.Second {
	if c == nil || to <= from {
		return nil
	}
	acc := make([]float64, to-from)
	for _, run := range c.runs {
		for _, inc := range run {
			spread(acc, from, inc)
		}
	}
	var out []burst.Second
	cum, given := 0.0, int64(0)
	for i, v := range acc {
		cum += v
		n := int64(math.Round(cum)) - given
		if n > 0 {
			out = append(out, burst.Second{Sec: from + int64(i), Count: n})
			given += n
		}
	}
	return out
}

// spread adds inc to the seconds of acc (acc[0] is second from) that its
// interval covers, each by the share of the interval that lies in it.
func spread(acc []float64, from int64, inc Increase) {
	const ns = int64(time.Second)
	span := float64(inc.To - inc.From)
	lo, hi := max(inc.From, from*ns), min(inc.To, (from+int64(len(acc)))*ns)
	for t := lo; t < hi; {
		sec := t / ns
		next := min((sec+1)*ns, hi)
		acc[sec-from] += inc.Value * float64(next-t) / span
		t = next
	}
}
