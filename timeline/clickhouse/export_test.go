package clickhouse

import (
	"context"

	"github.com/faultline/faultline/timeline/filtersql"
)

// For the tests of package clickhouse_test, which run on the test cluster
// (clickhousetest imports this package, so they cannot be internal).
var (
	CompileWhere = compileWhere
	Quote        = quote
)

// CompareStrings is compareSQL for strings.
func CompareStrings(l, op, r string) string { return compareSQL(filtersql.KindString, l, op, r) }

// QueryString runs a query that returns one String.
func (s *Store) QueryString(ctx context.Context, query string) (string, error) {
	var v string
	err := s.conn.QueryRow(ctx, query).Scan(&v)
	return v, err
}
