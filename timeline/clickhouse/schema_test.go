package clickhouse_test

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/clickhouse"
	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
)

// firstShard is a test database's DSN, its name, and a connection to its
// first shard, where a test makes tables as an older faultline did.
func firstShard(t *testing.T) (dsn, db string, c ch.Conn) {
	t.Helper()
	dsn = clickhousetest.DSN(t)
	u, _ := url.Parse(dsn)
	c, err := ch.Open(&ch.Options{Addr: []string{u.Host}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return dsn, u.Path[1:], c
}

// TestOpenRefusesAnOlderSchema: a table made by another version, without a
// column this one writes, is named in a SchemaError at Open, not found out
// by the first query that reads the column.
func TestOpenRefusesAnOlderSchema(t *testing.T) {
	dsn, db, c := firstShard(t)
	ctx := context.Background()
	for _, q := range []string{
		"CREATE DATABASE " + db,
		"CREATE TABLE " + db + ".watch_cursor_local (name String, updated_ns Int64) ENGINE = ReplacingMergeTree(updated_ns) ORDER BY name",
	} {
		if err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s, err := clickhouse.Open(ctx, dsn, clickhouse.Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded on a table without resource_version")
	}
	var se *clickhouse.SchemaError
	if !errors.As(err, &se) || se.Table != "watch_cursor_local" || se.Column != "resource_version" || se.Shard != 1 {
		t.Fatalf("Open: %v (%#v), want a SchemaError for watch_cursor_local.resource_version on shard 1", err, se)
	}
}

// TestOpenAddsTheRunWindow: a database made before runs kept their window
// (ingest audit --since/--until) gets the columns at Open, on the local
// table and the Distributed one; its old runs read as runs of no window,
// and a new run keeps its own.
func TestOpenAddsTheRunWindow(t *testing.T) {
	dsn, db, c := firstShard(t)
	ctx := context.Background()
	const older = `id Int64, source String, path String, size Int64, sha256 String, started_ns Int64,
		finished_ns Int64, first_ns Int64, last_ns Int64, lines Int64, records Int64, merged Int64,
		duplicates Int64, conflicts Int64, versions Int64, bad_lines Int64, status String,
		error String, updated_ns Int64`
	for _, q := range []string{
		"CREATE DATABASE " + db,
		"CREATE TABLE " + db + ".ingest_run_local (" + older + ") ENGINE = ReplacingMergeTree(updated_ns) ORDER BY id",
		"INSERT INTO " + db + ".ingest_run_local (id, source, path, size, sha256, started_ns, finished_ns, first_ns, last_ns," +
			" lines, records, merged, duplicates, conflicts, versions, bad_lines, status, error, updated_ns)" +
			" SELECT 1, 'audit', '/var/log/audit.log', 10, 'ab', 1, 2, 3, 4, 5, 5, 0, 0, 0, 0, 0, 'done', '', 1",
	} {
		if err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s, err := clickhouse.Open(ctx, dsn, clickhouse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	since, until := time.Date(2026, 5, 1, 2, 0, 0, 0, time.UTC), time.Date(2026, 5, 1, 4, 0, 0, 0, time.UTC)
	run := &timeline.IngestRun{Source: timeline.SourceAudit, Path: "/var/log/audit-2.log", Since: since, Until: until}
	if err := s.BeginRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	run.Outside, run.Status = 42, timeline.RunDone
	if err := s.FinishRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	runs, err := s.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("%d runs, want the old one and the new one", len(runs))
	}
	if r := runs[0]; !r.Since.IsZero() || !r.Until.IsZero() || r.Outside != 0 || r.Records != 5 {
		t.Errorf("the old run: window [%s, %s), %d outside, %d records; want no window, 0, 5", r.Since, r.Until, r.Outside, r.Records)
	}
	if r := runs[1]; !r.Since.Equal(since) || !r.Until.Equal(until) || r.Outside != 42 {
		t.Errorf("the new run: window [%s, %s), %d outside; want [%s, %s), 42", r.Since, r.Until, r.Outside, since, until)
	}
}
