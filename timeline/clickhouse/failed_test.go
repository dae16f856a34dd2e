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

// TestFailedCopy: a read whose filter keeps failed requests only reads them
// from their copy and answers as a read of every record does: every
// version is there (a request joined across batches, with its early stage
// failed or not, its final one failed or not), and the current one is
// chosen from the copy's own rewrites, since the copy also holds every
// version after the first one it takes. A copy that misses rows, or such
// a version, in a bucket is not read there; one that holds them is read
// whichever of the two tables has merged; a copy made before those
// versions were marked judges its current versions from record's; a
// database made before the copy existed gets none, and its reads stay on
// record.
func TestFailedCopy(t *testing.T) {
	ctx := context.Background()
	open, logs := loggedOpener(t)
	s := open()
	if !s.KeepsFailed() || !s.CopyAlone() {
		t.Fatalf("a new database: keeps a copy of the failed requests %v, judged alone %v; want both", s.KeepsFailed(), s.CopyAlone())
	}
	if err := s.StopMerges(ctx); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	mem := &timelinetest.Mem{}
	var first, second, third []timeline.Record
	for i := range 40 {
		r := timeline.Record{Key: fmt.Sprint("req-", i), AuditID: fmt.Sprint("a-", i), Time: t0.Add(time.Duration(i) * 3 * time.Second),
			Source: timeline.SourceAudit, Verb: []string{"get", "list"}[i%2], Code: []int{200, 503, 429, 404, 500}[i%5],
			Stages: timeline.StageResponseComplete}
		// Joined across batches: the final stage comes in the second,
		// after an early stage with no code (1), with the same code (2,
		// a request that failed as it started) or with a failure the
		// final stage may not repeat (3: req-15 and req-35 succeed).
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
		case 3:
			early := r
			early.Code, early.Stages = 504, timeline.StageResponseStarted
			first = append(first, early)
			r.Stages |= early.Stages
		}
		mem.Add(&r)
	}
	// Three versions in three batches: a success, a failure, a success
	// (chain-0), a failure, a success, a failure (chain-1), the third
	// found by a lookup (a store opened again remembers no open request);
	// and a failure, a success, a success (chain-2), the third found among
	// the requests the store remembers open.
	var between []timeline.Record
	for i := range 3 {
		r := timeline.Record{Key: fmt.Sprint("chain-", i), AuditID: fmt.Sprint("c-", i), Time: t0.Add(200*time.Second + time.Duration(i)*time.Second),
			Source: timeline.SourceAudit, Verb: "get", Stages: timeline.StageRequestReceived, Code: []int{200, 500, 500}[i]}
		first = append(first, r)
		r.Stages, r.Code = timeline.StageResponseStarted, []int{503, 200, 200}[i]
		second = append(second, r)
		r.Stages, r.Code = timeline.StageResponseComplete, []int{200, 500, 200}[i]
		if i == 2 {
			between = append(between, r)
		} else {
			third = append(third, r)
		}
		r.Stages = timeline.StageRequestReceived | timeline.StageResponseStarted | timeline.StageResponseComplete
		mem.Add(&r)
	}
	timelinetest.AddRecords(t, s, first...)
	timelinetest.AddRecords(t, s, second...)
	timelinetest.AddRecords(t, s, between...)
	s = open()
	timelinetest.AddRecords(t, s, third...)
	// Marked, as every version after the first one the copy takes: the
	// final stages after a failed early one (req-3, 7, ... 39, and the
	// eight of req-2, 6, ... 38 that failed as they started), chain-0's
	// third version (found by the lookup), chain-1's second and third
	// (the third after a marked success, found by the lookup), chain-2's
	// second and third (after a marked success, remembered open).
	for _, table := range []string{"record", "failed"} {
		if n, err := s.QueryString(ctx, "SELECT toString(count()) FROM "+table+" WHERE rewrite = 2"); err != nil || n != "23" {
			t.Errorf("marked rewrites in %s: %s (%v), want 23", table, n, err)
		}
	}
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
	// check compares every query with the timeline in memory, and which
	// table the read took (unless readsCopy is nil); judgedBy is the
	// local table whose rewrites judge the copy's current versions.
	check := func(label string, readsCopy *bool, judgedBy string) {
		t.Helper()
		for _, rows := range []int64{1, 3, 1 << 16} {
			clickhouse.SetChunkRows(t, rows)
			for name, src := range queries {
				q := timeline.Query{Where: timelinetest.MustFilter(t, src)}
				if rows == 3 {
					// A window that cuts buckets of time: the digests
					// are read over the buckets it meets.
					q.Since, q.Until = t0.Add(31*time.Second), t0.Add(201*time.Second+time.Millisecond)
				}
				var want []string
				for r := range mem.Records(ctx, q) {
					want = append(want, r.AuditID)
				}
				got := timelinetest.Labels(t, s, q)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s, chunks of %d rows, %s (-mem +clickhouse)\n%s", label, rows, name, diff)
				}
				// The reads of records, not the counts: from the copy,
				// from record.
				fromCopy, fromRecord := false, false
				for _, line := range strings.Split(logs.Take(), "\n") {
					// A chunk judged here reads its rows with their key
					// and stages, and record's rewrites beside them.
					here := strings.Contains(line, `query="SELECT key, stages, id, `)
					if !here && !strings.Contains(line, `query="SELECT id, `) {
						continue
					}
					if strings.Contains(line, " FROM record WHERE") {
						fromRecord = true
					}
					if !strings.Contains(line, " FROM failed WHERE") {
						continue
					}
					fromCopy = true
					if here && judgedBy != "record_local" {
						t.Errorf("%s, chunks of %d rows, %s: the copy's current versions judged here from record's rewrites, want from %s: %s", label, rows, name, judgedBy, line)
					}
					if !here && !strings.Contains(line, "."+judgedBy+" WHERE") {
						t.Errorf("%s, chunks of %d rows, %s: the copy's current versions not judged from %s: %s", label, rows, name, judgedBy, line)
					}
				}
				if readsCopy == nil {
					continue
				}
				// want: every chunk read from the copy; or none.
				if want := *readsCopy && !strings.Contains(name, "no copy"); fromCopy != want || want && fromRecord {
					t.Errorf("%s, chunks of %d rows, %s: read from the copy %v and from record %v, want the copy alone %v",
						label, rows, name, fromCopy, fromRecord, want)
				}
			}
		}
	}
	yes, no := true, false
	check("copy whole", &yes, "failed_local")

	// A copy that lost its rows is not read: its counts differ.
	if err := s.OnShards(ctx, "TRUNCATE TABLE %s.failed_local"); err != nil {
		t.Fatal(err)
	}
	check("copy emptied", &no, "failed_local")

	// A copy that holds the failed versions but not the rewrites after
	// them (a server that died between the table and the view) is not
	// read where it misses one: judged alone, it would take req-15's
	// failed early stage for its current version.
	if err := s.OnShards(ctx, "INSERT INTO %[1]s.failed_local SELECT * FROM %[1]s.record_local WHERE code >= 400"); err != nil {
		t.Fatal(err)
	}
	check("copy without its marked rewrites", nil, "failed_local")

	// The copy whole again. Merges drop superseded versions, each table's
	// when it runs them: the copy is read in any state of either.
	if err := s.OnShards(ctx, "TRUNCATE TABLE %s.failed_local",
		"INSERT INTO %[1]s.failed_local SELECT * FROM %[1]s.record_local WHERE code >= 400 OR rewrite = 2"); err != nil {
		t.Fatal(err)
	}
	if err := s.MergeFinal(ctx, "record_local"); err != nil {
		t.Fatal(err)
	}
	// Merged, record holds one version a request; the copy, unmerged,
	// still holds their early ones (which a count of rows tells apart).
	for table, want := range map[string]string{"record": "1", "failed": "0"} {
		if got, err := s.QueryString(ctx, "SELECT toString(count() = uniqExact(time_ns, key)) FROM "+table); err != nil || got != want {
			t.Fatalf("%s holds one version a request: %s (%v), want %s", table, got, err, want)
		}
	}
	check("record merged, the copy not", &yes, "failed_local")
	if err := s.MergeFinal(ctx, "failed_local"); err != nil {
		t.Fatal(err)
	}
	check("both merged", &yes, "failed_local")

	// A database whose copy was made before the marks (by an older
	// faultline) keeps it, and judges its current versions from
	// record's rewrites.
	if err := s.OnShards(ctx, "DROP TABLE %s.failed_mv2", clickhouse.FailedViewUnmarked); err != nil {
		t.Fatal(err)
	}
	s = open()
	if !s.KeepsFailed() || s.CopyAlone() {
		t.Fatalf("a database with a copy made before the marks: keeps it %v, judged alone %v; want true, false", s.KeepsFailed(), s.CopyAlone())
	}
	if err := s.StopMerges(ctx); err != nil {
		t.Fatal(err)
	}
	logs.Take()
	check("copy made before the marks", &yes, "record_local")
	// Such a copy is checked by the rows its filter keeps in both tables:
	// emptied, it is not read.
	if err := s.OnShards(ctx, "TRUNCATE TABLE %s.failed_local"); err != nil {
		t.Fatal(err)
	}
	check("copy made before the marks, emptied", &no, "record_local")

	// A database whose record table was made without the copy (by an
	// older faultline) gets none.
	if err := s.OnShards(ctx, "DROP TABLE %s.failed_mv", "DROP TABLE %s.failed", "DROP TABLE %s.failed_local"); err != nil {
		t.Fatal(err)
	}
	s = open()
	if s.KeepsFailed() {
		t.Fatal("a database made without the copy got one")
	}
	logs.Take()
	check("database made without the copy", &no, "")
	if n, err := s.QueryString(ctx, "SELECT toString(count()) FROM system.tables WHERE database = currentDatabase() AND name LIKE 'failed%'"); err != nil || n != "0" {
		t.Errorf("tables of the copy in a database made without it: %s (%v), want 0", n, err)
	}
}
