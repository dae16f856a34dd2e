package timeline

import (
	"errors"
	"testing"
	"time"
)

func TestCheckTime(t *testing.T) {
	for _, tc := range []struct {
		t  time.Time
		ok bool
	}{
		{time.Time{}, true}, // no time
		{time.Unix(0, 0), true},
		{MinTime, true},
		{MaxTime, true},
		{MinTime.Add(-1), false},
		{MaxTime.Add(1), false},
		{time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), false},
		{time.Date(1677, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), false},
	} {
		t.Run(tc.t.Format(time.RFC3339Nano), func(t *testing.T) {
			err := CheckTime(tc.t)
			var te *TimeRangeError
			switch {
			case tc.ok && err != nil:
				t.Errorf("CheckTime = %v, want nil", err)
			case !tc.ok && (!errors.As(err, &te) || !te.Time.Equal(tc.t)):
				t.Errorf("CheckTime = %v, want a *TimeRangeError naming the time", err)
			}
		})
	}
}

// TestSpan: a span holds its start and not its end, an unbounded side
// holds everything, and a run's window reads as its messages say it.
func TestSpan(t *testing.T) {
	since, until := time.Date(2026, 5, 1, 2, 0, 0, 0, time.UTC), time.Date(2026, 5, 1, 4, 0, 0, 500, time.UTC)
	for _, tt := range []struct {
		run      IngestRun
		text     string
		in, outs []time.Time
	}{
		{IngestRun{}, "", []time.Time{since, until}, nil},
		{IngestRun{Since: since}, "from 2026-05-01T02:00:00Z", []time.Time{since, until}, []time.Time{since.Add(-1)}},
		{IngestRun{Until: until}, "before 2026-05-01T04:00:00.0000005Z", []time.Time{since, until.Add(-1)}, []time.Time{until}},
		{IngestRun{Since: since.In(time.FixedZone("x", 3600)), Until: until}, "in [2026-05-01T02:00:00Z, 2026-05-01T04:00:00.0000005Z)",
			[]time.Time{since, until.Add(-1)}, []time.Time{since.Add(-1), until}},
	} {
		w := tt.run.Window()
		if got := w.String(); got != tt.text {
			t.Errorf("Window().String() = %q, want %q", got, tt.text)
		}
		if w.Unbounded() != (tt.text == "") {
			t.Errorf("%q: Unbounded() = %v", tt.text, w.Unbounded())
		}
		for _, at := range tt.in {
			if !w.Contains(at) {
				t.Errorf("%q does not contain %s", tt.text, at)
			}
		}
		for _, at := range tt.outs {
			if w.Contains(at) {
				t.Errorf("%q contains %s", tt.text, at)
			}
		}
	}
}
