// Package filtersql is the part of compiling a record filter
// (timeline.Filter) to SQL that does not depend on the store: it splits a
// checked expression into conjuncts, folds constants as CEL itself would,
// recognizes a chain of equalities and a list of constants, and says what a
// comparison of the stored time with a constant comes to; and it lists a
// read's columns with the fields it leaves out as constants. Each store spells
// the SQL itself (timeline/sqlite, timeline/clickhouse); this package writes
// none and runs none.
package filtersql

import (
	"slices"
	"strings"
	"time"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/faultline/faultline/timeline"
)

// Conjuncts returns the operands of the top-level && chain of e, in order.
func Conjuncts(e ast.Expr) []ast.Expr {
	var out []ast.Expr
	conjuncts(e, &out)
	return out
}

func conjuncts(e ast.Expr, out *[]ast.Expr) {
	if e.Kind() == ast.CallKind {
		if c := e.AsCall(); c.FunctionName() == operators.LogicalAnd && len(c.Args()) == 2 && !c.IsMemberFunction() {
			conjuncts(c.Args()[0], out)
			conjuncts(c.Args()[1], out)
			return
		}
	}
	*out = append(*out, e)
}

// Ident returns the name of the filter variable e is, if it is one.
func Ident(e ast.Expr) (string, bool) {
	if e.Kind() != ast.IdentKind {
		return "", false
	}
	return strings.TrimPrefix(e.AsIdent(), "."), true // ".user" is the root-scoped user
}

// HasConjunct reports whether the variable name is a conjunct of e, as bad
// is of "bad && code >= 500": every match then has it true.
func HasConjunct(e ast.Expr, name string) bool {
	for _, c := range Conjuncts(e) {
		if n, ok := Ident(c); ok && n == name {
			return true
		}
	}
	return false
}

// Constant folds a literal or a timestamp()/duration() call on a string
// literal, as CEL itself would; false for anything else, and for a value
// CEL would not produce (an error).
func Constant(e ast.Expr) (ref.Val, bool) {
	if e.Kind() == ast.CallKind && e.AsCall().IsMemberFunction() {
		return nil, false
	}
	v, ok := timeline.Constant(e)
	if !ok || types.IsError(v) || types.IsUnknown(v) {
		return nil, false
	}
	return v, true
}

// Ops maps the CEL comparison functions to their SQL operators, which
// SQLite and ClickHouse spell alike.
var Ops = map[string]string{
	operators.Equals:        "=",
	operators.NotEquals:     "!=",
	operators.Less:          "<",
	operators.LessEquals:    "<=",
	operators.Greater:       ">",
	operators.GreaterEquals: ">=",
}

// Mirror gives the SQL operator op with its operands exchanged: 1 < x is
// x > 1.
func Mirror(op string) string {
	switch op {
	case "<":
		return ">"
	case "<=":
		return ">="
	case ">":
		return "<"
	case ">=":
		return "<="
	}
	return op
}

// Holds reports whether a comparison whose operands compare as cmp (-1, 0,
// 1) satisfies the SQL operator op.
func Holds(op string, cmp int) bool {
	switch op {
	case "=":
		return cmp == 0
	case "!=":
		return cmp != 0
	case "<":
		return cmp < 0
	case "<=":
		return cmp <= 0
	case ">":
		return cmp > 0
	case ">=":
		return cmp >= 0
	}
	panic("filtersql: unknown comparison " + op) // Ops holds every op
}

// Fold evaluates l op r, two constants, as CEL does; ok is false where CEL
// would fail (values it cannot compare).
func Fold(op string, l, r ref.Val) (result, ok bool) {
	switch op {
	case "=", "!=":
		eq := l.Equal(r)
		if types.IsError(eq) {
			return false, false
		}
		return (eq == types.True) == (op == "="), true
	}
	cmp, ok := l.(traits.Comparer)
	if !ok {
		return false, false
	}
	n, ok := cmp.Compare(r).(types.Int)
	if !ok {
		return false, false
	}
	return Holds(op, int(n)), true
}

// Equalities recognizes x == c1 || x == c2 || ... (one variable, constants,
// either side of each ==, || nested in any shape), which a store answers
// as x IN (c1, c2, ...). The caller checks that the constants are of x's
// type: else CEL's cross-type equality applies.
func Equalities(e ast.Expr) (name string, vals []ref.Val, ok bool) {
	stack := []ast.Expr{e}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if x.Kind() != ast.CallKind || x.AsCall().IsMemberFunction() || len(x.AsCall().Args()) != 2 {
			return "", nil, false
		}
		c := x.AsCall()
		l, r := c.Args()[0], c.Args()[1]
		switch c.FunctionName() {
		case operators.LogicalOr:
			stack = append(stack, r, l)
			continue
		case operators.Equals:
		default:
			return "", nil, false
		}
		n, isIdent := Ident(l)
		v, isConst := Constant(r)
		if !isIdent || !isConst { // c == x
			n, isIdent = Ident(r)
			v, isConst = Constant(l)
		}
		if !isIdent || !isConst || (len(vals) > 0 && n != name) {
			return "", nil, false
		}
		name = n
		vals = append(vals, v)
	}
	return name, vals, true
}

// List returns the constants of a list literal, [c1, c2, ...].
func List(e ast.Expr) ([]ref.Val, bool) {
	if e.Kind() != ast.ListKind || len(e.AsList().OptionalIndices()) > 0 {
		return nil, false
	}
	elems := e.AsList().Elements()
	vals := make([]ref.Val, len(elems))
	for i, el := range elems {
		v, ok := Constant(el)
		if !ok {
			return nil, false
		}
		vals[i] = v
	}
	return vals, true
}

// TimeTest is what "time op t" comes to on the stored times.
type TimeTest int

const (
	TimeColumn TimeTest = iota // compare the stored nanoseconds with t.UnixNano()
	TimeAll                    // every row
	TimeNone                   // no row
	TimeNoTime                 // the rows with no time (timeline.NoTimeNS) only
	TimeSome                   // every row but those with no time
)

// CompareTime says what time op t (op an SQL operator) comes to. A stored
// time of timeline.NoTimeNS is the zero time (year 1), which the record
// reads back as and CEL then compares: it lies below every other stored
// time both as a time and as an integer, so an in-range t compares the
// column as it is. The other rows hold times in [timeline.MinTime,
// timeline.MaxTime]; a t outside that range is a constant for them (and
// for no time, by its own comparison with the zero time).
func CompareTime(op string, t time.Time) TimeTest {
	if !t.Before(timeline.MinTime) && !t.After(timeline.MaxTime) {
		return TimeColumn
	}
	zeroMatches := Holds(op, (time.Time{}).Compare(t))
	always := Holds(op, 1) // t before MinTime
	if t.After(timeline.MaxTime) {
		always = Holds(op, -1)
	}
	switch {
	case always && zeroMatches:
		return TimeAll
	case always:
		return TimeSome
	case zeroMatches:
		return TimeNoTime
	}
	return TimeNone
}

// OneOf reports whether every record e accepts has the string variable
// name equal to one of set, as "verb == 'delete' && name == 'x'" has verb
// in ["delete", "deletecollection"]: a store may then read such records
// from a table that holds only those. It reasons from the shape alone, as
// AtLeast does, from equalities and "in" lists of string constants.
func OneOf(e ast.Expr, name string, set []string) bool {
	return implied(e, name, func(op string, v ref.Val) bool {
		s, ok := v.(types.String)
		return op == "=" && ok && slices.Contains(set, string(s))
	})
}

// AtLeast reports whether every record e accepts has the integer variable
// name at min or above, as "code >= 500 && verb == 'list'" has code at
// 400 or above: a store may then read such records from a table that holds
// only those. It reasons from the shape alone: a conjunction holds it when
// one conjunct does, a disjunction when every branch does; a comparison
// (either side), an equality, or "in" with a list of constants holds it
// when its integer constants say so. Anything else, a constant of another
// type included, does not: false never costs an answer, only a faster
// read.
func AtLeast(e ast.Expr, name string, min int64) bool {
	return implied(e, name, func(op string, v ref.Val) bool {
		k, ok := v.(types.Int)
		switch {
		case !ok:
			return false
		case op == "=" || op == ">=":
			return int64(k) >= min
		case op == ">":
			return int64(k) >= min-1
		}
		return false
	})
}

// implied reports whether every record e accepts has variable name meet
// ok, from e's shape alone: a conjunction holds it when one conjunct does,
// a disjunction when every branch does; "name in [...]" when ok("=", v)
// of every constant of the list (an empty list keeps no record); a
// comparison of name with a constant, either side, when ok(op, c) of
// "name op c". Anything else does not: false never costs an answer, only
// a faster read.
func implied(e ast.Expr, name string, ok func(op string, v ref.Val) bool) bool {
	if e.Kind() != ast.CallKind || e.AsCall().IsMemberFunction() || len(e.AsCall().Args()) != 2 {
		return false
	}
	c := e.AsCall()
	l, r := c.Args()[0], c.Args()[1]
	switch fn := c.FunctionName(); fn {
	case operators.LogicalAnd:
		return implied(l, name, ok) || implied(r, name, ok)
	case operators.LogicalOr:
		return implied(l, name, ok) && implied(r, name, ok)
	case operators.In:
		if n, isIdent := Ident(l); !isIdent || n != name {
			return false
		}
		vals, isList := List(r)
		if !isList {
			return false
		}
		for _, v := range vals {
			if !ok("=", v) {
				return false
			}
		}
		return true
	default:
		op, isOp := Ops[fn]
		if !isOp {
			return false
		}
		n, isIdent := Ident(l)
		v, isConst := Constant(r)
		if !isIdent || !isConst { // c op x is x op' c
			n, isIdent = Ident(r)
			v, isConst = Constant(l)
			op = Mirror(op)
		}
		return isIdent && isConst && n == name && ok(op, v)
	}
}
