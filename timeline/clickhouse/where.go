package clickhouse

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/filtersql"
)

// Filters are translated conjunct by conjunct by filtersql.Translate, as the
// SQLite store translates them (timeline/sqlite/where.go); whereBuilder
// spells the parts for ClickHouse. A translated conjunct is a
// ClickHouse boolean (UInt8) that is 1 exactly when the CEL conjunct is
// true: no column is Nullable and every form below is total (never NULL,
// never an exception), so NOT, OR and if() keep CEL's meaning. A conjunct
// with no exact form is left out of the SQL, which makes the SQL a superset
// of the matches, and Records checks each row it reads against the whole
// filter (the filter is residual).
//
// CEL form                               SQL form (columns of the record row)
//   true, false                            1, 0
//   a && b, a || b, !a, c ? a : b          (a AND b), (a OR b), (NOT a), if(c, a, b)
//   code OP 500 (also run, line)           (code OP 500)
//   user OP "x" (every string field)       (user OP 'x'); >= and <= as NOT < and NOT > (compareSQL)
//   stage OP "x"                           the same test on the latest stage of the stages bits (stageSQL)
//   x in [c1, c2], x == c1 || x == c2      (x IN (c1, c2)), constants of x's type; for time, ORs of time tests
//   x.startsWith("p"), x.endsWith("s")     startsWith(x, 'p'), endsWith(x, 's')
//   x.contains("s")                        (position(x, 's') > 0)
//   x.startsWith("") etc.                  1
//   time OP timestamp("...")               (time_ns OP n), or a constant out of range (filtersql.CompareTime)
//   latency OP duration("...")             (latency_ns OP n)
//   field OP field (same type)             (a OP b)
//   constant OP constant                   1 or 0, evaluated by CEL itself
//
// Strings are compared as bytes, as CEL (Go) compares them: ClickHouse
// compares String values with memcmp, and startsWith, endsWith and
// position count bytes (their UTF8 variants are never used, nor LIKE).
// Constants are written into the SQL as literals (quote): no argument is
// bound, so the driver leaves the query as it is.
//
// Nothing else translates, as on SQLite: annotations live in the JSON of
// extra, and a missing key is a CEL runtime error; size() counts code
// points, which lengthUTF8 does not do for malformed UTF-8; matches() is
// RE2 on CEL's side; int fields compared with uint or double constants, or
// in lists of mixed types, take CEL's cross-type numeric rules; arithmetic,
// conversions and macros (has, all, exists...) stay in CEL. bad is the
// classifier's key set, which Records reads as id IN (...) when bad is a
// conjunct (see badIDs), and checks again row by row.

// whereField is a filter field the record table holds.
type whereField struct {
	sql  string // a column, or an expression over columns
	kind filtersql.Kind
}

// fieldColumns maps each filter field (timeline.Fields) that the record
// table holds to its column. The fields not here (annotations, bad) are
// evaluated row by row only.
var fieldColumns = map[string]string{
	"time":        "time_ns",
	"source":      "source",
	"group":       "api_group",
	"version":     "api_version",
	"resource":    "resource",
	"subresource": "subresource",
	"kind":        "kind",
	"ns":          "namespace",
	"name":        "name",
	"uid":         "uid",
	"verb":        "verb",
	"reason":      "reason",
	"user":        "user",
	"userAgent":   "user_agent",
	"sourceIP":    "source_ip",
	"code":        "code",
	"type":        "type",
	"level":       "level",
	"stage":       stageSQL(),
	"latency":     "latency_ns",
	"auditID":     auditIDSQL,
	"requestURI":  "uri",
	"message":     "message",
	"run":         "run_id",
	"line":        "line",
}

// stageSQL is the name of the latest stage in the stages bits, as
// timeline.Stage.Last names it ("" for none).
func stageSQL() string {
	var args []string
	for i := 7; i >= 0; i-- {
		bit := timeline.Stage(1 << i)
		if name := bit.Last(); name != "" {
			args = append(args, fmt.Sprintf("bitAnd(stages, %d) != 0", bit), quote(name))
		}
	}
	return "multiIf(" + strings.Join(append(args, "''"), ", ") + ")"
}

var whereFields = func() map[string]whereField {
	m := make(map[string]whereField, len(timeline.Fields))
	for _, f := range timeline.Fields {
		if col, ok := fieldColumns[f.Name]; ok && filtersql.KindOf(f.Type) != filtersql.KindNone {
			m[f.Name] = whereField{sql: col, kind: filtersql.KindOf(f.Type)}
		}
	}
	return m
}()

const (
	// maxWhereDepth bounds the nesting translated, well inside the
	// server's max_ast_depth (1000): one CEL level is two or three levels
	// of ClickHouse's syntax tree.
	maxWhereDepth = 100
	// maxWhereBytes bounds the SQL of a filter, and maxWhereNodes its
	// syntax tree (about), well inside the server's max_query_size (256
	// KiB) and max_ast_elements (50,000): conjuncts past them are left to
	// CEL.
	maxWhereBytes = 96 << 10
	maxWhereNodes = 20000
)

// compileWhere translates the conjuncts of a checked CEL expression that
// have an SQL form into a ClickHouse boolean over the record table.
// complete reports that the whole expression was translated.
func compileWhere(e ast.Expr) (sql string, complete bool) {
	complete = true
	var parts []string
	size, nodes := 0, 0
	for _, c := range filtersql.Conjuncts(e) {
		w := &whereBuilder{}
		s, ok := filtersql.Translate[string](c, w, maxWhereDepth)
		if !ok || size+len(s) > maxWhereBytes || nodes+w.nodes > maxWhereNodes {
			complete = false
			continue
		}
		switch s {
		case "1":
			continue
		case "0":
			return "0", true // the whole filter is false
		}
		parts = append(parts, s)
		size, nodes = size+len(s)+len(" AND "), nodes+w.nodes
	}
	return strings.Join(parts, " AND "), complete
}

// whereBuilder is the ClickHouse dialect of filtersql.Translate. It counts
// the nodes of the syntax tree it writes (about).
type whereBuilder struct {
	nodes int
}

func (w *whereBuilder) Kind(name string) filtersql.Kind {
	f, ok := whereFields[name]
	if !ok {
		return filtersql.KindNone
	}
	return f.kind
}

func (w *whereBuilder) Bool(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func (w *whereBuilder) And(l, r string) string { return w.op("(" + l + " AND " + r + ")") }
func (w *whereBuilder) Or(l, r string) string  { return w.op("(" + l + " OR " + r + ")") }
func (w *whereBuilder) Not(p string) string    { return w.op("(NOT " + p + ")") }

func (w *whereBuilder) Cond(c, t, f string) string {
	return w.op("if(" + c + ", " + t + ", " + f + ")")
}

// op counts an operator with its operands' list.
func (w *whereBuilder) op(sql string) string {
	w.nodes += 2
	return sql
}

func (w *whereBuilder) CompareFields(op, l, r string) string {
	w.nodes += 4
	return compareSQL(whereFields[l].kind, whereFields[l].sql, op, whereFields[r].sql)
}

// Compare translates f op v, v a constant of f's type.
func (w *whereBuilder) Compare(op, name string, v ref.Val) string {
	f := whereFields[name]
	if t, ok := v.(types.Timestamp); ok {
		return w.timeCompare(op, f, t.Time)
	}
	w.nodes += 4
	return compareSQL(f.kind, f.sql, op, literal(v))
}

// compareSQL is l op r, of kind k. Strings are ordered by < and > alone:
// ClickHouse 18.16 answers a >= b (and b <= a) wrongly when b is a
// followed by a NUL byte and more (it says "a" >= "a\x00"), where < and >
// are right (TestStringOrderOnServer).
func compareSQL(k filtersql.Kind, l, op, r string) string {
	switch {
	case k == filtersql.KindString && op == ">=":
		return "(NOT (" + l + " < " + r + "))"
	case k == filtersql.KindString && op == "<=":
		return "(NOT (" + l + " > " + r + "))"
	}
	return "(" + l + " " + op + " " + r + ")"
}

// literal spells v, a string, int or duration constant, as SQL.
func literal(v ref.Val) string {
	switch v := v.(type) {
	case types.Int:
		return strconv.FormatInt(int64(v), 10)
	case types.Duration:
		return strconv.FormatInt(int64(v.Duration), 10)
	case types.String:
		return quote(string(v))
	}
	panic(fmt.Sprintf("clickhouse: no literal for %T", v)) // Translate passes constants of the field's kind
}

// timeCompare translates time op t: the column as it is for an in-range
// t, else a constant for the rows with a time and one for those with none
// (filtersql.CompareTime).
func (w *whereBuilder) timeCompare(op string, f whereField, t time.Time) string {
	w.nodes += 4
	none := strconv.FormatInt(noTime, 10)
	switch filtersql.CompareTime(op, t) {
	case filtersql.TimeColumn:
		return "(" + f.sql + " " + op + " " + strconv.FormatInt(t.UnixNano(), 10) + ")"
	case filtersql.TimeAll:
		return w.Bool(true)
	case filtersql.TimeSome:
		return "(" + f.sql + " != " + none + ")"
	case filtersql.TimeNoTime:
		return "(" + f.sql + " = " + none + ")"
	}
	return w.Bool(false)
}

// In translates the field name in vals, constants of its type; for time,
// as ORs of time tests.
func (w *whereBuilder) In(name string, vals []ref.Val) string {
	f := whereFields[name]
	list := make([]string, len(vals))
	for i, v := range vals {
		if t, ok := v.(types.Timestamp); ok {
			list[i] = w.timeCompare("=", f, t.Time)
		} else {
			list[i] = literal(v)
		}
	}
	if f.kind == filtersql.KindTime {
		return w.op("(" + strings.Join(list, " OR ") + ")")
	}
	w.nodes += 4 + len(list)
	return "(" + f.sql + " IN (" + strings.Join(list, ", ") + "))"
}

// StringTest translates x.startsWith(s), x.endsWith(s) and x.contains(s).
// CEL tests bytes (Go's strings package); so do these functions.
func (w *whereBuilder) StringTest(fn, name, s string) string {
	w.nodes += 4
	f := whereFields[name]
	if fn == "contains" {
		return "(position(" + f.sql + ", " + quote(s) + ") > 0)"
	}
	return fn + "(" + f.sql + ", " + quote(s) + ")" // startsWith, endsWith
}

// quote spells s as a ClickHouse string literal that holds its bytes as
// they are: the quote and the backslash escaped by a backslash, and every
// byte outside printable ASCII as \xHH, so that the query is plain ASCII
// whatever the filter holds (NUL, malformed UTF-8).
func quote(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		default:
			b.WriteString(`\x`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// maxBadIDs bounds the classifier's key set that a query names (about 20
// bytes an id, inside max_query_size with a filter at its bound); a larger
// set is not named, and bad is checked row by row alone.
const maxBadIDs = 4096

// badIDs is the condition that a row is in the key set bad, for a filter
// of which bad is a conjunct; "" when the set is too large to name.
func badIDs(bad map[int64]bool) string {
	ids := make([]int64, 0, len(bad))
	for id, b := range bad {
		if b {
			ids = append(ids, id)
		}
	}
	switch {
	case len(ids) == 0:
		return "0"
	case len(ids) > maxBadIDs:
		return ""
	}
	slices.Sort(ids)
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = strconv.FormatInt(id, 10)
	}
	return "id IN (" + strings.Join(list, ", ") + ")"
}
