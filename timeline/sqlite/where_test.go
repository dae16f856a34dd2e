package sqlite

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// openWhereStore builds the filter test database in tb's temporary directory:
// timelinetest.AddWhereRecords.
func openWhereStore(tb testing.TB) *Store {
	tb.Helper()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(tb.TempDir(), "where.db"), Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	timelinetest.AddWhereRecords(tb, s)
	return s
}

// checkAgainstCEL asserts that the store yields exactly the records CEL
// matches when run on every record.
func checkAgainstCEL(tb testing.TB, s *Store, all []*timeline.Record, f *timeline.Filter) {
	tb.Helper()
	if diff := cmp.Diff(timelinetest.CELLabels(all, f), timelinetest.Labels(tb, s, timeline.Query{Where: f})); diff != "" {
		sql, args, complete := compileWhere(f.Expr())
		tb.Errorf("%s\nSQL: %s\nargs: %q complete: %v\nrecords (-CEL +store):\n%s", f, sql, args, complete, diff)
	}
}

// sqliteResidual are the timelinetest.WhereCases that SQLite translates
// only in part: stage has no column, annotations and size() no exact SQL.
var sqliteResidual = map[string]bool{
	`type == "Warning" && stage == ""`:                            true,
	`stage == "Panic"`:                                            true,
	`annotations["authorization.k8s.io/decision"] == "forbid"`:    true,
	`user == "alice" && (annotations["x"] == "y" || code == 404)`: true,
	`size(name) == 6 && ns == "default"`:                          true,
}

func TestCompileWhere(t *testing.T) {
	s := openWhereStore(t)
	all := timelinetest.ReadAll(t, s)
	seen := 0
	for _, tt := range timelinetest.WhereCases() {
		if sqliteResidual[tt.Expr] {
			seen++
		}
		t.Run(tt.Expr, func(t *testing.T) {
			f := timelinetest.MustFilter(t, tt.Expr)
			if _, _, complete := compileWhere(f.Expr()); complete == sqliteResidual[tt.Expr] {
				t.Errorf("complete = %v, want %v", complete, !sqliteResidual[tt.Expr])
			}
			sorted := cmpopts.SortSlices(func(a, b string) bool { return a < b })
			if diff := cmp.Diff(tt.Want, timelinetest.Labels(t, s, timeline.Query{Where: f}), sorted, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("records (-want +got)\n%s", diff)
			}
			checkAgainstCEL(t, s, all, f)
		})
	}
	if seen != len(sqliteResidual) {
		t.Errorf("%d of the %d sqliteResidual are WhereCases", seen, len(sqliteResidual))
	}
}

func TestCompileWhereMatchesCEL(t *testing.T) {
	s := openWhereStore(t)
	all := timelinetest.ReadAll(t, s)
	if len(all) != len(timelinetest.WhereRecords()) {
		t.Fatalf("read %d records, want %d", len(all), len(timelinetest.WhereRecords()))
	}
	for _, expr := range timelinetest.WhereExprs {
		checkAgainstCEL(t, s, all, timelinetest.MustFilter(t, expr))
	}
}

// FuzzCompileWhere checks, for any filter CEL accepts, that the store yields
// exactly the records CEL matches.
func FuzzCompileWhere(f *testing.F) {
	s := openWhereStore(f) // once per fuzz worker
	all := timelinetest.ReadAll(f, s)
	timelinetest.FuzzFilters(f, func(t *testing.T, flt *timeline.Filter) { checkAgainstCEL(t, s, all, flt) })
}

func TestCompileWhereUsesIndexes(t *testing.T) {
	s := openWhereStore(t)
	tests := []struct{ expr, index string }{
		{`user == "alice"`, "record_user (user=?)"},
		{`user.startsWith("system:node:")`, "record_user (user=?)"},
		{`user in ["alice", "bob"]`, "record_user (user=?)"},
		{`code >= 500`, "record_error (code>?)"},
		{`code == 404`, "record_error (code=?)"},
		{`code in [500, 503]`, "record_error (code=?)"},
		{`code == 500 || code == 503`, "record_error"},
		{`resource == "pods" && verb in ["get", "list"]`, "record_resource (resource=? AND verb=?)"},
		{`ns == "default" && name == "web-1"`, "record_object (namespace=? AND name=?)"},
		{`reason == "BackOff"`, "record_reason (reason=?)"},
		{`reason.startsWith("Fail")`, "record_reason (reason=?)"},
		{`time > timestamp("2026-05-01T10:05:00Z")`, "record_time_key (time_ns>?)"},
		{`time >= timestamp("2026-05-01T10:00:00Z") && time < timestamp("2026-05-01T11:00:00Z")`,
			"record_time_key (time_ns>? AND time_ns<?)"},
		{`user == "alice" && annotations["x"] == "y"`, "record_user (user=?)"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			q, args, _ := recordQuery(timeline.Query{Where: timelinetest.MustFilter(t, tt.expr)})
			plan := queryPlan(t, s, q, args...)
			want := "SEARCH r USING INDEX " + tt.index
			for _, line := range plan {
				if strings.HasPrefix(line, "SEARCH r USING ") && strings.Contains(line, "INDEX "+tt.index) {
					return
				}
			}
			t.Errorf("plan does not %s:\n%s\n%s", want, strings.Join(plan, "\n"), q)
		})
	}
}

func TestCompileWhereRandomFilters(t *testing.T) {
	s := openWhereStore(t)
	all := timelinetest.ReadAll(t, s)
	n := 3000
	if testing.Short() {
		n = 300
	}
	timelinetest.RandomFilters(t, n, func(f *timeline.Filter) { checkAgainstCEL(t, s, all, f) })
}

// TestCompileWhereLimits guards against filters whose SQL SQLite would refuse
// (expression depth, number of placeholders): they fall back to CEL.
func TestCompileWhereLimits(t *testing.T) {
	s := openWhereStore(t)
	all := timelinetest.ReadAll(t, s)
	deep := `user == "alice"`
	for range maxWhereDepth + 20 {
		deep = "!(" + deep + ")"
	}
	verbs := make([]string, maxWhereArgs+1)
	for i := range verbs {
		verbs[i] = strconv.Quote(strconv.FormatInt(int64(i), 36)) // short: CEL limits filters to 100k code points
	}
	verbs[len(verbs)-1] = `"get"`
	for _, tt := range []struct {
		name, expr string
		complete   bool
	}{
		{"deep", deep, false},
		{"deep conjunct", deep + ` && code == 200`, false},
		{"many args", "verb in [" + strings.Join(verbs, ",") + "]", false},
		{"many args conjunct", `code == 200 && verb in [` + strings.Join(verbs, ",") + "]", false},
		{"args at limit", "verb in [" + strings.Join(verbs[1:], ",") + "]", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := timelinetest.MustFilter(t, tt.expr)
			if _, _, complete := compileWhere(f.Expr()); complete != tt.complete {
				t.Errorf("complete = %v, want %v", complete, tt.complete)
			}
			checkAgainstCEL(t, s, all, f)
		})
	}
}

// TestFieldColumns: every column mapping names a filter field, and every
// mapped field becomes a SQL condition, so a renamed field cannot silently
// lose its index.
func TestFieldColumns(t *testing.T) {
	known := map[string]bool{}
	for _, f := range timeline.Fields {
		known[f.Name] = true
	}
	for name := range fieldColumns {
		if !known[name] {
			t.Errorf("fieldColumns[%q]: no such filter field in timeline.Fields", name)
		}
		if _, ok := whereFields[name]; !ok {
			t.Errorf("field %q has a column but no SQL condition (its type has no column kind)", name)
		}
	}
	for _, rowOnly := range []string{"stage", "annotations", "bad"} {
		if _, ok := whereFields[rowOnly]; ok {
			t.Errorf("field %q is evaluated row by row, yet has a column", rowOnly)
		}
	}
}
