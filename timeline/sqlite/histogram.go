package sqlite

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"

	"github.com/faultline/faultline/timeline"
)

// Histogram counts the records in q.Buckets equal spans of [q.Since,
// q.Until). A filter with a complete SQL form is counted by SQLite in one
// GROUP BY over the time index (with no filter, the index alone answers);
// a filter with a residual part is counted row by row, like Records.
func (s *Store) Histogram(ctx context.Context, q timeline.HistogramQuery) ([]timeline.Bucket, error) {
	out, lo, width, err := q.Spans()
	if err != nil {
		return nil, err
	}
	hi, n := q.Until.UnixNano(), int64(len(out))
	count := func(f *timeline.Filter, add func(b *timeline.Bucket, k int64)) error {
		return s.countBuckets(ctx, lo, hi, width, f, func(i, k int64) {
			if i >= 0 && i < n {
				add(&out[i], k)
			}
		})
	}
	if err := count(q.Where, func(b *timeline.Bucket, k int64) { b.All += k }); err != nil {
		return nil, err
	}
	if q.Bad == nil {
		return out, nil
	}
	bad := q.Bad
	if q.Where != nil {
		both, err := timeline.CompileFilter("(" + q.Where.String() + ") && (" + q.Bad.String() + ")")
		if err != nil {
			return nil, fmt.Errorf("histogram: %w", err)
		}
		bad = both
	}
	if err := count(bad, func(b *timeline.Bucket, k int64) { b.Bad += k }); err != nil {
		return nil, err
	}
	return out, nil
}

// countBuckets calls add(bucket, count) for the records of [lo, hi)
// matching f, bucketed by width nanoseconds from lo.
func (s *Store) countBuckets(ctx context.Context, lo, hi, width int64, f *timeline.Filter, add func(i, k int64)) error {
	where, args, complete := "", []any(nil), true
	if f != nil {
		where, args, complete = compileWhere(f.Expr())
	}
	if !complete {
		for r, err := range s.Records(ctx, timeline.Query{Since: fromNS(lo), Until: fromNS(hi), Where: f}) {
			if err != nil {
				return fmt.Errorf("histogram: %w", err)
			}
			if !r.Time.IsZero() {
				add((r.Time.UnixNano()-lo)/width, 1)
			}
		}
		return nil
	}
	// No time (noTime) is never in a span: it is below every lo.
	query := "SELECT (r.time_ns - ?) / ? AS b, count(*) FROM record r WHERE "
	qargs := []any{lo, width}
	if parts := disjuncts(f); len(parts) > 1 {
		// A || B over a time range: SQLite would walk the time index and
		// read every row; the union of each part's own index search is
		// exact (ids are unique) and reads only the matches.
		var sub []string
		for _, p := range parts {
			w, a, _ := compileWhere(p)
			sub = append(sub, "SELECT r.id FROM record r WHERE r.time_ns >= ? AND r.time_ns < ? AND ("+w+")")
			qargs = append(qargs, lo, hi)
			qargs = append(qargs, a...)
		}
		// The ids drive the outer query (the time range is in each part).
		query += "r.time_ns != " + strconv.FormatInt(noTime, 10) + " AND r.id IN (" + strings.Join(sub, " UNION ") + ")"
	} else {
		query += "r.time_ns >= ? AND r.time_ns < ?"
		qargs = append(qargs, lo, hi)
		if where != "" {
			query += " AND (" + where + ")"
			qargs = append(qargs, args...)
		}
	}
	query += " GROUP BY b"
	rows, err := s.db.QueryContext(ctx, query, qargs...)
	if err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var i, k int64
		if err := rows.Scan(&i, &k); err != nil {
			return fmt.Errorf("histogram: %w", err)
		}
		add(i, k)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	return nil
}

// disjuncts splits a filter at its top-level ORs when every part has a
// complete SQL form; otherwise it returns nil.
func disjuncts(f *timeline.Filter) []ast.Expr {
	if f == nil {
		return nil
	}
	var parts []ast.Expr
	var walk func(e ast.Expr) bool
	walk = func(e ast.Expr) bool {
		if e.Kind() == ast.CallKind && e.AsCall().FunctionName() == operators.LogicalOr && len(e.AsCall().Args()) == 2 {
			return walk(e.AsCall().Args()[0]) && walk(e.AsCall().Args()[1])
		}
		if w, _, complete := compileWhere(e); !complete || w == "" {
			return false
		}
		parts = append(parts, e)
		return true
	}
	if !walk(f.Expr()) {
		return nil
	}
	return parts
}
