package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/ingest/commit"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

// TestBatchCarriesRuns writes the samples of three runs in one batch
// (commit.Carrier, as ingest metrics does for its files) over samples a
// fourth run committed before: each run is told exactly which of its
// samples were new and which were held, whether held before the batch, by
// a run before it in the batch, or given twice by itself, and of a (series,
// time) given twice the first given is kept. The statements that write
// them mix runs (a snapshot gives one sample of each series, so sorted by
// series they alternate), over series new to the store and series that
// hold samples already.
func TestBatchCarriesRuns(t *testing.T) {
	ctx := context.Background()
	s := sqlitetest.New(t)
	at := func(sec int) time.Time { return time.Unix(1_700_000_000+int64(sec), 0).UTC() }
	sm := func(sec int, v float64) timeline.Sample { return timeline.Sample{Time: at(sec), Value: v} }
	held := timeline.NewSeries("held_total", timeline.NewLabels(map[string]string{"job": "a"}))
	// Many series new to the store, so that a statement carries several.
	var fresh []*timeline.Series
	for i := range 600 {
		fresh = append(fresh, timeline.NewSeries("fresh_total", timeline.NewLabels(map[string]string{"i": string(rune('a'+i%26)) + string(rune('a'+i/26))})))
	}

	begin := func(path string) *timeline.IngestRun {
		r := &timeline.IngestRun{Source: timeline.SourceMetrics, Path: path}
		if err := s.BeginRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	add := func(b timeline.Batch, r *timeline.IngestRun, sr *timeline.Series, samples ...timeline.Sample) {
		t.Helper()
		n, err := b.AddSamples(ctx, sr, samples)
		if err != nil {
			t.Fatal(err)
		}
		r.Lines += int64(len(samples))
		r.Records += int64(n)
		r.Duplicates += int64(len(samples) - n)
	}

	// Before: held_total at 1 and 2.
	r0 := begin("before")
	b0, err := s.Batch(ctx, r0.ID)
	if err != nil {
		t.Fatal(err)
	}
	add(b0, r0, held, sm(1, 10), sm(2, 20))
	if err := b0.Commit(ctx, r0); err != nil {
		t.Fatal(err)
	}

	r1 := begin("one")
	b, err := s.Batch(ctx, r1.ID)
	if err != nil {
		t.Fatal(err)
	}
	carrier, ok := b.(commit.Carrier)
	if !ok {
		t.Fatalf("the SQLite batch %T is no commit.Carrier", b)
	}
	// Run one: held at 2 (held before) and 3; every fresh series at 1.
	add(b, r1, held, sm(2, 21), sm(3, 31))
	for _, sr := range fresh {
		add(b, r1, sr, sm(1, 1))
	}
	// Run two: held at 3 (run one's) and 4, given twice; fresh at 1 (run
	// one's) and 2.
	// As commit.Periodic.Continue does: the batch's own run is named
	// before the next begins, so that Commit writes its progress too.
	carrier.ForRun(r1)
	r2 := &timeline.IngestRun{Source: timeline.SourceMetrics, Path: "two"}
	if err := carrier.BeginRun(ctx, r2); err != nil {
		t.Fatal(err)
	}
	add(b, r2, held, sm(3, 32), sm(4, 42), sm(4, 43))
	for _, sr := range fresh {
		add(b, r2, sr, sm(1, 2), sm(2, 2))
	}
	// Run three: held at 1 (held before) and 5; fresh at 3.
	r3 := &timeline.IngestRun{Source: timeline.SourceMetrics, Path: "three"}
	if err := carrier.BeginRun(ctx, r3); err != nil {
		t.Fatal(err)
	}
	add(b, r3, held, sm(1, 13), sm(5, 53))
	for _, sr := range fresh {
		add(b, r3, sr, sm(3, 3))
	}
	if err := b.Commit(ctx, r3); err != nil {
		t.Fatal(err)
	}

	type counts struct{ Lines, Records, Duplicates int64 }
	runs, err := s.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]counts{}
	for _, r := range runs {
		got[r.Path] = counts{r.Lines, r.Records, r.Duplicates}
	}
	f := int64(len(fresh))
	want := map[string]counts{
		"before": {2, 2, 0},
		"one":    {2 + f, 1 + f, 1},       // held at 2
		"two":    {3 + 2*f, 1 + f, 2 + f}, // held at 3, its own second 4, fresh at 1
		"three":  {2 + f, 1 + f, 1},       // held at 1
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("runs' counts (-want +got):\n%s", diff)
	}
	for name, r := range map[string]*timeline.IngestRun{"one": r1, "two": r2, "three": r3} {
		if c := (counts{r.Lines, r.Records, r.Duplicates}); c != want[name] {
			t.Errorf("run %s in memory: %+v, want %+v", name, c, want[name])
		}
	}

	values := map[int64]float64{}
	for x, err := range s.Samples(ctx, []int64{held.ID}, time.Time{}, time.Time{}) {
		if err != nil {
			t.Fatal(err)
		}
		values[x.Time.Unix()-1_700_000_000] = x.Value
	}
	if diff := cmp.Diff(map[int64]float64{1: 10, 2: 20, 3: 31, 4: 42, 5: 53}, values); diff != "" {
		t.Errorf("held_total (-want +got), the first given kept:\n%s", diff)
	}
	n := 0
	for x, err := range s.Samples(ctx, []int64{fresh[0].ID, fresh[len(fresh)-1].ID}, time.Time{}, time.Time{}) {
		if err != nil {
			t.Fatal(err)
		}
		if want := map[int64]float64{1: 1, 2: 2, 3: 3}[x.Time.Unix()-1_700_000_000]; x.Value != want {
			t.Errorf("fresh sample at %v = %v, want %v", x.Time, x.Value, want)
		}
		n++
	}
	if n != 6 {
		t.Errorf("read %d samples of two fresh series, want 6", n)
	}
}
