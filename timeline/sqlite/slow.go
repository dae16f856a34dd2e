package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/rollup"
)

// Slow requests (SlowRequests) are kept in req_slow (migration 0015): a
// row for each request record that rollup.Slow keeps, keyed by its time
// and record id, holding its rollup class and the values the analyses
// read. The writer notes, as each batch adds records and joins stages,
// which records became slow (or, a later stage faster, no longer are),
// and writes the notes at commit, in the batch's transaction.

// slowNote is what a record of the batch is to req_slow: slow (ok), with
// its class and values, or no longer slow.
type slowNote struct {
	time    int64
	class   rollup.Class
	latency int64
	apf     int64
	code    int
	etcd    bool
	ok      bool
}

// noteSlow notes the record id, of request rq, whose stages went from old
// to now and whose code, latency and extra are now these; the APF queue
// wait is read from extra only for a record that is slow. A record with
// no final stage is not slow and was not before.
func (b *batch) noteSlow(id int64, rq *rollup.Request, old, now timeline.Stage, code int, latency int64, extra []byte) {
	if now&finalStages == 0 {
		return
	}
	sr, ok := rollup.SlowOf(rq, now, rollup.Values{Code: code, Latency: latency})
	if !ok && old&finalStages == 0 {
		return // not slow, and never was
	}
	if b.slow == nil {
		b.slow = map[int64]slowNote{}
	}
	n := slowNote{time: rq.TimeNS, ok: ok}
	if ok {
		// The note is kept until commit: a copy of the class, not the
		// line the record was decoded from (rollup.Class.Clone).
		n.class, n.latency, n.apf, n.code, n.etcd = rq.Class.Clone(), int64(sr.Latency), rollup.APFQueueWait(extra), sr.Code, sr.Etcd
	}
	b.slow[id] = n
}

// flushSlow writes the batch's notes into its transaction.
func (b *batch) flushSlow(ctx context.Context) error {
	ids := make([]int64, 0, len(b.slow))
	for id := range b.slow {
		ids = append(ids, id)
	}
	slices.Sort(ids) // the table's pages in one order, whatever the map's
	for _, id := range ids {
		n := b.slow[id]
		if !n.ok {
			if _, err := b.tx.ExecContext(ctx, `DELETE FROM req_slow WHERE time_ns = ? AND rec = ?`, n.time, id); err != nil {
				return fmt.Errorf("slow requests: %w", err)
			}
			continue
		}
		class, err := b.classID(ctx, n.class)
		if err != nil {
			return fmt.Errorf("slow requests: %w", err)
		}
		put, err := b.stmt(ctx, &b.putSlow, `INSERT INTO req_slow (time_ns, rec, class, latency_ns, apf_ns, code, etcd)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (time_ns, rec) DO UPDATE SET class = excluded.class,
			latency_ns = excluded.latency_ns, apf_ns = excluded.apf_ns, code = excluded.code, etcd = excluded.etcd`)
		if err != nil {
			return fmt.Errorf("slow requests: %w", err)
		}
		if _, err := put.ExecContext(ctx, n.time, id, class, n.latency, n.apf, n.code, n.etcd); err != nil {
			return fmt.Errorf("slow requests: %w", err)
		}
	}
	b.slow = nil
	return nil
}

// slowRows is req_slow's rows of [?, ?), and slowCount counts them, so
// that SlowRequests sizes its slice once.
const (
	slowRows  = `SELECT time_ns, class, latency_ns, apf_ns, code, etcd FROM req_slow WHERE time_ns >= ? AND time_ns < ?`
	slowCount = `SELECT count(*) FROM req_slow WHERE time_ns >= ? AND time_ns < ?`
)

// SlowRequests returns the requests of [since, until) that took
// timeline.SlowLatency or longer (see timeline.Rollup).
func (s *Store) SlowRequests(ctx context.Context, since, until time.Time) ([]timeline.SlowRequest, error) {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if !since.IsZero() {
		lo = boundNS(since)
	}
	if !until.IsZero() {
		hi = boundNS(until)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, slowCount, lo, hi).Scan(&n); err != nil {
		return nil, fmt.Errorf("slow requests: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, slowRows, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("slow requests: %w", err)
	}
	defer rows.Close()
	type row struct {
		class int64
		sr    timeline.SlowRequest
	}
	got := make([]row, 0, n)
	used := map[int64]bool{}
	var (
		t, lat, apf int64
		r           row
	)
	for rows.Next() {
		if err := rows.Scan(&t, &r.class, &lat, &apf, &r.sr.Code, &r.sr.Etcd); err != nil {
			return nil, fmt.Errorf("slow requests: %w", err)
		}
		r.sr.Received, r.sr.Latency, r.sr.APFWait = fromNS(t), time.Duration(lat), time.Duration(apf)
		used[r.class] = true
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("slow requests: %w", err)
	}
	rows.Close()
	rd := &rollupRead{s: s, out: &timeline.RequestStats{}, used: used}
	if err := rd.classes(ctx); err != nil {
		return nil, fmt.Errorf("slow requests: %w", err)
	}
	classes := make(map[int64]timeline.RequestClass, len(rd.out.Classes))
	for _, c := range rd.out.Classes {
		id := c.ID
		c.ID = 0 // SlowRequest.Class: the fields name it
		classes[id] = c
	}
	out := make([]timeline.SlowRequest, len(got))
	for i, r := range got {
		c, ok := classes[r.class]
		if !ok {
			return nil, fmt.Errorf("slow requests: no request class %d", r.class)
		}
		out[i] = r.sr
		out[i].Class = c
	}
	slices.SortFunc(out, timeline.CompareSlow)
	return out, nil
}

// fillSlow is migration 0015's Go step: the rows of the slow requests
// already held, read from record through record_slow as SlowRequests read
// them before the table.
func fillSlow(ctx context.Context, s *Store, tx *sql.Tx) error {
	b := &batch{s: s, tx: tx, strs: s.strCache(), slow: map[int64]slowNote{}}
	rows, err := tx.QueryContext(ctx, slowRead, int64(math.MinInt64), int64(math.MaxInt64))
	if err != nil {
		return err
	}
	var buf []byte
	for rows.Next() {
		id, rq, sr, ok, err := s.scanSlow(ctx, rows, &buf)
		if err != nil {
			rows.Close()
			return err
		}
		if ok {
			// The notes the writer would have made (rq's strings are
			// the read's own: no clone).
			b.slow[id] = slowNote{time: rq.TimeNS, class: rq.Class, latency: int64(sr.Latency),
				apf: int64(sr.APFWait), code: sr.Code, etcd: sr.Etcd, ok: true}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if err := b.flushSlow(ctx); err != nil {
		return err
	}
	// A bulk load killed before this migration would build record_slow
	// again at its end.
	idx, err := bulkPending(ctx, tx)
	if err != nil || idx["record_slow"] == "" {
		return err
	}
	delete(idx, "record_slow")
	return saveBulk(ctx, tx, idx)
}

// slowRead reads the slow requests of [?, ?) through record_slow (migration
// 0013, dropped by 0015 once fillSlow has read it): its literal term is the
// index's own, and the verbs are read from its entries. It reads the
// columns as stored, and scanSlow decodes the few it needs in Go, through
// the strings cache. A list's URI (whether it reads etcd) and the parts of
// extra that hold the APF queue wait are the only long strings it reads;
// of the other rows, SQLite's instr answers without a copy.
var slowRead = `SELECT r.id, r.time_ns, r.source, r.api_group, r.resource, r.subresource, r.namespace, r.name, r.verb,
	r.user, r.user_agent, r.code, r.latency_ns, r.stages,
	CASE WHEN r.verb = (SELECT id FROM strs WHERE s = 'list') THEN r.uri_tpl ELSE 0 END,
	CASE WHEN r.verb = (SELECT id FROM strs WHERE s = 'list') THEN r.uri ELSE '' END,
	CASE WHEN instr(r.extra, '` + apfKey + `') THEN r.extra END,
	CASE WHEN instr(r.extra_head, char(1) || '` + apfTail + `') OR instr(r.extra_tail, char(1) || '` + apfTail + `')
		THEN r.extra_head END,
	r.extra_dict,
	CASE WHEN instr(r.extra_head, char(1) || '` + apfTail + `') OR instr(r.extra_tail, char(1) || '` + apfTail + `')
		THEN r.extra_tail END
	FROM record r
	WHERE r.latency_ns >= ` + strconv.FormatInt(int64(timeline.SlowLatency), 10) + ` AND r.time_ns >= ? AND r.time_ns < ?
	AND r.verb IN (SELECT id FROM strs WHERE s IN ('` + strings.Join(timeline.SlowVerbs, "', '") + `'))`

// scanSlow decodes a row of slowRead as rollup.Slow would the record: a
// name or namespace counts by its presence (the scope), but in a list's
// URI (whether it reads etcd); the extra JSON is read and rebuilt only
// when it holds the APF queue wait, the one thing read of it, into buf.
func (s *Store) scanSlow(ctx context.Context, rows *sql.Rows, buf *[]byte) (int64, rollup.Request, timeline.SlowRequest, bool, error) {
	var (
		id, t, lat, code, stages, tpl int64
		ids                           [9]int64 // source, api_group, resource, subresource, namespace, name, verb, user, user_agent
		dict                          int64
		uri                           string
		whole, head, tail             sql.NullString
		none                          rollup.Request
	)
	if err := rows.Scan(&id, &t, &ids[0], &ids[1], &ids[2], &ids[3], &ids[4], &ids[5], &ids[6], &ids[7], &ids[8], &code, &lat,
		&stages, &tpl, &uri, &whole, &head, &dict, &tail); err != nil {
		return 0, none, timeline.SlowRequest{}, false, err
	}
	var str [9]string
	for i, id := range ids {
		if i == 4 || i == 5 {
			continue // below
		}
		v, err := s.strOf(ctx, id)
		if err != nil {
			return 0, none, timeline.SlowRequest{}, false, err
		}
		str[i] = v
	}
	if timeline.SourceKind(str[0]) != timeline.SourceAudit || str[2] == "" {
		return 0, none, timeline.SlowRequest{}, false, nil
	}
	namespace, name := present(ids[4]), present(ids[5])
	if str[6] == "list" {
		var err error
		if uri, err = s.uriOf(ctx, tpl, ids[4], ids[5], uri); err != nil {
			return 0, none, timeline.SlowRequest{}, false, err
		}
	}
	rq := rollup.NewRequest(str[6], str[1], str[2], str[3], namespace, name, str[7], str[8], uri, t)
	v := rollup.Values{Code: int(code), Latency: lat}
	switch {
	case whole.Valid:
		*buf = append((*buf)[:0], whole.String...)
		v.APF = rollup.APFQueueWait(*buf)
	case head.Valid:
		mid, err := s.strOf(ctx, dict)
		if err != nil {
			return 0, none, timeline.SlowRequest{}, false, err
		}
		*buf = extraParts{head: head.String, dict: mid, tail: tail.String}.appendDecoded((*buf)[:0])
		v.APF = rollup.APFQueueWait(*buf)
	}
	sr, ok := rollup.SlowOf(&rq, timeline.Stage(stages), v)
	return id, rq, sr, ok, nil
}

// The APF queue wait annotation's key, as extra holds it whole, and its
// tail after latencyKey, which the split parts write \x01.
const (
	apfKey  = latencyKey + apfTail
	apfTail = `apf-queue-wait"`
)
