package clickhouse

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
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

// writeRows writes the new and joined rows, each shard's share at once.
func (b *batch) writeRows(ctx context.Context) error {
	if len(b.order) == 0 {
		return nil
	}
	s := b.s
	defer s.forgetRewrites()
	parts := make([][]*row, len(s.shards))
	for _, rw := range b.order {
		i := shardOf(s.shards, intHash64(uint64(rw.key)))
		parts[i] = append(parts[i], rw)
	}
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, rows := range parts {
		if len(rows) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.writeShard(ctx, i, rows); err != nil {
				sh := s.shards[i]
				errs[i] = &ShardError{Shard: sh.num, Addr: sh.addr, Err: err}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("write records: %w", err)
		}
	}
	return nil
}

// writeShard writes rows to the local record table of the i-th shard.
func (s *Store) writeShard(ctx context.Context, i int, rows []*row) error {
	c, err := s.directConn(i)
	if err != nil {
		return err
	}
	ins, err := c.PrepareBatch(ctx, recordInsert)
	if err != nil {
		return err
	}
	for _, rw := range rows {
		r, o := rw.r, &rw.r.Object
		var rewrite uint8
		if rw.held {
			rewrite = 1
		}
		auditUUID, auditID := splitAuditID(r.AuditID)
		if err := ins.Append(rw.key, rewrite, auditUUID, r.ID, ns(r.Time), string(r.Source), o.Group, o.Version, o.Resource, o.Subresource,
			o.Kind, o.Namespace, o.Name, o.UID, r.Verb, r.Reason, r.User, r.UserAgent, r.SourceIP, int32(r.Code),
			r.Type, r.Level, int64(r.Latency), uint8(r.Stages), auditID, r.URI, r.Message, string(r.Extra),
			r.Evidence.Run, r.Evidence.Line); err != nil {
			ins.Abort()
			return err
		}
	}
	return ins.Send()
}
