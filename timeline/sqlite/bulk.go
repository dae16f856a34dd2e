package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Bulk loading. Each index a record enters costs its insert a seek and a
// page write; building an index once over rows already in place sorts them
// instead. So an ingest into an empty timeline drops the record table's
// secondary indexes, loads, and builds them again at the end. Measured on
// 1 M lines (733k records), the gain is within the noise (34.9 s against
// 36.1 s, two runs each), since the indexes of a load that size still fit
// the page cache; it is meant for the loads whose indexes do not, where
// appends show what per-insert maintenance costs (half the rate at 7.3 M
// records: hack/bench/README.md).
//
// The indexes that keep ingest idempotent (record_time_key,
// record_key_whole) stay. The dropped ones are saved in meta.bulk_indexes
// (name -> CREATE statement, as the schema held it) in the transaction that
// drops them, so a load that is killed leaves a timeline whose queries are
// right but slow until the next ingest builds what is missing.

// keptIndexes are the record indexes a bulk load keeps.
var keptIndexes = map[string]bool{"record_time_key": true, "record_key_whole": true}

// BulkLoad prepares an empty timeline for a large ingest and returns the
// function that ends it, building the indexes it dropped. On a timeline
// that holds records already (or one in a bulk load now) it does nothing:
// rebuilding indexes over rows held would cost more than it saves.
func (s *Store) BulkLoad(ctx context.Context) (end func(context.Context) error, err error) {
	none := func(context.Context) error { return nil }
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return none, fmt.Errorf("bulk load: %w", err)
	}
	defer tx.Rollback()
	held, err := bulkPending(ctx, tx)
	if err != nil {
		return none, err
	}
	if held != nil {
		// A load that was killed (or one under way in another process):
		// build its indexes now, and load this one as an append.
		tx.Rollback()
		return none, s.rebuildBulk(ctx)
	}
	var some bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM record)`).Scan(&some); err != nil {
		return none, fmt.Errorf("bulk load: %w", err)
	}
	if some {
		return none, nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT name, sql FROM sqlite_master
		WHERE type = 'index' AND tbl_name = 'record' AND sql IS NOT NULL`)
	if err != nil {
		return none, fmt.Errorf("bulk load: %w", err)
	}
	idx := map[string]string{}
	for rows.Next() {
		var name, q string
		if err := rows.Scan(&name, &q); err != nil {
			rows.Close()
			return none, fmt.Errorf("bulk load: %w", err)
		}
		if !keptIndexes[name] {
			idx[name] = q
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return none, fmt.Errorf("bulk load: %w", err)
	}
	if len(idx) == 0 {
		return none, nil
	}
	if err := saveBulk(ctx, tx, idx); err != nil {
		return none, fmt.Errorf("bulk load: %w", err)
	}
	for name := range idx {
		if _, err := tx.ExecContext(ctx, `DROP INDEX `+quoteIdent(name)); err != nil {
			return none, fmt.Errorf("bulk load: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return none, fmt.Errorf("bulk load: %w", err)
	}
	s.log.Debug("bulk load: secondary indexes dropped until the end", "indexes", len(idx))
	return s.rebuildBulk, nil
}

// bulkPending returns the indexes a bulk load dropped and has not built
// again, or nil.
func bulkPending(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (map[string]string, error) {
	var saved string
	err := q.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'bulk_indexes'`).Scan(&saved)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read bulk_indexes: %w", err)
	}
	var idx map[string]string
	if err := json.Unmarshal([]byte(saved), &idx); err != nil {
		return nil, fmt.Errorf("read bulk_indexes: %w", err)
	}
	return idx, nil
}

// saveBulk records idx as the indexes a bulk load dropped and has not
// built again (none: it forgets them).
func saveBulk(ctx context.Context, tx *sql.Tx, idx map[string]string) error {
	if len(idx) == 0 {
		_, err := tx.ExecContext(ctx, `DELETE FROM meta WHERE k = 'bulk_indexes'`)
		return err
	}
	saved, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO meta (k, v) VALUES ('bulk_indexes', ?)
		ON CONFLICT (k) DO UPDATE SET v = excluded.v`, string(saved))
	return err
}

// rebuildBulk builds the indexes a bulk load dropped, in one transaction,
// and forgets them.
func (s *Store) rebuildBulk(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx) // an interrupted ingest still ends its load
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return fmt.Errorf("build indexes: %w", err)
	}
	defer tx.Rollback()
	idx, err := bulkPending(ctx, tx)
	if err != nil || idx == nil {
		return err
	}
	for name, q := range idx {
		// The saved statement is the schema's own; IF NOT EXISTS lets a
		// rebuild that another writer finished first pass.
		q = strings.Replace(q, "CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1)
		q = strings.Replace(q, "CREATE UNIQUE INDEX ", "CREATE UNIQUE INDEX IF NOT EXISTS ", 1)
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("build index %s: %w", name, err)
		}
	}
	if err := saveBulk(ctx, tx, nil); err != nil {
		return fmt.Errorf("build indexes: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("build indexes: %w", err)
	}
	return nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
