package clickhouse

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/rollup"
)

// slowTable holds the slow requests (SlowRequests) as the writer judged
// them: one row per version of a record it wrote that rollup.Slow keeps,
// with its class by the rollup's id and its values taken out of the uri
// and extra columns, and one per rewrite of such a version that is not
// slow (slow = 0), so that a read can tell which version of a request is
// current (currentOf) from this table alone. (A row per rewrite would be
// three times the slow ones on the 10 M-line log: 476,000 of 636,000.)
//
// Read from record, the slow requests cost their uri and extra: on the
// 10 M-line benchmark log (751,619 of them) 4.1 s beside the rewrites'
// 2.3 s, against a few narrow columns here (SCHEMA.md, "Slow requests").
var slowTable = table{
	name: "req_slow",
	columns: `time_ns Int64, key Int64, stages UInt8, rewrite UInt8, slow UInt8, class Int64,
		latency_ns Int64, apf_wait_ns Int64, code Int32, etcd UInt8`,
	engine:   "ReplacingMergeTree(stages) PARTITION BY " + day + " ORDER BY (time_ns, key)",
	shardKey: "intHash64(key)",
}

// slowRow is one row of slowTable as the batch will write it at commit,
// its class not yet numbered.
type slowRow struct {
	ns, key         int64
	stages, rewrite uint8
	slow            bool
	class           rollup.Class
	sr              timeline.SlowRequest
}

// writesSlow says this writer fills slowTable; false in a test stands for
// a faultline older than the table, which writes none.
var writesSlow = true

// slowRunPrefix begins the meta key of each run whose writer fills
// slowTable: slowRunPrefix + the run's id.
const slowRunPrefix = "slow_requests_run/"

// markSlowRun records in meta that run id's writer fills slowTable,
// after the run itself: a run a reader finds without it may have records
// that slowTable lacks.
func (s *Store) markSlowRun(ctx context.Context, id int64) error {
	if !s.slow || !writesSlow {
		return nil
	}
	now := time.Now().UnixNano()
	return s.insertRows(ctx, "meta", 1, func(int) []any { return []any{slowRunPrefix + strconv.FormatInt(id, 10), "1", now} })
}

// slowTableWhole reports whether slowTable holds every slow request: the
// database keeps it, and every run was written by a writer that fills it
// (markSlowRun). An older faultline writing into a database made by a
// newer one writes records and no slow rows.
func (s *Store) slowTableWhole(ctx context.Context) (bool, error) {
	if !s.slow {
		return false, nil
	}
	meta, err := s.readMeta(ctx)
	if err != nil {
		return false, err
	}
	rows, err := s.conn.Query(ctx, "SELECT DISTINCT id FROM ingest_run")
	if err != nil {
		return false, fmt.Errorf("list ingest runs: %w", s.shardErr(ctx, err))
	}
	defer rows.Close()
	whole := true
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return false, fmt.Errorf("list ingest runs: %w", err)
		}
		whole = whole && meta[slowRunPrefix+strconv.FormatInt(id, 10)] != ""
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("list ingest runs: %w", s.shardErr(ctx, err))
	}
	return whole, nil
}

// noteSlow notes the slow-table rows of the rows a flush is about to
// write: before writeRows, whose rows' rewrite column it reads.
func (b *batch) noteSlow() {
	if !b.s.slow || !writesSlow {
		return
	}
	for _, rw := range b.order {
		sr, ok := slowOf(rw)
		rewrite := rw.rewrite()
		if !ok && (rewrite == 0 || !rw.heldSlow) {
			continue // neither slow nor taking back a slow version
		}
		sw := slowRow{ns: ns(rw.r.Time), key: rw.key, stages: uint8(rw.r.Stages), rewrite: rewrite, slow: ok}
		if ok {
			sw.class, sw.sr = rw.rq.Class, sr
		}
		b.slow = append(b.slow, sw)
	}
}

// slowOf is rollup.Slow of a row whose request the batch classed (rq):
// the extra column, for the APF wait, is read only for a slow one.
func slowOf(rw *row) (timeline.SlowRequest, bool) {
	if rw.rq == nil || rw.r.Latency < timeline.SlowLatency {
		return timeline.SlowRequest{}, false
	}
	return rollup.SlowOf(rw.rq, rw.r.Stages, rollup.ValuesOf(rw.r))
}

// writeSlow writes the batch's slow-table rows, their classes numbered by
// id.
func (s *Store) writeSlow(ctx context.Context, rows []slowRow, id func(rollup.Class) int64) error {
	return s.insertRows(ctx, slowTable.name, len(rows), func(i int) []any {
		r := &rows[i]
		var class int64
		var slow, etcd uint8
		if r.slow {
			class, slow = id(r.class), 1
			if r.sr.Etcd {
				etcd = 1
			}
		}
		return []any{r.ns, r.key, r.stages, r.rewrite, slow, class, int64(r.sr.Latency), int64(r.sr.APFWait),
			int32(r.sr.Code), etcd}
	})
}

// SlowRequests returns the requests of [since, until) that took
// timeline.SlowLatency or longer (see timeline.Rollup), sorted by every
// field (CompareSlow). A database whose slowTable is whole answers from
// it; one made before it, or written to by a faultline older than it,
// from record (slowFromRecord).
func (s *Store) SlowRequests(ctx context.Context, since, until time.Time) ([]timeline.SlowRequest, error) {
	whole, err := s.slowTableWhole(ctx)
	if err != nil {
		return nil, fmt.Errorf("slow requests: %w", err)
	}
	read := s.slowFromTable
	if !whole {
		read = s.slowFromRecord
	}
	out, err := read(ctx, since, until)
	if err != nil {
		return nil, fmt.Errorf("slow requests: %w", err)
	}
	slices.SortFunc(out, timeline.CompareSlow)
	return out, nil
}

// slowFromTable reads the slow requests from slowTable: every row of the
// window, the current version of each request kept (currentOf, from the
// rewrites among the rows read: every version the writer wrote after a
// slow one is there), and of those the slow ones. The classes are read
// beside the rows.
func (s *Store) slowFromTable(ctx context.Context, since, until time.Time) ([]timeline.SlowRequest, error) {
	// A row is held as read, its class an id, until it is known current
	// and slow: there may be hundreds of thousands.
	type slowVersion struct {
		ns, class, latency, apf int64
		code                    int32
		slow, etcd              bool
	}
	lo, hi := timeline.Span{Since: since, Until: until}.NS()
	var read []version[slowVersion]
	var classes []timeline.RequestClass
	most := map[[2]int64]uint8{}
	err := both(ctx, func(ctx context.Context) error {
		rows, err := s.conn.Query(ctx, "SELECT time_ns, key, stages, rewrite, slow, class, latency_ns, apf_wait_ns, code, etcd FROM "+
			slowTable.name+" WHERE "+nsRange(lo, hi))
		if err != nil {
			return fmt.Errorf("query %s: %w", slowTable.name, s.shardErr(ctx, err))
		}
		defer rows.Close()
		for rows.Next() {
			var (
				v                   version[slowVersion]
				rewrite, slow, etcd uint8
			)
			if err := rows.Scan(&v.ns, &v.key, &v.stages, &rewrite, &slow, &v.v.class, &v.v.latency, &v.v.apf, &v.v.code, &etcd); err != nil {
				return fmt.Errorf("read %s: %w", slowTable.name, err)
			}
			if rewrite != 0 {
				k := [2]int64{v.ns, v.key}
				most[k] = max(most[k], v.stages)
			}
			v.v.ns, v.v.slow, v.v.etcd = v.ns, slow != 0, etcd != 0
			read = append(read, v)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("query %s: %w", slowTable.name, s.shardErr(ctx, err))
		}
		return nil
	}, func(ctx context.Context) (err error) {
		classes, err = s.requestClasses(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]timeline.RequestClass, len(classes))
	for _, c := range classes {
		id := c.ID
		c.ID = 0 // a slow request's class carries no id (rollup.Slow)
		byID[id] = c
	}
	out := make([]timeline.SlowRequest, 0, len(read))
	for _, v := range currentOf(read, most) {
		if !v.slow {
			continue // a later stage made it fast
		}
		c, ok := byID[v.class]
		if !ok {
			return nil, fmt.Errorf("read %s: a slow request at %s has class %d, which req_class does not hold",
				slowTable.name, fromNS(v.ns).Format(time.RFC3339Nano), v.class)
		}
		out = append(out, timeline.SlowRequest{Class: c, Received: fromNS(v.ns), Latency: time.Duration(v.latency),
			APFWait: time.Duration(v.apf), Code: int(v.code), Etcd: v.etcd})
	}
	return out, nil
}

// slowFromRecord reads the slow requests from record itself, for a
// database made before slowTable: the window's time range, the latency
// and the verb, then the current versions of the rows kept (judged here,
// as a chunk's are), each made a slow request by rollup.Slow.
//
// On the 10 M-line log, merged (751,619 slow requests), with
// clickhouse-client: ordered, with current, 3.5-3.9 s; unordered, 3.1-3.3
// s; the rows alone 2.0 s and the rewrites at their times 0.4 s
// (2026-12-06). An ORDER BY over uri and extra, LowCardinality columns of
// mostly new values, is slow in 18.16 (chunks.go).
func (s *Store) slowFromRecord(ctx context.Context, since, until time.Time) ([]timeline.SlowRequest, error) {
	q := timeline.Query{Since: since, Until: until, Fields: timeline.FieldVerb | timeline.FieldUser | timeline.FieldUserAgent |
		timeline.FieldCode | timeline.FieldLatency | timeline.FieldStages | timeline.FieldURI | timeline.FieldExtra}
	lo, hi := timeline.Span{Since: since, Until: until}.NS()
	filter := fmt.Sprintf("latency_ns >= %d AND verb IN ('%s')", int64(timeline.SlowLatency), strings.Join(timeline.SlowVerbs, "', '"))
	// Each row is held as its SlowRequest, not its record: there may be
	// hundreds of thousands.
	return judged(ctx, s, q, chunk{lo: lo, hi: hi}, filter, false,
		func(r *timeline.Record, _ int64) (timeline.SlowRequest, bool) { return rollup.Slow(r) })
}
