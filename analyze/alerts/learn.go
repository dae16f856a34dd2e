package alerts

import (
	"math"
	"sort"
	"time"
)

// Point is a signal's value at one evaluation. OK is false where the
// signal has no value (a quantile over no records).
type Point struct {
	T  time.Time
	V  float64
	OK bool
}

// Fit is how a normal range and persistence are learned.
type Fit struct {
	Quantile float64 // of the known-good values (default 0.95)
	Margin   float64 // above it, as a fraction (default 0.5)
	// Floor is the least distance above the quantile that counts as
	// abnormal (one more record per window for a rate): a baseline of
	// zero does not make every single record an alert.
	Floor float64
	// MaxFor is the longest persistence worth waiting for (default 1m):
	// past it the threshold is raised above every known-good value instead.
	MaxFor time.Duration
	Step   time.Duration // the evaluation interval
}

func (f *Fit) defaults() {
	if f.Quantile == 0 {
		f.Quantile = 0.95
	}
	if f.Margin == 0 {
		f.Margin = 0.5
	}
	if f.MaxFor == 0 {
		f.MaxFor = time.Minute
	}
	if f.Step == 0 {
		f.Step = DefaultInterval
	}
}

// Learn fits the upper bound of the normal range on the known-good points
// and the shortest persistence under which they would not have fired:
//
//	max = max(q * (1 + margin), q + floor), q the Quantile of the values;
//	for = the longest run of evaluations above max, plus one step (0 if none);
//	if for would pass MaxFor, max = peak + floor and for = 0.
//
// It reports false when no known-good point has a value.
func Learn(good []Point, fit Fit) (Normal, time.Duration, bool) {
	fit.defaults()
	var vals []float64
	for _, p := range good {
		if p.OK {
			vals = append(vals, p.V)
		}
	}
	if len(vals) == 0 {
		return Normal{}, 0, false
	}
	sort.Float64s(vals)
	q := quantile(vals, fit.Quantile)
	peak := vals[len(vals)-1]
	upper := round(math.Max(q*(1+fit.Margin), q+fit.Floor))
	l := &Learned{Samples: len(vals), Quantile: fit.Quantile, Value: round(q), Margin: fit.Margin, Floor: round(fit.Floor), Peak: round(peak)}
	if len(good) > 0 {
		l.From, l.To = good[0].T, good[len(good)-1].T
	}
	longest := LongestBreach(good, upper, nil)
	persist := time.Duration(0)
	if longest >= 0 {
		persist = longest + fit.Step
	}
	if persist > fit.MaxFor {
		upper, persist, longest = round(peak+fit.Floor), 0, -1
	}
	if longest > 0 {
		l.LongestBreach = Duration(longest)
	}
	return Normal{Max: upper, Learned: l}, persist, true
}

// quantile is the nearest-rank quantile of sorted values.
func quantile(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// round keeps four significant digits, so that learned thresholds read well
// and the same evidence gives the same file.
func round(v float64) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	e := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*e) / e
}

// breach reports whether a point is outside the normal range.
func breach(p Point, upper float64, lower *float64) bool {
	return p.OK && (p.V > upper || (lower != nil && p.V < *lower))
}

// LongestBreach is the duration of the longest run of consecutive points
// outside the range (last - first point of the run): 0 for a single point,
// -1 when no point is outside.
func LongestBreach(points []Point, upper float64, lower *float64) time.Duration {
	longest := time.Duration(-1)
	var start time.Time
	in := false
	for _, p := range points {
		if !breach(p, upper, lower) {
			in = false
			continue
		}
		if !in {
			in, start = true, p.T
		}
		longest = max(longest, p.T.Sub(start))
	}
	return longest
}

// Firing is one time an alert fired: from Start (pending since Pending)
// to End (zero while it still fires at the last point).
type Firing struct {
	Pending time.Time `json:"pending"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end,omitzero"`
	Peak    float64   `json:"peak"`
}

// Fire replays Prometheus's alert states over the points: pending at the
// first point outside the range, firing once it has stayed outside for
// `persist`, resolved at the first point back inside (or without a value).
func Fire(points []Point, upper float64, lower *float64, persist time.Duration) []Firing {
	var out []Firing
	var pending time.Time
	var cur *Firing
	for _, p := range points {
		if !breach(p, upper, lower) {
			pending = time.Time{}
			if cur != nil {
				cur.End = p.T
				out = append(out, *cur)
				cur = nil
			}
			continue
		}
		if pending.IsZero() {
			pending = p.T
		}
		if cur == nil && p.T.Sub(pending) >= persist {
			cur = &Firing{Pending: pending, Start: p.T}
		}
		if cur != nil {
			cur.Peak = math.Max(cur.Peak, round(p.V))
		}
	}
	if cur != nil {
		out = append(out, *cur)
	}
	return out
}
