package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

// addOne adds r in a batch of its own and returns the outcome.
func addOne(t *testing.T, s *Store, r timeline.Record) timeline.AddResult {
	t.Helper()
	ctx := context.Background()
	b, err := s.Batch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.AddRecord(ctx, &r)
	if err != nil {
		b.Rollback()
		t.Fatal(err)
	}
	if err := b.Commit(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return res
}

// A store remembers the requests it added that are still open, and joins
// their later stages without reading the database. Another process that
// writes in between makes it forget: its join must not be counted again.
func TestOpenRequestsAnotherWriter(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "t.db")
	open := func() *Store {
		s, err := Open(ctx, file, Options{Key: testKey})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	if _, err := a.db.ExecContext(ctx, `INSERT INTO ingest_run (id, source, path, started_ns, status) VALUES (1, 'audit', 'x', 0, 'done')`); err != nil {
		t.Fatal(err)
	}
	pod := timeline.ObjectRef{Version: "v1", Resource: "pods", Namespace: "ml", Name: "p1"}
	rr := stage("x", 0, timeline.StageRequestReceived, "get", pod, 0, 0)
	rc := stage("x", 0, timeline.StageResponseComplete, "get", pod, 200, 3*time.Millisecond)
	rr.Evidence.Run, rc.Evidence.Run = 1, 1

	got := []timeline.AddResult{
		addOne(t, a, rr), // open in a's cache
		addOne(t, b, rc), // b joins it through the database
		addOne(t, a, rc), // a must see it held: a duplicate
	}
	want := []timeline.AddResult{timeline.Added, timeline.Merged, timeline.Duplicate}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	st := requestStats(t, a, rollT0.Add(-time.Hour), rollT0.Add(time.Hour))
	if len(st.Stats) != 1 || st.Stats[0].Row.Count != 1 {
		t.Errorf("the request counts %+v in req_stat, want once", st.Stats)
	}

	// Within one writer the cache answers, with the same outcomes as the
	// database: a second stage joins, the same stage again is a duplicate,
	// another request under the key is a conflict.
	w := stage("w", time.Second, timeline.StageResponseStarted, "watch", pod, 200, time.Millisecond)
	wEnd := stage("w", time.Second, timeline.StageResponseComplete, "watch", pod, 200, time.Minute)
	other := stage("w", time.Second, timeline.StageResponseComplete, "delete", pod, 200, time.Millisecond)
	for _, r := range []*timeline.Record{&w, &wEnd, &other} {
		r.Evidence.Run = 1
	}
	got = []timeline.AddResult{addOne(t, a, w), addOne(t, a, w), addOne(t, a, other), addOne(t, a, wEnd), addOne(t, a, wEnd)}
	want = []timeline.AddResult{timeline.Added, timeline.Duplicate, timeline.Conflict, timeline.Merged, timeline.Duplicate}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes in one writer (-want +got):\n%s", diff)
	}
}
