package clickhouse_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/ingest/audit"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/clickhouse"
	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

// TestJudgedAcrossFlushes ingests, in one commit of many small flushes, a
// log whose later lines meet rows of earlier flushes: stages joined to
// requests flushes before, a final stage seen again (a duplicate), and
// two lines under held keys with another user or code (conflicts). The
// rows of a commit's flushes reach the table only when its inserts end,
// so each such line must end them before it is judged; the outcome must be
// SQLite's, line for line, and a second load must add nothing.
func TestJudgedAcrossFlushes(t *testing.T) {
	clickhouse.SetFlushAt(t, 4)
	ctx := context.Background()
	event := func(id, stage, user string, code, sec int) string {
		return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"%s","stage":"%s",`+
			`"requestURI":"/api/v1/namespaces/ml/pods/p%s","verb":"get","user":{"username":"%s"},"sourceIPs":["10.0.0.7"],`+
			`"objectRef":{"resource":"pods","namespace":"ml","name":"p%s","apiVersion":"v1"},"responseStatus":{"code":%d},`+
			`"requestReceivedTimestamp":"2026-05-01T10:00:%02d.000000Z","stageTimestamp":"2026-05-01T10:00:%02d.500000Z"}`,
			id, stage, id, user, id, code, sec, sec)
	}
	id := func(i int) string { return fmt.Sprintf("00000000-0000-0000-0000-%012d", i) }
	var lines []string
	for i := range 30 {
		lines = append(lines, event(id(i), "RequestReceived", "u", 0, i))
		if i >= 3 { // the final stage three requests later: flushes apart
			lines = append(lines, event(id(i-3), "ResponseComplete", "u", 200, i-3))
		}
	}
	lines = append(lines,
		event(id(2), "ResponseComplete", "u", 200, 2),     // seen again
		event(id(5), "ResponseComplete", "other", 200, 5), // another user
		event(id(7), "ResponseComplete", "u", 500, 7),     // another code
	)
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		Records                               []string
		Lines, Added, Merged, Dups, Conflicts int64
	}
	read := func(s store) outcome {
		t.Helper()
		runs, err := audit.Ingest(ctx, s, []string{path}, audit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := runs[0]
		out := outcome{Lines: r.Lines, Added: r.Records, Merged: r.Merged, Dups: r.Duplicates, Conflicts: r.Conflicts}
		for rec, err := range s.Records(ctx, timeline.Query{}) {
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(rec)
			out.Records = append(out.Records, string(b))
		}
		slices.Sort(out.Records)
		return out
	}
	want := read(sqlitetest.New(t))
	if want.Dups == 0 || want.Conflicts < 2 || want.Merged == 0 {
		t.Fatalf("SQLite: %d duplicates, %d conflicts, %d stages joined: the log tests less than it should", want.Dups, want.Conflicts, want.Merged)
	}
	house := clickhousetest.New(t)
	if diff := cmp.Diff(want, read(house)); diff != "" {
		t.Errorf("ClickHouse differs from SQLite (-sqlite +clickhouse):\n%s", diff)
	}
	again := read(house)
	if again.Added != 0 || again.Merged != 0 || again.Conflicts != 0 {
		t.Errorf("second load: %d records, %d stages, %d conflicts added; want none", again.Added, again.Merged, again.Conflicts)
	}
	if diff := cmp.Diff(want.Records, again.Records); diff != "" {
		t.Errorf("a second load changed the records (-first +second):\n%s", diff)
	}
}
