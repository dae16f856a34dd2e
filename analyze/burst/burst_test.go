package burst

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPoissonSF(t *testing.T) {
	tests := []struct {
		n      int64
		lambda float64
		want   float64
	}{{0, 1, 1}, {1, 0.5, 0.3935}, {3, 1, 0.0803}}
	for _, tt := range tests {
		if got := PoissonSF(tt.n, tt.lambda); got < tt.want-1e-3 || got > tt.want+1e-3 {
			t.Errorf("PoissonSF(%d, %g) = %.4f, want %.4f", tt.n, tt.lambda, got, tt.want)
		}
	}
}

// steady is n a second over [from, to).
func steady(from, to, n int64) []Second {
	var out []Second
	for t := from; t < to; t++ {
		out = append(out, Second{t, n})
	}
	return out
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name string
		secs []Second
		want []Span
	}{
		{"steady", steady(0, 600, 2), nil},
		{"at the start of the evidence", append(steady(0, 10, 100), steady(10, 600, 1)...), nil},
		{"below the floor", append(append(steady(0, 300, 0), steady(300, 310, 4)...), steady(310, 400, 0)...), nil},
		{
			"a jump, a dip bridged, a peak",
			append(append(append(append(steady(0, 300, 1), steady(300, 305, 50)...), Second{305, 2}, Second{306, 2}), Second{307, 80}), steady(308, 400, 1)...),
			[]Span{{Start: 300, End: 307, Sum: 330, Peak: 80, PeakAt: 307, Baseline: 1}},
		},
		{
			"a gap longer than the bridge splits it",
			append(append(append(steady(0, 300, 1), steady(300, 302, 60)...), Second{309, 60}), steady(310, 320, 1)...),
			[]Span{{Start: 300, End: 301, Sum: 120, Peak: 60, PeakAt: 300, Baseline: 1}, {Start: 309, End: 309, Sum: 60, Peak: 60, PeakAt: 309, Baseline: 411.0 / 300}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Detect(tt.secs, 0)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}
