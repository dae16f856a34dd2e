package clickhouse

import (
	"context"
	"fmt"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/faultline/faultline/timeline/filtersql"
)

// For the tests of package clickhouse_test, which run on the test cluster
// (clickhousetest imports this package, so they cannot be internal).
var (
	CompileWhere = compileWhere
	Quote        = quote
)

// SetMaxListedCells sets how many emptied cells a read of the rollup's
// stats lists, until the test ends.
func SetMaxListedCells(t testing.TB, n int) {
	old := maxListedCells
	maxListedCells = n
	t.Cleanup(func() { maxListedCells = old })
}

// SetFlushAt sets how many records a batch holds before it judges and
// writes them, until the test ends.
func SetFlushAt(t testing.TB, n int) {
	old := flushAt
	flushAt = n
	t.Cleanup(func() { flushAt = old })
}

// OnInsertSent calls f with the rows of each insert of record rows sent,
// by shard index, until the test ends (not safe beside other tests that
// write).
func OnInsertSent(t testing.TB, f func(shard, rows int)) {
	old := insertSent
	insertSent = f
	t.Cleanup(func() { insertSent = old })
}

// CompareStrings is compareSQL for strings.
func CompareStrings(l, op, r string) string { return compareSQL(filtersql.KindString, l, op, r) }

// QueryString runs a query that returns one String.
func (s *Store) QueryString(ctx context.Context, query string) (string, error) {
	var v string
	err := s.conn.QueryRow(ctx, query).Scan(&v)
	return v, err
}

// StopMerges stops the background merges of the record table and its
// copies on every shard: a test then sees every version written, as a store does between
// merges.
func (s *Store) StopMerges(ctx context.Context) error {
	for _, sh := range s.shards {
		c, err := connect(sh.addr, "default", nil)
		if err != nil {
			return err
		}
		err = c.Exec(ctx, "SYSTEM STOP MERGES "+s.db+".record_local")
		for _, cp := range copies {
			if err == nil && s.kindOf(cp) != noCopy {
				err = c.Exec(ctx, "SYSTEM STOP MERGES "+s.db+"."+cp.name+"_local")
			}
		}
		c.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// MergeFinal merges local (record_local, or failed_local) into one part
// per partition on every shard, as its background merges would in time,
// and stops its merges again. OPTIMIZE does nothing, and says nothing,
// while a background merge runs on the same parts: it is asked to say so
// (optimize_throw_if_noop) and tried again until the parts are merged.
func (s *Store) MergeFinal(ctx context.Context, local string) error {
	for _, sh := range s.shards {
		c, err := connect(sh.addr, "default", ch.Settings{"optimize_throw_if_noop": 1})
		if err != nil {
			return err
		}
		err = mergeFinal(ctx, c, s.db, local)
		c.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func mergeFinal(ctx context.Context, c driver.Conn, db, local string) error {
	if err := c.Exec(ctx, "SYSTEM START MERGES "+db+"."+local); err != nil {
		return err
	}
	var err error
	for range 100 {
		if err = c.Exec(ctx, "OPTIMIZE TABLE "+db+"."+local+" FINAL"); err == nil {
			var unmerged uint64
			err = c.QueryRow(ctx, "SELECT count() FROM (SELECT partition FROM system.parts WHERE active AND database = ? "+
				"AND table = ? GROUP BY partition HAVING count() > 1)", db, local).Scan(&unmerged)
			if err == nil && unmerged == 0 {
				break
			}
			if err == nil {
				err = fmt.Errorf("%s.%s: %d partitions of more than one part", db, local, unmerged)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	return c.Exec(ctx, "SYSTEM STOP MERGES "+db+"."+local)
}

// CountRows counts the rows of the record table, every version.
func (s *Store) CountRows(ctx context.Context) (uint64, error) {
	var n uint64
	err := s.conn.QueryRow(ctx, "SELECT count() FROM record").Scan(&n)
	return n, err
}

// ShardOf is the index of the shard a row with this key is written to.
func (s *Store) ShardOf(key int64) int { return shardOf(s.shards, intHash64(uint64(key))) }

// IntHash64 is intHash64.
var IntHash64 = intHash64

// SetChunkRows sets the rows a chunked read aims at for the rest of the
// test (chunks.go).
func SetChunkRows(t testing.TB, n int64) {
	old := chunkRows
	chunkRows = n
	t.Cleanup(func() { chunkRows = old })
}

// OnShards runs each statement on every shard, in turn (%s: the
// database).
func (s *Store) OnShards(ctx context.Context, stmts ...string) error {
	for _, stmt := range stmts {
		for _, sh := range s.shards {
			// As createSchema: a view over LowCardinality columns needs it.
			c, err := connect(sh.addr, "default", ch.Settings{"allow_experimental_low_cardinality_type": 1})
			if err != nil {
				return err
			}
			err = c.Exec(ctx, fmt.Sprintf(stmt, s.db))
			c.Close()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// FailedViewUnmarked is the copy's view as an older faultline made it;
// %[1]s in it is the database (OnShards).
var FailedViewUnmarked = failedViewUnmarked

// KeepsFailed reports whether the store reads failed requests from their
// copy (failedTable).
func (s *Store) KeepsFailed() bool { return s.failed != noCopy }

// CopyAlone reports whether the store's copy of the failed requests
// judges their current versions by itself.
func (s *Store) CopyAlone() bool { return s.failed == copyAlone }

// KeepsSlow reports whether the store reads slow requests from slowTable.
func (s *Store) KeepsSlow() bool { return s.slow }

// KeepsDeleted reports whether the store reads deletions from their copy.
func (s *Store) KeepsDeleted() bool { return s.deleted != noCopy }

// AsOlderWriter makes the stores of this process write as a faultline
// older than the slow requests' table does (none of its rows, no mark on
// their runs), until the test ends.
func AsOlderWriter(t testing.TB) {
	writesSlow = false
	t.Cleanup(func() { writesSlow = true })
}
