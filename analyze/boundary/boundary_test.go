package boundary

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func at(secs ...float64) []time.Time {
	out := make([]time.Time, len(secs))
	for i, s := range secs {
		out[i] = t0.Add(time.Duration(s * float64(time.Second)))
	}
	return out
}

func burst(start, every float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = start + float64(i)*every
	}
	return out
}

func TestFind(t *testing.T) {
	tests := []struct {
		name     string
		times    []float64
		span     float64
		firstBad float64
	}{
		{"a lone failure an hour earlier is noise", append([]float64{0}, burst(3600, 0.5, 60)...), 4000, 3600},
		{"two noise failures, then the incident", append([]float64{100, 900}, burst(2000, 0.2, 200)...), 3000, 2000},
		{"the first rank dies 2 s before the avalanche", append([]float64{600, 602.5}, burst(604, 0.05, 120)...), 1200, 600},
		{"incident, recovery, quiet", append(burst(300, 1, 40), 1500), 1800, 300},
		{"one bad observation", []float64{42}, 100, 42},
		{"all at once", burst(50, 0, 30), 100, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Find(at(tt.times...), t0, t0.Add(time.Duration(tt.span*float64(time.Second))))
			if !r.Found {
				t.Fatal("not found")
			}
			if want := at(tt.firstBad)[0]; !r.FirstBad.Equal(want) {
				t.Errorf("FirstBad = %s, want %s (score %.1f, baseline %.4f/s)", r.FirstBad.Sub(t0), want.Sub(t0), r.Score, r.BaselineRate)
			}
		})
	}
}

func TestFindUnsortedAndEmpty(t *testing.T) {
	if r := Find(nil, time.Time{}, time.Time{}); r.Found {
		t.Errorf("Find(nil) found %+v", r)
	}
	times := at(append(burst(500, 0.1, 50), 10)...)
	r := Find(times, t0, t0.Add(1000*time.Second))
	if want := at(500)[0]; !r.FirstBad.Equal(want) {
		t.Errorf("FirstBad = %s, want %s", r.FirstBad.Sub(t0), want.Sub(t0))
	}
}

// Poisson noise with a step up: the boundary lands near the step.
func TestFindStep(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	var secs []float64
	for s := 0.0; s < 3000; s += rng.ExpFloat64() * 120 { // one per 2 min
		secs = append(secs, s)
	}
	for s := 2000.0; s < 2300; s += rng.ExpFloat64() * 0.5 { // two per second
		secs = append(secs, s)
	}
	sort.Float64s(secs)
	r := Find(at(secs...), t0, t0.Add(3000*time.Second))
	if got := r.FirstBad.Sub(t0).Seconds(); got < 1990 || got > 2010 {
		t.Errorf("FirstBad at %.1fs, want about 2000s", got)
	}
}

func BenchmarkFind100k(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	secs := make([]float64, 100_000)
	for i := range secs {
		secs[i] = rng.Float64() * 36000
	}
	sort.Float64s(secs)
	times := at(secs...)
	b.ResetTimer()
	for b.Loop() {
		Find(times, t0, t0.Add(10*time.Hour))
	}
}
