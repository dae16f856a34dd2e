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

// A version prepared ahead (Store.PrepareVersion) is stored as prepared
// only by the store that prepared it, from the content it was prepared
// from: another store's preparation, or content changed since, is redacted
// again, so nothing unredacted can be slipped past the writer.
func TestPreparedVersions(t *testing.T) {
	ctx := context.Background()
	secret := func(pw string) timeline.ObjectVersion {
		return timeline.ObjectVersion{
			Object:          timeline.ObjectRef{Resource: "secrets", Kind: "Secret", Namespace: "ns", Name: "s", UID: "u1"},
			ResourceVersion: pw, Time: time.Unix(5, 0),
			Content: []byte(`{"kind":"Secret","metadata":{"name":"s"},"data":{"password":"` + pw + `"}}`),
		}
	}
	// Another store, without a key: what it prepared says "redacted (no
	// key)" where this store's hash is.
	other, err := Open(ctx, filepath.Join(t.TempDir(), "other.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, tt := range []struct {
		name string
		prep func(v *timeline.ObjectVersion)
	}{
		{"prepared by this store", func(v *timeline.ObjectVersion) {}},
		{"prepared by another store", func(v *timeline.ObjectVersion) { other.PrepareVersion(v) }},
		{"content changed after", func(v *timeline.ObjectVersion) {
			v.Content = []byte(`{"kind":"Secret","metadata":{"name":"s"},"type":"changed","data":{"password":"c2VjcmV0Mw=="}}`)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := openTest(t)
			run := &timeline.IngestRun{Source: timeline.SourceAudit, Path: "x"}
			if err := s.BeginRun(ctx, run); err != nil {
				t.Fatal(err)
			}
			v := secret("aHVudGVyMg==")
			s.PrepareVersion(&v)
			if v.Prepared == nil {
				t.Fatal("PrepareVersion prepared nothing")
			}
			tt.prep(&v)
			b, err := s.Batch(ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.AddVersion(ctx, &v); err != nil {
				t.Fatal(err)
			}
			if err := b.Commit(ctx, nil); err != nil {
				t.Fatal(err)
			}
			var body string
			if err := s.db.QueryRow("SELECT body FROM content").Scan(&body); err != nil {
				t.Fatal(err)
			}
			if !contains(body, "hmac-sha256:") || contains(body, "aHVudGVyMg==") || contains(body, "c2VjcmV0Mw==") {
				t.Errorf("stored content not redacted: %s", body)
			}
			if tt.name == "content changed after" && !contains(body, `"type":"changed"`) {
				t.Errorf("stored %s, not the content as changed", body)
			}
			if want := string(v.Content); body != want {
				t.Errorf("stored %s, the version says %s", body, want)
			}
		})
	}
}
