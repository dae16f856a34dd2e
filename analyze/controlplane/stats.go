package controlplane

import (
	"math"
	"sort"
)

// round rounds f to hundredths.
func round(f float64) float64 { return math.Round(f*100) / 100 }

// quantile is the q-quantile of v (nearest rank), rounded to hundredths.
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return round(s[max(0, min(i, len(s)-1))])
}
