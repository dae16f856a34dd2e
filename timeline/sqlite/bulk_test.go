package sqlite

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

func recordIndexes(t *testing.T, s *Store) []string {
	t.Helper()
	rows, err := s.db.Query(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'record' AND sql IS NOT NULL ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		out = append(out, n)
	}
	return out
}

func TestBulkLoad(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "t.db")
	s, err := Open(ctx, file, Options{Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	all := recordIndexes(t, s)
	if !slices.Contains(all, "record_user") {
		t.Fatalf("indexes %v: no record_user", all)
	}
	if _, err := s.BulkLoad(ctx); err != nil { // never ended: killed
		t.Fatal(err)
	}
	if diff := gocmp.Diff([]string{"record_key_whole", "record_time_key"}, recordIndexes(t, s)); diff != "" {
		t.Errorf("during a bulk load (-want +got):\n%s", diff)
	}
	pod := timeline.ObjectRef{Version: "v1", Resource: "pods", Namespace: "ml", Name: "p1"}
	ingestRecords(t, s, []timeline.Record{stage("a", 0, timeline.StageResponseComplete, "get", pod, 200, time.Millisecond)}, 0)

	// Killed here: the next bulk load finds the timeline holds records and
	// the indexes are missing: it builds them and loads as an append.
	s.Close()
	s, err = Open(ctx, file, Options{Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	end2, err := s.BulkLoad(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(all, recordIndexes(t, s)); diff != "" {
		t.Errorf("after a killed load, the next (-want +got):\n%s", diff)
	}
	if err := end2(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(all, recordIndexes(t, s)); diff != "" {
		t.Errorf("at the end (-want +got):\n%s", diff)
	}
	if got := collect(t, s, timeline.Query{}); len(got) != 1 {
		t.Errorf("%d records, want 1", len(got))
	}
	var ok string
	if err := s.db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Errorf("integrity_check: %q, %v", ok, err)
	}
}
