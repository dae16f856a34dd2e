package clickhouse_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/clickhouse"
	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
)

// TestBetterSightingBesideWorse: a version seen again, better (a write
// seen after a read of it, from an earlier time), is written as a second
// row of its key; until a merge, both rows are held. A read without a
// span chooses between them in Go, one with a span by FINAL: both give
// the better sighting once, and the span applies to it, not to the row it
// replaced.
func TestBetterSightingBesideWorse(t *testing.T) {
	ctx := context.Background()
	s := clickhousetest.New(t)
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	pod := func(seen timeline.Sighting, at time.Time) *timeline.ObjectVersion {
		return &timeline.ObjectVersion{Object: timeline.ObjectRef{Resource: "pods", Kind: "Pod", Namespace: "ml", Name: "a",
			UID: "u1", Version: "v1"}, ResourceVersion: "7", Time: at, Seen: seen, Content: []byte(`{"kind":"Pod"}`)}
	}
	other := &timeline.ObjectVersion{Object: timeline.ObjectRef{Resource: "pods", Kind: "Pod", Namespace: "ml", Name: "b",
		UID: "u2", Version: "v1"}, ResourceVersion: "8", Time: t0.Add(30 * time.Second), Content: []byte(`{"kind":"Pod"}`)}
	for _, vs := range [][]*timeline.ObjectVersion{
		{pod(timeline.SeenRead, t0.Add(time.Minute)), other},
		{pod(timeline.SeenWritten, t0)},
	} {
		b, run := objectBatch(t, s)
		for _, v := range vs {
			if _, err := b.AddVersion(ctx, v); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	type seen struct {
		Name string
		Seen timeline.Sighting
		Time time.Time
	}
	read := func(q timeline.VersionQuery) []seen {
		vs, err := s.Versions(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []seen
		for _, v := range vs {
			out = append(out, seen{v.Object.Name, v.Seen, v.Time})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		q    timeline.VersionQuery
		want []seen
	}{
		{"no span", timeline.VersionQuery{Resource: "pods", History: true, ByTime: true},
			[]seen{{"a", timeline.SeenWritten, t0}, {"b", timeline.SeenWritten, t0.Add(30 * time.Second)}}},
		{"a span with the worse row only", timeline.VersionQuery{Resource: "pods", History: true, ByTime: true,
			Since: t0.Add(time.Second)}, []seen{{"b", timeline.SeenWritten, t0.Add(30 * time.Second)}}},
		{"a span with the better row", timeline.VersionQuery{Resource: "pods", History: true, ByTime: true,
			Until: t0.Add(time.Second)}, []seen{{"a", timeline.SeenWritten, t0}}},
	} {
		if diff := cmp.Diff(tc.want, read(tc.q), cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
			t.Errorf("%s (-want +got)\n%s", tc.name, diff)
		}
	}
}

// TestVersionsWaitForTheCommit: the versions of a batch are written at its
// commit, not at each flush of its records (one part a shard per commit,
// not one per 20,000 lines), and a batch rolled back after flushes leaves
// none of them written or claimed held: the same versions in a later
// batch are new.
func TestVersionsWaitForTheCommit(t *testing.T) {
	clickhouse.SetFlushAt(t, 4)
	ctx := context.Background()
	s := clickhousetest.New(t)
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	version := func(i int) *timeline.ObjectVersion {
		return &timeline.ObjectVersion{Object: timeline.ObjectRef{Resource: "pods", Kind: "Pod", Namespace: "ml",
			Name: fmt.Sprintf("p%d", i), UID: fmt.Sprintf("u%d", i), Version: "v1"}, ResourceVersion: fmt.Sprint(100 + i),
			Time: t0.Add(time.Duration(i) * time.Second), Seen: timeline.SeenWritten, Content: []byte(`{"kind":"Pod"}`)}
	}
	record := func(i int) *timeline.Record {
		return &timeline.Record{Key: fmt.Sprintf("k%d", i), Source: timeline.SourceAudit, Time: t0.Add(time.Duration(i) * time.Second),
			Verb: "get", Object: timeline.ObjectRef{Resource: "pods", Namespace: "ml", Name: fmt.Sprintf("p%d", i)}, Code: 200}
	}
	count := func() int {
		t.Helper()
		vs, err := s.Versions(ctx, timeline.VersionQuery{Resource: "pods", History: true})
		if err != nil {
			t.Fatal(err)
		}
		return len(vs)
	}
	// fill adds three versions between 15 records (three flushes) and
	// reports how many versions it found new.
	fill := func(b timeline.Batch) int {
		t.Helper()
		added := 0
		for i := range 15 {
			if _, err := b.AddRecord(ctx, record(i)); err != nil {
				t.Fatal(err)
			}
			if i%5 == 0 {
				isNew, err := b.AddVersion(ctx, version(i))
				if err != nil {
					t.Fatal(err)
				}
				if isNew {
					added++
				}
			}
		}
		return added
	}
	batch := func() (timeline.Batch, *timeline.IngestRun) { return objectBatch(t, s) }

	b, _ := batch()
	if n := fill(b); n != 3 {
		t.Fatalf("first batch: %d versions new, want 3", n)
	}
	if n := count(); n != 0 {
		t.Errorf("after three flushes, before the commit: %d versions written, want 0", n)
	}
	if err := b.Rollback(); err != nil {
		t.Fatal(err)
	}

	b, run := batch()
	if n := fill(b); n != 3 {
		t.Errorf("after a rollback: %d versions new, want 3 (the rolled-back batch's were claimed held)", n)
	}
	if err := b.Commit(ctx, run); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 3 {
		t.Errorf("after the commit: %d versions, want 3", n)
	}

	b, run = batch()
	if n := fill(b); n != 0 {
		t.Errorf("a third batch: %d versions new, want 0 (held)", n)
	}
	if err := b.Commit(ctx, run); err != nil {
		t.Fatal(err)
	}
}

// objectBatch begins a run of an object dump on s and a batch of it.
func objectBatch(t *testing.T, s timeline.Store) (timeline.Batch, *timeline.IngestRun) {
	t.Helper()
	ctx := context.Background()
	run := &timeline.IngestRun{Source: timeline.SourceObject, Path: "dump"}
	if err := s.BeginRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	b, err := s.Batch(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	return b, run
}
