package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/redact"
)

func ns(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNS(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// BeginRun inserts the run and sets run.ID.
func (s *Store) BeginRun(ctx context.Context, run *timeline.IngestRun) error {
	if run.Status == "" {
		run.Status = timeline.RunRunning
	}
	if run.Started.IsZero() {
		run.Started = time.Now().UTC()
	}
	res, err := s.db.ExecContext(ctx,
		`INSERT INTO ingest_run (source, path, size, sha256, started_ns, status) VALUES (?, ?, ?, ?, ?, ?)`,
		string(run.Source), run.Path, run.Size, run.SHA256, ns(run.Started), string(run.Status))
	if err != nil {
		return fmt.Errorf("begin ingest run: %w", err)
	}
	run.ID, err = res.LastInsertId()
	return err
}

// FinishRun writes the run's final counts and status.
func (s *Store) FinishRun(ctx context.Context, run *timeline.IngestRun) error {
	if run.Finished.IsZero() {
		run.Finished = time.Now().UTC()
	}
	if err := updateRun(ctx, s.db, run); err != nil {
		return fmt.Errorf("finish ingest run %d: %w", run.ID, err)
	}
	return nil
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func updateRun(ctx context.Context, db execer, run *timeline.IngestRun) error {
	_, err := db.ExecContext(ctx, `UPDATE ingest_run SET size = ?, sha256 = ?, finished_ns = ?, first_ns = ?, last_ns = ?,
		lines = ?, records = ?, merged = ?, duplicates = ?, versions = ?, bad_lines = ?, status = ?, error = ? WHERE id = ?`,
		run.Size, run.SHA256, ns(run.Finished), ns(run.First), ns(run.Last),
		run.Lines, run.Records, run.Merged, run.Duplicates, run.Versions, run.BadLines, string(run.Status), run.Error, run.ID)
	return err
}

// Batch opens a write transaction for the run. The transaction ends only by
// Commit or Rollback: database/sql would roll it back by itself when ctx is
// cancelled, and an interrupted ingest must still commit what it has.
func (s *Store) Batch(ctx context.Context, run int64) (timeline.Batch, error) {
	tx, err := s.db.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return nil, fmt.Errorf("begin batch: %w", err)
	}
	return &batch{s: s, tx: tx, run: run, strs: s.strCache(), newStrs: nil}, nil
}

const insertRecord = `INSERT INTO record (key, time_ns, source, api_group, api_version, resource, subresource, kind,
	namespace, name, uid, verb, reason, user, user_agent, source_ip, code, type, level, latency_ns, stages,
	audit_id, uri, message, run_id, line, extra)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (key) DO NOTHING`

// joinStage adds a stage not yet held to an existing request record; the
// later stage's code, latency, message and extra win (SET reads old values).
const joinStage = `UPDATE record SET
	stages = stages | ?1,
	code = CASE WHEN ?1 > stages THEN ?2 ELSE code END,
	latency_ns = CASE WHEN ?1 > stages THEN ?3 ELSE latency_ns END,
	message = CASE WHEN ?1 > stages THEN ?4 ELSE message END,
	extra = CASE WHEN ?1 > stages THEN ?5 ELSE extra END
WHERE key = ?6 AND ?1 != 0 AND (stages & ?1) = 0`

type batch struct {
	s       *Store
	tx      *sql.Tx
	run     int64
	strs    *strCache
	newStrs []string // interned in this transaction: forgotten on rollback
	rec     *sql.Stmt
	join    *sql.Stmt
	getStr  *sql.Stmt
	putStr  *sql.Stmt
	getCont *sql.Stmt
	putCont *sql.Stmt
	putVer  *sql.Stmt
}

func (b *batch) stmt(ctx context.Context, p **sql.Stmt, query string) (*sql.Stmt, error) {
	if *p != nil {
		return *p, nil
	}
	st, err := b.tx.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	*p = st
	return st, nil
}

// intern returns the id of s in the string dictionary, adding it if new.
func (b *batch) intern(ctx context.Context, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	if id, ok := b.strs.get(s); ok {
		return id, nil
	}
	get, err := b.stmt(ctx, &b.getStr, `SELECT id FROM strs WHERE s = ?`)
	if err != nil {
		return 0, err
	}
	var id int64
	err = get.QueryRowContext(ctx, s).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		put, perr := b.stmt(ctx, &b.putStr, `INSERT INTO strs (s) VALUES (?)`)
		if perr != nil {
			return 0, perr
		}
		res, perr := put.ExecContext(ctx, s)
		if perr != nil {
			return 0, perr
		}
		id, err = res.LastInsertId()
		b.newStrs = append(b.newStrs, s)
	}
	if err != nil {
		return 0, fmt.Errorf("intern %q: %w", s, err)
	}
	b.strs.put(s, id)
	return id, nil
}

func (b *batch) internAll(ctx context.Context, ss ...string) ([]int64, error) {
	ids := make([]int64, len(ss))
	for i, s := range ss {
		id, err := b.intern(ctx, s)
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	return ids, nil
}

func (b *batch) AddRecord(ctx context.Context, r *timeline.Record) (timeline.AddResult, error) {
	ctx = context.WithoutCancel(ctx) // callers check cancellation between records
	if r.Key == "" {
		return 0, errors.New("add record: empty natural key")
	}
	o := &r.Object
	ids, err := b.internAll(ctx, string(r.Source), o.Group, o.Version, o.Resource, o.Subresource, o.Kind,
		o.Namespace, o.Name, r.Verb, r.Reason, r.User, r.UserAgent, r.SourceIP, r.Type, r.Level)
	if err != nil {
		return 0, fmt.Errorf("add record: %w", err)
	}
	st, err := b.stmt(ctx, &b.rec, insertRecord)
	if err != nil {
		return 0, fmt.Errorf("add record: %w", err)
	}
	var extra any
	if len(r.Extra) > 0 {
		extra = string(r.Extra)
	}
	run := r.Evidence.Run
	if run == 0 {
		run = b.run
	}
	key := keyHash(r.Key)
	res, err := st.ExecContext(ctx, key, ns(r.Time), ids[0], ids[1], ids[2], ids[3], ids[4], ids[5],
		ids[6], ids[7], o.UID, ids[8], ids[9], ids[10], ids[11], ids[12], r.Code, ids[13], ids[14],
		int64(r.Latency), int64(r.Stages), r.AuditID, r.URI, r.Message, run, r.Evidence.Line, extra)
	if err != nil {
		return 0, fmt.Errorf("add record: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return timeline.Added, err
	}
	// Held already: a stage of the same request joins it, anything else is
	// a duplicate. (Two statements rather than one upsert: telling the cases
	// apart after an upsert needs RETURNING, which costs more than this.)
	if r.Stages == 0 {
		return timeline.Duplicate, nil
	}
	js, err := b.stmt(ctx, &b.join, joinStage)
	if err != nil {
		return 0, fmt.Errorf("add record: %w", err)
	}
	res, err = js.ExecContext(ctx, int64(r.Stages), r.Code, int64(r.Latency), r.Message, extra, key)
	if err != nil {
		return 0, fmt.Errorf("join stage: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return timeline.Duplicate, err
	}
	return timeline.Merged, nil
}

// AddVersion redacts the version's content, stores it once by hash, and adds
// the version. It fills v.Content and v.Hash with what was stored.
func (b *batch) AddVersion(ctx context.Context, v *timeline.ObjectVersion) (bool, error) {
	ctx = context.WithoutCancel(ctx) // callers check cancellation between records
	body, err := redact.Object(v.Content, b.s.salt)
	if err != nil {
		return false, fmt.Errorf("add version of %s/%s: %w", v.Object.Resource, v.Object.Name, err)
	}
	sum := sha256.Sum256(body)
	v.Content, v.Hash = body, "sha256:"+hex.EncodeToString(sum[:])
	v.Key = timeline.VersionKey(v)

	getC, err := b.stmt(ctx, &b.getCont, `SELECT id FROM content WHERE hash = ?`)
	if err != nil {
		return false, err
	}
	var cid int64
	err = getC.QueryRowContext(ctx, v.Hash).Scan(&cid)
	if errors.Is(err, sql.ErrNoRows) {
		putC, perr := b.stmt(ctx, &b.putCont, `INSERT INTO content (hash, body) VALUES (?, ?)`)
		if perr != nil {
			return false, perr
		}
		res, perr := putC.ExecContext(ctx, v.Hash, body)
		if perr != nil {
			return false, fmt.Errorf("add content: %w", perr)
		}
		cid, err = res.LastInsertId()
	}
	if err != nil {
		return false, fmt.Errorf("add content: %w", err)
	}
	o := &v.Object
	ids, err := b.internAll(ctx, o.Group, o.Version, o.Resource, o.Kind, o.Namespace, o.Name)
	if err != nil {
		return false, err
	}
	put, err := b.stmt(ctx, &b.putVer, `INSERT INTO object_version (key, api_group, api_version, resource, kind,
		namespace, name, uid, resource_version, time_ns, content_id, run_id, line)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING`)
	if err != nil {
		return false, err
	}
	run := v.Evidence.Run
	if run == 0 {
		run = b.run
	}
	res, err := put.ExecContext(ctx, keyHash(v.Key), ids[0], ids[1], ids[2], ids[3], ids[4], ids[5], o.UID,
		v.ResourceVersion, ns(v.Time), cid, run, v.Evidence.Line)
	if err != nil {
		return false, fmt.Errorf("add version: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (b *batch) SetCursor(ctx context.Context, name, resourceVersion string) error {
	_, err := b.tx.ExecContext(context.WithoutCancel(ctx), `INSERT INTO watch_cursor (name, resource_version, updated_ns)
		VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET resource_version = excluded.resource_version,
		updated_ns = excluded.updated_ns`, name, resourceVersion, time.Now().UnixNano())
	if err != nil {
		return fmt.Errorf("set cursor %s: %w", name, err)
	}
	return nil
}

// Commit writes the batch even when ctx is cancelled: an interrupted ingest
// keeps what it has read.
func (b *batch) Commit(ctx context.Context, progress *timeline.IngestRun) error {
	ctx = context.WithoutCancel(ctx)
	if progress != nil {
		if err := updateRun(ctx, b.tx, progress); err != nil {
			b.Rollback()
			return fmt.Errorf("commit batch: %w", err)
		}
	}
	if err := b.tx.Commit(); err != nil {
		b.forget()
		return fmt.Errorf("commit batch: %w", err)
	}
	b.newStrs = nil
	return nil
}

func (b *batch) Rollback() error {
	b.forget()
	err := b.tx.Rollback()
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// forget drops strings interned by an uncommitted transaction from the cache:
// their ids do not exist once it rolls back.
func (b *batch) forget() {
	for _, s := range b.newStrs {
		b.strs.del(s)
	}
	b.newStrs = nil
}
