package filtersql

import (
	"strings"

	"github.com/faultline/faultline/timeline"
)

// Column is one column of a store's record read: its SQL expression, the
// field it fills (0: every read reads it), and the constant of its type
// that stands in for it in a read that leaves the field out, so that the
// store reads nothing for it and scans the row as it always does.
type Column struct {
	Expr  string
	Field timeline.FieldSet
	Zero  string
}

// SelectList is the comma-separated list of cols for a read of the fields
// f (timeline.FieldSet; 0 reads every field).
func SelectList(cols []Column, f timeline.FieldSet) string {
	list, _ := SelectListWhere(cols, f, 0, "")
	return list
}

// SelectListWhere is SelectList with the fields more (those f leaves out)
// read on the rows where the SQL condition cond holds, and zero on the
// others (timeline.Query.FieldsWhere). n is how many times the list holds
// cond (a store binds its placeholders' arguments that many times).
func SelectListWhere(cols []Column, f, more timeline.FieldSet, cond string) (list string, n int) {
	return selectList(cols, f, more, cond, false)
}

// Selected is SelectListWhere without the columns of the fields a read
// leaves out; Scanned picks a row's destinations for them. A client that
// decodes each column of each row by itself (ClickHouse's) spends as long
// on a constant as on a column: on the 10 M-line benchmark log, the failed
// requests' 69,066 rows read in 136-189 ms without their 10 constants,
// 223-253 ms with them (2026-12-07).
func Selected(cols []Column, f, more timeline.FieldSet, cond string) string {
	list, _ := selectList(cols, f, more, cond, true)
	return list
}

// Scanned is the destinations, from dst (one for each of cols), of the
// columns Selected lists for f and more, in dst's own array.
func Scanned(cols []Column, f, more timeline.FieldSet, dst []any) []any {
	if f == 0 {
		return dst
	}
	out := dst[:0]
	for i, c := range cols {
		if c.Field == 0 || f.Has(c.Field) || more&c.Field != 0 {
			out = append(out, dst[i])
		}
	}
	return out
}

func selectList(cols []Column, f, more timeline.FieldSet, cond string, omit bool) (list string, n int) {
	out := make([]string, 0, len(cols))
	for _, c := range cols {
		switch {
		case c.Field == 0 || f.Has(c.Field):
			out = append(out, c.Expr)
		case more&c.Field != 0:
			out = append(out, "CASE WHEN "+cond+" THEN "+c.Expr+" ELSE "+c.Zero+" END")
			n++
		case !omit:
			out = append(out, c.Zero)
		}
	}
	return strings.Join(out, ", "), n
}

// Always is a column every read reads.
func Always(expr string) Column { return Column{Expr: expr} }

// Optional is a column that fills field, read as zero when a read leaves
// the field out.
func Optional(expr string, field timeline.FieldSet, zero string) Column {
	return Column{Expr: expr, Field: field, Zero: zero}
}

// PlanFields plans the fields a store's read of q fills (see
// timeline.FieldSet): f, those of q.Fields and, when rows must still be
// matched with q.Where in Go (residual), those its filters read there;
// more, those of q.FieldsWhere beyond f, to read where its filter holds.
// keep reports that the records read must be cleared in Go (Query.Keep).
// A store that cannot put q.FieldsWhere's filter in SQL reads more whole,
// with the fields that filter reads, and clears in Go. FieldPod reads
// extra: a read that does not keep makes it the pod's alone (PodOnly).
func PlanFields(q timeline.Query, residual bool) (f, more timeline.FieldSet, keep bool) {
	f, more, keep = planFields(q, residual)
	// Where extra is read whole for other records (FieldsWhere), those
	// that want the pod alone are made so by Keep.
	podOnly := podOnly(f, more)
	if f&timeline.FieldPod != 0 && f&timeline.FieldExtra == 0 {
		f, keep = f|timeline.FieldExtra, keep || !podOnly
	}
	if more&timeline.FieldPod != 0 && (f|more)&timeline.FieldExtra == 0 {
		more |= timeline.FieldExtra
	}
	return f, more, keep
}

// PodOnly reports whether a read of q that PlanFields plans reads extra
// for Record.Pod alone (timeline.FieldPod), never for anything else: a
// store may then read less of it, so long as Pod reads the same, and
// must make each record's extra as Query.Keep would (KeepPod) where it
// does not call Keep. Query.Keep matches q.FieldsWhere's filter on each
// record: 88,622 matches of CEL on the failed requests of the 10 M-line
// benchmark log, where the SQL of the read has matched it already.
func PodOnly(q timeline.Query, residual bool) bool {
	f, more, _ := planFields(q, residual)
	return podOnly(f, more)
}

func podOnly(f, more timeline.FieldSet) bool {
	return f != 0 && (f|more)&timeline.FieldExtra == 0 && (f|more)&timeline.FieldPod != 0
}

// KeepPod makes r's extra as a read of FieldPod without FieldExtra yields
// it (timeline.FieldSet.Keep), for a read that reads no more of r than
// its query asks (PodOnly, without Query.Keep).
func KeepPod(r *timeline.Record) {
	if r.Extra != nil {
		r.Extra = timeline.PodExtra(r.Pod())
	}
}

func planFields(q timeline.Query, residual bool) (f, more timeline.FieldSet, keep bool) {
	if q.Fields == 0 {
		return 0, 0, false
	}
	f, keep = q.Fields, residual
	w := q.FieldsWhere
	if residual {
		f |= q.Where.Needs()
		if w != nil {
			f |= w.Where.Needs() // for q.Keep
		}
	}
	if w != nil {
		more = w.Fields &^ f
	}
	return f, more, keep
}
