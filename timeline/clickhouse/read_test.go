package clickhouse_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/clickhouse"
	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// TestRecordsWithNoTime: a record with no time (the zero time) is read, and
// counted, when the window has no start, as the SQLite store reads it; a
// window with a start leaves it out.
func TestRecordsWithNoTime(t *testing.T) {
	ctx := context.Background()
	s := clickhousetest.New(t)
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	timelinetest.AddRecords(t, s,
		timeline.Record{Key: "no-time", Source: timeline.SourceEvent, Reason: "Timeless"},
		timeline.Record{Key: "timed", Time: t0, Source: timeline.SourceEvent, Reason: "BackOff"})
	reasons := func(q timeline.Query) []string {
		var out []string
		for r, err := range s.Records(ctx, q) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r.Reason)
		}
		return out
	}
	for _, tc := range []struct {
		q    timeline.Query
		want []string
	}{
		{timeline.Query{}, []string{"Timeless", "BackOff"}},
		{timeline.Query{Until: t0.Add(time.Second)}, []string{"Timeless", "BackOff"}},
		{timeline.Query{Since: time.Unix(0, 0)}, []string{"BackOff"}},
		{timeline.Query{Since: time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)}, []string{"BackOff"}},
	} {
		if diff := cmp.Diff(tc.want, reasons(tc.q)); diff != "" {
			t.Errorf("since %s, until %s (-want +got)\n%s", tc.q.Since, tc.q.Until, diff)
		}
	}
	n, err := s.CountRecords(ctx, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if n[timeline.SourceEvent] != 2 {
		t.Errorf("CountRecords, unbounded: %v, want 2 events", n)
	}
}

// TestAuditIDsReadBack: an audit ID reads back as it was written, whether
// it is kept as a UUID (the canonical form) or as text (any other), and a
// filter on auditID finds it either way.
func TestAuditIDsReadBack(t *testing.T) {
	s := clickhousetest.New(t)
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	ids := []string{"555b803e-9254-4abf-a126-59f1716e0c5d", "555B803E-9254-4ABF-A126-59F1716E0C5D",
		"00000000-0000-0000-0000-000000000000", "req-7", ""}
	var recs []timeline.Record
	for i, id := range ids {
		recs = append(recs, timeline.Record{Key: "k" + id, AuditID: id, Time: t0.Add(time.Duration(i) * time.Second),
			Source: timeline.SourceAudit, Verb: "get", Stages: timeline.StageResponseComplete, Code: 200})
	}
	timelinetest.AddRecords(t, s, recs...)
	read := func(q timeline.Query) []string {
		return readField(t, s, q, func(r *timeline.Record) string { return r.AuditID })
	}
	if diff := cmp.Diff(ids, read(timeline.Query{})); diff != "" {
		t.Errorf("audit IDs read back (-want +got)\n%s", diff)
	}
	for _, id := range ids {
		f := timelinetest.MustFilter(t, `auditID == "`+id+`"`)
		if diff := cmp.Diff([]string{id}, read(timeline.Query{Where: f})); diff != "" {
			t.Errorf("auditID == %q (-want +got)\n%s", id, diff)
		}
	}
}

// TestLimitThroughTies: a limit that ends among records of one time
// yields the first of them in id order (backwards for Desc), as an
// unlimited read cut short would.
func TestLimitThroughTies(t *testing.T) {
	s := clickhousetest.New(t)
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	var recs []timeline.Record
	for i, dt := range []time.Duration{0, time.Second, time.Second, time.Second, time.Second, 2 * time.Second, 3 * time.Second} {
		recs = append(recs, timeline.Record{Key: fmt.Sprint("k", i), Time: t0.Add(dt), Source: timeline.SourceEvent, Reason: fmt.Sprint("r", i)})
	}
	timelinetest.AddRecords(t, s, recs...)
	read := func(q timeline.Query) []string {
		return readField(t, s, q, func(r *timeline.Record) string { return r.Reason })
	}
	for _, desc := range []bool{false, true} {
		all := read(timeline.Query{Desc: desc})
		for n := 1; n <= len(all)+1; n++ {
			want := all[:min(n, len(all))]
			if diff := cmp.Diff(want, read(timeline.Query{Desc: desc, Limit: n})); diff != "" {
				t.Errorf("desc %v, limit %d (-want +got)\n%s", desc, n, diff)
			}
		}
	}
}

// readField reads the records of q and returns field of each, in order.
func readField(t *testing.T, s timeline.Store, q timeline.Query, field func(*timeline.Record) string) []string {
	t.Helper()
	out := []string{}
	for r, err := range s.Records(context.Background(), q) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, field(r))
	}
	return out
}

// TestChunkedReads: a read cut into chunks (of one row, of four, of all)
// yields what the timeline in memory yields for the same query, forwards
// and backwards, in windows, with filters the server evaluates, one it
// cannot (annotations), and a limit on that one. A third of the requests
// were written twice, their stages joined by a later batch: only their
// current version is read, whether the chunk judges it by every rewrite
// in its window or by those at the times of its own rows (a filter that
// keeps fewer rows than the chunk has rewrites).
func TestChunkedReads(t *testing.T) {
	s := clickhousetest.New(t)
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	mem := &timelinetest.Mem{}
	final := []timeline.Record{{Key: "timeless", AuditID: "a-none", Source: timeline.SourceEvent, Reason: "Timeless"}}
	var received []timeline.Record
	second := slices.Clone(final)
	for i := range 30 {
		r := timeline.Record{Key: fmt.Sprint("req-", i), AuditID: fmt.Sprint("a-", i), Time: t0.Add(time.Duration(i) * 7 * time.Second),
			Source: timeline.SourceAudit, Verb: "get", Code: 200, Stages: timeline.StageResponseComplete}
		if i%5 == 0 {
			r.Code = 503
		}
		if i%4 == 0 {
			r.Extra = []byte(`{"annotations":{"x":"y"}}`)
		}
		if i%3 == 0 {
			first := r
			first.Code, first.Stages = 0, timeline.StageRequestReceived
			received = append(received, first)
		}
		second = append(second, r)
		if i%3 == 0 {
			r.Stages |= timeline.StageRequestReceived
		}
		final = append(final, r)
	}
	// Six in one 10-second bucket: with chunks of one row, a chunk too
	// large to sort in memory, read ordered by the server.
	for i := range 6 {
		r := timeline.Record{Key: fmt.Sprint("burst-", i), AuditID: fmt.Sprint("b-", i), Time: t0.Add(300*time.Second + time.Duration(i)*time.Millisecond),
			Source: timeline.SourceAudit, Verb: "list", Code: 503, Stages: timeline.StageResponseComplete}
		second, final = append(second, r), append(final, r)
	}
	if err := s.StopMerges(context.Background()); err != nil {
		t.Fatal(err)
	}
	timelinetest.AddRecords(t, s, received...)
	timelinetest.AddRecords(t, s, second...)
	if n, err := s.QueryString(context.Background(), "SELECT toString(count()) FROM record WHERE rewrite != 0"); err != nil || n != "10" {
		t.Fatalf("rewritten rows: %s (%v), want 10", n, err)
	}
	for i := range final {
		mem.Add(&final[i])
	}
	queries := map[string]timeline.Query{
		"all":                          {},
		"window":                       {Since: t0.Add(50 * time.Second), Until: t0.Add(150 * time.Second)},
		"code == 503":                  {Where: timelinetest.MustFilter(t, `code == 503`)},
		`stage == "RequestReceived"`:   {Where: timelinetest.MustFilter(t, `stage == "RequestReceived"`)},
		`a-3 or a-4`:                   {Where: timelinetest.MustFilter(t, `auditID == "a-3" || auditID == "a-4"`)},
		`a-3, RequestReceived`:         {Where: timelinetest.MustFilter(t, `auditID == "a-3" && stage == "RequestReceived"`)},
		`annotations (residual)`:       {Where: timelinetest.MustFilter(t, `annotations["x"] == "y"`)},
		`annotations, limit 3`:         {Where: timelinetest.MustFilter(t, `annotations["x"] == "y"`), Limit: 3},
		`code == 503, window, limit 2`: {Where: timelinetest.MustFilter(t, `code == 503`), Since: t0.Add(30 * time.Second), Limit: 2},
		// A read with a limit plans its first chunk at the limit, each
		// later one twice as large: a chunk whose rows are superseded
		// versions holds fewer than it counted, and the next is read.
		"all, limit 1":      {Limit: 1},
		"all, limit 5":      {Limit: 5},
		"window, limit 7":   {Since: t0.Add(50 * time.Second), Until: t0.Add(150 * time.Second), Limit: 7},
		"all, limit 40":     {Limit: 40},
		"received, limit 2": {Where: timelinetest.MustFilter(t, `stage == "RequestReceived"`), Limit: 2},
	}
	for _, rows := range []int64{1, 4, 1 << 16} {
		clickhouse.SetChunkRows(t, rows)
		for name, q := range queries {
			for _, desc := range []bool{false, true} {
				q.Desc = desc
				var want []string
				for r := range mem.Records(context.Background(), q) {
					want = append(want, r.AuditID)
				}
				if diff := cmp.Diff(want, timelinetest.Labels(t, s, q)); diff != "" {
					t.Errorf("chunks of %d rows, %s, desc %v (-mem +clickhouse)\n%s", rows, name, desc, diff)
				}
			}
		}
	}
}
