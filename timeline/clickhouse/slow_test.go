package clickhouse_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/clickhouse"
	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// loggedOpener returns a function that opens the test's database, each
// store closed when the test ends, and the buffer where every store it
// opens logs its queries.
func loggedOpener(t *testing.T) (func() *clickhouse.Store, *timelinetest.SyncBuffer) {
	dsn := clickhousetest.DSN(t)
	logs := &timelinetest.SyncBuffer{}
	return func() *clickhouse.Store {
		s, err := clickhouse.Open(context.Background(), dsn, clickhouse.Options{
			Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}, logs
}

// TestSlowTable: a new database reads its slow requests from their table
// (req_slow), not from record, and answers as SQLite does, with every
// version of a request written unmerged (stages joined across batches, one
// request slow until a later stage made it fast); once a faultline older
// than the table wrote into it, and in a database whose record table was
// made before the table (which gets none), they are read from record, with
// the same answers.
func TestSlowTable(t *testing.T) {
	ctx := context.Background()
	open, logs := loggedOpener(t)
	s := open()
	if !s.KeepsSlow() {
		t.Fatal("a new database keeps no table of slow requests")
	}
	if err := s.OnShards(ctx, "SYSTEM STOP MERGES %s.req_slow_local"); err != nil {
		t.Fatal(err)
	}
	lite := sqlitetest.New(t)
	recs := rollupRecords(t)
	ingestRecords(t, lite, recs, len(recs))
	ingestRecords(t, s, recs, 1)
	want, err := lite.SlowRequests(ctx, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 4 {
		t.Fatalf("SQLite holds %d slow requests; the comparison needs more", len(want))
	}
	check := func(name, table string) {
		t.Helper()
		logs.Take()
		got, err := s.SlowRequests(ctx, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: ClickHouse's slow requests differ from SQLite's (-sqlite +clickhouse):\n%s", name, diff)
		}
		if read := logs.Take(); !strings.Contains(read, "FROM "+table+" WHERE") {
			t.Errorf("%s: the slow requests were not read from %s:\n%s", name, table, read)
		}
	}
	check("new database", "req_slow")

	// An older faultline writes into it: its run has records the table
	// lacks, and the slow requests are read from record.
	late := func(name string, at time.Duration) []timeline.Record {
		return []timeline.Record{stage(name, at, timeline.StageResponseComplete, "update",
			timeline.ObjectRef{Version: "v1", Resource: "pods", Namespace: "ml", Name: name}, 200, 3*time.Second)}
	}
	func() {
		clickhouse.AsOlderWriter(t)
		ingestRecords(t, lite, late("older", 9*time.Minute), 1)
		ingestRecords(t, s, late("older", 9*time.Minute), 1)
	}()
	if want, err = lite.SlowRequests(ctx, time.Time{}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	check("written to by an older faultline", "record")

	// A database made before the table gets none, and reads record.
	if err := s.OnShards(ctx, "DROP TABLE %s.req_slow", "DROP TABLE %s.req_slow_local"); err != nil {
		t.Fatal(err)
	}
	s = open()
	if s.KeepsSlow() {
		t.Fatal("a database made without the slow table got one")
	}
	check("database made without the table", "record")
	if n, err := s.QueryString(ctx, "SELECT toString(count()) FROM system.tables WHERE database = currentDatabase() AND name LIKE 'req_slow%'"); err != nil || n != "0" {
		t.Errorf("tables of slow requests in a database made without them: %s (%v), want 0", n, err)
	}
	// Its writer writes none either.
	ingestRecords(t, lite, late("late", 10*time.Minute), 1)
	ingestRecords(t, s, late("late", 10*time.Minute), 1)
	if want, err = lite.SlowRequests(ctx, time.Time{}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	check("written to after", "record")
}
