package sqlite

import (
	"strconv"
	"strings"
	"time"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/filtersql"
)

// Filters are translated conjunct by conjunct (by filtersql.Translate, which
// whereBuilder spells the parts for). A translated conjunct is an
// SQL boolean that is true exactly when the CEL conjunct is: every column is
// NOT NULL and every SQL form below is total (never NULL), so NOT and OR keep
// CEL's meaning. A conjunct with no exact SQL form is left out of the SQL,
// which makes the SQL a superset of the matches, and the caller checks each
// row against the whole filter.
//
// CEL form                               SQL form (r is the record row)
//   true, false                            1, 0
//   a && b, a || b, !a, c ? a : b          (a AND b), (a OR b), (NOT a), CASE WHEN
//   code OP 500 (also run, line)           r.code OP 500 (ints are inlined as decimals)
//   code >= 500, code in [404, 500]        ... AND unlikely(r.code >= 400), for the partial index record_error
//   reason == "BackOff"                    ... AND r.reason != 0 AND r.reason > 0, for the partial index record_reason
//   uid OP "x" (auditID, requestURI,       r.uid OP ?
//     message too)
//   user == "x", user != "x"               r.user = COALESCE((SELECT id FROM strs WHERE s = ?), -1), !=
//   user == "", user != ""                 r.user = 0, r.user != 0
//   user < "x" (<=, >, >=)                 r.user IN (SELECT id FROM strs WHERE s < ?)
//   user in ["a", "b"]                     r.user IN (SELECT id FROM strs WHERE s IN (?, ?))
//   code in [404, 500]                     r.code IN (404, 500)
//   user.startsWith("p")                   r.user IN (SELECT id FROM strs WHERE (s >= ? AND s < ?)): [p, p+1)
//   user.endsWith("s")                     r.user IN (SELECT id FROM strs WHERE (length(CAST(s AS BLOB)) >= ?
//                                            AND substr(CAST(s AS BLOB), ?) = ?blob))
//   user.contains("s")                     r.user IN (SELECT id FROM strs WHERE instr(CAST(s AS BLOB), ?blob) > 0)
//   uri.startsWith("p") etc.               the same tests on r.uri itself
//   x.startsWith("") etc.                  1
//   time OP timestamp("...")               r.time_ns OP ?, adjusted for time_ns 0 (see timeCompare)
//   latency OP duration("...")             r.latency_ns OP ?
//   field OP field (same type)             r.a OP r.b; interned ordering compares the strings
//   constant OP constant                   1 or 0, evaluated by CEL itself
//
// String tests compare bytes, as CEL (Go strings) does: BINARY collation
// compares TEXT with memcmp, and CAST(... AS BLOB) makes substr and instr
// count bytes rather than characters. LIKE (case-insensitive) and GLOB
// (wildcards) are never used, and no text is spliced into the SQL.
//
// Nothing else translates: stage and annotations have no column; size()
// counts code points, which SQLite's length() does not do for NULs or
// malformed UTF-8; matches() is RE2; int fields compared with uint or double
// constants, or in lists of mixed types, take CEL's cross-type numeric rules;
// arithmetic, conversions and macros (has, all, exists...) stay in CEL.

// fieldKind is how a filter variable is stored.
type fieldKind int

const (
	kindNone     fieldKind = iota // no column: evaluated row by row only
	kindInterned                  // string, id into strs
	kindText                      // string, stored as TEXT
	kindInt                       // int, INTEGER
	kindTime                      // timestamp, INTEGER UTC nanoseconds, 0 for the zero time
	kindDuration                  // duration, INTEGER nanoseconds
)

// kind is the store-neutral kind of k.
func (k fieldKind) kind() filtersql.Kind {
	switch k {
	case kindInterned, kindText:
		return filtersql.KindString
	case kindInt:
		return filtersql.KindInt
	case kindTime:
		return filtersql.KindTime
	case kindDuration:
		return filtersql.KindDuration
	}
	return filtersql.KindNone
}

type whereField struct {
	name   string
	column string // "r.<column>"
	kind   fieldKind
}

// fieldColumns maps each filter field (timeline.Fields) that the record
// table holds to its column; interned columns hold ids into strs. The
// fields not here (stage, annotations, bad) are evaluated row by row only.
var fieldColumns = map[string]struct {
	column   string
	interned bool
}{
	"time":        {"time_ns", false},
	"source":      {"source", true},
	"group":       {"api_group", true},
	"version":     {"api_version", true},
	"resource":    {"resource", true},
	"subresource": {"subresource", true},
	"kind":        {"kind", true},
	"ns":          {"namespace", true},
	"name":        {"name", true},
	"uid":         {"uid", false},
	"verb":        {"verb", true},
	"reason":      {"reason", true},
	"user":        {"user", true},
	"userAgent":   {"user_agent", true},
	"sourceIP":    {"source_ip", true},
	"code":        {"code", false},
	"type":        {"type", true},
	"level":       {"level", true},
	"latency":     {"latency_ns", false},
	"auditID":     {"audit_id", false},
	"requestURI":  {"uri", false},
	"message":     {"message", false},
	"run":         {"run_id", false},
	"line":        {"line", false},
}

var whereFields = func() map[string]whereField {
	m := make(map[string]whereField, len(timeline.Fields))
	for _, f := range timeline.Fields {
		c, ok := fieldColumns[f.Name]
		k := kindNone
		switch kind := filtersql.KindOf(f.Type); {
		case !ok:
		case kind == filtersql.KindString && c.interned:
			k = kindInterned
		case kind == filtersql.KindString:
			k = kindText
		case kind == filtersql.KindInt:
			k = kindInt
		case kind == filtersql.KindTime:
			k = kindTime
		case kind == filtersql.KindDuration:
			k = kindDuration
		}
		if k != kindNone {
			m[f.Name] = whereField{name: f.Name, column: "r." + c.column, kind: k}
		}
		if enc, ok := encodedText[c.column]; ok && k == kindText {
			m[f.Name] = whereField{name: f.Name, column: enc, kind: k}
		}
	}
	return m
}()

// encodedText maps the record columns stored encoded (rowenc.go) to the SQL
// of their text: every string test reads that, so it means what it means on
// the record.
var encodedText = map[string]string{
	"uid":      idSQL("r.uid"),
	"audit_id": idSQL("r.audit_id"),
	"uri":      uriSQL("r"),
}

const (
	// maxWhereDepth bounds the nesting translated, well inside SQLite's
	// expression depth limit (1000).
	maxWhereDepth = 100
	// maxWhereArgs bounds the placeholders of one query, well inside SQLite's
	// limit (32766); conjuncts past it are left to CEL.
	maxWhereArgs = 10000
)

// facts are conditions a translated expression implies that the planner
// cannot see itself: the WHERE clauses of the partial indexes.
type facts uint8

const (
	factError  facts = 1 << iota // code >= 400: record_error
	factReason                   // reason != "": record_reason
	factsAll   = factError | factReason
	// The terms are spelled as in 0001_init.sql: the planner matches them
	// textually, and does not see that code >= 500 implies code >= 400.
	// unlikely() tells it that errors are rare, as they are in audit logs:
	// else a range on code is estimated to keep a quarter of the rows, and
	// scanning record_time_key in ORDER BY order wins.
	//
	// reason > 0 says the same as reason != 0 (string ids are positive,
	// "" is 0) and gives the planner a range on record_reason where no
	// other term does (a filter that ORs a reason list with "any reason,
	// of a Warning about a Pod"). Without it, the planner can scan that
	// index only by skipping through its reasons, which it does only when
	// the statistics say they are few: on a timeline of audit logs alone,
	// whose record_reason is empty, it scanned the whole window by time
	// instead (about 0.6 s of the 3.2 s investigate took on 7.3 M records).
	factErrorSQL  = "unlikely(r.code >= 400)"
	factReasonSQL = "r.reason != 0 AND r.reason > 0"
)

// compileWhere translates the conjuncts of a checked CEL expression that have
// an SQL form into an SQL boolean over record alias r. complete reports that
// the whole expression was translated.
func compileWhere(e ast.Expr) (sql string, args []any, complete bool) {
	complete = true
	var parts []string
	for _, c := range filtersql.Conjuncts(e) {
		w := &whereBuilder{}
		p, ok := filtersql.Translate[sqlPred](c, w, maxWhereDepth)
		if !ok || len(args)+len(w.args) > maxWhereArgs {
			complete = false
			continue
		}
		switch p.sql {
		case "1":
			continue
		case "0":
			return "0", nil, true // the whole filter is false
		}
		parts = append(parts, p.sql)
		args = append(args, w.args...)
		// A partial index is usable only when a term of the WHERE clause is
		// (or trivially implies) the index's own WHERE clause.
		if p.fs&factError != 0 {
			parts = append(parts, factErrorSQL)
		}
		if p.fs&factReason != 0 {
			parts = append(parts, factReasonSQL)
		}
	}
	return strings.Join(parts, " AND "), args, complete
}

// sqlPred is a translated predicate: its SQL, and what it implies.
type sqlPred struct {
	sql string
	fs  facts
}

// whereBuilder is the SQLite dialect of filtersql.Translate. It binds the
// strings, durations and times as arguments, in the order of the SQL text.
type whereBuilder struct {
	args []any
}

func (w *whereBuilder) arg(v any) string {
	w.args = append(w.args, v)
	return "?"
}

func (w *whereBuilder) Kind(name string) filtersql.Kind {
	f, ok := whereFields[name]
	if !ok {
		return filtersql.KindNone
	}
	return f.kind.kind()
}

func (w *whereBuilder) Bool(b bool) sqlPred {
	if b {
		return sqlPred{"1", 0}
	}
	return sqlPred{"0", factsAll} // false implies anything
}

func (w *whereBuilder) And(l, r sqlPred) sqlPred {
	return sqlPred{"(" + l.sql + " AND " + r.sql + ")", l.fs | r.fs}
}

func (w *whereBuilder) Or(l, r sqlPred) sqlPred {
	return sqlPred{"(" + l.sql + " OR " + r.sql + ")", l.fs & r.fs}
}

func (w *whereBuilder) Not(p sqlPred) sqlPred { return sqlPred{"(NOT " + p.sql + ")", 0} }

func (w *whereBuilder) Cond(c, t, f sqlPred) sqlPred {
	return sqlPred{"(CASE WHEN " + c.sql + " THEN " + t.sql + " ELSE " + f.sql + " END)", t.fs & f.fs}
}

// strValue is an SQL expression for a string field's text.
func strValue(f whereField) string {
	if f.kind == kindInterned {
		return "(SELECT s FROM strs WHERE id = " + f.column + ")"
	}
	return f.column
}

func isString(k fieldKind) bool { return k == kindInterned || k == kindText }

func (w *whereBuilder) CompareFields(op, ln, rn string) sqlPred {
	l, r := whereFields[ln], whereFields[rn]
	switch {
	case l.kind == kindInterned && r.kind == kindInterned && (op == "=" || op == "!="):
		return sqlPred{l.column + " " + op + " " + r.column, 0} // one dictionary: equal ids are equal strings
	case isString(l.kind):
		return sqlPred{strValue(l) + " " + op + " " + strValue(r), 0}
	}
	return sqlPred{l.column + " " + op + " " + r.column, 0}
}

// Compare translates f op v, v a constant of f's type.
func (w *whereBuilder) Compare(op, name string, v ref.Val) sqlPred {
	f := whereFields[name]
	switch f.kind {
	case kindInt:
		n := int64(v.(types.Int))
		var fs facts
		if f.name == "code" && impliesError(op, n) {
			fs = factError
		}
		return sqlPred{f.column + " " + op + " " + intSQL(n), fs}
	case kindDuration:
		return sqlPred{f.column + " " + op + " " + w.arg(int64(v.(types.Duration).Duration)), 0}
	case kindTime:
		return w.timeCompare(op, f, v.(types.Timestamp).Time)
	case kindText:
		return sqlPred{f.column + " " + op + " " + w.arg(string(v.(types.String))), 0}
	}
	return w.internedCompare(op, f, string(v.(types.String)))
}

// impliesError reports whether code op n implies code >= 400.
func impliesError(op string, n int64) bool {
	switch op {
	case "=", ">=":
		return n >= 400
	case ">":
		return n >= 399
	}
	return false
}

// intSQL spells an int64 as an SQL integer literal. Ints are inlined, not
// bound, so the planner can match them against partial index clauses.
func intSQL(n int64) string {
	if n < 0 {
		return "(" + strconv.FormatInt(n, 10) + ")" // SQLite reads -9223372036854775808 as an integer
	}
	return strconv.FormatInt(n, 10)
}

func (w *whereBuilder) internedCompare(op string, f whereField, s string) sqlPred {
	var fs facts
	if f.name == "reason" && internedImpliesNonEmpty(op, s) {
		fs = factReason
	}
	if s == "" { // id 0; every string is >= ""
		switch op {
		case "=", "<=":
			return sqlPred{f.column + " = 0", fs}
		case "!=", ">":
			return sqlPred{f.column + " != 0", fs}
		case ">=":
			return sqlPred{"1", fs}
		case "<":
			return w.Bool(false)
		}
	}
	switch op {
	case "=", "!=":
		// An absent string has no id: -1 matches no row, so == is false and
		// != true, and neither is ever NULL.
		return sqlPred{f.column + " " + op + " COALESCE((SELECT id FROM strs WHERE s = " + w.arg(s) + "), -1)", fs}
	}
	return sqlPred{f.column + " IN (SELECT id FROM strs WHERE s " + op + " " + w.arg(s) + ")", fs}
}

// internedImpliesNonEmpty reports whether x op s implies x != "".
func internedImpliesNonEmpty(op, s string) bool {
	switch op {
	case "=", ">=":
		return s != ""
	case ">":
		return true
	case "!=":
		return s == ""
	}
	return false
}

// timeCompare translates time op t: the column as it is for an in-range
// t, else a constant for the rows with a time and one for those with none
// (filtersql.CompareTime).
func (w *whereBuilder) timeCompare(op string, f whereField, t time.Time) sqlPred {
	none := strconv.FormatInt(noTime, 10)
	switch filtersql.CompareTime(op, t) {
	case filtersql.TimeColumn:
		return sqlPred{f.column + " " + op + " " + w.arg(t.UnixNano()), 0}
	case filtersql.TimeAll:
		return w.Bool(true)
	case filtersql.TimeSome:
		return sqlPred{f.column + " != " + none, 0}
	case filtersql.TimeNoTime:
		return sqlPred{f.column + " = " + none, 0}
	}
	return w.Bool(false)
}

// In translates f in vals, constants of f's type. Translate gives x == c1
// || x == c2 || ... (one field, constants of its type, || nested in any
// shape) here too: the same rows, but SQLite answers an IN list with one
// index search per value or one lookup per row, where it evaluates a
// 5,000-term OR term by term for every row (BenchmarkWhereOrOfEquals:
// 153.6 s/op unfolded, 0.81 s/op folded).
func (w *whereBuilder) In(name string, vals []ref.Val) sqlPred {
	f := whereFields[name]
	var fs facts
	switch f.name {
	case "code":
		fs = factError
		for _, v := range vals {
			if v.(types.Int) < 400 {
				fs = 0
			}
		}
	case "reason":
		fs = factReason
		for _, v := range vals {
			if v.(types.String) == "" {
				fs = 0
			}
		}
	}
	list := make([]string, len(vals))
	switch f.kind {
	case kindInt:
		for i, v := range vals {
			list[i] = intSQL(int64(v.(types.Int)))
		}
	case kindDuration:
		for i, v := range vals {
			list[i] = w.arg(int64(v.(types.Duration).Duration))
		}
	case kindText, kindInterned:
		for i, v := range vals {
			list[i] = w.arg(string(v.(types.String)))
		}
	case kindTime:
		for i, v := range vals {
			list[i] = w.timeCompare("=", f, v.(types.Timestamp).Time).sql
		}
		return sqlPred{"(" + strings.Join(list, " OR ") + ")", 0}
	}
	in := "(" + strings.Join(list, ", ") + ")"
	if f.kind == kindInterned {
		return sqlPred{f.column + " IN (SELECT id FROM strs WHERE s IN " + in + ")", fs}
	}
	return sqlPred{f.column + " IN " + in, fs}
}

// StringTest translates x.startsWith(s), x.endsWith(s) and x.contains(s).
// CEL tests bytes (Go's strings package); so does the SQL.
func (w *whereBuilder) StringTest(fn, name, s string) sqlPred {
	f := whereFields[name]
	var fs facts
	if f.name == "reason" {
		fs = factReason
	}
	col := "s" // test the dictionary, then match ids
	if f.kind == kindText {
		col = f.column
	}
	var test string
	switch fn {
	case "startsWith":
		// The strings with prefix p are the range [p, p+1) in byte order.
		test = col + " >= " + w.arg(s)
		if end, ok := prefixEnd(s); ok {
			test = "(" + test + " AND " + col + " < " + w.arg(end) + ")"
		}
	case "endsWith":
		// substr() of a zero-length BLOB is NULL, not x'': test the length
		// first, so the test is false there, not NULL (NULL under NOT would
		// drop the row).
		blob := "CAST(" + col + " AS BLOB)"
		test = "(length(" + blob + ") >= " + w.arg(int64(len(s))) + " AND substr(" + blob + ", " + w.arg(-int64(len(s))) +
			") = " + w.arg([]byte(s)) + ")"
	default: // contains
		test = "instr(CAST(" + col + " AS BLOB), " + w.arg([]byte(s)) + ") > 0"
	}
	if f.kind == kindInterned {
		return sqlPred{f.column + " IN (SELECT id FROM strs WHERE " + test + ")", fs}
	}
	return sqlPred{test, fs}
}

// prefixEnd returns the least string greater than every string with prefix
// p, in byte order, or false if there is none (p is all 0xff bytes).
func prefixEnd(p string) (string, bool) {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}
