package filtersql

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

func expr(t *testing.T, src string) ast.Expr {
	t.Helper()
	f, err := timeline.CompileFilter(src)
	if err != nil {
		t.Fatal(err)
	}
	return f.Expr()
}

// show spells the variables and constants of es, for comparison.
func show(es []ast.Expr) []string {
	var out []string
	for _, e := range es {
		if n, ok := Ident(e); ok {
			out = append(out, n)
			continue
		}
		if v, ok := Constant(e); ok {
			out = append(out, fmt.Sprint(v.Value()))
			continue
		}
		out = append(out, "?")
	}
	return out
}

func TestConjuncts(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`bad`, []string{"bad"}},
		{`bad && (code == 1 || bad) && .user == "x"`, []string{"bad", "?", "?"}},
		{`(true && bad) && (false && 1 == 1)`, []string{"true", "bad", "false", "?"}},
		{`bad || true`, []string{"?"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, show(Conjuncts(expr(t, tt.expr)))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.expr, diff)
		}
	}
	for src, want := range map[string]bool{`bad`: true, `code == 1 && .bad`: true, `!bad`: false, `bad || bad`: false,
		`"bad" == user`: false} {
		if got := HasConjunct(expr(t, src), "bad"); got != want {
			t.Errorf("HasConjunct(%s) = %v, want %v", src, got, want)
		}
	}
}

func TestFold(t *testing.T) {
	tests := []struct {
		expr   string
		want   bool
		folded bool
	}{
		{`1 == 1`, true, true},
		{`1 != 1`, false, true},
		{`"a" < "b"`, true, true},
		{`"b" <= "a"`, false, true},
		{`timestamp("2026-01-01T00:00:00Z") > timestamp("2025-01-01T00:00:00Z")`, true, true},
		{`duration("1s") >= duration("1000ms")`, true, true},
		{`dyn(1) == "1"`, false, false}, // dyn() is not a constant
	}
	for _, tt := range tests {
		c := expr(t, tt.expr).AsCall()
		l, lok := Constant(c.Args()[0])
		r, rok := Constant(c.Args()[1])
		if !lok || !rok {
			if tt.folded {
				t.Errorf("%s: operands are not constants", tt.expr)
			}
			continue
		}
		got, ok := Fold(Ops[c.FunctionName()], l, r)
		if ok != tt.folded || got != tt.want {
			t.Errorf("Fold(%s) = %v, %v; want %v, %v", tt.expr, got, ok, tt.want, tt.folded)
		}
	}
	// The checker refuses these without dyn(); Fold still answers as CEL.
	if got, ok := Fold("=", types.Int(1), types.Uint(1)); !ok || !got {
		t.Errorf("Fold(1 == 1u) = %v, %v; want true, true", got, ok)
	}
	if got, ok := Fold("<", types.Int(1), types.Double(2.5)); !ok || !got {
		t.Errorf("Fold(1 < 2.5) = %v, %v; want true, true", got, ok)
	}
	if _, ok := Fold("<", types.Int(1), types.String("a")); ok {
		t.Errorf("Fold(1 < \"a\") folded; CEL fails there")
	}
}

func TestEqualities(t *testing.T) {
	tests := []struct {
		expr string
		name string
		vals []string
		ok   bool
	}{
		{`user == "a" || "b" == user`, "user", []string{"a", "b"}, true},
		{`(code == 1 || code == 2) || (code == 3 || 4 == code)`, "code", []string{"1", "2", "3", "4"}, true},
		{`user == "a" || verb == "b"`, "", nil, false},
		{`user == "a" || user != "b"`, "", nil, false},
		{`user == verb || user == "a"`, "", nil, false},
		{`user == "a" || user.startsWith("b")`, "", nil, false},
		{`time == timestamp("2026-01-01T00:00:00Z")`, "time", []string{"2026-01-01 00:00:00 +0000 UTC"}, true},
	}
	for _, tt := range tests {
		name, vals, ok := Equalities(expr(t, tt.expr))
		var got []string
		for _, v := range vals {
			got = append(got, fmt.Sprint(v.Value()))
		}
		if ok != tt.ok || name != tt.name || !cmp.Equal(got, tt.vals) {
			t.Errorf("Equalities(%s) = %q, %q, %v; want %q, %q, %v", tt.expr, name, got, ok, tt.name, tt.vals, tt.ok)
		}
	}
}

func TestList(t *testing.T) {
	for src, want := range map[string]int{`user in ["a", "b"]`: 2, `user in []`: 0, `code in [1, 2u, 3.0]`: 3,
		`user in [verb]`: -1, `user in ["a", ?optional.none()]`: -1} {
		f, err := timeline.CompileFilter(src)
		if err != nil {
			if want == -1 {
				continue // optional syntax is not enabled: nothing to recognize
			}
			t.Fatal(err)
		}
		vals, ok := List(f.Expr().AsCall().Args()[1])
		got := len(vals)
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("List(%s): %d constants, want %d", src, got, want)
		}
	}
}

func TestCompareTime(t *testing.T) {
	early := timeline.MinTime.Add(-1)
	late := timeline.MaxTime.Add(1)
	year1 := time.Time{}
	tests := []struct {
		op   string
		t    time.Time
		want TimeTest
	}{
		{"<", timeline.MinTime, TimeColumn},
		{"=", timeline.MaxTime, TimeColumn},
		{"<", early, TimeNoTime},  // only no time (year 1) is before 1677
		{">", early, TimeSome},    // every stored time is after, year 1 is not
		{"!=", early, TimeAll},    // nothing stored is that instant
		{"=", early, TimeNone},    // nor equal to it
		{"=", year1, TimeNoTime},  // the zero time is no time
		{">=", year1, TimeAll},    // everything is at or after year 1
		{">", year1, TimeSome},    // all but no time
		{"<", year1, TimeNone},    // nothing before year 1
		{"<", late, TimeAll},      // everything is before 2263
		{">=", late, TimeNone},    // nothing after
		{"!=", late, TimeAll},     // nothing equal
		{"<=", early, TimeNoTime}, // no time only
		{">=", early, TimeSome},   // every stored time
		{"=", late, TimeNone},     // nothing is that instant
	}
	for _, tt := range tests {
		if got := CompareTime(tt.op, tt.t); got != tt.want {
			t.Errorf("time %s %s: %d, want %d", tt.op, tt.t.Format(time.RFC3339Nano), got, tt.want)
		}
	}
}

func TestAtLeast(t *testing.T) {
	tests := []struct {
		expr string
		want bool
	}{
		{`code >= 400`, true},
		{`code >= 500`, true},
		{`code >= 399`, false},
		{`code > 399`, true},
		{`code > 398`, false},
		{`400 <= code`, true},
		{`399 < code`, true},
		{`code < 600`, false},
		{`600 > code`, false},
		{`code == 429`, true},
		{`429 == code`, true},
		{`code == 200`, false},
		{`code != 200`, false},
		{`code == 429 || code == 503`, true},
		{`code == 429 || code == 200`, false},
		{`code in [401, 403, 500]`, true},
		{`code in [401, 200]`, false},
		{`code in []`, true},
		{`verb == "list" && code >= 500`, true},
		{`code >= 400 && (code == 429 || code >= 500 || (code in [401, 403] && user.startsWith("system:serviceaccount:")))`, true},
		{`(code >= 500 && verb == "get") || (code == 429 && verb == "list")`, true},
		{`(code >= 500 && verb == "get") || verb == "list"`, false},
		{`!(code < 400)`, false}, // true of the records, but not of its shape: false is safe
		{`latency >= duration("1s")`, false},
		{`verb == "list"`, false},
		{`bad`, false},
	}
	for _, tt := range tests {
		e := expr(t, tt.expr)
		got := AtLeast(e, "code", 400)
		if got != tt.want {
			t.Errorf("AtLeast(%s, code, 400) = %v, want %v", tt.expr, got, tt.want)
		}
		if !got {
			continue
		}
		// What it claims holds of the records: no code below 400 matches.
		f, err := timeline.CompileFilter(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		for code := -1; code < 700; code++ {
			for _, r := range []timeline.Record{
				{Code: code, Verb: "list", User: "system:serviceaccount:ml:w"},
				{Code: code, Verb: "get", User: "alice"},
			} {
				if ok, err := f.Match(&r); err == nil && ok && code < 400 {
					t.Errorf("AtLeast(%s) holds, but a record with code %d matches it", tt.expr, code)
				}
			}
		}
	}
}

func TestOneOf(t *testing.T) {
	set := []string{"delete", "deletecollection"}
	tests := []struct {
		expr string
		want bool
	}{
		{`verb == "delete"`, true},
		{`"deletecollection" == verb`, true},
		{`verb == "get"`, false},
		{`verb != "get"`, false},
		{`verb in ["delete", "deletecollection"]`, true},
		{`verb in ["delete", "get"]`, false},
		{`verb in []`, true},
		{`resource == "secrets" && verb == "delete" && name in ["a", "b"]`, true},
		{`verb == "delete" || verb == "deletecollection"`, true},
		{`verb == "delete" || code >= 500`, false},
		{`user == "delete"`, false},
		{`verb.startsWith("delete")`, false},
		{`!(verb != "delete")`, false}, // true of the records, but not of its shape: false is safe
		{`code == 1`, false},
	}
	for _, tt := range tests {
		got := OneOf(expr(t, tt.expr), "verb", set)
		if got != tt.want {
			t.Errorf("OneOf(%s, verb) = %v, want %v", tt.expr, got, tt.want)
		}
		if !got {
			continue
		}
		// What it claims holds of the records: no other verb matches.
		f, err := timeline.CompileFilter(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		for _, verb := range []string{"get", "list", "create", "update", "patch", "delete", "deletecollection", ""} {
			r := timeline.Record{Verb: verb, User: "delete", Code: 1, Object: timeline.ObjectRef{Resource: "secrets", Name: "a"}}
			if ok, err := f.Match(&r); err == nil && ok && !slices.Contains(set, verb) {
				t.Errorf("OneOf(%s) holds, but a record with verb %q matches it", tt.expr, verb)
			}
		}
	}
}
