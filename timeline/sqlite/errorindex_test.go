package sqlite

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

// TestMigrationCoversErrors opens a timeline of schema 15 (record_error on
// (code, time_ns) alone, and a bulk load killed with it among its dropped
// indexes): migration 0016 builds record_error over the whole failed rows,
// forgets the killed load's old statement for it and keeps the others, and
// the failures read the same before and after.
func TestMigrationCoversErrors(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "t.db")
	s, err := Open(ctx, file, Options{Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	ingestRecords(t, s, slowStages(rand.New(rand.NewPCG(9, 9)), 80), 0)
	failed, err := timeline.CompileFilter(`code >= 400`)
	if err != nil {
		t.Fatal(err)
	}
	read := func(s *Store) []timeline.Record {
		t.Helper()
		var out []timeline.Record
		for r, err := range s.Records(ctx, timeline.Query{Where: failed}) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, *r)
		}
		return out
	}
	want := read(s)
	if len(want) == 0 {
		t.Fatal("no failed requests")
	}
	const old = "CREATE INDEX record_error ON record (code, time_ns) WHERE code >= 400"
	s = reopenAfter(t, s, file, `DROP INDEX record_error; `+old+`;
		INSERT INTO meta (k, v) VALUES ('bulk_indexes', '{"record_error": "`+old+`", "record_user": "CREATE INDEX record_user ON record (user, time_ns)"}');
		DROP INDEX record_error; DROP INDEX record_user;
		PRAGMA user_version = 15;`)
	if diff := gocmp.Diff(want, read(s)); diff != "" {
		t.Errorf("failed requests after the migration (-before +after)\n%s", diff)
	}
	if left := uncovered(t, s); len(left) > 0 {
		t.Errorf("the migrated record_error leaves out %v", left)
	}
	idx, err := bulkPending(ctx, s.db)
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(map[string]string{"record_user": "CREATE INDEX record_user ON record (user, time_ns)"}, idx); diff != "" {
		t.Errorf("bulk_indexes (-want +got)\n%s", diff)
	}
	if msg, err := s.IntegrityCheck(ctx); err != nil || msg != "ok" {
		t.Errorf("integrity_check: %q, %v", msg, err)
	}
}

// TestErrorIndexCoversRecord fails when record gains a column that
// record_error leaves out: a read of failures would seek every row again.
func TestErrorIndexCoversRecord(t *testing.T) {
	if left := uncovered(t, openTest(t)); len(left) > 0 {
		t.Errorf("record_error leaves out %v", left)
	}
}

// uncovered returns the columns of record (but its id) that record_error
// does not hold.
func uncovered(t *testing.T, s *Store) map[string]bool {
	t.Helper()
	cols := map[string]bool{}
	for _, c := range columnNames(t, s, `SELECT name FROM pragma_table_info('record') WHERE pk = 0`) {
		cols[c] = true
	}
	for _, c := range columnNames(t, s, `SELECT name FROM pragma_index_info('record_error')`) {
		delete(cols, c)
	}
	return cols
}

// reopenAfter runs sql on s (which it closes), as a timeline of an older
// schema would hold it, and opens file again: the migrations run.
func reopenAfter(t *testing.T, s *Store, file, sql string) *Store {
	t.Helper()
	ctx := context.Background()
	if _, err := s.db.ExecContext(ctx, sql); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err := Open(ctx, file, Options{Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// columnNames returns the one column of query's rows.
func columnNames(t *testing.T, s *Store, query string) []string {
	t.Helper()
	rows, err := s.db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
