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
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Expr
		if c.Field != 0 && !f.Has(c.Field) {
			out[i] = c.Zero
		}
	}
	return strings.Join(out, ", ")
}

// Always is a column every read reads.
func Always(expr string) Column { return Column{Expr: expr} }

// Optional is a column that fills field, read as zero when a read leaves
// the field out.
func Optional(expr string, field timeline.FieldSet, zero string) Column {
	return Column{Expr: expr, Field: field, Zero: zero}
}
