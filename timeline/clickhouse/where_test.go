package clickhouse

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

func mustFilter(t *testing.T, expr string) *timeline.Filter {
	t.Helper()
	f, err := timeline.CompileFilter(expr)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestCompileWhere pins the SQL of representative filters: every form of
// the table in where.go, the constants folded, and what is left to CEL.
func TestCompileWhere(t *testing.T) {
	stage := stageSQL()
	tests := []struct {
		expr     string
		sql      string
		complete bool
	}{
		{`user == "alice"`, `(user = 'alice')`, true},
		{`"alice" != user`, `(user != 'alice')`, true},
		{`"bob" < user`, `(user > 'bob')`, true},
		{`"bob" <= user && user <= name`, `(NOT (user < 'bob')) AND (NOT (user > name))`, true},
		{`user == "" && code >= 500`, `(user = '') AND (code >= 500)`, true},
		{`!(code in [0, 200, -1])`, `(NOT (code IN (0, 200, -1)))`, true},
		{`code <= 9223372036854775807 || code == -9223372036854775808`,
			`((code <= 9223372036854775807) OR (code = -9223372036854775808))`, true},
		{`user in []`, `0`, true},
		{`user in ["a", "b"] && true`, `(user IN ('a', 'b'))`, true},
		{`user == "a" || "b" == user || user == "c"`, `(user IN ('a', 'b', 'c'))`, true},
		{`user == "a" || verb == "b"`, `((user = 'a') OR (verb = 'b'))`, true},
		{`code == 200 ? verb == "list" : false`, `if((code = 200), (verb = 'list'), 0)`, true},
		{`name.startsWith("a%") || name.endsWith("_c") || name.contains("'")`,
			`((startsWith(name, 'a%') OR endsWith(name, '_c')) OR (position(name, '\'') > 0))`, true},
		{`name.startsWith("") && requestURI.contains("")`, ``, true},
		{`message.contains("\x00\\é\xff")`, `(position(message, '\x00\\\xC3\xA9\xC3\xBF') > 0)`, true},
		{`time >= timestamp("2026-05-01T10:00:00Z")`, `(time_ns >= 1777629600000000000)`, true},
		{`time < timestamp("1600-01-01T00:00:00Z")`, `(time_ns = -9223372036854775808)`, true},
		{`time > timestamp("0001-01-01T00:00:00Z")`, `(time_ns != -9223372036854775808)`, true},
		{`time <= timestamp("2300-01-01T00:00:00Z") && code == 1`, `(code = 1)`, true},
		{`time > timestamp("2300-01-01T00:00:00Z") && code == 1`, `0`, true},
		{`time in [timestamp("1970-01-01T00:00:00Z"), timestamp("0001-01-01T00:00:00Z")]`,
			`((time_ns = 0) OR (time_ns = -9223372036854775808))`, true},
		{`time == time && latency > latency`, `(latency_ns > latency_ns)`, true},
		{`latency in [duration("0s"), duration("2h")]`, `(latency_ns IN (0, 7200000000000))`, true},
		{`user < name && code != line`, `(user < name) AND (code != line)`, true},
		{`stage == "Panic"`, `(` + stage + ` = 'Panic')`, true},
		{`1 < 2 && "a" > "b" || code == 1`, `((1 AND 0) OR (code = 1))`, true},
		{`annotations["x"] == "y"`, ``, false},
		{`user == "alice" && annotations["x"] == "y"`, `(user = 'alice')`, false},
		{`user == "alice" || annotations["x"] == "y"`, ``, false},
		{`bad && code >= 500`, `(code >= 500)`, false},
		{`size(name) > 5 && name.matches("^p") && code + 1 == 201`, ``, false},
		{`dyn(code) == 200 || code == dyn(200) || user.startsWith(verb)`, ``, false},
		{`code in [200, dyn("x")]`, ``, false},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			sql, complete := compileWhere(mustFilter(t, tt.expr).Expr())
			if sql != tt.sql || complete != tt.complete {
				t.Errorf("got  %s (complete %v)\nwant %s (complete %v)", sql, complete, tt.sql, tt.complete)
			}
		})
	}
}

func TestStageSQL(t *testing.T) {
	want := `multiIf(bitAnd(stages, 8) != 0, 'Panic', bitAnd(stages, 4) != 0, 'ResponseComplete', ` +
		`bitAnd(stages, 2) != 0, 'ResponseStarted', bitAnd(stages, 1) != 0, 'RequestReceived', '')`
	if got := stageSQL(); got != want {
		t.Errorf("stageSQL() = %s\nwant %s", got, want)
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		``:                 `''`,
		`alice`:            `'alice'`,
		`it's`:             `'it\'s'`,
		`a\b`:              `'a\\b'`,
		`\'`:               `'\\\''`,
		"\x00\n\t\x7f":     `'\x00\x0A\x09\x7F'`,
		"é\xff ~":          `'\xC3\xA9\xFF ~'`,
		`%_*?$1{x:String}`: `'%_*?$1{x:String}'`,
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestCompileWhereLimits: filters past the bounds of depth and size are
// left to CEL, conjunct by conjunct.
func TestCompileWhereLimits(t *testing.T) {
	deep := `user == "alice"`
	for range maxWhereDepth + 20 {
		deep = "!(" + deep + ")"
	}
	many := strings.Repeat("1,", maxWhereNodes)                         // CEL takes 100,000 code points at most
	long := strconv.Quote(strings.Repeat("\u00e9", maxWhereBytes/8-10)) // 8 bytes of SQL a character
	for _, tt := range []struct {
		name, expr string
		complete   bool
	}{
		{"deep", deep, false},
		{"deep conjunct", deep + ` && code == 200`, false},
		{"many nodes", "code in [" + many + "1]", false},
		{"nodes under the bound", "code in [" + many[:maxWhereNodes] + "1]", true},
		{"long", "message == " + long, true},
		{"too long", "message == " + long + " && user == " + long, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sql, complete := compileWhere(mustFilter(t, tt.expr).Expr())
			if complete != tt.complete {
				t.Errorf("complete = %v, want %v", complete, tt.complete)
			}
			if len(sql) > maxWhereBytes {
				t.Errorf("%d bytes of SQL, more than %d", len(sql), maxWhereBytes)
			}
		})
	}
}

// TestFieldColumns: the fields with an SQL form are those of fieldColumns,
// all the filter fields but the ones evaluated row by row.
func TestFieldColumns(t *testing.T) {
	var want, got []string
	for _, f := range timeline.Fields {
		if f.Name != "annotations" && f.Name != "bad" {
			want = append(want, f.Name)
		}
		if _, ok := whereFields[f.Name]; ok {
			got = append(got, f.Name)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fields with an SQL form (-want +got):\n%s", diff)
	}
	if len(fieldColumns) != len(got) {
		t.Errorf("%d fieldColumns, %d of them filter fields with an SQL form", len(fieldColumns), len(got))
	}
}

func TestBadIDs(t *testing.T) {
	many := map[int64]bool{}
	for i := range int64(maxBadIDs + 1) {
		many[i] = true
	}
	for _, tt := range []struct {
		bad  map[int64]bool
		want string
	}{
		{map[int64]bool{}, "0"},
		{map[int64]bool{7: false}, "0"},
		{map[int64]bool{9: true, 3: true, 5: false}, "id IN (3, 9)"},
		{many, ""},
	} {
		if got := badIDs(tt.bad); got != tt.want {
			t.Errorf("badIDs(%d ids) = %.40s, want %s", len(tt.bad), got, tt.want)
		}
	}
}

// TestReadColumnsPodOnly: a read that asks extra for the pod alone
// (timeline.FieldPod) reads podExtraSQL in its place, and one that reads
// extra for anything else (the field itself, a filter matched in Go that
// reads annotations) reads extra whole.
func TestReadColumnsPodOnly(t *testing.T) {
	f := func(expr string) *timeline.Filter {
		t.Helper()
		flt, err := timeline.CompileFilter(expr)
		if err != nil {
			t.Fatal(err)
		}
		return flt
	}
	for _, tc := range []struct {
		name     string
		q        timeline.Query
		residual bool
		pod      bool
	}{
		{"pod", timeline.Query{Fields: timeline.FieldCode | timeline.FieldPod}, false, true},
		{"pod where", timeline.Query{Fields: timeline.FieldCode,
			FieldsWhere: &timeline.FieldsWhere{Fields: timeline.FieldPod, Where: f("code == 429")}}, false, true},
		{"pod and extra", timeline.Query{Fields: timeline.FieldPod | timeline.FieldExtra}, false, false},
		{"extra where", timeline.Query{Fields: timeline.FieldPod,
			FieldsWhere: &timeline.FieldsWhere{Fields: timeline.FieldExtra, Where: f("code == 429")}}, false, false},
		{"every field", timeline.Query{}, false, false},
		{"residual on annotations", timeline.Query{Where: f(`annotations["x"] == "y"`), Fields: timeline.FieldPod}, true, false},
		{"residual on code", timeline.Query{Where: f(`code == 1`), Fields: timeline.FieldPod}, true, true},
	} {
		cols := readColumns(tc.q, tc.residual).cols
		if got := strings.Contains(cols, podExtraSQL); got != tc.pod {
			t.Errorf("%s: reads the pod alone = %v, want %v: %s", tc.name, got, tc.pod, cols)
		}
		if got := strings.Contains(cols, ", extra,") || strings.Contains(cols, "THEN extra ELSE"); got == tc.pod && tc.q.Fields != 0 {
			t.Errorf("%s: reads extra whole = %v: %s", tc.name, got, cols)
		}
	}
}
