package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/redact"
)

func openTest(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "t.db"), Options{Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var testKey = bytes.Repeat([]byte{1}, redact.KeySize)

func collect(t *testing.T, s *Store, q timeline.Query) []*timeline.Record {
	t.Helper()
	var out []*timeline.Record
	for r, err := range s.Records(context.Background(), q) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestAddRecordJoinsStagesAndSkipsDuplicates(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	run := &timeline.IngestRun{Source: timeline.SourceAudit, Path: "audit.log"}
	if err := s.BeginRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 123456000, time.UTC)
	base := timeline.Record{
		Key: "audit\x00a1", Time: t0, Source: timeline.SourceAudit, Verb: "list", User: "system:node:n1",
		Object: timeline.ObjectRef{Resource: "pods", Namespace: "default"}, Stages: timeline.StageRequestReceived,
		Evidence: timeline.Evidence{Line: 1},
	}
	complete := base
	complete.Stages, complete.Code, complete.Latency = timeline.StageResponseComplete, 500, 250*time.Millisecond
	complete.Evidence.Line = 2

	b, err := s.Batch(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []timeline.AddResult
	for _, r := range []timeline.Record{base, complete, complete, base} {
		res, err := b.AddRecord(ctx, &r)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res)
	}
	if err := b.Commit(ctx, run); err != nil {
		t.Fatal(err)
	}
	want := []timeline.AddResult{timeline.Added, timeline.Merged, timeline.Duplicate, timeline.Duplicate}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got)\n%s", diff)
	}
	recs := collect(t, s, timeline.Query{})
	if len(recs) != 1 {
		t.Fatalf("got %d records, want 1", len(recs))
	}
	r := recs[0]
	if r.Code != 500 || r.Latency != 250*time.Millisecond || r.Stage() != "ResponseComplete" || !r.Time.Equal(t0) {
		t.Errorf("joined record = code %d latency %v stage %s time %v", r.Code, r.Latency, r.Stage(), r.Time)
	}
	if r.User != "system:node:n1" || r.Object.Resource != "pods" || r.Evidence.Run != run.ID {
		t.Errorf("joined record fields: %+v", r)
	}
}

func TestRollbackForgetsInternedStrings(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	run := &timeline.IngestRun{Source: timeline.SourceAudit, Path: "x"}
	if err := s.BeginRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	r := timeline.Record{Key: "k1", Time: time.Unix(1, 0), Source: timeline.SourceAudit, User: "fresh-user"}
	b, _ := s.Batch(ctx, run.ID)
	if _, err := b.AddRecord(ctx, &r); err != nil {
		t.Fatal(err)
	}
	if err := b.Rollback(); err != nil {
		t.Fatal(err)
	}
	b, _ = s.Batch(ctx, run.ID)
	if _, err := b.AddRecord(ctx, &r); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(ctx, nil); err != nil {
		t.Fatal(err)
	}
	recs := collect(t, s, timeline.Query{})
	if len(recs) != 1 || recs[0].User != "fresh-user" {
		t.Fatalf("after rollback and retry: %+v", recs)
	}
}

func TestVersionsAreRedactedAndIdempotent(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	run := &timeline.IngestRun{Source: timeline.SourceAudit, Path: "x"}
	if err := s.BeginRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	v := timeline.ObjectVersion{
		Object:          timeline.ObjectRef{Resource: "secrets", Kind: "Secret", Namespace: "ns", Name: "s", UID: "u1"},
		ResourceVersion: "7", Time: time.Unix(5, 0),
		Content: []byte(`{"kind":"Secret","metadata":{"name":"s"},"data":{"password":"aHVudGVyMg=="}}`),
	}
	for i, want := range []bool{true, false} {
		b, _ := s.Batch(ctx, run.ID)
		vv := v
		added, err := b.AddVersion(ctx, &vv)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if added != want {
			t.Errorf("add #%d: added = %v, want %v", i, added, want)
		}
	}
	var body string
	if err := s.db.QueryRow("SELECT body FROM content").Scan(&body); err != nil {
		t.Fatal(err)
	}
	if want := "hmac-sha256:"; !contains(body, want) || contains(body, "aHVudGVyMg==") {
		t.Errorf("stored content not redacted: %s", body)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestOpenRefusesForeignFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("these are not the tables you are looking for, padded out past one SQLite header of 100 bytes........"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, text, Options{}); !errors.Is(err, ErrNotTimeline) {
		t.Errorf("text file: err = %v, want ErrNotTimeline", err)
	}

	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite3", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE users (id INTEGER)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(ctx, other, Options{}); !errors.Is(err, ErrNotTimeline) {
		t.Errorf("other sqlite db: err = %v, want ErrNotTimeline", err)
	}

	good := filepath.Join(dir, "good.db")
	key := bytes.Repeat([]byte{7}, 32)
	s, err := Open(ctx, good, Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(ctx, good, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if fp, err := s.KeyFingerprint(ctx); err != nil || fp != redact.Fingerprint(key) {
		t.Errorf("key fingerprint = %q, %v; want %q", fp, err, redact.Fingerprint(key))
	}
	if v, err := s.IntegrityCheck(ctx); err != nil || v != "ok" {
		t.Errorf("integrity_check = %q, %v", v, err)
	}
}

func TestRunsAndGaps(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	run := &timeline.IngestRun{Source: timeline.SourceAudit, Path: "a.log", Size: 10}
	if err := s.BeginRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	b, _ := s.Batch(ctx, run.ID)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, off := range []time.Duration{0, time.Minute, 2 * time.Minute, 30 * time.Minute, 31 * time.Minute} {
		r := timeline.Record{Key: string(rune('a' + i)), Time: t0.Add(off), Source: timeline.SourceAudit}
		if _, err := b.AddRecord(ctx, &r); err != nil {
			t.Fatal(err)
		}
	}
	run.Records, run.Status, run.First, run.Last = 5, timeline.RunDone, t0, t0.Add(31*time.Minute)
	if err := b.Commit(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	runs, err := s.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]timeline.IngestRun{*run}, runs, cmpopts.EquateApproxTime(time.Microsecond)); diff != "" {
		t.Errorf("runs (-want +got)\n%s", diff)
	}
	gaps, err := s.Gaps(ctx, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := []timeline.Gap{{Source: timeline.SourceAudit, Start: t0.Add(2 * time.Minute), End: t0.Add(30 * time.Minute)}}
	if diff := cmp.Diff(want, gaps); diff != "" {
		t.Errorf("gaps (-want +got)\n%s", diff)
	}
	first, last, err := s.Bounds(ctx)
	if err != nil || !first.Equal(t0) || !last.Equal(t0.Add(31*time.Minute)) {
		t.Errorf("bounds = %v %v %v", first, last, err)
	}
}

func TestCursorCommitsWithTheBatch(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	run := &timeline.IngestRun{Source: timeline.SourceObject, Path: "cluster"}
	if err := s.BeginRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	b, _ := s.Batch(ctx, run.ID)
	if err := b.SetCursor(ctx, "/v1/pods", "41"); err != nil {
		t.Fatal(err)
	}
	b.Rollback()
	if rv, err := s.Cursor(ctx, "/v1/pods"); err != nil || rv != "" {
		t.Fatalf("after rollback: cursor %q, %v", rv, err)
	}
	for _, rv := range []string{"42", "43"} {
		b, _ = s.Batch(ctx, run.ID)
		if err := b.SetCursor(ctx, "/v1/pods", rv); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	if rv, err := s.Cursor(ctx, "/v1/pods"); err != nil || rv != "43" {
		t.Fatalf("cursor %q, %v; want 43", rv, err)
	}
}

func TestCommitSurvivesACancelledContext(t *testing.T) {
	s := openTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	run := &timeline.IngestRun{Source: timeline.SourceAudit, Path: "x"}
	if err := s.BeginRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	b, err := s.Batch(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddRecord(ctx, &timeline.Record{Key: "k", Time: time.Unix(1, 0), Source: timeline.SourceAudit}); err != nil {
		t.Fatal(err)
	}
	cancel() // Ctrl-C arrives
	if err := b.Commit(ctx, run); err != nil {
		t.Fatalf("commit after cancel: %v", err)
	}
	if n := len(collect(t, s, timeline.Query{})); n != 1 {
		t.Errorf("%d records after an interrupted commit, want 1", n)
	}
}

func TestVersionsAtAnInstant(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	run := &timeline.IngestRun{Source: timeline.SourceObject, Path: "x"}
	if err := s.BeginRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	b, _ := s.Batch(ctx, run.ID)
	add := func(name, uid, rv string, at time.Duration, data string) {
		v := timeline.ObjectVersion{Object: timeline.ObjectRef{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespace: "ml", Name: name, UID: uid},
			ResourceVersion: rv, Time: t0.Add(at), Content: []byte(`{"kind":"ConfigMap","data":{"k":"` + data + `"}}`)}
		if _, err := b.AddVersion(ctx, &v); err != nil {
			t.Fatal(err)
		}
	}
	add("a", "ua", "1", 0, "one")
	add("a", "ua", "5", 10*time.Minute, "two")
	add("b", "ub", "2", time.Minute, "x")
	add("c", "", "", 2*time.Minute, "no-uid") // a create's request body
	if err := b.Commit(ctx, nil); err != nil {
		t.Fatal(err)
	}
	names := func(vs []timeline.ObjectVersion) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.Object.Name+"@"+v.ResourceVersion)
		}
		return out
	}
	for _, tc := range []struct {
		q    timeline.VersionQuery
		want []string
	}{
		{timeline.VersionQuery{Resource: "configmaps"}, []string{"a@5", "b@2", "c@"}},
		{timeline.VersionQuery{Resource: "configmaps", At: t0.Add(5 * time.Minute)}, []string{"a@1", "b@2", "c@"}},
		{timeline.VersionQuery{Resource: "configmaps", At: t0.Add(30 * time.Second)}, []string{"a@1"}},
		{timeline.VersionQuery{Name: "a", History: true}, []string{"a@1", "a@5"}},
		{timeline.VersionQuery{Resource: "configmaps", At: t0.Add(30 * time.Second), OrFirstAfter: true}, []string{"a@1", "b@2", "c@"}},
		{timeline.VersionQuery{Resource: "configmaps", At: t0.Add(-time.Hour), OrFirstAfter: true}, []string{"a@1", "b@2", "c@"}},
		{timeline.VersionQuery{Resource: "pods"}, nil},
		{timeline.VersionQuery{Namespace: "nope"}, nil},
	} {
		got, err := s.Versions(ctx, tc.q)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, names(got)); diff != "" {
			t.Errorf("%+v (-want +got)\n%s", tc.q, diff)
		}
	}
}

// TestStagesJoinWithInsertsBetween guards the classification of a joined
// stage when other rows were inserted between the two stages of a request
// (a new dictionary string, an object version): it once relied on
// last_insert_rowid, which those inserts move.
func TestStagesJoinWithInsertsBetween(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	run := &timeline.IngestRun{Source: timeline.SourceAudit, Path: "x"}
	if err := s.BeginRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	b, _ := s.Batch(ctx, run.ID)
	t0 := time.Unix(100, 0)
	first := timeline.Record{Key: "k", Time: t0, Source: timeline.SourceAudit, Stages: timeline.StageRequestReceived}
	second := first
	second.Stages, second.Code, second.UserAgent = timeline.StageResponseComplete, 200, "a-new-user-agent"
	v := timeline.ObjectVersion{Object: timeline.ObjectRef{Resource: "pods", Name: "p", UID: "u"}, ResourceVersion: "1", Time: t0, Content: []byte(`{"kind":"Pod"}`)}
	var got []timeline.AddResult
	r, _ := b.AddRecord(ctx, &first)
	got = append(got, r)
	if _, err := b.AddVersion(ctx, &v); err != nil {
		t.Fatal(err)
	}
	r, _ = b.AddRecord(ctx, &second)
	got = append(got, r)
	other := timeline.Record{Key: "k2", Time: t0, Source: timeline.SourceAudit, Stages: timeline.StageResponseComplete}
	r, _ = b.AddRecord(ctx, &other)
	got = append(got, r)
	r, _ = b.AddRecord(ctx, &second)
	got = append(got, r)
	b.Commit(ctx, nil)
	want := []timeline.AddResult{timeline.Added, timeline.Merged, timeline.Added, timeline.Duplicate}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}
