package sqlite

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

// TestOutOfRangeTimesAreRefused: a time int64 nanoseconds cannot hold used
// to wrap (year 9999 stored as 1816, 1677 as 2262). Each write refuses it
// with a *timeline.TimeRangeError naming the field, and stores nothing.
func TestOutOfRangeTimesAreRefused(t *testing.T) {
	ctx := context.Background()
	y9999 := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	y1677 := time.Date(1677, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		field string
		write func(s *Store, b timeline.Batch) error // b is nil for a bisect mark

	}{
		{"record in 9999", "record time", func(s *Store, b timeline.Batch) error {
			_, err := b.AddRecord(ctx, &timeline.Record{Key: "k", Time: y9999, Source: timeline.SourceAudit})
			return err
		}},
		{"record in 1677", "record time", func(s *Store, b timeline.Batch) error {
			_, err := b.AddRecord(ctx, &timeline.Record{Key: "k", Time: y1677, Source: timeline.SourceAudit})
			return err
		}},
		{"version in 9999", "version time", func(s *Store, b timeline.Batch) error {
			_, err := b.AddVersion(ctx, &timeline.ObjectVersion{Time: y9999, Object: timeline.ObjectRef{Resource: "pods", Name: "p"},
				Content: []byte(`{"kind":"Pod"}`)})
			return err
		}},
		{"bisect good in 9999", "bisect mark", func(s *Store, _ timeline.Batch) error {
			id, err := s.StartBisect(ctx, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			return s.AddBisectMark(ctx, timeline.BisectMark{Session: id, Kind: timeline.BisectGood, Time: y9999, At: time.Now()})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t)
			var b timeline.Batch
			if tc.field != "bisect mark" { // the session's own writes wait for the batch's lock
				var err error
				if b, err = s.Batch(ctx, 0); err != nil {
					t.Fatal(err)
				}
			}
			err := tc.write(s, b)
			var te *timeline.TimeRangeError
			if !errors.As(err, &te) || te.Field != tc.field {
				t.Errorf("err = %v, want a *timeline.TimeRangeError for %q", err, tc.field)
			}
			if b != nil {
				if err := b.Commit(ctx, nil); err != nil {
					t.Fatal(err)
				}
			}
			var n int
			if err := s.db.QueryRow(`SELECT (SELECT count(*) FROM record) + (SELECT count(*) FROM object_version) +
				(SELECT count(*) FROM bisect_mark)`).Scan(&n); err != nil || n != 0 {
				t.Errorf("stored %d rows (%v), want none", n, err)
			}
		})
	}
}

// TestEpochIsATime: the Unix epoch reads back as 1970, not as "no time"
// (both were time_ns 0), and "no time" still reads back as the zero time.
func TestEpochIsATime(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	epoch := time.Unix(0, 0).UTC()
	recs := []timeline.Record{
		{Key: "a", Time: epoch, Source: timeline.SourceEvent, Reason: "Epoch"},
		{Key: "b", Source: timeline.SourceEvent, Reason: "NoTime"},
		{Key: "c", Time: timeline.MinTime, Source: timeline.SourceEvent, Reason: "Min"},
		{Key: "d", Time: timeline.MaxTime, Source: timeline.SourceEvent, Reason: "Max"},
	}
	ingestRecords(t, s, recs, 0)
	got := map[string]time.Time{}
	for _, r := range collect(t, s, timeline.Query{}) {
		got[r.Reason] = r.Time
	}
	want := map[string]time.Time{"Epoch": epoch, "NoTime": {}, "Min": timeline.MinTime, "Max": timeline.MaxTime}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("times read back (-want +got)\n%s", diff)
	}
	first, last, err := s.Bounds(ctx)
	if err != nil || !first.Equal(timeline.MinTime) || !last.Equal(timeline.MaxTime) {
		t.Errorf("Bounds = %v, %v, %v; want MinTime, MaxTime (no time is no bound)", first, last, err)
	}
}

// TestQueryBoundsSaturate: a bound outside the range a timeline holds
// (--since 3000-01-01) used to wrap and select everything.
func TestQueryBoundsSaturate(t *testing.T) {
	s := openTest(t)
	ingestRecords(t, s, rollupRecords(), 0)
	all := len(collect(t, s, timeline.Query{}))
	y3000 := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	y1000 := time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		q    timeline.Query
		want int
	}{
		{"since 3000", timeline.Query{Since: y3000}, 0},
		{"until 3000", timeline.Query{Until: y3000}, all},
		{"since 1000", timeline.Query{Since: y1000}, all},
		{"until 1000", timeline.Query{Until: y1000}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := len(collect(t, s, tc.q)); got != tc.want {
				t.Errorf("got %d records, want %d", got, tc.want)
			}
		})
	}
	n, err := s.CountRecords(context.Background(), y3000, time.Time{})
	if err != nil || len(n) != 0 {
		t.Errorf("CountRecords since 3000 = %v, %v; want none", n, err)
	}
}

// TestLatencySumSaturates: the rollup's latency sum used to wrap negative
// (in Go) or fail with "integer overflow" (SQLite's sum()).
func TestLatencySumSaturates(t *testing.T) {
	s := openTest(t)
	pod := timeline.ObjectRef{Version: "v1", Resource: "pods", Namespace: "ml", Name: "p1"}
	huge := time.Duration(math.MaxInt64 / 2)
	var recs []timeline.Record
	for i, id := range []string{"a", "b", "c", "d"} {
		recs = append(recs, stage(id, time.Duration(i), timeline.StageResponseComplete, "get", pod, 200, huge))
	}
	ingestRecords(t, s, recs[:2], 0) // rows of one batch
	ingestRecords(t, s, recs[2:], 0) // and across batches (the upsert)
	for _, summary := range []bool{false, true} {
		st, err := s.requestStats(context.Background(), time.Time{}, time.Time{}, summary)
		if err != nil {
			t.Fatalf("summary %v: %v", summary, err)
		}
		var got []int64
		for _, r := range st.Stats {
			got = append(got, r.LatencySumNs)
		}
		if diff := cmp.Diff([]int64{math.MaxInt64}, got); diff != "" {
			t.Errorf("summary %v: latency sums (-want +got)\n%s", summary, diff)
		}
	}
}
