package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// A migration's SQL may hand over to Go between statements: a line
// "-- go: NAME" runs goSteps[NAME] there, in the migration's transaction.
// Migration 0010 encodes the record rows so (rowenc.go): in Go, by the
// writer's own functions, one pass over the table.
var goSteps = map[string]func(ctx context.Context, s *Store, tx *sql.Tx) error{
	"encode_records":  encodeRecords,
	"analyze_records": analyzeRecords,
	"fill_slow":       fillSlow,
	"forget_built":    forgetBuilt,
}

// forgetBuilt drops from a killed bulk load's list (meta.bulk_indexes) the
// indexes the schema holds now, so that the list keeps its meaning (what
// the load dropped and nothing has built since) after a migration built
// one (0016's record_error). Its old statement would do nothing at the
// next ingest (rebuildBulk creates IF NOT EXISTS); the list would only
// name as missing an index that is there.
func forgetBuilt(ctx context.Context, _ *Store, tx *sql.Tx) error {
	idx, err := bulkPending(ctx, tx)
	if err != nil || idx == nil {
		return err
	}
	for name := range idx {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?`, name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			delete(idx, name)
		}
	}
	return saveBulk(ctx, tx, idx)
}

// analyzeRecords refreshes the planner's statistics of a rebuilt record
// table, as Store.Analyze does after an ingest: dropping the old table
// dropped them, and without them a filter may pick the wrong index.
func analyzeRecords(ctx context.Context, _ *Store, tx *sql.Tx) error {
	var any bool
	if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM record)").Scan(&any); err != nil || !any {
		return err
	}
	_, err := tx.ExecContext(ctx, "PRAGMA analysis_limit = 1000; ANALYZE record")
	return err
}

const goStepPrefix = "-- go: "

// runMigration executes a migration's SQL and its Go steps, in order.
func runMigration(ctx context.Context, s *Store, tx *sql.Tx, text string) error {
	var part strings.Builder
	flush := func() error {
		defer part.Reset()
		if strings.TrimSpace(part.String()) == "" {
			return nil
		}
		_, err := tx.ExecContext(ctx, part.String())
		return err
	}
	for line := range strings.Lines(text) {
		name, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), goStepPrefix)
		if !ok {
			part.WriteString(line)
			continue
		}
		step, ok := goSteps[name]
		if !ok {
			return fmt.Errorf("no Go step %q", name)
		}
		if err := flush(); err != nil {
			return err
		}
		if err := step(ctx, s, tx); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return flush()
}

// encodeRecords copies record (schema 9) into record_new, encoding its long
// strings as the writer does, a page of ids at a time.
func encodeRecords(ctx context.Context, _ *Store, tx *sql.Tx) error {
	const page = 10000
	ins, err := tx.PrepareContext(ctx, `INSERT INTO record_new (id, key, time_ns, source, api_group, api_version, resource,
		subresource, kind, namespace, name, uid, verb, reason, user, user_agent, source_ip, code, type, level, latency_ns,
		stages, audit_id, uri_tpl, uri, message, run_id, line, extra, extra_dict, extra_head, extra_tail)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	in := interner{tx: tx, ids: map[string]int64{"": 0}}
	type row struct {
		v                        [22]any // id .. stages, as read
		auditID, uri, message    string
		run, line                int64
		extra                    sql.NullString
		namespace, name, uidText string
	}
	for last := int64(-1 << 63); ; {
		rows, err := tx.QueryContext(ctx, `SELECT r.id, r.key, r.time_ns, r.source, r.api_group, r.api_version, r.resource,
			r.subresource, r.kind, r.namespace, r.name, r.uid, r.verb, r.reason, r.user, r.user_agent, r.source_ip, r.code,
			r.type, r.level, r.latency_ns, r.stages, r.audit_id, r.uri, r.message, r.run_id, r.line, r.extra,
			(SELECT s FROM strs WHERE id = r.namespace), (SELECT s FROM strs WHERE id = r.name)
			FROM record r WHERE r.id > ? ORDER BY r.id LIMIT ?`, last, page)
		if err != nil {
			return err
		}
		var batch []row
		for rows.Next() {
			var x row
			ptrs := make([]any, 0, 30)
			for i := range x.v {
				ptrs = append(ptrs, &x.v[i])
			}
			ptrs = append(ptrs, &x.auditID, &x.uri, &x.message, &x.run, &x.line, &x.extra, &x.namespace, &x.name)
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return err
			}
			batch = append(batch, x)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(batch) == 0 {
			return nil
		}
		for i := range batch {
			x := &batch[i]
			uid, _ := x.v[11].(string) // TEXT in schema 9
			tpl, rest := encodeURI(x.uri, x.namespace, x.name)
			var xp extraParts
			if x.extra.Valid {
				xp = encodeExtra([]byte(x.extra.String))
				if xp.whole == nil && xp.dict == "" { // "" read as no extra would turn NULL
					xp.whole = x.extra.String
				}
			}
			tplID, err := in.intern(ctx, tpl)
			if err != nil {
				return err
			}
			dictID, err := in.intern(ctx, xp.dict)
			if err != nil {
				return err
			}
			args := append(x.v[:11:11], encodeID(uid))
			args = append(args, x.v[12:]...)
			args = append(args, encodeID(x.auditID), tplID, rest, x.message, x.run, x.line, xp.whole, dictID, xp.head, xp.tail)
			if _, err := ins.ExecContext(ctx, args...); err != nil {
				return err
			}
		}
		last = batch[len(batch)-1].v[0].(int64)
	}
}

// interner interns strings in a migration's transaction.
type interner struct {
	tx  *sql.Tx
	ids map[string]int64
}

func (in *interner) intern(ctx context.Context, s string) (int64, error) {
	if id, ok := in.ids[s]; ok {
		return id, nil
	}
	var id int64
	err := in.tx.QueryRowContext(ctx, `SELECT id FROM strs WHERE s = ?`, s).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		err = in.tx.QueryRowContext(ctx, `INSERT INTO strs (s) VALUES (?) RETURNING id`, s).Scan(&id)
	}
	if err != nil {
		return 0, fmt.Errorf("intern %q: %w", s, err)
	}
	if len(in.ids) >= maxCachedStrs {
		clear(in.ids)
		in.ids[""] = 0
	}
	in.ids[s] = id
	return id, nil
}
