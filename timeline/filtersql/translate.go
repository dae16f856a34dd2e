package filtersql

import (
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// Kind is how a store holds a filter variable, by its CEL type.
type Kind int

const (
	KindNone     Kind = iota // no column: evaluated row by row only
	KindString               // the bytes of a string
	KindInt                  // an integer
	KindTime                 // UTC nanoseconds, timeline.NoTimeNS for the zero time
	KindDuration             // nanoseconds
)

// KindOf is the kind of a variable of CEL type t; KindNone for the types no
// column holds (maps, bools).
func KindOf(t *types.Type) Kind {
	switch {
	case t.IsExactType(types.StringType):
		return KindString
	case t.IsExactType(types.IntType):
		return KindInt
	case t.IsExactType(types.TimestampType):
		return KindTime
	case t.IsExactType(types.DurationType):
		return KindDuration
	}
	return KindNone
}

// Of reports whether v is a value of a variable of kind k.
func (k Kind) Of(v ref.Val) bool {
	switch v.(type) {
	case types.String:
		return k == KindString
	case types.Int:
		return k == KindInt
	case types.Timestamp:
		return k == KindTime
	case types.Duration:
		return k == KindDuration
	}
	return false
}

// Dialect spells the parts of a translated filter in a store's SQL; P is a
// translated predicate. Translate calls it only with operands it has
// checked, and in the order of the SQL text (so that a dialect may bind
// arguments as it goes).
type Dialect[P any] interface {
	// Kind is the kind of the variable name, KindNone where the store has
	// no SQL form for it.
	Kind(name string) Kind
	// Bool is a constant.
	Bool(b bool) P
	// And, Or, Not and Cond (c ? t : f) combine translated predicates.
	And(l, r P) P
	Or(l, r P) P
	Not(p P) P
	Cond(c, t, f P) P
	// Compare is name op v (an SQL operator), v a constant of name's kind.
	Compare(op, name string, v ref.Val) P
	// CompareFields is l op r, two variables of one kind, not time.
	CompareFields(op, l, r string) P
	// In is name in vals, at least one constant of name's kind.
	In(name string, vals []ref.Val) P
	// StringTest is name.fn(s), fn startsWith, endsWith or contains, s not
	// empty.
	StringTest(fn, name, s string) P
}

// Translate translates e, a bool expression (a conjunct of a filter), with
// d. It is exact: ok is false where the expression has no form that is
// true exactly when CEL's value is, or nests deeper than maxDepth.
//
// What translates: true and false; &&, ||, ! and ?: of what translates; a
// chain of == of one variable with constants of its kind, as In; x in
// [constants of x's kind]; x OP constant of x's kind, either way round;
// x OP y of one kind (time with itself is a constant); constant OP
// constant, folded as CEL folds it; startsWith, endsWith and contains of a
// string variable with a constant. Nothing else: CEL's cross-type numeric
// rules, arithmetic, conversions, macros, size(), matches() and the
// variables of KindNone stay with CEL.
func Translate[P any](e ast.Expr, d Dialect[P], maxDepth int) (p P, ok bool) {
	t := translator[P]{d: d, maxDepth: maxDepth}
	return t.pred(e, 0)
}

type translator[P any] struct {
	d        Dialect[P]
	maxDepth int
}

func (t *translator[P]) pred(e ast.Expr, depth int) (p P, ok bool) {
	if depth > t.maxDepth {
		return p, false
	}
	switch e.Kind() {
	case ast.LiteralKind:
		if b, isBool := e.AsLiteral().(types.Bool); isBool {
			return t.d.Bool(bool(b)), true
		}
		return p, false
	case ast.CallKind:
	default:
		return p, false
	}
	c := e.AsCall()
	a := c.Args()
	if c.IsMemberFunction() {
		switch c.FunctionName() {
		case "startsWith", "endsWith", "contains":
			if len(a) == 1 {
				return t.stringTest(c.FunctionName(), c.Target(), a[0])
			}
		}
		return p, false
	}
	switch op := c.FunctionName(); {
	case op == operators.LogicalOr && len(a) == 2:
		if name, vals, isChain := Equalities(e); isChain {
			if p, ok := t.in(name, vals); ok {
				return p, true
			}
		}
		return t.combine(a, depth, func(ps []P) P { return t.d.Or(ps[0], ps[1]) })
	case op == operators.LogicalAnd && len(a) == 2:
		return t.combine(a, depth, func(ps []P) P { return t.d.And(ps[0], ps[1]) })
	case op == operators.LogicalNot && len(a) == 1:
		return t.combine(a, depth, func(ps []P) P { return t.d.Not(ps[0]) })
	case op == operators.Conditional && len(a) == 3:
		return t.combine(a, depth, func(ps []P) P { return t.d.Cond(ps[0], ps[1], ps[2]) })
	case op == operators.In && len(a) == 2:
		name, isIdent := Ident(a[0])
		vals, isList := List(a[1])
		if isIdent && isList {
			return t.in(name, vals)
		}
	case len(a) == 2:
		if sqlOp, isCmp := Ops[op]; isCmp {
			return t.compare(sqlOp, a[0], a[1])
		}
	}
	return p, false
}

// combine translates the operands of a logical operator, in order, and
// joins them with join.
func (t *translator[P]) combine(args []ast.Expr, depth int, join func([]P) P) (p P, ok bool) {
	ps := make([]P, len(args))
	for i, a := range args {
		if ps[i], ok = t.pred(a, depth+1); !ok {
			return p, false
		}
	}
	return join(ps), true
}

// field returns the variable e names and its kind, if it has an SQL form.
func (t *translator[P]) field(e ast.Expr) (string, Kind, bool) {
	name, ok := Ident(e)
	if !ok {
		return "", KindNone, false
	}
	k := t.d.Kind(name)
	return name, k, k != KindNone
}

func (t *translator[P]) compare(op string, l, r ast.Expr) (p P, ok bool) {
	ln, lk, lField := t.field(l)
	rn, rk, rField := t.field(r)
	switch {
	case lField && rField:
		switch {
		case lk != rk:
			return p, false
		case lk == KindTime: // the one time field with itself
			return t.d.Bool(Holds(op, 0)), true
		}
		return t.d.CompareFields(op, ln, rn), true
	case lField:
		if v, ok := Constant(r); ok && lk.Of(v) {
			return t.d.Compare(op, ln, v), true
		}
	case rField:
		if v, ok := Constant(l); ok && rk.Of(v) {
			return t.d.Compare(Mirror(op), rn, v), true
		}
	default:
		lv, lok := Constant(l)
		rv, rok := Constant(r)
		if lok && rok {
			if b, ok := Fold(op, lv, rv); ok {
				return t.d.Bool(b), true
			}
		}
	}
	return p, false
}

// in translates name in vals: constants of its kind; others take CEL's
// cross-type equality.
func (t *translator[P]) in(name string, vals []ref.Val) (p P, ok bool) {
	k := t.d.Kind(name)
	if k == KindNone {
		return p, false
	}
	for _, v := range vals {
		if !k.Of(v) {
			return p, false
		}
	}
	if len(vals) == 0 {
		return t.d.Bool(false), true
	}
	return t.d.In(name, vals), true
}

func (t *translator[P]) stringTest(fn string, target, arg ast.Expr) (p P, ok bool) {
	name, k, isField := t.field(target)
	if !isField || k != KindString {
		return p, false
	}
	v, ok := Constant(arg)
	if !ok {
		return p, false
	}
	s, ok := v.(types.String)
	if !ok {
		return p, false
	}
	if s == "" {
		return t.d.Bool(true), true // every string starts with, ends with and contains ""
	}
	return t.d.StringTest(fn, name, string(s)), true
}
