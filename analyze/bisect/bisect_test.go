package bisect

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func mark(kind timeline.BisectKind, at time.Duration) timeline.BisectMark {
	return timeline.BisectMark{Kind: kind, Time: t0.Add(at)}
}

// everyMinuteSkipped marks good at 0, bad at 16m and skips every minute
// between: no instant keeps clear of the skips.
func everyMinuteSkipped() []timeline.BisectMark {
	marks := []timeline.BisectMark{mark(timeline.BisectGood, 0), mark(timeline.BisectBad, 16*time.Minute)}
	for i := 1; i < 16; i++ {
		marks = append(marks, mark(timeline.BisectSkip, time.Duration(i)*time.Minute))
	}
	return marks
}

func TestWindowNext(t *testing.T) {
	first, last := t0, t0.Add(time.Hour)
	tests := []struct {
		name        string
		marks       []timeline.BisectMark
		wantNext    string // "" for none
		wantSuggest bool   // Suggest agrees with Next
		wantSteps   int
		wantDone    bool
	}{
		{"no marks: middle of the data", nil, "2026-05-01T10:30:00Z", false, 12, false},
		{"bad only: start of data to bad", []timeline.BisectMark{mark(timeline.BisectBad, 20*time.Minute)}, "2026-05-01T10:10:00Z", true, 11, false},
		{"good only: nothing suggested yet", []timeline.BisectMark{mark(timeline.BisectGood, 20*time.Minute)}, "2026-05-01T10:40:00Z", false, 12, false},
		{"good and bad", []timeline.BisectMark{mark(timeline.BisectGood, 10*time.Minute), mark(timeline.BisectBad, 13*time.Minute)},
			"2026-05-01T10:11:30Z", true, 8, false},
		{"rounded to the second", []timeline.BisectMark{mark(timeline.BisectGood, 0), mark(timeline.BisectBad, 101*time.Second)},
			"2026-05-01T10:00:51Z", true, 7, false},
		{"sub-second precision in a narrow window", []timeline.BisectMark{mark(timeline.BisectGood, 0), mark(timeline.BisectBad, 3*time.Second)},
			"2026-05-01T10:00:01.5Z", true, 2, false},
		{"skip at the midpoint steers earlier", []timeline.BisectMark{mark(timeline.BisectGood, 0), mark(timeline.BisectBad, 16*time.Minute),
			mark(timeline.BisectSkip, 8*time.Minute)}, "2026-05-01T10:07:00Z", true, 10, false},
		{"skips on both sides", []timeline.BisectMark{mark(timeline.BisectGood, 0), mark(timeline.BisectBad, 16*time.Minute),
			mark(timeline.BisectSkip, 7*time.Minute), mark(timeline.BisectSkip, 8*time.Minute)}, "2026-05-01T10:09:00Z", true, 10, false},
		{"skips everywhere: the middle of the first widest gap", everyMinuteSkipped(), "2026-05-01T10:00:30Z", true, 10, false},
		{"skip outside the window is ignored", []timeline.BisectMark{mark(timeline.BisectGood, 0), mark(timeline.BisectBad, 16*time.Minute),
			mark(timeline.BisectSkip, 30*time.Minute)}, "2026-05-01T10:08:00Z", true, 10, false},
		{"done at one second", []timeline.BisectMark{mark(timeline.BisectGood, 0), mark(timeline.BisectBad, time.Second)}, "", false, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWindow(tt.marks, first, last)
			next, ok := w.Next()
			got := ""
			if ok {
				got = Instant(next)
				if !next.After(w.Lo) || next.After(w.Hi) {
					t.Errorf("next %s is outside the window (%s, %s]", got, Instant(w.Lo), Instant(w.Hi))
				}
			}
			if got != tt.wantNext {
				t.Errorf("Next = %q, want %q", got, tt.wantNext)
			}
			if s, ok := w.Suggest(); ok != tt.wantSuggest || (ok && !s.Equal(next)) {
				t.Errorf("Suggest = %s, %v; want %v (and Next's instant)", Instant(s), ok, tt.wantSuggest)
			}
			if s := w.Steps(); s != tt.wantSteps {
				t.Errorf("Steps = %d, want %d", s, tt.wantSteps)
			}
			if d := w.Done(); d != tt.wantDone {
				t.Errorf("Done = %v, want %v", d, tt.wantDone)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	marks := []timeline.BisectMark{mark(timeline.BisectGood, time.Minute), mark(timeline.BisectBad, 5*time.Minute)}
	tests := []struct {
		name      string
		m         timeline.BisectMark
		wantBound time.Duration // -1: no error
		wantErr   string
	}{
		{"good inside", mark(timeline.BisectGood, 3*time.Minute), -1, ""},
		{"good before last good", mark(timeline.BisectGood, 0), -1, ""},
		{"bad inside", mark(timeline.BisectBad, 2*time.Minute), -1, ""},
		{"bad after first bad", mark(timeline.BisectBad, time.Hour), -1, ""},
		{"skip anywhere", mark(timeline.BisectSkip, time.Hour), -1, ""},
		{"good after bad", mark(timeline.BisectGood, 6*time.Minute), 5 * time.Minute,
			"a good instant must be before the bad one: good 2026-05-01T10:06:00Z is after bad 2026-05-01T10:05:00Z"},
		{"good at bad", mark(timeline.BisectGood, 5*time.Minute), 5 * time.Minute,
			"a good instant must be before the bad one: good 2026-05-01T10:05:00Z is the same instant as bad 2026-05-01T10:05:00Z"},
		{"bad before good", mark(timeline.BisectBad, 0), time.Minute,
			"a bad instant must be after the good one: bad 2026-05-01T10:00:00Z is before good 2026-05-01T10:01:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(marks, tt.m)
			if tt.wantBound < 0 {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			ce, ok := errors.AsType[*ContradictionError](err)
			if !ok {
				t.Fatalf("Check = %v, want a *ContradictionError", err)
			}
			want := &ContradictionError{Mark: tt.m, Bound: t0.Add(tt.wantBound)}
			if diff := cmp.Diff(want, ce); diff != "" {
				t.Errorf("Check (-want +got)\n%s", diff)
			}
			if got := err.Error(); got != tt.wantErr {
				t.Errorf("Check = %q, want %q", got, tt.wantErr)
			}
		})
	}
}

// fakeSessions records what Start asks of the store.
type fakeSessions struct {
	open    *timeline.BisectSession
	started []timeline.BisectMark
	err     error
}

func (f *fakeSessions) Bisect(context.Context) (*timeline.BisectSession, error) { return f.open, nil }

func (f *fakeSessions) StartBisect(_ context.Context, _ time.Time, marks ...timeline.BisectMark) (int64, error) {
	if f.err != nil {
		return 0, f.err
	}
	f.started = marks
	return 7, nil
}

func TestStart(t *testing.T) {
	ctx := context.Background()
	at := t0.Add(24 * time.Hour)
	old := &timeline.BisectSession{ID: 6, Started: t0}
	marks := []timeline.BisectMark{mark(timeline.BisectBad, time.Hour), mark(timeline.BisectGood, 0)}
	s := &fakeSessions{open: old}
	started, replaced, err := Start(ctx, s, at, marks)
	if err != nil {
		t.Fatal(err)
	}
	want := &timeline.BisectSession{ID: 7, Started: at, Marks: []timeline.BisectMark{marks[0], marks[1]}}
	want.Marks[0].Session, want.Marks[1].Session = 7, 7
	if diff := cmp.Diff(want, started); diff != "" {
		t.Errorf("started (-want +got)\n%s", diff)
	}
	if replaced != old {
		t.Errorf("replaced = %v, want the open session %v", replaced, old)
	}
	if diff := cmp.Diff(marks, s.started); diff != "" {
		t.Errorf("marks given to the store (-want +got)\n%s", diff)
	}

	s = &fakeSessions{err: errors.New("disk full")}
	if _, _, err := Start(ctx, s, at, marks); err == nil || err.Error() != "disk full" {
		t.Errorf("Start = %v, want the store's error", err)
	}
}
