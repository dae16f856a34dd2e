package clickhouse_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/clickhouse"
	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// TestFailedCopy: a read whose filter keeps failed requests only reads them
// from their copy and answers as a read of every record does: every
// version is there (a request joined across batches, with its early stage
// failed or not), and the current one is chosen from record's rewrites. A
// copy that misses rows in a bucket is not read there; a database made
// before the copy existed gets none, and its reads stay on record.
func TestFailedCopy(t *testing.T) {
	ctx := context.Background()
	dsn := clickhousetest.DSN(t)
	logs := &timelinetest.SyncBuffer{}
	open := func() *clickhouse.Store {
		s, err := clickhouse.Open(ctx, dsn, clickhouse.Options{
			Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s := open()
	if !s.KeepsFailed() {
		t.Fatal("a new database keeps no copy of the failed requests")
	}
	if err := s.StopMerges(ctx); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	mem := &timelinetest.Mem{}
	var first, second []timeline.Record
	for i := range 40 {
		r := timeline.Record{Key: fmt.Sprint("req-", i), AuditID: fmt.Sprint("a-", i), Time: t0.Add(time.Duration(i) * 3 * time.Second),
			Source: timeline.SourceAudit, Verb: []string{"get", "list"}[i%2], Code: []int{200, 503, 429, 404, 500}[i%5],
			Stages: timeline.StageResponseComplete}
		// Joined across batches: the final stage comes in the second,
		// after an early stage with no code (1) or with the same code
		// (2, a request that failed as it started).
		second = append(second, r)
		switch i % 4 {
		case 1:
			early := r
			early.Code, early.Stages = 0, timeline.StageRequestReceived
			first = append(first, early)
			r.Stages |= early.Stages
		case 2:
			early := r
			early.Stages = timeline.StageResponseStarted
			first = append(first, early)
			r.Stages |= early.Stages
		}
		mem.Add(&r)
	}
	timelinetest.AddRecords(t, s, first...)
	timelinetest.AddRecords(t, s, second...)
	logs.Take()
	queries := map[string]string{
		"code >= 500":             `code >= 500`,
		"list and 503":            `verb == "list" && code == 503`,
		"in":                      `code in [429, 404]`,
		"or":                      `code == 429 || (code >= 500 && verb == "get")`,
		"started and failed":      `code >= 400 && stage == "ResponseComplete"`,
		"failed, residual":        `code >= 400 && annotations["x"] == ""`,
		"not failed (no copy)":    `code < 400`,
		"negated (no copy known)": `!(code < 400)`,
	}
	check := func(label string, wantCopy bool) {
		t.Helper()
		for _, rows := range []int64{1, 3, 1 << 16} {
			clickhouse.SetChunkRows(t, rows)
			for name, src := range queries {
				q := timeline.Query{Where: timelinetest.MustFilter(t, src)}
				var want []string
				for r := range mem.Records(ctx, q) {
					want = append(want, r.AuditID)
				}
				got := timelinetest.Labels(t, s, q)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s, chunks of %d rows, %s (-mem +clickhouse)\n%s", label, rows, name, diff)
				}
				fromCopy := false // a read of records, not a count
				for _, line := range strings.Split(logs.Take(), "\n") {
					fromCopy = fromCopy || strings.Contains(line, `query="SELECT id, `) && strings.Contains(line, " FROM failed WHERE")
				}
				if want := wantCopy && !strings.Contains(name, "no copy"); fromCopy != want {
					t.Errorf("%s, chunks of %d rows, %s: read from the copy %v, want %v", label, rows, name, fromCopy, want)
				}
			}
		}
	}
	check("copy whole", true)

	// A copy that lost its rows is not read: its counts differ.
	if err := s.OnShards(ctx, "TRUNCATE TABLE %s.failed_local"); err != nil {
		t.Fatal(err)
	}
	check("copy emptied", false)

	// A database whose record table was made without the copy (by an
	// older faultline) gets none.
	if err := s.OnShards(ctx, "DROP TABLE %s.failed_mv"); err != nil {
		t.Fatal(err)
	}
	for _, tab := range []string{"failed", "failed_local"} {
		if err := s.OnShards(ctx, "DROP TABLE %s."+tab); err != nil {
			t.Fatal(err)
		}
	}
	s = open()
	if s.KeepsFailed() {
		t.Fatal("a database made without the copy got one")
	}
	logs.Take()
	check("database made without the copy", false)
	if n, err := s.QueryString(ctx, "SELECT toString(count()) FROM system.tables WHERE database = currentDatabase() AND name LIKE 'failed%'"); err != nil || n != "0" {
		t.Errorf("tables of the copy in a database made without it: %s (%v), want 0", n, err)
	}
}
