package clickhouse_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
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
		run := &timeline.IngestRun{Source: timeline.SourceObject, Path: "dump"}
		if err := s.BeginRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		b, err := s.Batch(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
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
