package timelinetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

// GapStore is a store whose gaps CheckGaps tests.
type GapStore interface {
	timeline.Appender
	Gaps(ctx context.Context, min time.Duration) ([]timeline.Gap, error)
}

// CheckGaps writes records of spans of every size into s, which must be
// empty, and checks s.Gaps against the gaps between consecutive records
// found here, one record at a time, for minimums from -1 s to an hour. The
// records hold gaps of exactly the minimum and a nanosecond less, records
// at one time, requests written twice (their stages joined later),
// records with no time, and times either side of 1970, where a bucket of
// time must be floored to stay as wide as the others.
func CheckGaps(t *testing.T, s GapStore) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 19))
	steps := []time.Duration{0, time.Nanosecond, time.Second, 10*time.Second - 1, 10 * time.Second, 10*time.Second + 1,
		30 * time.Second, time.Minute - 1, time.Minute, 2 * time.Minute, 11 * time.Minute}
	starts := map[timeline.SourceKind]time.Time{
		timeline.SourceAudit: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC),
		timeline.SourceEvent: time.Unix(0, 0).Add(-3 * time.Minute).UTC(), // across 1970
		timeline.SourceNode:  time.Unix(0, 0).Add(-2 * time.Hour).UTC(),   // before it
	}
	var first, joined []timeline.Record
	for _, src := range []timeline.SourceKind{timeline.SourceAudit, timeline.SourceEvent, timeline.SourceNode} {
		at := starts[src]
		for i := range 200 {
			at = at.Add(steps[rng.IntN(len(steps))])
			r := timeline.Record{Key: fmt.Sprint(src, "-", i), Time: at, Source: src, Verb: "get", Code: 200,
				Stages: timeline.StageResponseComplete}
			if src == timeline.SourceAudit && i%4 == 0 {
				r.Stages = timeline.StageRequestReceived
				first = append(first, r)
				r.Stages |= timeline.StageResponseComplete
			}
			joined = append(joined, r)
		}
	}
	joined = append(joined, timeline.Record{Key: "timeless", Source: timeline.SourceEvent, Reason: "Timeless"})
	// Across 1970, a gap of one second (versions) and one of a minute
	// (objects), each from 0.6 of it before to 0.5 after: a bucket
	// truncated toward zero would hold both ends.
	epoch := time.Unix(0, 0).UTC()
	for _, src := range []timeline.SourceKind{timeline.SourceVersions, timeline.SourceObject} {
		min := time.Second
		if src == timeline.SourceObject {
			min = time.Minute
		}
		for j, at := range []time.Time{epoch.Add(-min * 6 / 10), epoch.Add(min / 2)} {
			joined = append(joined, timeline.Record{Key: fmt.Sprint("epoch-", src, "-", j), Time: at, Source: src,
				Verb: "get", Code: 200, Stages: timeline.StageResponseComplete})
		}
	}
	AddRecords(t, s, first...)
	AddRecords(t, s, joined...)

	// The oracle: every record's time, by source, in order, and each pair
	// of neighbours at least min apart.
	times := map[timeline.SourceKind][]time.Time{}
	for _, r := range joined {
		if !r.Time.IsZero() {
			times[r.Source] = append(times[r.Source], r.Time)
		}
	}
	srcs := make([]timeline.SourceKind, 0, len(times))
	for src := range times {
		srcs = append(srcs, src)
		slices.SortFunc(times[src], time.Time.Compare)
	}
	slices.Sort(srcs)
	for _, min := range []time.Duration{-time.Second, 0, time.Nanosecond, time.Second, 10 * time.Second, time.Minute, 5 * time.Minute, time.Hour} {
		var want []timeline.Gap
		for _, src := range srcs {
			ts := times[src]
			for i := 1; i < len(ts); i++ {
				if ts[i].Sub(ts[i-1]) >= min {
					want = append(want, timeline.Gap{Source: src, Start: ts[i-1], End: ts[i]})
				}
			}
		}
		if min == 10*time.Second && len(want) < 10 {
			t.Fatalf("%d gaps of 10 s: the records test less than they should", len(want))
		}
		got, err := s.Gaps(ctx, min)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
			t.Errorf("gaps of at least %v (-want +got)\n%s", min, diff)
		}
	}
}
