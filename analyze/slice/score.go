package slice

import (
	"math"
	"slices"
)

// agg sums the leaves of an element. For Ratio cubes bad, total and exp
// are the leaf fields; for Volume cubes bad is the observed amount, exp the
// forecast and abs the sum of |observed - forecast| over the leaves.
type agg struct {
	bad, total, exp, abs float64
	leaves               int
}

func (a *agg) add(b agg) {
	a.bad += b.bad
	a.total += b.total
	a.exp += b.exp
	a.abs += b.abs
	a.leaves += b.leaves
}

func (a agg) minus(b agg) agg {
	return agg{
		bad:    math.Max(0, a.bad-b.bad),
		total:  math.Max(0, a.total-b.total),
		exp:    math.Max(0, a.exp-b.exp),
		abs:    math.Max(0, a.abs-b.abs),
		leaves: a.leaves - b.leaves,
	}
}

// scorer holds the likelihood model of one cube.
type scorer struct {
	measure  Measure
	baseline bool
	dir      float64 // Volume: +1 when the cube's observed sum exceeds its forecast, -1 otherwise
	lo       float64 // smallest rate (Ratio) or forecast (Volume) a model may assume
}

// xlog is x*ln(y) with 0*ln(0) = 0.
func xlog(x, y float64) float64 {
	if x == 0 {
		return 0
	}
	return x * math.Log(y)
}

// ll is the binomial log-likelihood of x bad out of m at the fitted rate x/m.
func ll(x, m float64) float64 {
	if m <= 0 {
		return 0
	}
	x = math.Min(math.Max(x, 0), m)
	return xlog(x, x/m) + xlog(m-x, (m-x)/m)
}

func (s *scorer) clampRate(p float64) float64 {
	return math.Min(math.Max(p, s.lo), 1-s.lo)
}

// gain is the log-likelihood ratio of "the element a is abnormal" against
// "nothing is wrong", given rest, the sum of the leaves not yet explained
// (a included). It is zero when a does not deviate in the anomaly's
// direction.
func (s *scorer) gain(a, rest agg) float64 {
	switch {
	case s.measure == Volume:
		d := s.dir * (a.bad - a.exp)
		if d <= 0 {
			return 0
		}
		f := math.Max(a.exp, s.lo)
		return xlog(a.bad, a.bad/f) - (a.bad - f)
	case s.baseline:
		if a.total <= 0 {
			return 0
		}
		q := a.bad / a.total
		p := s.clampRate(a.exp / a.total)
		if q <= p {
			return 0
		}
		return xlog(a.bad, q/p) + xlog(a.total-a.bad, (1-q)/(1-p))
	default:
		// Scan statistic: the rate inside against the rate outside.
		out := rest.minus(a)
		if a.total <= 0 || out.total <= 0 {
			return 0
		}
		if a.bad/a.total <= out.bad/out.total {
			return 0
		}
		return ll(a.bad, a.total) + ll(out.bad, out.total) - ll(rest.bad, rest.total)
	}
}

// siblingLR is the log-likelihood ratio, for the leaves sib that a parent
// element adds to e, of "sib is hit like e" against "sib is normal". It is
// positive when the siblings look affected: the parent then explains the
// anomaly more simply than e (the ripple effect). parent is sib plus e and
// rest the sum of the leaves not yet explained.
func (s *scorer) siblingLR(sib, e, parent, rest agg) float64 {
	switch {
	case s.measure == Volume:
		rho := e.bad / math.Max(e.exp, s.lo)
		if rho == 0 {
			if sib.bad > 0 {
				return math.Inf(-1)
			}
			return sib.exp
		}
		return xlog(sib.bad, rho) - sib.exp*(rho-1)
	case s.baseline:
		if sib.total <= 0 {
			return 0
		}
		pe := s.clampRate(e.exp / e.total)
		delta := (e.bad/e.total - pe) / (1 - pe)
		p0 := s.clampRate(sib.exp / sib.total)
		p1 := s.clampRate(p0 + delta*(1-p0))
		return xlog(sib.bad, p1/p0) + xlog(sib.total-sib.bad, (1-p1)/(1-p0))
	default:
		out := rest.minus(parent)
		if out.total <= 0 {
			// The parent is everything left: no slice at all.
			return math.Inf(-1)
		}
		if sib.total <= 0 {
			return 0
		}
		p0 := s.clampRate(out.bad / out.total)
		p1 := s.clampRate(e.bad / e.total)
		return xlog(sib.bad, p1/p0) + xlog(sib.total-sib.bad, (1-p1)/(1-p0))
	}
}

// precision is the share of the element that is abnormal: bad/total for
// Ratio cubes; for Volume cubes the share of the element's absolute
// deviation that goes in the anomaly's direction.
func (s *scorer) precision(a agg) float64 {
	if s.measure == Volume {
		if a.abs <= 0 {
			return 0
		}
		return math.Max(0, s.dir*(a.bad-a.exp)) / a.abs
	}
	if a.total <= 0 {
		return 0
	}
	return a.bad / a.total
}

// coverage is the share of the cube's anomaly inside a: its share of all
// bad events (Ratio) or of the total deviation (Volume).
func (s *scorer) coverage(a, all agg) float64 {
	if s.measure == Volume {
		d := s.dir * (all.bad - all.exp)
		if d <= 0 {
			return 0
		}
		return s.dir * (a.bad - a.exp) / d
	}
	if all.bad <= 0 {
		return 0
	}
	return a.bad / all.bad
}

// medianChi2 is the median of the chi-squared distribution with one degree
// of freedom: the median squared Pearson residual of a leaf that follows
// the model exactly.
const medianChi2 = 0.454936423119572

// dispersion estimates how much noisier than the model the leaves are, from
// the median squared Pearson residual over the leaves. The median ignores
// the (few) anomalous leaves, so the estimate measures the ordinary noise
// of this cube; it is at least 1. Log-likelihood ratios are divided by it
// (quasi-likelihood), so that heavy-tailed real data with large counts
// does not make every small wobble significant.
func (s *scorer) dispersion(leaves []agg, all agg) float64 {
	r2 := make([]float64, 0, len(leaves))
	for _, a := range leaves {
		var d, v float64
		switch {
		case s.measure == Volume:
			if a.bad == 0 && a.exp == 0 {
				continue
			}
			d, v = a.bad-a.exp, math.Max(a.exp, s.lo)
		case s.baseline:
			if a.total <= 0 {
				continue
			}
			p := s.clampRate(a.exp / a.total)
			d, v = a.bad-a.exp, a.total*p*(1-p)
		default:
			if a.total <= 0 || all.total <= 0 {
				continue
			}
			p := s.clampRate(all.bad / all.total)
			d, v = a.bad-a.total*p, a.total*p*(1-p)
		}
		r2 = append(r2, d*d/v)
	}
	if len(r2) == 0 {
		return 1
	}
	slices.Sort(r2)
	m := r2[len(r2)/2]
	if len(r2)%2 == 0 {
		m = (m + r2[len(r2)/2-1]) / 2
	}
	return math.Max(1, m/medianChi2)
}
