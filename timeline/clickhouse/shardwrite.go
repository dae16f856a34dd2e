package clickhouse

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/uuid"

	"github.com/faultline/faultline/timeline"
)

// Records are written straight to each shard's local table, split here by
// the Distributed table's own rule, rather than through the Distributed
// table: that way the server the DSN names does not parse every block,
// split it and send half of it on, and the shards take their halves at
// once. The rows land where a write through the Distributed table would put
// them, so every version of a record is on one shard (current relies on
// it).

// intHash64 is ClickHouse's SQL function intHash64, the record table's
// shard key: MurmurHash3's 64-bit finalizer of x with a constant mixed in
// (TestRecordsLandWhereDistributedPutsThem checks it against the server).
func intHash64(x uint64) uint64 {
	x ^= 0x4cf2d2baae6da887
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// shardOf is the index in shards of the shard a Distributed table puts a
// row with shard key hash on: the hash modulo the total weight picks a
// slot, and each shard owns as many consecutive slots as its weight.
func shardOf(shards []shard, hash uint64) int {
	var total uint64
	for _, sh := range shards {
		total += sh.weight
	}
	if total == 0 {
		return 0
	}
	slot := hash % total
	for i, sh := range shards {
		if slot < sh.weight {
			return i
		}
		slot -= sh.weight
	}
	return len(shards) - 1
}

// directConn is the connection to the i-th shard, opened at first use.
func (s *Store) directConn(i int) (driver.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.direct == nil {
		s.direct = make([]driver.Conn, len(s.shards))
	}
	if s.direct[i] == nil {
		c, err := connect(s.shards[i].addr, s.db, nil)
		if err != nil {
			return nil, err
		}
		s.direct[i] = loggedConn{c, s.log}
	}
	return s.direct[i], nil
}

// recordInsert is the INSERT of a record row, as writeRow appends it.
var recordInsert = "INSERT INTO record_local (key, rewrite, audit_uuid, " +
	strings.Replace(recordColumns, auditIDSQL, "audit_id", 1) + ")"

// Rows are appended to each shard's insert as flushes judge them, and the
// insert ends when the batch commits. The server squashes the blocks of one
// insert into one part (up to a million rows), so a commit of 100,000
// records makes parts five times the size of a flush's, and the server
// merges each row fewer times: on the first million lines of the 10 M-line
// benchmark log, the servers' CPU fell from 19.1-27.1 s to 8.8-9.7 s, the
// client's CPU unchanged (hack/bench/README.md). Each flush's block is sent
// at once (Flush), so the client holds one flush's columns, as before (peak
// RSS 190 MB before, 212 MB after).
// Rows sent this way are not in the table until the insert ends: a lookup
// of a key among them ends the insert first (sendBefore), so judgements
// are those of rows written at each flush.

// maxUnsent is the most keys an insert takes before it ends, whatever the
// batch size: their rows wait in the server's memory, the keys in unsent.
const maxUnsent = 1 << 17

// writeRows appends the new and joined rows to each shard's insert, each
// shard's share at once, and sends them when maxUnsent are waiting.
func (b *batch) writeRows(ctx context.Context) error {
	if len(b.order) == 0 {
		return nil
	}
	s := b.s
	defer s.forgetRewrites()
	b.noteSlow()
	parts := make([][]*row, len(s.shards))
	for _, rw := range b.order {
		i := shardOf(s.shards, intHash64(uint64(rw.key)))
		parts[i] = append(parts[i], rw)
	}
	if b.pend == nil {
		b.pend, b.pendRows = make([]driver.Batch, len(s.shards)), make([]int, len(s.shards))
	}
	err := b.eachShard(func(i int) error {
		if len(parts[i]) == 0 {
			return nil
		}
		return b.appendShard(ctx, i, parts[i])
	})
	if err != nil {
		return fmt.Errorf("write records: %w", err)
	}
	for i, p := range parts {
		b.pendRows[i] += len(p)
	}
	if b.unsent == nil {
		b.unsent = map[int64]bool{}
	}
	for _, rw := range b.order {
		b.unsent[rw.key] = true
	}
	if len(b.unsent) >= maxUnsent {
		return b.sendRows(ctx)
	}
	return nil
}

// eachShard runs f for every shard at once, and returns the first error,
// named by its shard.
func (b *batch) eachShard(f func(i int) error) error {
	s := b.s
	errs := make([]error, len(s.shards))
	var wg sync.WaitGroup
	for i := range s.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(i); err != nil {
				sh := s.shards[i]
				errs[i] = &ShardError{Shard: sh.num, Addr: sh.addr, Err: err}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// appendShard appends rows to the insert into the i-th shard's local
// record table, begun at the first, and sends them as a block of it. An
// insert that fails is dropped at once (its connection freed).
//
// The strings that repeat go row by row into the block's LowCardinality
// columns, which keep a dictionary of them; the other columns a whole
// column at a time, from typed slices. Rows appended as 30 values boxed
// into interfaces took a fifth of a ClickHouse ingest's client CPU on the
// 10 M-line benchmark log, half of it in the LowCardinality dictionaries;
// by column, the appends took 0.83 of that time (docs/scale.md).
func (b *batch) appendShard(ctx context.Context, i int, rows []*row) (err error) {
	defer func() {
		if err != nil && b.pend[i] != nil {
			b.pend[i].Abort()
			b.pend[i] = nil
		}
	}()
	ins := b.pend[i]
	if ins == nil {
		c, err := b.s.directConn(i)
		if err != nil {
			return err
		}
		if ins, err = c.PrepareBatch(ctx, recordInsert); err != nil {
			return err
		}
		b.pend[i] = ins
	}
	cols := ins.Columns()
	at := make(map[string]int, len(cols))
	for j, c := range cols {
		at[c.Name()] = j
	}
	var lcAt [len(lcColumns)]int
	for j, c := range lcColumns {
		var ok bool
		if lcAt[j], ok = at[c.name]; !ok {
			return fmt.Errorf("insert into record_local: no column %s", c.name)
		}
	}
	var (
		n                                   = len(rows)
		keys, ids, times, lats, runs, lines = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		rewrites, stages                    = make([]uint8, n), make([]uint8, n)
		codes                               = make([]int32, n)
		uuids                               = make([]uuid.UUID, n)
		uids, auditIDs, messages            = make([]string, n), make([]string, n), make([]string, n)
	)
	for k, rw := range rows {
		r, o := rw.r, &rw.r.Object
		auditUUID, auditID := splitAuditID(r.AuditID)
		if auditUUID != noUUID {
			if uuids[k], err = uuid.Parse(auditUUID); err != nil {
				return err
			}
		}
		keys[k], rewrites[k], ids[k], times[k] = rw.key, rw.rewrite(), r.ID, ns(r.Time)
		uids[k], codes[k], lats[k], stages[k] = o.UID, int32(r.Code), int64(r.Latency), uint8(r.Stages)
		auditIDs[k], messages[k], runs[k], lines[k] = auditID, r.Message, r.Evidence.Run, r.Evidence.Line
		for j, c := range lcColumns {
			if err := cols[lcAt[j]].AppendRow(c.value(r)); err != nil {
				return fmt.Errorf("column %s: %w", c.name, err)
			}
		}
	}
	whole := map[string]any{"key": keys, "rewrite": rewrites, "audit_uuid": uuids, "id": ids, "time_ns": times,
		"uid": uids, "code": codes, "latency_ns": lats, "stages": stages, "audit_id": auditIDs, "message": messages,
		"run_id": runs, "line": lines}
	if len(whole)+len(lcColumns) != len(cols) {
		return fmt.Errorf("insert into record_local: %d columns, want %d", len(cols), len(whole)+len(lcColumns))
	}
	for name, v := range whole {
		j, ok := at[name]
		if !ok {
			return fmt.Errorf("insert into record_local: no column %s", name)
		}
		if err := ins.Column(j).Append(v); err != nil {
			return fmt.Errorf("column %s: %w", name, err)
		}
	}
	// The block goes to the server now, which keeps it, with the blocks
	// before it, until the insert ends (it squashes an insert's blocks
	// into parts of up to min_insert_block_size_rows, a million rows): the
	// columns are not held here.
	return ins.Flush()
}

// lcColumns are the LowCardinality columns of recordInsert, each with the
// record's value for it.
var lcColumns = [...]struct {
	name  string
	value func(r *timeline.Record) string
}{
	{"source", func(r *timeline.Record) string { return string(r.Source) }},
	{"api_group", func(r *timeline.Record) string { return r.Object.Group }},
	{"api_version", func(r *timeline.Record) string { return r.Object.Version }},
	{"resource", func(r *timeline.Record) string { return r.Object.Resource }},
	{"subresource", func(r *timeline.Record) string { return r.Object.Subresource }},
	{"kind", func(r *timeline.Record) string { return r.Object.Kind }},
	{"namespace", func(r *timeline.Record) string { return r.Object.Namespace }},
	{"name", func(r *timeline.Record) string { return r.Object.Name }},
	{"verb", func(r *timeline.Record) string { return r.Verb }},
	{"reason", func(r *timeline.Record) string { return r.Reason }},
	{"user", func(r *timeline.Record) string { return r.User }},
	{"user_agent", func(r *timeline.Record) string { return r.UserAgent }},
	{"source_ip", func(r *timeline.Record) string { return r.SourceIP }},
	{"type", func(r *timeline.Record) string { return r.Type }},
	{"level", func(r *timeline.Record) string { return r.Level }},
	{"uri", func(r *timeline.Record) string { return r.URI }},
	// Extra's bytes stay unchanged until the batch commits
	// (timeline.Batch.AddRecord): the column may keep a string over them,
	// not a copy.
	{"extra", func(r *timeline.Record) string { return unsafe.String(unsafe.SliceData(r.Extra), len(r.Extra)) }},
}

// insertSent, when set (tests), is told the rows of each insert of
// record rows sent, by shard index.
var insertSent func(shard, rows int)

// sendRows sends the rows appended, each shard's insert at once.
func (b *batch) sendRows(ctx context.Context) error {
	pend, rows := b.pend, b.pendRows
	b.pend, b.pendRows, b.unsent = nil, nil, nil
	if pend == nil {
		return nil
	}
	err := b.eachShard(func(i int) error {
		if pend[i] == nil {
			return nil
		}
		return pend[i].Send()
	})
	if err != nil {
		for _, ins := range pend {
			if ins != nil {
				ins.Abort()
			}
		}
		return fmt.Errorf("write records: %w", err)
	}
	if f := insertSent; f != nil {
		for i, ins := range pend {
			if ins != nil {
				f(i, rows[i])
			}
		}
	}
	return nil
}

// abortRows drops the rows appended and not sent.
func (b *batch) abortRows() {
	for _, ins := range b.pend {
		if ins != nil {
			ins.Abort()
		}
	}
	b.pend, b.pendRows, b.unsent = nil, nil, nil
}

// sendBefore sends the rows appended when one of them has one of keys:
// a lookup of those keys must find them in the database.
func (b *batch) sendBefore(ctx context.Context, keys []int64) error {
	for _, k := range keys {
		if b.unsent[k] {
			b.s.log.Debug("clickhouse: records sent before a lookup of a key they hold", "keys", len(b.unsent))
			return b.sendRows(ctx)
		}
	}
	return nil
}
