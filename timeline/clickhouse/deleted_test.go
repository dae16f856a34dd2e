package clickhouse_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/clickhouse"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// TestDeletedCopy: a read whose filter keeps deletions only reads them
// from their copy and answers as a read of every record does, with every
// version of a request written unmerged (stages joined across batches, the
// last found by a lookup after the store was opened again); a copy that
// lost rows is not read where it lost them; a database made before the
// copy gets none, and reads record.
func TestDeletedCopy(t *testing.T) {
	ctx := context.Background()
	open, logs := loggedOpener(t)
	s := open()
	if !s.KeepsDeleted() {
		t.Fatal("a new database keeps no copy of the deletions")
	}
	if err := s.StopMerges(ctx); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	mem := &timelinetest.Mem{}
	var first, second, third []timeline.Record
	for i := range 40 {
		r := timeline.Record{Key: fmt.Sprint("req-", i), AuditID: fmt.Sprint("a-", i), Time: t0.Add(time.Duration(i) * 3 * time.Second),
			Source: timeline.SourceAudit, Verb: []string{"delete", "get", "deletecollection", "update", "delete"}[i%5],
			Object: timeline.ObjectRef{Version: "v1", Resource: []string{"secrets", "configmaps"}[i%2], Namespace: "ml", Name: fmt.Sprint("o-", i%7)},
			Code:   []int{200, 404, 500}[i%3], Stages: timeline.StageResponseComplete}
		// Joined across batches: the final stage in the second batch
		// (a third of them), or in the third, after the store was opened
		// again (a lookup finds the rows held).
		switch i % 3 {
		case 1, 2:
			early := r
			early.Code, early.Stages = 0, timeline.StageRequestReceived
			first = append(first, early)
			if i%3 == 1 {
				second = append(second, r)
			} else {
				third = append(third, r)
			}
			r.Stages |= early.Stages
		default:
			first = append(first, r)
		}
		mem.Add(&r)
	}
	timelinetest.AddRecords(t, s, first...)
	timelinetest.AddRecords(t, s, second...)
	s = open()
	timelinetest.AddRecords(t, s, third...)
	queries := map[string]string{
		"delete":                `verb == "delete"`,
		"deleted secrets":       `verb in ["delete", "deletecollection"] && resource == "secrets"`,
		"deleted, not received": `verb == "delete" && code > 0 && code < 400 && name in ["o-1", "o-2", "o-3"]`,
		"failed deletions":      `code >= 500 && verb == "delete"`,
		"or (no copy)":          `verb == "delete" || code == 404`,
		"get (no copy)":         `verb == "get"`,
	}
	check := func(label string, readsCopy bool) {
		t.Helper()
		logs.Take()
		for _, rows := range []int64{1, 3, 1 << 16} {
			clickhouse.SetChunkRows(t, rows)
			for name, src := range queries {
				q := timeline.Query{Where: timelinetest.MustFilter(t, src)}
				if rows == 3 {
					q.Since, q.Until = t0.Add(31*time.Second), t0.Add(101*time.Second+time.Millisecond)
				}
				var want []string
				for r := range mem.Records(ctx, q) {
					want = append(want, r.AuditID)
				}
				got := timelinetest.Labels(t, s, q)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s, chunks of %d rows, %s (-mem +clickhouse)\n%s", label, rows, name, diff)
				}
				fromCopy, fromRecord := false, false
				for _, line := range strings.Split(logs.Take(), "\n") {
					if !strings.Contains(line, `query="SELECT key, stages, id, `) && !strings.Contains(line, `query="SELECT id, `) {
						continue // not a read of records
					}
					fromCopy = fromCopy || strings.Contains(line, " FROM deleted WHERE")
					fromRecord = fromRecord || strings.Contains(line, " FROM record WHERE")
				}
				wantCopy := readsCopy && !strings.Contains(name, "no copy")
				if fromCopy != wantCopy || wantCopy && fromRecord {
					t.Errorf("%s, chunks of %d rows, %s: read from the copy %v and from record %v, want the copy alone %v",
						label, rows, name, fromCopy, fromRecord, wantCopy)
				}
			}
		}
	}
	check("copy whole", true)

	// A copy that lost its rows is not read: its digests differ.
	if err := s.OnShards(ctx, "TRUNCATE TABLE %s.deleted_local"); err != nil {
		t.Fatal(err)
	}
	check("copy emptied", false)

	// The copy whole again, and record merged: the copy still holds
	// every version, record one a request.
	if err := s.OnShards(ctx, "INSERT INTO %[1]s.deleted_local SELECT * FROM %[1]s.record_local WHERE verb IN ('delete', 'deletecollection')"); err != nil {
		t.Fatal(err)
	}
	if err := s.MergeFinal(ctx, "record_local"); err != nil {
		t.Fatal(err)
	}
	check("record merged, the copy not", true)

	// A database whose record table was made without the copy (by an
	// older faultline) gets none.
	if err := s.OnShards(ctx, "DROP TABLE %s.deleted_mv", "DROP TABLE %s.deleted", "DROP TABLE %s.deleted_local"); err != nil {
		t.Fatal(err)
	}
	s = open()
	if s.KeepsDeleted() {
		t.Fatal("a database made without the copy got one")
	}
	check("database made without the copy", false)
	if n, err := s.QueryString(ctx, "SELECT toString(count()) FROM system.tables WHERE database = currentDatabase() AND name LIKE 'deleted%'"); err != nil || n != "0" {
		t.Errorf("tables of the copy in a database made without it: %s (%v), want 0", n, err)
	}
}
