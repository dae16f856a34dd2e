package filtersql

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/cel-go/common/types/ref"

	"github.com/faultline/faultline/timeline"
)

// spell is a dialect that writes what Translate asks of it, to read back.
type spell struct{}

func (spell) Kind(name string) Kind {
	for _, f := range timeline.Fields {
		if f.Name == name && name != "stage" { // stage: as a store without its column
			return KindOf(f.Type)
		}
	}
	return KindNone
}

func (spell) Bool(b bool) string                   { return fmt.Sprint(b) }
func (spell) And(l, r string) string               { return "and(" + l + ", " + r + ")" }
func (spell) Or(l, r string) string                { return "or(" + l + ", " + r + ")" }
func (spell) Not(p string) string                  { return "not(" + p + ")" }
func (spell) Cond(c, t, f string) string           { return "cond(" + c + ", " + t + ", " + f + ")" }
func (spell) CompareFields(op, l, r string) string { return l + " " + op + " " + r }

func (spell) Compare(op, name string, v ref.Val) string {
	return fmt.Sprintf("%s %s %v", name, op, v.Value())
}

func (spell) In(name string, vals []ref.Val) string {
	var s []string
	for _, v := range vals {
		s = append(s, fmt.Sprint(v.Value()))
	}
	return name + " in {" + strings.Join(s, ", ") + "}"
}

func (spell) StringTest(fn, name, s string) string { return fn + "(" + name + ", " + s + ")" }

func TestTranslate(t *testing.T) {
	tests := []struct {
		expr string
		want string // "" for no translation
	}{
		{`true`, "true"},
		{`user == "a" && !(code >= 500)`, "and(user = a, not(code >= 500))"},
		{`500 < code`, "code > 500"},
		{`code == 200 ? verb == "get" : false`, "cond(code = 200, verb = get, false)"},
		{`user == "a" || "b" == user`, "user in {a, b}"},
		{`user == "a" || verb == "b"`, "or(user = a, verb = b)"},
		{`code in []`, "false"},
		{`code in [1, 2]`, "code in {1, 2}"},
		{`user < name`, "user < name"},
		{`time == time`, "true"},
		{`time < time`, "false"},
		{`"a" < "b" && 1 == 2`, "and(true, false)"},
		{`user.startsWith("")`, "true"},
		{`user.endsWith("x")`, "endsWith(user, x)"},
		{`user.startsWith(verb)`, ""},
		{`stage == "Panic"`, ""}, // a field the dialect has no form for
		{`stage == "Panic" || user == "a"`, ""},
		{`annotations["x"] == "y"`, ""},
		{`dyn(code) == 200`, ""},
		{`code == dyn(200)`, ""},
		{`code in [200, dyn(1)]`, ""},
		{`size(user) == 1`, ""},
		{`code + 1 == 2`, ""},
		{`user == "a" || (code == 1 && (code == 2 || (code == 3 && (code == 4 || verb == "x"))))`, ""}, // deeper than 4
		{`user == "a" || (code == 1 && (code == 2 || (code == 3 && code == 4)))`,
			"or(user = a, and(code = 1, or(code = 2, and(code = 3, code = 4))))"},
	}
	for _, tt := range tests {
		f, err := timeline.CompileFilter(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := Translate[string](f.Expr(), spell{}, 4)
		if !ok {
			got = ""
		}
		if got != tt.want {
			t.Errorf("Translate(%s) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}
