package clickhouse

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// record's digests of a copy (copyDigests) are the costly half of the
// check that a copy may be read: record's key and time columns read
// whole, wherever the copy's rows fall. On the 10 M-line benchmark log
// they took 0.38 and 0.33 CPU-s of the servers for the failed requests'
// copy and the deletions' (a third of investigate's), where the copies'
// own took a tenth of that. A process keeps them until it writes (s.digests);
// the record_digest table keeps them between processes, by the state of
// record's parts they were read at.
//
// A digest changes only when record's rows do, and never by a merge (see
// digest). partsKey names the state of record's rows by what changes
// with them and not with a merge: for each partition of each shard, the
// highest block number of its parts (every insert takes a new one), how
// many block numbers its parts span (a part dropped spans fewer), and its
// latest mutation (a mutation renumbers the parts it rewrote). A merge
// joins parts of neighbouring numbers into one that spans them: the key
// changes only when the parts it joined left a number between them
// unspanned (a part dropped, or one of another partition's inserts), and
// a changed key is a digest read again, never a wrong one.
//
// Stored digests are used only where the key is the same as when they
// were read, so a write between the key and the digests (the key is read
// first) leaves them keyed by a state the table no longer has. They are
// compared with the copy's own, read each time as before: a copy that
// lost or gained rows since differs. What the key does not see is a table
// dropped and made again by hand that came to the same parts with other
// rows; its digests then differ from the copy's wherever the rows do,
// unless the copy was remade to match the old ones too.

// digestsPerRun bounds what a run pays for the digests it leaves: they
// are read at its end only when record holds at most this many times the
// records it wrote. Reading them costs about 40 ns a row of record (0.4 s
// for both copies on the 10 M-line benchmark log, 7.3 M records and 2.7 M
// rewrites), writing a record about 15 µs of the client and 10 µs of the
// servers: at 50 times, at most a tenth of the run. A smaller run into a
// larger table leaves them to the first reader, which reads them anyway.
const digestsPerRun = 50

// shardParts is the Distributed table over every shard's system.parts.
const shardParts = "shard_parts"

// partsKey names the state of record's parts on every shard (see above).
func (s *Store) partsKey(ctx context.Context) (string, error) {
	rows, err := s.conn.Query(perShard(ctx), `SELECT partition_id, toString(max(max_block_number)),
		toString(sum(max_block_number - min_block_number + 1)),
		toString(max(if(data_version > min_block_number, data_version, 0)))
		FROM `+shardParts+` WHERE database = ? AND table = 'record_local' AND active GROUP BY partition_id`, s.db)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var parts []string
	for rows.Next() {
		var p, top, span, mutation string
		if err := rows.Scan(&p, &top, &span, &mutation); err != nil {
			return "", err
		}
		parts = append(parts, p+" "+top+" "+span+" "+mutation)
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	// Each shard's partitions, in no order; the shards themselves are
	// not named, so the key is of their rows as a set.
	slices.Sort(parts)
	sum := sha256.Sum256([]byte(strings.Join(parts, "\n")))
	return hex.EncodeToString(sum[:16]), nil
}

// storedDigests is record's digests of copy cp over the buckets of [blo,
// bhi) as stored at parts, or nil when none cover them.
func (s *Store) storedDigests(ctx context.Context, cp *copyTable, parts string, blo, bhi int64) (map[int64]digest, error) {
	// Any row of the state will do, the latest or not (the table keeps
	// the latest a copy once merged, and reads need no FINAL).
	rows, err := s.conn.Query(ctx, `SELECT buckets, requests, sums FROM record_digest
		WHERE copy = ? AND parts = ? AND blo <= ? AND bhi >= ? LIMIT 1`, cp.name, parts, blo, bhi)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out map[int64]digest
	for rows.Next() {
		var buckets []int64
		var requests, sums []uint64
		if err := rows.Scan(&buckets, &requests, &sums); err != nil {
			return nil, err
		}
		if len(requests) != len(buckets) || len(sums) != len(buckets) {
			return nil, fmt.Errorf("stored digests of %s: %d buckets, %d counts, %d sums", cp.name, len(buckets), len(requests), len(sums))
		}
		out = map[int64]digest{}
		for i, b := range buckets {
			if bucketMeets(b, blo, bhi) {
				out[b] = digest{requests[i], sums[i]}
			}
		}
	}
	return out, rows.Err()
}

// storeDigests stores record's digests of copy cp over the buckets of
// [blo, bhi), read at parts.
func (s *Store) storeDigests(ctx context.Context, cp *copyTable, parts string, blo, bhi int64, of map[int64]digest) error {
	buckets := slices.Sorted(maps.Keys(of))
	requests, sums := make([]uint64, len(buckets)), make([]uint64, len(buckets))
	for i, b := range buckets {
		requests[i], sums[i] = of[b].requests, of[b].sum
	}
	batch, err := s.conn.PrepareBatch(ctx, insert("record_digest"))
	if err != nil {
		return err
	}
	if err := batch.Append(cp.name, parts, blo, bhi, buckets, requests, sums, s.stamp()); err != nil {
		return err
	}
	return batch.Send()
}

// recordDigests is record's digests of copy cp over the buckets of [blo,
// bhi): stored ones when the state of record's parts has them, else read,
// and stored when they cover the whole table (one row a copy: a reader's
// window is read and dropped, as the windows of a TUI are many). A store
// with a shard down neither uses nor stores them.
func (s *Store) recordDigests(ctx context.Context, cp *copyTable, blo, bhi int64) (map[int64]digest, error) {
	rng := nsRange(blo, bhi)
	if len(s.down) > 0 {
		return s.copyDigests(ctx, cp, "record", rng)
	}
	parts, err := s.partsKey(ctx)
	if err != nil {
		s.log.Debug("clickhouse: record's parts not read; its digests are read", "err", err)
		return s.copyDigests(ctx, cp, "record", rng)
	}
	if got, err := s.storedDigests(ctx, cp, parts, blo, bhi); err != nil || got != nil {
		return got, err
	}
	of, err := s.copyDigests(ctx, cp, "record", rng)
	if err != nil || blo != math.MinInt64 || bhi != math.MaxInt64 {
		return of, err
	}
	if err := s.storeDigests(ctx, cp, parts, blo, bhi, of); err != nil {
		// A cache: a reader that may not write reads them each time.
		s.log.Debug("clickhouse: record's digests not stored", "copy", cp.name, "err", err)
	}
	return of, nil
}

// storeAllDigests reads and stores record's digests of every copy that
// judges its current versions alone, over the whole table: a run that
// wrote records leaves them for the first reader, when the table holds at
// most digestsPerRun times the records it wrote.
func (s *Store) storeAllDigests(ctx context.Context, wrote int64) error {
	var held uint64
	if err := s.conn.QueryRow(ctx, "SELECT count() FROM record").Scan(&held); err != nil {
		return err
	}
	if held > uint64(wrote)*digestsPerRun {
		return nil
	}
	for _, cp := range copies {
		if s.kindOf(cp) != copyAlone {
			continue
		}
		if _, err := s.recordDigests(ctx, cp, math.MinInt64, math.MaxInt64); err != nil {
			return err
		}
	}
	return nil
}
