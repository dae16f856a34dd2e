package clickhouse_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// TestStoredDigests: record's digests of the copies, read by one store,
// are used by the stores opened after it (later processes) while record's
// rows stay as they were, merged or not, and read again once a write, a
// mutation or a dropped partition changed them; a run that wrote records
// leaves them for the first reader. Every answer is the timeline's in
// memory.
func TestStoredDigests(t *testing.T) {
	ctx := context.Background()
	open, logs := loggedOpener(t)
	s := open()
	if err := s.StopMerges(ctx); err != nil {
		t.Fatal(err)
	}
	// Two days, so two partitions: the first day in two batches, the
	// second in one, so that no insert spans both (a merge of parts whose
	// numbers another partition's insert separates would change the
	// state's key, and cost a digest read).
	day := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	var all []timeline.Record
	var batches [3][]timeline.Record
	for i := range 60 {
		at := day.Add(10*time.Hour + time.Duration(i)*time.Minute)
		if i >= 40 {
			at = at.Add(24 * time.Hour)
		}
		r := timeline.Record{Key: fmt.Sprint("req-", i), AuditID: fmt.Sprint("a-", i), Time: at, Source: timeline.SourceAudit,
			Verb:   []string{"get", "delete", "list", "deletecollection"}[i%4],
			Object: timeline.ObjectRef{Version: "v1", Resource: "configmaps", Namespace: "ml", Name: fmt.Sprint("o-", i%5)},
			Code:   []int{200, 503, 500, 404, 200, 429}[i%6], Stages: timeline.StageResponseComplete}
		all = append(all, r)
		batches[min(i/20, 2)] = append(batches[min(i/20, 2)], r)
	}
	for _, b := range batches {
		timelinetest.AddRecords(t, s, b...)
	}
	queries := map[string]string{
		"failed":    `code >= 500`,
		"deletions": `verb in ["delete", "deletecollection"]`,
	}
	// check reads every query in a store opened anew, as a later process
	// would, compares its answers with the records kept, and reports
	// whether record's digests were read.
	check := func(label string, keep func(timeline.Record) bool, wantRead bool) {
		t.Helper()
		mem := &timelinetest.Mem{}
		for _, r := range all {
			if keep(r) {
				mem.Add(&r)
			}
		}
		s := open()
		logs.Take()
		for name, src := range queries {
			q := timeline.Query{Where: timelinetest.MustFilter(t, src)}
			var want []string
			for r := range mem.Records(ctx, q) {
				want = append(want, r.AuditID)
			}
			if diff := cmp.Diff(want, timelinetest.Labels(t, s, q)); diff != "" {
				t.Errorf("%s, %s (-mem +clickhouse)\n%s", label, name, diff)
			}
		}
		read := strings.Contains(logs.Take(), "cityHash64(time_ns, key, max(stages)) AS h FROM record WHERE")
		if read != wantRead {
			t.Errorf("%s: record's digests read %v, want %v", label, read, wantRead)
		}
	}
	every := func(timeline.Record) bool { return true }
	check("first reader", every, true)
	check("a later reader", every, false)
	if err := s.MergeFinal(ctx, "record_local"); err != nil {
		t.Fatal(err)
	}
	check("record merged", every, false)

	// A run that wrote records leaves record's digests, when the table
	// holds at most digestsPerRun (50) times as many: two records into
	// 62 do, one into 63 does not.
	late := timeline.Record{Key: "late", AuditID: "late", Time: day.Add(30 * time.Hour), Source: timeline.SourceAudit,
		Verb: "delete", Code: 500, Stages: timeline.StageResponseComplete,
		Object: timeline.ObjectRef{Version: "v1", Resource: "configmaps", Namespace: "ml", Name: "late"}}
	ingest := func(recs ...timeline.Record) {
		t.Helper()
		all = append(all, recs...)
		ingestRecords(t, s, recs, len(recs))
	}
	late2 := late
	late2.Key, late2.AuditID, late2.Time = "late2", "late2", late.Time.Add(time.Second)
	ingest(late, late2)
	check("after a finished run", every, false)
	late3 := late
	late3.Key, late3.AuditID, late3.Time = "late3", "late3", late.Time.Add(2*time.Second)
	ingest(late3)
	check("after a run of one record into 63", every, true)
	check("after a run of one record into 63, a later reader", every, false)

	// A write outside a run: read again, then kept.
	extra := late
	extra.Key, extra.AuditID, extra.Time = "extra", "extra", late.Time.Add(3*time.Second)
	all = append(all, extra)
	timelinetest.AddRecords(t, s, extra)
	check("after a write", every, true)
	check("after a write, a later reader", every, false)

	// A read of a window reads record's digests of its window when the
	// stored ones are not of the table as it is, and stores none.
	more := extra
	more.Key, more.AuditID, more.Time = "more", "more", extra.Time.Add(time.Second)
	all = append(all, more)
	timelinetest.AddRecords(t, s, more)
	stored := func() string {
		t.Helper()
		n, err := s.QueryString(ctx, "SELECT toString(count()) FROM record_digest")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := stored()
	window := timeline.Query{Where: timelinetest.MustFilter(t, `code >= 500`), Since: day, Until: day.Add(12 * time.Hour)}
	reader := open()
	logs.Take()
	timelinetest.Labels(t, reader, window)
	if !strings.Contains(logs.Take(), "cityHash64(time_ns, key, max(stages)) AS h FROM record WHERE") {
		t.Error("a window's read after a write: record's digests not read")
	}
	if after := stored(); after != before {
		t.Errorf("a window's read stored record's digests: %s rows, then %s", before, after)
	}
	check("after a window's read", every, true)

	// A mutation on record alone: the copies keep the rows it deleted, so
	// their digests differ from record's as it is now.
	if err := s.OnShards(ctx, "SYSTEM START MERGES %s.record_local", "ALTER TABLE %s.record_local DELETE WHERE code = 503"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		n, err := s.QueryString(ctx, "SELECT toString(count()) FROM record WHERE code = 503")
		return err == nil && n == "0"
	})
	no503 := func(r timeline.Record) bool { return r.Code != 503 }
	check("after a mutation", no503, true)

	// A partition dropped from record alone.
	if err := s.OnShards(ctx, fmt.Sprintf("ALTER TABLE %%s.record_local DROP PARTITION %d", day.Add(24*time.Hour).Unix()/86400)); err != nil {
		t.Fatal(err)
	}
	firstDay := func(r timeline.Record) bool { return no503(r) && r.Time.Before(day.Add(24*time.Hour)) }
	check("after a dropped partition", firstDay, true)
	check("after a dropped partition, a later reader", firstDay, false)
	// One row a copy is kept.
	if err := s.MergeFinal(ctx, "record_digest_local"); err != nil {
		t.Fatal(err)
	}
	if n := stored(); n != "2" {
		t.Errorf("record_digest holds %s rows merged, want 2 (one a copy)", n)
	}
}

// waitFor waits up to 30 s for done.
func waitFor(t *testing.T, done func() bool) {
	t.Helper()
	for range 300 {
		if done() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("not done after 30 s")
}
