package clickhouse

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/rollup"
)

// lookupChunk is the most keys one lookup names: its IN list stays well
// under the server's max_query_size (256 KiB).
const lookupChunk = 5000

// judgeAll places every record of the batch, in order, against the rows
// held (in the database, remembered as open, or placed earlier in this
// batch), and gives the new rows their ids.
func (b *batch) judgeAll(ctx context.Context, p *timeline.IngestRun) error {
	b.staged, b.whole, b.order = map[openKey]*row{}, map[int64]*row{}, nil
	first := make([]int64, len(b.recs)) // each record's first key, hashed once
	if err := b.lookupFirstKeys(ctx, first); err != nil {
		return err
	}
	for i, r := range b.recs {
		res, err := b.place(ctx, r, first[i])
		if err != nil {
			return err
		}
		retally(p, res)
	}
	return b.assignIDs(ctx)
}

// place judges one record, trying its keys in turn (timeline.ConflictKey),
// the first hashed already (first).
func (b *batch) place(ctx context.Context, r *timeline.Record, first int64) (timeline.AddResult, error) {
	for i := 0; ; i++ {
		kh := first
		if i > 0 {
			k, ok := timeline.ConflictKey(r, i)
			if !ok {
				return timeline.Duplicate, nil // not reached: the last key holds all that is compared
			}
			kh = keyHash(k)
		}
		h := b.known(r, kh)
		if h == nil && i > 0 && b.mayBeHeld(r) {
			// A further key, looked up on its own: conflicts are rare.
			if err := b.sendBefore(ctx, []int64{kh}); err != nil {
				return 0, err
			}
			if err := b.lookup(ctx, r.Stages != 0, []int64{kh}, ns(r.Time), ns(r.Time)); err != nil {
				return 0, err
			}
			h = b.known(r, kh)
		}
		if h == nil {
			nr := &row{r: r, key: kh, dirty: true}
			r.ID = 0
			b.put(nr)
			b.order = append(b.order, nr)
			b.countAdded(nr)
			if i > 0 {
				return timeline.Conflict, nil
			}
			return timeline.Added, nil
		}
		old, ov := h.r.Stages, heldValues(h.r, r)
		res := judge(h.r, r)
		switch res {
		case conflict:
			continue
		case timeline.Merged:
			first := !h.dirty // h is as the database holds it
			if first {
				h.dirty = true
				b.order = append(b.order, h)
			}
			b.countJoined(h, old, r, ov)
			if first {
				h.heldSlow = false
				if h.rq != nil { // classed by countJoined
					_, h.heldSlow = rollup.SlowOf(h.rq, old, ov)
				}
			}
		}
		return res, nil
	}
}

// mayBeHeld reports whether the database may hold a row under one of r's
// keys: a request later than every request held cannot be (a log read in
// time order takes no lookups).
func (b *batch) mayBeHeld(r *timeline.Record) bool {
	if r.Stages == 0 {
		return true
	}
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	return ns(r.Time) <= b.s.heldMax
}

// readHeldMax reads, once, the time of the latest request held.
func (s *Store) readHeldMax(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.heldMaxRead {
		return nil
	}
	var n uint64
	var t int64
	if err := s.conn.QueryRow(ctx, "SELECT count(), max(time_ns) FROM record WHERE stages != 0").Scan(&n, &t); err != nil {
		return fmt.Errorf("read the latest request held: %w", s.shardErr(ctx, err))
	}
	s.heldMax, s.heldMaxRead = noTime, true
	if n > 0 {
		s.heldMax = t
	}
	return nil
}

func (b *batch) known(r *timeline.Record, key int64) *row {
	if r.Stages != 0 {
		return b.staged[openKey{ns(r.Time), key}]
	}
	return b.whole[key]
}

func (b *batch) put(rw *row) {
	if rw.r.Stages != 0 {
		b.staged[openKey{ns(rw.r.Time), rw.key}] = rw
		return
	}
	b.whole[rw.key] = rw
}

// lookupFirstKeys reads the rows held under the records' natural keys:
// from the store's open requests where it remembers them, else from the
// database. It sets first[i] to the hash of b.recs[i].Key.
func (b *batch) lookupFirstKeys(ctx context.Context, first []int64) error {
	var staged, whole []int64
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	if err := b.s.readHeldMax(ctx); err != nil {
		return err
	}
	b.s.mu.Lock()
	for i, r := range b.recs {
		kh := keyHash(r.Key)
		first[i] = kh
		if r.Stages == 0 {
			whole = append(whole, kh)
			continue
		}
		k := openKey{ns(r.Time), kh}
		if b.staged[k] != nil {
			continue // a further stage of one found before
		}
		if h, ok := b.s.open.get(k); ok {
			b.staged[k] = h
			continue
		}
		if k.t > b.s.heldMax {
			continue // later than every request held: new
		}
		staged = append(staged, kh)
		lo, hi = min(lo, k.t), max(hi, k.t)
	}
	b.s.mu.Unlock()
	for _, keys := range [][]int64{staged, whole} {
		if err := b.sendBefore(ctx, keys); err != nil {
			return err
		}
	}
	for len(staged) > 0 {
		n := min(len(staged), lookupChunk)
		if err := b.lookup(ctx, true, staged[:n], lo, hi); err != nil {
			return err
		}
		staged = staged[n:]
	}
	for len(whole) > 0 {
		n := min(len(whole), lookupChunk)
		if err := b.lookup(ctx, false, whole[:n], 0, 0); err != nil {
			return err
		}
		whole = whole[n:]
	}
	return nil
}

// lookup reads the held rows with the given keys: rows with stages whose
// time is in [lo, hi], or rows without stages.
//
// It first asks which of the keys are held at all, reading the key and
// time columns alone, then reads the whole rows of those only, by FINAL
// over their own times. Most keys looked up are not held (in a first
// ingest, none): the lines later than a request held that the store does
// not remember as open. A FINAL over the batch's whole span read every
// column of every row in it, about 8 GiB over a 10 M-line ingest (the
// servers' query_log).
func (b *batch) lookup(ctx context.Context, staged bool, keys []int64, lo, hi int64) error {
	held, lo, hi, err := b.probe(ctx, staged, keys, lo, hi)
	if err != nil || len(held) == 0 {
		return err
	}
	rows, err := b.s.conn.Query(ctx, "SELECT key, rewrite, "+recordColumns+" FROM "+final("record", heldWhere(staged, held, lo, hi)))
	if err != nil {
		return fmt.Errorf("look up held records: %w", b.s.shardErr(ctx, err))
	}
	defer rows.Close()
	var (
		key     int64
		rewrite uint8
	)
	sc := newRecordScan(allColumns, &key, &rewrite)
	for rows.Next() {
		r, _, err := sc.scan(rows)
		if err != nil {
			return fmt.Errorf("look up held records: %w", err)
		}
		rw := &row{r: r, key: key, held: true}
		rw.heldCopied = copiedRow(rw.r.Code, rewrite)
		if b.known(rw.r, rw.key) == nil {
			b.put(rw)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("look up held records: %w", b.s.shardErr(ctx, err))
	}
	return nil
}

// probe returns which of keys are held (rows with stages whose time is in
// [lo, hi], or rows without stages), and the span of the held rows' times.
// It reads two columns and no FINAL: any version of a row tells that its
// key is held.
func (b *batch) probe(ctx context.Context, staged bool, keys []int64, lo, hi int64) (held []int64, hlo, hhi int64, err error) {
	rows, err := b.s.conn.Query(ctx, "SELECT DISTINCT key, time_ns FROM record WHERE "+heldWhere(staged, keys, lo, hi))
	if err != nil {
		return nil, 0, 0, fmt.Errorf("look up held records: %w", b.s.shardErr(ctx, err))
	}
	defer rows.Close()
	hlo, hhi = math.MaxInt64, math.MinInt64
	seen := map[int64]bool{}
	for rows.Next() {
		var k, t int64
		if err := rows.Scan(&k, &t); err != nil {
			return nil, 0, 0, fmt.Errorf("look up held records: %w", err)
		}
		hlo, hhi = min(hlo, t), max(hhi, t)
		if !seen[k] {
			seen[k] = true
			held = append(held, k)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, 0, fmt.Errorf("look up held records: %w", b.s.shardErr(ctx, err))
	}
	return held, hlo, hhi, nil
}

// heldWhere is the condition of the rows held under keys: rows with
// stages whose time is in [lo, hi] (staged), or rows without stages.
func heldWhere(staged bool, keys []int64, lo, hi int64) string {
	var in strings.Builder
	for i, k := range keys {
		if i > 0 {
			in.WriteByte(',')
		}
		in.WriteString(strconv.FormatInt(k, 10))
	}
	if staged {
		return fmt.Sprintf("time_ns >= %d AND time_ns <= %d AND stages != 0 AND key IN (%s)", lo, hi, in.String())
	}
	return "stages = 0 AND key IN (" + in.String() + ")"
}

// assignIDs numbers the new rows after the highest id held, in the order
// they were first seen, as SQLite numbers rows it inserts.
func (b *batch) assignIDs(ctx context.Context) error {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nextID == 0 {
		var max int64
		if err := s.conn.QueryRow(ctx, "SELECT toInt64(max(id)) FROM record").Scan(&max); err != nil {
			return fmt.Errorf("read the last record id: %w", s.shardErr(ctx, err))
		}
		s.nextID = max + 1
	}
	for _, rw := range b.order {
		if rw.r.ID == 0 {
			rw.r.ID = s.nextID
			s.nextID++
		}
	}
	return nil
}

// AddVersion redacts the version's content and hashes it, filling v.Content
// and v.Hash with what is stored, and reports whether the version is new:
// the store knows the versions held (versionRanks), so it can tell at once,
// as ingesters that count a held version as a duplicate need.
func (b *batch) AddVersion(ctx context.Context, v *timeline.ObjectVersion) (bool, error) {
	if err := timeline.CheckTime(v.Time); err != nil {
		return false, fmt.Errorf("add version of %s/%s: %w", v.Object.Resource, v.Object.Name, err)
	}
	body, err := b.s.red.Object(v.Content, v.Object)
	if err != nil {
		return false, fmt.Errorf("add version of %s/%s: %w", v.Object.Resource, v.Object.Name, err)
	}
	sum := sha256.Sum256(body)
	v.Prepared = nil
	v.Content, v.Hash = body, "sha256:"+hex.EncodeToString(sum[:])
	v.Key = timeline.VersionKey(v)
	held, err := b.s.versionRanks(ctx)
	if err != nil {
		return false, fmt.Errorf("add version: %w", err)
	}
	k, rk := keyHash(v.Key), rank(v.Seen, ns(v.Time))
	old, ok := b.ranks[k]
	if !ok {
		old, ok = held[k]
	}
	if ok && rk <= old {
		return false, nil
	}
	if b.ranks == nil {
		b.ranks = map[int64]uint64{}
	}
	b.ranks[k] = rk
	c := *v
	if c.Evidence.Run == 0 {
		c.Evidence.Run = b.run
	}
	b.versions = append(b.versions, &c)
	b.verBytes += len(c.Content)
	if b.versionsFull() {
		if err := b.flush(context.WithoutCancel(ctx), false); err != nil {
			return false, fmt.Errorf("add version: %w", err)
		}
	}
	return !ok, nil
}

// versionRanks returns the rank of every version held, by key, read once.
// Versions are few beside records (about one in a hundred at 10 M), so
// the store keeps them all in memory.
func (s *Store) versionRanks(ctx context.Context) (map[int64]uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ranks != nil {
		return s.ranks, nil
	}
	rows, err := s.conn.Query(ctx, "SELECT key, max(rank) FROM object_version GROUP BY key")
	if err != nil {
		return nil, fmt.Errorf("read the versions held: %w", s.shardErr(ctx, err))
	}
	defer rows.Close()
	m := map[int64]uint64{}
	for rows.Next() {
		var k int64
		var rk uint64
		if err := rows.Scan(&k, &rk); err != nil {
			return nil, fmt.Errorf("read the versions held: %w", err)
		}
		m[k] = rk
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the versions held: %w", err)
	}
	s.ranks = m
	return m, nil
}

// rank orders the sightings of one version: the best kind of sighting,
// then a known time, then the earlier time, is the greater rank, which
// ReplacingMergeTree(rank) keeps.
func rank(seen timeline.Sighting, t int64) uint64 {
	r := uint64(3-int64(seen)) << 61
	if t != noTime {
		r |= ^(uint64(t) ^ 1<<63) >> 3
	}
	return r
}

// writeVersions writes the versions that are new or better sightings of
// one held.
func (b *batch) writeVersions(ctx context.Context) error {
	if len(b.versions) == 0 {
		return nil
	}
	ins, err := b.s.conn.PrepareBatch(ctx, insert("object_version"))
	if err != nil {
		return fmt.Errorf("write versions: %w", b.s.shardErr(ctx, err))
	}
	for _, v := range b.versions {
		o := &v.Object
		if err := ins.Append(keyHash(v.Key), o.Group, o.Version, o.Resource, o.Kind, o.Namespace, o.Name, o.UID,
			v.ResourceVersion, ns(v.Time), v.Hash, string(v.Content), v.Evidence.Run, v.Evidence.Line, int8(v.Seen),
			rank(v.Seen, ns(v.Time))); err != nil {
			return fmt.Errorf("write versions: %w", err)
		}
	}
	if err := ins.Send(); err != nil {
		return fmt.Errorf("write versions: %w", b.s.shardErr(ctx, err))
	}
	return nil
}

// writeCursors writes where each watch stands.
func (b *batch) writeCursors(ctx context.Context) error {
	if len(b.cursors) == 0 {
		return nil
	}
	ins, err := b.s.conn.PrepareBatch(ctx, insert("watch_cursor"))
	if err != nil {
		return fmt.Errorf("write cursors: %w", b.s.shardErr(ctx, err))
	}
	for _, c := range b.cursors {
		if err := ins.Append(c[0], c[1], b.s.stamp()); err != nil {
			return fmt.Errorf("write cursors: %w", err)
		}
	}
	if err := ins.Send(); err != nil {
		return fmt.Errorf("write cursors: %w", b.s.shardErr(ctx, err))
	}
	return nil
}
