package timelinetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

// CheckBisectLifecycle checks a store's bisect log, which must hold no
// session: no session at first, marks added to the open one and read back
// in order, a mark of another kind or for a session no longer open
// refused, a new start replacing the open session, and a reset ending it.
func CheckBisectLifecycle(t *testing.T, s timeline.BisectLog) {
	t.Helper()
	ctx := context.Background()
	wall := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

	if b, err := s.Bisect(ctx); err != nil || b != nil {
		t.Fatalf("Bisect before start = %v, %v; want nil, nil", b, err)
	}
	if err := s.AddBisectMark(ctx, timeline.BisectMark{Session: 1, Kind: timeline.BisectGood, Time: t0}); !errors.Is(err, timeline.ErrNoBisect) {
		t.Fatalf("AddBisectMark without a session = %v, want ErrNoBisect", err)
	}
	first, err := s.StartBisect(ctx, wall)
	if err != nil {
		t.Fatal(err)
	}
	marks := []timeline.BisectMark{
		{Session: first, Kind: timeline.BisectBad, Time: t0.Add(10 * time.Minute), Note: "pods crashloop", At: wall.Add(time.Minute)},
		{Session: first, Kind: timeline.BisectGood, Time: t0.Add(123456789), At: wall.Add(2 * time.Minute)},
		{Session: first, Kind: timeline.BisectSkip, Time: t0.Add(5 * time.Minute), At: wall.Add(3 * time.Minute)},
	}
	for _, m := range marks {
		if err := s.AddBisectMark(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Bisect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := &timeline.BisectSession{ID: first, Started: wall, Marks: marks}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("session (-want +got)\n%s", diff)
	}
	if err := s.AddBisectMark(ctx, timeline.BisectMark{Session: first, Kind: "maybe", Time: t0}); err == nil {
		t.Error("AddBisectMark accepted kind \"maybe\"")
	}

	// A new start replaces the open session; a mark for the old one is refused.
	second, err := s.StartBisect(ctx, wall.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if second == first {
		t.Fatalf("StartBisect reused session id %d", first)
	}
	if err := s.AddBisectMark(ctx, timeline.BisectMark{Session: first, Kind: timeline.BisectGood, Time: t0}); !errors.Is(err, timeline.ErrNoBisect) {
		t.Errorf("AddBisectMark to a replaced session = %v, want ErrNoBisect", err)
	}
	got, err = s.Bisect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&timeline.BisectSession{ID: second, Started: wall.Add(time.Hour)}, got); diff != "" {
		t.Errorf("after restart (-want +got)\n%s", diff)
	}

	for i, wantOpen := range []bool{true, false} {
		open, err := s.ResetBisect(ctx, wall.Add(2*time.Hour))
		if err != nil || open != wantOpen {
			t.Errorf("ResetBisect #%d = %v, %v; want %v", i+1, open, err, wantOpen)
		}
	}
	if b, err := s.Bisect(ctx); err != nil || b != nil {
		t.Errorf("Bisect after reset = %v, %v; want nil, nil", b, err)
	}
}

// CheckStartBisectWithMarks checks that a session started with marks holds
// them, and that a start with a bad mark changes nothing.
func CheckStartBisectWithMarks(t *testing.T, s timeline.BisectLog) {
	t.Helper()
	ctx := context.Background()
	wall := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	marks := []timeline.BisectMark{
		{Kind: timeline.BisectBad, Time: t0.Add(10 * time.Minute), Note: "crashloop", At: wall},
		{Kind: timeline.BisectGood, Time: t0, At: wall},
	}
	id, err := s.StartBisect(ctx, wall, marks...)
	if err != nil {
		t.Fatal(err)
	}
	want := &timeline.BisectSession{ID: id, Started: wall}
	for _, m := range marks {
		m.Session = id
		want.Marks = append(want.Marks, m)
	}
	got, err := s.Bisect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("session (-want +got)\n%s", diff)
	}

	bad := []timeline.BisectMark{{Kind: timeline.BisectGood, Time: t0, At: wall}, {Kind: "maybe", Time: t0, At: wall}}
	if _, err := s.StartBisect(ctx, wall.Add(time.Hour), bad...); err == nil {
		t.Fatal("StartBisect accepted kind \"maybe\"")
	}
	if got, err = s.Bisect(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after a refused start, session (-want +got)\n%s", diff)
	}
}
