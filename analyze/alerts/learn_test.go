package alerts

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

// series makes points every 5 s from t0.
func series(vals ...float64) []Point {
	out := make([]Point, len(vals))
	for i, v := range vals {
		out[i] = Point{T: t0.Add(time.Duration(i) * 5 * time.Second), V: v, OK: true}
	}
	return out
}

// spikes is n ones with v at the given indexes.
func spikes(n int, v float64, at ...int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = 1
	}
	for _, i := range at {
		out[i] = v
	}
	return out
}

func TestLearn(t *testing.T) {
	step := 5 * time.Second
	tests := []struct {
		name        string
		good        []Point
		fit         Fit
		wantMax     float64
		wantFor     time.Duration
		wantLongest time.Duration
	}{
		{
			name:    "quiet baseline: the floor, not zero, is the bound",
			good:    series(0, 0, 0, 0, 0, 0, 0, 0),
			fit:     Fit{Floor: 1.0 / 30},
			wantMax: 0.03333, wantFor: 0,
		},
		{
			name:    "steady baseline: the quantile with its margin",
			good:    series(10, 11, 9, 10, 12, 10, 11, 10, 9, 10),
			fit:     Fit{Floor: 0.1},
			wantMax: 18, wantFor: 0,
		},
		{
			// One sample in twenty spikes past the 0.95 quantile's margin:
			// each spike lasts one evaluation, so waiting one step more
			// than that silences it.
			name:    "noisy baseline: single spikes set the persistence",
			good:    series(spikes(40, 9, 3, 31)...),
			fit:     Fit{Floor: 0.5},
			wantMax: 1.5, wantFor: 5 * time.Second, wantLongest: 0,
		},
		{
			name:    "noisy baseline with two-step spikes waits two steps more",
			good:    series(spikes(44, 9, 2, 3)...),
			fit:     Fit{Floor: 0.5},
			wantMax: 1.5, wantFor: 10 * time.Second, wantLongest: 5 * time.Second,
		},
		{
			// Three in sixty stay under the 0.95 quantile, but together
			// they outlast MaxFor.
			name:    "a breach longer than MaxFor raises the bound above the peak instead",
			good:    series(spikes(60, 9, 10, 11, 12)...),
			fit:     Fit{Floor: 0.5, MaxFor: 5 * time.Second},
			wantMax: 9.5, wantFor: 0,
		},
		{
			name:    "points without a value are not learned from",
			good:    append(series(0.2, 0.3, 0.25), Point{T: t0.Add(time.Minute)}),
			fit:     Fit{Floor: 0.1},
			wantMax: 0.45, wantFor: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fit.Step = step
			n, persist, ok := Learn(tt.good, tt.fit)
			if !ok {
				t.Fatal("Learn found no value")
			}
			if n.Max != tt.wantMax || persist != tt.wantFor {
				t.Errorf("Learn = max %v for %v, want max %v for %v", n.Max, persist, tt.wantMax, tt.wantFor)
			}
			if got := n.Learned.LongestBreach.D(); got != tt.wantLongest {
				t.Errorf("longest breach %v, want %v", got, tt.wantLongest)
			}
			// Whatever was learned, the known-good window does not fire.
			if fired := Fire(tt.good, n.Max, nil, persist); len(fired) != 0 {
				t.Errorf("learned range fires on its own known-good window: %+v", fired)
			}
		})
	}
}

// TestNoisyBaselineNaiveThresholdFlaps guards the reason for learning a
// persistence: a threshold at the known-good 0.95 quantile (or at mean +
// 2 sd) with no persistence flaps on a noisy baseline; the learned range
// and persistence stay quiet there and still catch a sustained shift.
func TestNoisyBaselineNaiveThresholdFlaps(t *testing.T) {
	var vals []float64
	for i := range 60 {
		v := 2.0
		switch i % 25 {
		case 3:
			v = 6 // a spike every two minutes
		case 10, 20:
			v = 2.5
		}
		vals = append(vals, v)
	}
	good := series(vals...)
	var sum, sq float64
	for _, v := range vals {
		sum += v
	}
	mean := sum / float64(len(vals))
	for _, v := range vals {
		sq += (v - mean) * (v - mean)
	}
	naive := mean + 2*math.Sqrt(sq/float64(len(vals))) // mean + 2 sd
	if fired := Fire(good, naive, nil, 0); len(fired) < 2 {
		t.Fatalf("the naive threshold fired %d times; this baseline should make it flap", len(fired))
	}
	n, persist, _ := Learn(good, Fit{Floor: 0.5, Step: 5 * time.Second})
	if fired := Fire(good, n.Max, nil, persist); len(fired) != 0 {
		t.Errorf("learned max %v for %v fires on the known-good window: %+v", n.Max, persist, fired)
	}
	if persist == 0 {
		t.Errorf("want a persistence on this noisy baseline, got none (max %v)", n.Max)
	}
	// A sustained shift to 8 after the baseline fires within one
	// persistence of its start.
	shift := series(append(vals, 8, 8, 8, 8, 8, 8)...)
	fired := Fire(shift, n.Max, nil, persist)
	if len(fired) != 1 {
		t.Fatalf("sustained shift: %d firings, want 1: %+v", len(fired), fired)
	}
	start := shift[len(vals)].T
	if got := fired[0].Start.Sub(start); got > persist {
		t.Errorf("fired %v after the shift, want within the persistence %v", got, persist)
	}
}

func TestFire(t *testing.T) {
	lower := 1.0
	tests := []struct {
		name    string
		pts     []Point
		max     float64
		min     *float64
		persist time.Duration
		want    []Firing
	}{
		{"fires at once without persistence", series(0, 5, 5, 0), 1, nil, 0,
			[]Firing{{Pending: t0.Add(5 * time.Second), Start: t0.Add(5 * time.Second), End: t0.Add(15 * time.Second), Peak: 5}}},
		{"pending until the persistence has passed", series(0, 5, 5, 5, 0), 1, nil, 10 * time.Second,
			[]Firing{{Pending: t0.Add(5 * time.Second), Start: t0.Add(15 * time.Second), End: t0.Add(20 * time.Second), Peak: 5}}},
		{"a dip resets the pending alert", series(5, 0, 5, 0, 5), 1, nil, 5 * time.Second, nil},
		{"below the minimum", series(2, 0.5, 0.5, 2), 3, &lower, 0,
			[]Firing{{Pending: t0.Add(5 * time.Second), Start: t0.Add(5 * time.Second), End: t0.Add(15 * time.Second), Peak: 0.5}}},
		{"still firing at the end", series(0, 5), 1, nil, 0,
			[]Firing{{Pending: t0.Add(5 * time.Second), Start: t0.Add(5 * time.Second), Peak: 5}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Fire(tt.pts, tt.max, tt.min, tt.persist)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestGuard(t *testing.T) {
	base := func(promql string, slice map[string]string) *Definition {
		return &Definition{Name: "X", Signal: Signal{PromQL: promql}, Slice: slice}
	}
	tests := []struct {
		name string
		def  *Definition
		want string // "" for accepted
	}{
		{"aggregated by request class", base(`sum(rate(apiserver_request_total{verb="LIST"}[30s]))`, map[string]string{"verb": "list"}), ""},
		{"pods joined inside a count", base(`count(max by (namespace, pod) (kube_pod_status_phase{phase="Failed"} == 1)) / 30`, nil), ""},
		{"histogram by le", base(`histogram_quantile(0.99, sum by (le) (rate(apiserver_request_duration_seconds_bucket[30s])))`, nil), ""},
		{"by pod", base(`sum by (namespace, pod) (rate(container_cpu_usage_seconds_total[1m]))`, nil), "by (pod)"},
		{"by instance", base(`sum by (instance) (up)`, nil), "by (instance)"},
		{"without keeps pod", base(`sum without (container) (kube_pod_status_phase)`, nil), "without"},
		{"per-pod alerts", base(`kube_pod_status_phase{phase="Failed"} == 1`, nil), "one alert per pod"},
		{"group_left a uid", base(`sum(x) * on (node) group_left (uid) y`, nil), "group_left (uid)"},
		{"slice by user", base(`sum(rate(apiserver_request_total[30s]))`, map[string]string{"user": "system:serviceaccount:ml:worker-17"}), "slice user"},
		{"slice by pod", base(`sum(rate(apiserver_request_total[30s]))`, map[string]string{"pod": "trainer-0"}), "slice pod"},
		{"slice by request id", base(`sum(rate(apiserver_request_total[30s]))`, map[string]string{"auditID": "a-1"}), "slice auditID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Guard(tt.def)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && err == nil:
				t.Errorf("accepted, want refused for %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("refused with %q, want it to name %q", err, tt.want)
			}
		})
	}
}

func TestParseNamesTheField(t *testing.T) {
	good := `schemaVersion: 1
interval: 5s
alerts:
  - name: MlTrainerPodFailures
    summary: s
    signal: {kind: rate, count: 'source == "status"', window: 30s, promql: 'sum(up)'}
    normal: {max: 0.1}
    for: 1m
    severity: page
    owner: {team: ml, rotation: ml-oncall}
    mitigation: cordon node.pool=h100-b
`
	f, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if f.Alerts[0].For.D() != time.Minute || f.Alerts[0].Signal.Window.D() != 30*time.Second {
		t.Errorf("durations: for %v window %v", f.Alerts[0].For.D(), f.Alerts[0].Signal.Window.D())
	}
	tests := []struct{ from, to, want string }{
		{`count: 'source == "status"'`, `count: 'source =='`, `alerts[0] (MlTrainerPodFailures): signal.count: invalid filter`},
		{`kind: rate`, `kind: average`, `signal.kind: "average"`},
		{`for: 1m`, `for: soon`, `invalid duration "soon"`},
		{`severity: page`, `severity: urgent`, `severity: "urgent"`},
		{`mitigation: cordon node.pool=h100-b`, `mitigation: ""`, `mitigation: empty`},
		{`    summary: s`, `    summary: s
    colour: red`, `unknown field "colour"`},
		{`name: MlTrainerPodFailures`, `name: ml-trainer`, `name: "ml-trainer" is not a Prometheus alert name`},
		{`interval: 5s`, `interval: 1ns`, `interval: 1ns: want at least 1s`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := Parse([]byte(strings.Replace(good, tt.from, tt.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestDurations(t *testing.T) {
	for s, want := range map[string]time.Duration{"0s": 0, "30s": 30 * time.Second, "1m30s": 90 * time.Second, "2h": 2 * time.Hour, "1d": 24 * time.Hour, "500ms": 500 * time.Millisecond} {
		got, err := ParseDuration(s)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", s, got, err, want)
		}
		if s != "1d" && FormatDuration(want) != s {
			t.Errorf("FormatDuration(%v) = %q, want %q", want, FormatDuration(want), s)
		}
	}
}

// One record stamped in year 9999 must not turn a backtest into billions
// of evaluations: the grid refuses, naming the interval and the span.
func TestGridIsBounded(t *testing.T) {
	start := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		end     time.Time
		step    time.Duration
		wantErr string
		wantLen int
	}{
		{"an hour at 15s", start.Add(time.Hour), 15 * time.Second, "", 242},
		{"a record in year 9999", time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), 15 * time.Second, "evaluations (at most 1000000)", 0},
		{"a nanosecond step", start.Add(time.Hour), time.Nanosecond, "evaluations (at most 1000000)", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := &Evidence{Start: start, End: tt.end}
			grid, err := ev.Grid(tt.step)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Grid error %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(grid) != tt.wantLen {
				t.Fatalf("Grid = %d points, %v; want %d", len(grid), err, tt.wantLen)
			}
		})
	}
}
