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
	"github.com/faultline/faultline/timeline/rollup"
)

// noTime is the time_ns of "no time" (the zero time.Time): the lowest
// int64, outside timeline.MinTime, so that the Unix epoch (0) is stored as
// itself and reads back as 1970, not as "no time".
const noTime = timeline.NoTimeNS

func ns(t time.Time) int64      { return timeline.UnixNS(t) }
func fromNS(n int64) time.Time  { return timeline.FromUnixNS(n) }
func boundNS(t time.Time) int64 { return timeline.BoundNS(t) }

// BeginRun inserts the run and sets run.ID.
func (s *Store) BeginRun(ctx context.Context, run *timeline.IngestRun) error {
	if run.Status == "" {
		run.Status = timeline.RunRunning
	}
	if run.Started.IsZero() {
		run.Started = time.Now().UTC()
	}
	return insertRun(run, func(q string, args ...any) (sql.Result, error) { return s.exec(ctx, q, args...) })
}

// insertRun inserts run with exec and sets run.ID.
func insertRun(run *timeline.IngestRun, exec func(q string, args ...any) (sql.Result, error)) error {
	res, err := exec(`INSERT INTO ingest_run (source, path, size, sha256, started_ns, finished_ns, first_ns, last_ns, status,
		since_ns, until_ns)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		string(run.Source), run.Path, run.Size, run.SHA256, ns(run.Started), noTime, noTime, noTime, string(run.Status),
		bound(run.Since), bound(run.Until))
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
	if err := s.retry(ctx, func() error { return updateRun(ctx, s.db, run) }); err != nil {
		return fmt.Errorf("finish ingest run %d: %w", run.ID, err)
	}
	return nil
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func updateRun(ctx context.Context, db execer, run *timeline.IngestRun) error {
	_, err := db.ExecContext(ctx, `UPDATE ingest_run SET size = ?, sha256 = ?, finished_ns = ?, first_ns = ?, last_ns = ?,
		lines = ?, records = ?, merged = ?, duplicates = ?, conflicts = ?, versions = ?, bad_lines = ?, status = ?, error = ?,
		outside = ?
		WHERE id = ?`,
		run.Size, run.SHA256, ns(run.Finished), ns(run.First), ns(run.Last),
		run.Lines, run.Records, run.Merged, run.Duplicates, run.Conflicts, run.Versions, run.BadLines, string(run.Status),
		run.Error, run.Outside, run.ID)
	return err
}

// bound is a window's bound as ingest_run keeps it: NULL when open.
func bound(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: ns(t), Valid: true}
}

// Batch opens a write transaction for the run. The transaction ends only by
// Commit or Rollback: database/sql would roll it back by itself when ctx is
// cancelled, and an interrupted ingest must still commit what it has.
func (s *Store) Batch(ctx context.Context, run int64) (timeline.Batch, error) {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin batch: %w", err)
	}
	// A checkpoint copies the pages the log holds into the file. Ingest
	// rewrites the same index pages batch after batch: checkpointing every
	// 64 MiB of log instead of SQLite's 4 MiB writes each of them once for
	// many batches.
	if _, err := tx.ExecContext(context.WithoutCancel(ctx), "PRAGMA wal_autocheckpoint = 16384"); err != nil {
		tx.Rollback()
		return nil, fmt.Errorf("begin batch: %w", err)
	}
	if err := s.open.checkGen(context.WithoutCancel(ctx), tx); err != nil {
		tx.Rollback()
		return nil, fmt.Errorf("begin batch: %w", err)
	}
	return &batch{s: s, tx: tx, run: run, strs: s.strCache(), newStrs: nil}, nil
}

const insertRecord = `INSERT INTO record (key, time_ns, source, api_group, api_version, resource, subresource, kind,
	namespace, name, uid, verb, reason, user, user_agent, source_ip, code, type, level, latency_ns, stages,
	audit_id, uri_tpl, uri, message, run_id, line, extra, extra_dict, extra_head, extra_tail)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING`

// joinStage adds a stage not yet held to an existing request record; the
// later stage's code, latency, message and extra win (SET reads old values).
const joinStage = `UPDATE record SET
	stages = stages | ?1,
	code = CASE WHEN ?1 > stages THEN ?2 ELSE code END,
	latency_ns = CASE WHEN ?1 > stages THEN ?3 ELSE latency_ns END,
	message = CASE WHEN ?1 > stages THEN ?4 ELSE message END,
	extra = CASE WHEN ?1 > stages THEN ?5 ELSE extra END,
	extra_dict = CASE WHEN ?1 > stages THEN ?7 ELSE extra_dict END,
	extra_head = CASE WHEN ?1 > stages THEN ?8 ELSE extra_head END,
	extra_tail = CASE WHEN ?1 > stages THEN ?9 ELSE extra_tail END
WHERE id = ?6`

// heldStaged and heldWhole read what joining a stage needs of the record
// held under a key: its stages and values before the join, and the fields
// the request rollup classes it by. A record with stages is unique by
// (time_ns, key), one without by key (0011_time_key.sql).
var (
	heldColumns = `SELECT id, stages, code, latency_ns, source, verb, api_group, resource, subresource,
	namespace, name, user, user_agent, ` + uriSQL("record") + `, coalesce(` + extraSQL("record") + `, '') FROM record `
	heldStaged = heldColumns + `WHERE time_ns = ? AND key = ?`
	heldWhole  = heldColumns + `WHERE key = ? AND stages = 0`
)

type batch struct {
	s       *Store
	tx      *sql.Tx
	run     int64
	strs    *strCache
	newStrs []string // interned in this transaction: forgotten on rollback
	recIDs  [15]memo // AddRecord's interned fields, as of the last record
	rec     *sql.Stmt
	join    *sql.Stmt
	getStr  *sql.Stmt
	putStr  *sql.Stmt
	getCont *sql.Stmt
	putCont *sql.Stmt
	putVer  *sql.Stmt
	getVer  *sql.Stmt
	updVer  *sql.Stmt

	// The request rollup (rollup.go).
	roll       rollup.Delta
	newClasses []rollup.Class // added in this transaction: forgotten on rollback
	held       *sql.Stmt
	heldW      *sql.Stmt
	strByID    *sql.Stmt
	getClass   *sql.Stmt
	putClass   *sql.Stmt
	putSec     *sql.Stmt
	putClient  *sql.Stmt
	putStat    *sql.Stmt

	series seriesWriter // samples (series.go)

	// The slow requests (slow.go).
	slow    map[int64]slowNote // by record id
	putSlow *sql.Stmt
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

// memo is one interned string and its id.
type memo struct {
	s  string
	id int64
	ok bool
}

// conflict is addKeyed's outcome for a key held by a record of other
// content: AddRecord tries the next key.
const conflict timeline.AddResult = -1

// AddRecord stores r under its natural key, joins it to the record held
// there as a further stage, or skips it as a duplicate; or, when the record
// held there is another request, keeps it as its own record.
//
// The ingester sets the key (what should be one record); the store decides,
// by comparing content, whether a record that shares it really is the same.
// Only the store sees the held record, and a key that a forged or garbled
// line can share must not let that line vanish as a "duplicate" or lend its
// user, verb or code to another request's record. A record held under the
// key is the same request if it has the same verb, user and object (group,
// resource, subresource, namespace, name, where an empty name agrees with
// any, as a create's does before the apiserver names it); a record of the
// same stage (or with no stages) must also have the same code, and a record
// with no stages (an Event, an artifact version: a whole thing, never
// joined) the same content. Else the record is a conflict, kept under its
// key extended by its identity, and, should that be held with another code
// (or content), extended by its code and stage (and content) as well: a
// re-ingest finds each at the same key, so it stays idempotent, and the
// later stages of a conflicting request join its own record.
func (b *batch) AddRecord(ctx context.Context, r *timeline.Record) (timeline.AddResult, error) {
	ctx = context.WithoutCancel(ctx) // callers check cancellation between records
	if r.Key == "" {
		return 0, errors.New("add record: empty natural key")
	}
	if err := checkTime("record time", r.Time); err != nil {
		return 0, fmt.Errorf("add record: %w", err)
	}
	redact.Record(r)
	o := &r.Object
	fields := [len(b.recIDs)]string{string(r.Source), o.Group, o.Version, o.Resource, o.Subresource, o.Kind,
		o.Namespace, o.Name, r.Verb, r.Reason, r.User, r.UserAgent, r.SourceIP, r.Type, r.Level}
	ids := make([]int64, len(fields))
	for i, f := range fields {
		// Most fields repeat the last record's (source, level, group,
		// version, often verb and resource): no dictionary lookup then.
		if m := &b.recIDs[i]; m.ok && m.s == f {
			ids[i] = m.id
			continue
		}
		id, err := b.intern(ctx, f)
		if err != nil {
			return 0, fmt.Errorf("add record: %w", err)
		}
		ids[i] = id
		b.recIDs[i] = memo{s: f, id: id, ok: true}
	}
	row, err := b.encodeRecord(ctx, r)
	if err != nil {
		return 0, fmt.Errorf("add record: %w", err)
	}
	for i := 0; ; i++ {
		k, ok := timeline.ConflictKey(r, i)
		if !ok {
			break
		}
		res, err := b.addKeyed(ctx, r, ids, row, keyHash(k))
		switch {
		case err != nil:
			return 0, err
		case res == conflict:
			continue
		case i > 0 && res == timeline.Added:
			return timeline.Conflict, nil
		}
		return res, nil
	}
	return timeline.Duplicate, nil // not reached: the last key holds all that is compared
}

// addKeyed adds r under key (see AddRecord); ids are its interned fields,
// row its encoded strings.
func (b *batch) addKeyed(ctx context.Context, r *timeline.Record, ids []int64, row recordRow, key int64) (timeline.AddResult, error) {
	ok := openKey{ns(r.Time), key}
	if r.Stages != 0 {
		if held := b.s.open.get(ok); held != nil {
			return b.joinOpen(ctx, r, ids, row, ok, held)
		}
	}
	st, err := b.stmt(ctx, &b.rec, insertRecord)
	if err != nil {
		return 0, fmt.Errorf("add record: %w", err)
	}
	run := r.Evidence.Run
	if run == 0 {
		run = b.run
	}
	res, err := st.ExecContext(ctx, key, ns(r.Time), ids[0], ids[1], ids[2], ids[3], ids[4], ids[5],
		ids[6], ids[7], row.uid, ids[8], ids[9], ids[10], ids[11], ids[12], r.Code, ids[13], ids[14],
		int64(r.Latency), int64(r.Stages), row.auditID, row.uriTpl, row.uri, r.Message, run, r.Evidence.Line, row.extra,
		row.extraDict, row.extraHead, row.extraTail)
	if err != nil {
		return 0, fmt.Errorf("add record: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("add record: %w", err)
	}
	if n == 1 {
		return b.added(r, ids, ok, res)
	}
	return b.joinHeld(ctx, r, ids, row, key)
}

// added counts a newly inserted record in the rollup and, while its request
// is open (no final stage yet), keeps it in the open-request cache.
func (b *batch) added(r *timeline.Record, ids []int64, ok openKey, res sql.Result) (timeline.AddResult, error) {
	var rq *rollup.Request
	if q, counted := rollup.RequestOf(r); counted {
		rq = &q
		b.roll.Add(rq, r)
		if r.Stages&finalStages != 0 {
			id, err := res.LastInsertId()
			if err != nil {
				return 0, fmt.Errorf("add record: %w", err)
			}
			b.noteSlow(id, rq, 0, r.Stages, r.Code, int64(r.Latency), r.Extra)
		}
	}
	if r.Stages != 0 && r.Stages&finalStages == 0 {
		id, err := res.LastInsertId()
		if err != nil {
			return 0, fmt.Errorf("add record: %w", err)
		}
		if rq != nil {
			// The cache outlives the batch: it keeps a copy of the
			// class, not the line the record was decoded from.
			keep := rq.Clone()
			rq = &keep
		}
		b.s.open.put(ok, &openRequest{id: id, stages: r.Stages, code: r.Code, latency: int64(r.Latency),
			ident: identOf(ids), rq: rq})
	}
	return timeline.Added, nil
}

// joinHeld judges r against the record already held under key: the same
// request's record (a stage seen again, or a further stage, joined into it)
// or another's (a conflict).
func (b *batch) joinHeld(ctx context.Context, r *timeline.Record, ids []int64, row recordRow, key int64) (timeline.AddResult, error) {
	// The held record is read first: the rollup needs its stages before a
	// join.
	held, q, args := &b.held, heldStaged, []any{ns(r.Time), key}
	if r.Stages == 0 {
		held, q, args = &b.heldW, heldWhole, []any{key}
	}
	hs, err := b.stmt(ctx, held, q)
	if err != nil {
		return 0, fmt.Errorf("add record: %w", err)
	}
	var (
		id, stages, code, lat int64
		hid                   [9]int64 // source, verb .. user_agent
		uri, heldExtra        string
	)
	if err := hs.QueryRowContext(ctx, args...).Scan(&id, &stages, &code, &lat, &hid[0], &hid[1], &hid[2], &hid[3], &hid[4],
		&hid[5], &hid[6], &hid[7], &hid[8], &uri, &heldExtra); err != nil {
		return 0, fmt.Errorf("join stage: %w", err)
	}
	old := timeline.Stage(stages)
	heldIdent := [7]int64{hid[1], hid[2], hid[3], hid[4], hid[5], hid[6], hid[7]} // as identOf
	if res, done := judgeHeld(r, sameRequest(heldIdent, identOf(ids)), old, int(code), heldExtra != string(r.Extra)); done {
		return res, nil
	}
	var oldExtra sql.NullString
	if rollup.Replaces(old, r.Stages) {
		// A final stage replaces another's values: the rollup takes the old
		// ones back (see rollup.go).
		if err := b.tx.QueryRowContext(ctx, `SELECT `+extraSQL("record")+` FROM record WHERE id = ?`, id).Scan(&oldExtra); err != nil {
			return 0, fmt.Errorf("join stage: %w", err)
		}
	}
	js, err := b.stmt(ctx, &b.join, joinStage)
	if err != nil {
		return 0, fmt.Errorf("add record: %w", err)
	}
	if _, err := js.ExecContext(ctx, int64(r.Stages), r.Code, int64(r.Latency), r.Message, row.extra, id,
		row.extraDict, row.extraHead, row.extraTail); err != nil {
		return 0, fmt.Errorf("join stage: %w", err)
	}
	ov := rollup.Values{Code: int(code), Latency: lat, APF: rollup.APFQueueWait([]byte(oldExtra.String))}
	rq, err := b.rollJoin(ctx, r, ids, hid, uri, old, ov)
	if err != nil {
		return 0, fmt.Errorf("join stage: %w", err)
	}
	if rq != nil {
		// The values after the join, as joinStage leaves them.
		if r.Stages > old {
			b.noteSlow(id, rq, old, old|r.Stages, r.Code, int64(r.Latency), r.Extra)
		} else {
			b.noteSlow(id, rq, old, old|r.Stages, int(code), lat, []byte(heldExtra))
		}
	}
	return timeline.Merged, nil
}

// identOf picks from a record's interned fields (AddRecord's ids) those that
// tell one request from another: verb, api_group, resource, subresource,
// namespace, name, user.
func identOf(ids []int64) [7]int64 {
	return [7]int64{ids[8], ids[1], ids[3], ids[4], ids[6], ids[7], ids[10]}
}

// sameRequest reports whether a held record and an incoming one under the
// same key are one request: the same verb, group, resource, subresource,
// namespace, name and user (identOf). A create's name may first appear at
// ResponseComplete: an empty name on either side agrees with any.
func sameRequest(h, in [7]int64) bool {
	return h[0] == in[0] && h[1] == in[1] && h[2] == in[2] && h[3] == in[3] && h[4] == in[4] &&
		(h[5] == in[5] || h[5] == 0 || in[5] == 0) && h[6] == in[6]
}

// judgeHeld decides what r is to the record held under its key, whose
// stages are old and code is code; done is false when r is a further stage
// to join. extraDiffers says the held record's extra is not r's.
func judgeHeld(r *timeline.Record, same bool, old timeline.Stage, code int, extraDiffers bool) (res timeline.AddResult, done bool) {
	switch {
	case !same:
		return conflict, true
	case r.Stages == 0 && old == 0 && extraDiffers:
		// A record without stages (an Event, an artifact version) is
		// whole: the same key with other content (another digest) is
		// another claim, not the same one seen again.
		return conflict, true
	case r.Stages == 0 || old&r.Stages != 0: // the same stage again
		// The held code is its latest stage's: an earlier stage seen
		// again has nothing to compare it with.
		if code != r.Code && (r.Stages == 0 || r.Stages == latest(old)) {
			return conflict, true
		}
		return timeline.Duplicate, true
	}
	return 0, false
}

// joinOpen is addKeyed for a record whose key an open request of this
// store holds (openreq.go): the same decisions as for a held row read from
// the database, without reading it.
func (b *batch) joinOpen(ctx context.Context, r *timeline.Record, ids []int64, row recordRow, k openKey, held *openRequest) (timeline.AddResult, error) {
	old := held.stages
	if res, done := judgeHeld(r, sameRequest(held.ident, identOf(ids)), old, held.code, false); done {
		return res, nil
	}
	js, err := b.stmt(ctx, &b.join, joinStage)
	if err != nil {
		return 0, fmt.Errorf("add record: %w", err)
	}
	if _, err := js.ExecContext(ctx, int64(r.Stages), r.Code, int64(r.Latency), r.Message, row.extra, held.id,
		row.extraDict, row.extraHead, row.extraTail); err != nil {
		return 0, fmt.Errorf("join stage: %w", err)
	}
	// An open request has no final stage: nothing to take back (ov's APF
	// wait is 0, as rollJoin reads it only from a final stage's extra).
	if held.rq != nil {
		b.roll.Join(held.rq, old, r, rollup.Values{Code: held.code, Latency: held.latency})
		// A final stage makes the request whole: it comes after the
		// stages held (which have none), so its values are the record's.
		b.noteSlow(held.id, held.rq, old, old|r.Stages, r.Code, int64(r.Latency), r.Extra)
	}
	if r.Stages > old {
		held.code, held.latency = r.Code, int64(r.Latency)
	}
	held.stages |= r.Stages
	if held.stages&finalStages != 0 {
		b.s.open.del(k)
	}
	return timeline.Merged, nil
}

// latest returns the highest stage of s.
func latest(s timeline.Stage) timeline.Stage {
	for s&(s-1) != 0 {
		s &= s - 1
	}
	return s
}

// rollJoin counts a stage joined to a held record in the request rollup.
// The record's class, time and URI are the held row's: ids are the
// incoming record's interned fields (as AddRecord interns them), hid the
// held row's (source, verb, api_group, resource, subresource, namespace,
// name, user, user_agent).
func (b *batch) rollJoin(ctx context.Context, r *timeline.Record, ids []int64, hid [9]int64, uri string,
	old timeline.Stage, ov rollup.Values) (*rollup.Request, error) {
	if hid[3] == 0 || (old|r.Stages)&rollup.ResponseStages == 0 {
		return nil, nil
	}
	o := &r.Object
	// incoming string for each held column, and the incoming id
	in := [...]struct {
		s  string
		id int64
	}{{string(r.Source), ids[0]}, {r.Verb, ids[8]}, {o.Group, ids[1]}, {o.Resource, ids[3]}, {o.Subresource, ids[4]},
		{o.Namespace, ids[6]}, {o.Name, ids[7]}, {r.User, ids[10]}, {r.UserAgent, ids[11]}}
	var f [9]string
	for i, v := range in {
		if hid[i] == v.id {
			f[i] = v.s
			continue
		}
		st, err := b.stmt(ctx, &b.strByID, `SELECT s FROM strs WHERE id = ?`)
		if err != nil {
			return nil, err
		}
		if err := st.QueryRowContext(ctx, hid[i]).Scan(&f[i]); err != nil {
			return nil, fmt.Errorf("string %d: %w", hid[i], err)
		}
	}
	if f[0] != string(timeline.SourceAudit) {
		return nil, nil
	}
	rq := rollup.NewRequest(f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], uri, ns(r.Time))
	b.roll.Join(&rq, old, r, ov)
	return &rq, nil
}

// AddVersion redacts the version's content, stores it once by hash, and adds
// the version. It fills v.Content and v.Hash with what was stored.
func (b *batch) AddVersion(ctx context.Context, v *timeline.ObjectVersion) (bool, error) {
	ctx = context.WithoutCancel(ctx) // callers check cancellation between records
	if err := checkTime("version time", v.Time); err != nil {
		return false, fmt.Errorf("add version of %s/%s: %w", v.Object.Resource, v.Object.Name, err)
	}
	p, ok := v.Prepared.(*prepared)
	if !ok || !p.of(b.s, v) {
		var err error
		if p, err = b.s.prepare(v); err != nil {
			return false, err
		}
	}
	v.Prepared = nil
	body := p.body
	v.Content, v.Hash = body, p.hash
	v.Key = timeline.VersionKey(v)

	// One version seen twice (the update that made it and a later read
	// that returned it, or a dump) keeps its best sighting, so its time
	// does not depend on the order the sources were ingested in (see
	// sighting.better).
	getV, err := b.stmt(ctx, &b.getVer, `SELECT ov.seen, ov.time_ns, c.hash FROM object_version ov
		JOIN content c ON c.id = ov.content_id WHERE ov.key = ?`)
	if err != nil {
		return false, err
	}
	key := keyHash(v.Key)
	var held sighting
	switch err := getV.QueryRowContext(ctx, key).Scan(&held.seen, &held.t, &held.hash); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return false, fmt.Errorf("add version: %w", err)
	default:
		if !(sighting{v.Seen, ns(v.Time), v.Hash}).better(held) {
			return false, nil
		}
		cid, err := b.content(ctx, v.Hash, body)
		if err != nil {
			return false, err
		}
		run := v.Evidence.Run
		if run == 0 {
			run = b.run
		}
		upd, err := b.stmt(ctx, &b.updVer, `UPDATE object_version SET seen = ?, time_ns = ?, content_id = ?,
			run_id = ?, line = ? WHERE key = ?`)
		if err != nil {
			return false, err
		}
		if _, err := upd.ExecContext(ctx, v.Seen, ns(v.Time), cid, run, v.Evidence.Line, key); err != nil {
			return false, fmt.Errorf("add version: %w", err)
		}
		return false, nil
	}
	cid, err := b.content(ctx, v.Hash, body)
	if err != nil {
		return false, err
	}
	o := &v.Object
	ids, err := b.internAll(ctx, o.Group, o.Version, o.Resource, o.Kind, o.Namespace, o.Name)
	if err != nil {
		return false, err
	}
	put, err := b.stmt(ctx, &b.putVer, `INSERT INTO object_version (key, api_group, api_version, resource, kind,
		namespace, name, uid, resource_version, time_ns, content_id, run_id, line, seen)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return false, err
	}
	run := v.Evidence.Run
	if run == 0 {
		run = b.run
	}
	if _, err := put.ExecContext(ctx, key, ids[0], ids[1], ids[2], ids[3], ids[4], ids[5], o.UID,
		v.ResourceVersion, ns(v.Time), cid, run, v.Evidence.Line, v.Seen); err != nil {
		return false, fmt.Errorf("add version: %w", err)
	}
	return true, nil
}

// prepared is a version's redacted body and its hash, made by the store
// that will write it (PrepareVersion).
type prepared struct {
	s    *Store
	ref  timeline.ObjectRef // the object it was redacted as
	src  []byte             // the content it was made from
	body []byte
	hash string
}

// of reports whether p was made by s from v as v is now.
func (p *prepared) of(s *Store, v *timeline.ObjectVersion) bool {
	return p.s == s && p.ref == v.Object && len(p.src) == len(v.Content) &&
		(len(p.src) == 0 || &p.src[0] == &v.Content[0])
}

// PrepareVersion redacts a version's content and hashes it, so that
// AddVersion, on the single writer, does not have to: ingesters call it on
// their decoding goroutines. It is safe for concurrent use. A version it
// fails on is left as it was, for AddVersion to report.
func (s *Store) PrepareVersion(v *timeline.ObjectVersion) {
	if p, err := s.prepare(v); err == nil {
		v.Prepared = p
	}
}

func (s *Store) prepare(v *timeline.ObjectVersion) (*prepared, error) {
	body, err := s.red.Object(v.Content, v.Object)
	if err != nil {
		return nil, fmt.Errorf("add version of %s/%s: %w", v.Object.Resource, v.Object.Name, err)
	}
	sum := sha256.Sum256(body)
	return &prepared{s: s, ref: v.Object, src: v.Content, body: body, hash: "sha256:" + hex.EncodeToString(sum[:])}, nil
}

// content stores a redacted body once by its hash and returns its id.
func (b *batch) content(ctx context.Context, hash string, body []byte) (int64, error) {
	getC, err := b.stmt(ctx, &b.getCont, `SELECT id FROM content WHERE hash = ?`)
	if err != nil {
		return 0, err
	}
	var cid int64
	err = getC.QueryRowContext(ctx, hash).Scan(&cid)
	if errors.Is(err, sql.ErrNoRows) {
		putC, perr := b.stmt(ctx, &b.putCont, `INSERT INTO content (hash, body) VALUES (?, ?)`)
		if perr != nil {
			return 0, perr
		}
		res, perr := putC.ExecContext(ctx, hash, body)
		if perr != nil {
			return 0, fmt.Errorf("add content: %w", perr)
		}
		cid, err = res.LastInsertId()
	}
	if err != nil {
		return 0, fmt.Errorf("add content: %w", err)
	}
	return cid, nil
}

// sighting is how and when a version was seen, and its content's hash.
type sighting struct {
	seen timeline.Sighting
	t    int64
	hash string
}

// better reports whether s should replace held as a version's sighting: a
// better kind of sighting wins (a write before a read before metadata);
// then a known time beats none, an earlier time a later one, and on a tie
// the smaller hash, so the outcome is the same whatever order the
// sightings came in.
func (s sighting) better(held sighting) bool {
	switch {
	case s.seen != held.seen:
		return s.seen < held.seen
	case s.t == noTime:
		return held.t == noTime && s.hash < held.hash
	case held.t == noTime:
		return true
	case s.t != held.t:
		return s.t < held.t
	}
	return s.hash < held.hash
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
	if err := b.flushRollup(ctx); err != nil {
		b.Rollback()
		return fmt.Errorf("commit batch: %w", err)
	}
	if err := b.flushSlow(ctx); err != nil {
		b.Rollback()
		return fmt.Errorf("commit batch: %w", err)
	}
	if err := b.flushSamples(ctx); err != nil {
		b.Rollback()
		return fmt.Errorf("commit batch: %w", err)
	}
	if err := b.commitRuns(ctx, progress); err != nil {
		b.Rollback()
		return fmt.Errorf("commit batch: %w", err)
	}
	if progress != nil {
		if err := updateRun(ctx, b.tx, progress); err != nil {
			b.Rollback()
			return fmt.Errorf("commit batch: %w", err)
		}
	}
	gen, err := bumpGen(ctx, b.tx)
	if err != nil {
		b.Rollback()
		return fmt.Errorf("commit batch: %w", err)
	}
	if err := b.tx.Commit(); err != nil {
		b.forget()
		return fmt.Errorf("commit batch: %w", err)
	}
	b.s.open.setGen(gen)
	b.s.heldSeries().add(b.series.added)
	b.newStrs, b.newClasses, b.series.newStrs, b.series.added = nil, nil, nil, nil
	b.s.spareRows(b.series.rows)
	b.series.rows = nil
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
	b.forgetSeries()
	b.recIDs = [len(b.recIDs)]memo{}
	c := &b.s.classes
	c.mu.Lock()
	for _, k := range b.newClasses {
		delete(c.m, k)
	}
	c.mu.Unlock()
	b.newClasses = nil
	b.roll = rollup.Delta{}
	b.slow = nil
	b.s.open.reset()
}

// checkTime is timeline.CheckTime naming the field.
func checkTime(field string, t time.Time) error {
	err := timeline.CheckTime(t)
	var te *timeline.TimeRangeError
	if errors.As(err, &te) {
		te.Field = field
	}
	return err
}
