package clickhouse

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/filtersql"
)

// A read of records without a LIMIT is cut by time into chunks of about
// chunkRows rows, each read unordered and sorted in Go. Two costs of
// ClickHouse 18.16 make the one ordered query slow:
//
//   - ORDER BY over the LowCardinality columns whose values are mostly
//     new (uri, extra): on the 10 M-line benchmark log, 88,622 rows of
//     failed requests took 8.4 s ordered and 3.9 s unordered, the same
//     rows; a chunk sorted in Go costs milliseconds;
//   - the current-version sets (current), built from every rewrite in the
//     window, about 1.5 s however few rows the filter keeps. A chunk whose
//     filter keeps fewer rows than the window has rewrites builds them from
//     the rewrites at the times of its own rows (currentAt): 0.19 s instead
//     of 1.61 s for a filter that keeps none.
//
// The plan (two counts by bucketNS of time) gives each chunk its rows and
// rewrites. Memory stays bounded by a chunk, about chunkRows records: a
// chunk of more than oversized rows (one bucket too full, such as many
// records with no time) is read ordered by the server and streamed.
var chunkRows int64 = 1 << 16 // a variable for the tests

const bucketNS = int64(10e9) // 10 s

// bucketSQL is the bucket of a row's time_ns, as bucketMeets numbers them:
// -1 for no time (and any before 1970).
var bucketSQL = fmt.Sprintf("if(time_ns < 0, -1, intDiv(time_ns, %d))", bucketNS)

// oversized is a chunk too large to hold and sort in memory.
func oversized(c chunk) bool { return c.rows > 4*chunkRows }

// chunk is a part [lo, hi) of a read's window, with the rows its filter
// keeps (superseded versions included) and the rewrites it holds.
type chunk struct {
	lo, hi   int64
	rows     int64
	rewrites int64
	// from is the copy the chunk's rows are read from (failedCopy,
	// deletedCopy), which holds as many of them as record does; nil:
	// record.
	from *copyTable
}

// nsRange is the WHERE condition of [lo, hi) on time_ns, hi MaxInt64 for
// none.
func nsRange(lo, hi int64) string {
	cond := fmt.Sprintf("time_ns >= %d", lo)
	if hi != math.MaxInt64 {
		cond += fmt.Sprintf(" AND time_ns < %d", hi)
	}
	return cond
}

// plan cuts [lo, hi) into chunks of about chunkRows rows that filter
// keeps; chunks it keeps none of are left out. A bucket is never split:
// records without a time (and any before 1970) form the first.
//
// The rows and the rewrites are counted by two queries, each with its
// condition in WHERE: 18.16 names an aggregate's column by its expression
// as each shard rewrote it (NOT NOT x as x), so the initiator fails to
// find a countIf(filter) by the name it gave it. (One UNION ALL of the two,
// with a constant column to tell them apart, was tried: a test shard of
// 18.16 died of a segmentation fault during CI while such reads ran, and
// that form is left out.)
//
// cp is the copy that holds every row filter keeps (copyFor), or nil: a
// chunk is read from it where it is known to hold what record does.
//
// A copy that judges its current versions by itself (copyAlone) is
// checked bucket by bucket with digests (copyDigests): where they agree,
// it holds the current version of every request with a version it takes,
// whatever either table's merges have dropped. When they agree in every
// bucket, the rows are counted in the copy, a small table, and not in
// record. The copy is filled after record by the same insert, so a row it
// missed (a server that died between the two) makes the digests differ
// and the buckets it falls in are read from record.
//
// A copy made before the marks (copyByRecord) is checked by counts of the
// rows filter keeps in each table: a chunk is read from it when they agree
// in each of its buckets. (A bucket where the copy also holds a superseded
// version that record's merges already dropped, on another shard, would
// hide a missed row there: two rare events in the same ten seconds. The
// counts also differ until both tables are merged alike.)
//
// The chunk read first aims at first rows (chunkRows for a whole read, the
// limit for a read with one), each later one at twice the one before, up
// to chunkRows: a read of the first (or, desc, the last) records reads a
// few, and a filter that keeps fewer than the limit costs a few chunks
// more, not one a bucket.
func (s *Store) plan(ctx context.Context, lo, hi int64, filter string, cp *copyTable, first int64, desc bool) ([]chunk, error) {
	var kept, rewrites map[int64]int64
	var differ []int64
	// A chunk read from a copy that judges its current versions alone
	// needs no count of record's rewrites: they are read only for chunks
	// read from record, and with the counts when every chunk may be.
	alone := cp != nil && s.kindOf(cp) == copyAlone
	limited := first < chunkRows
	err := both(ctx, func(ctx context.Context) (err error) {
		kept, differ, err = s.planCounts(ctx, lo, hi, filter, cp)
		return err
	}, func(ctx context.Context) (err error) {
		if !alone {
			rewrites, err = s.rewritesIn(ctx, lo, hi, limited)
		}
		return err
	})
	if err == nil && alone && len(differ) > 0 {
		rewrites, err = s.rewritesIn(ctx, lo, hi, limited)
	}
	if err != nil {
		return nil, err
	}
	out := cut(kept, lo, hi, first, desc)
	for b, n := range rewrites {
		out[chunkOf(out, b)].rewrites += n
	}
	if cp != nil {
		for i := range out {
			out[i].from = cp
		}
		// The chunks of the buckets where the copy differs are read
		// from record.
		for _, b := range differ {
			out[chunkOf(out, b)].from = nil
		}
	}
	return slices.DeleteFunc(out, func(c chunk) bool { return c.rows == 0 }), nil
}

// cut groups the buckets of kept (rows per bucket) into chunks of [lo,
// hi), in time order, at bucket starts: the chunk read first (the last
// with desc) closes once it holds first rows, each next once it holds
// twice as many as the one before, up to chunkRows. A bucket is never
// split, and records without a time (bucket -1) share the first chunk.
func cut(kept map[int64]int64, lo, hi, first int64, desc bool) []chunk {
	bs := slices.Sorted(maps.Keys(kept))
	target := min(max(first, 1), chunkRows)
	grow := func() { target = min(2*target, chunkRows) }
	var out []chunk
	if !desc {
		cur := chunk{lo: lo}
		for _, b := range bs {
			if cur.rows >= target && b >= 0 {
				cur.hi = b * bucketNS
				out = append(out, cur)
				cur = chunk{lo: cur.hi}
				grow()
			}
			cur.rows += kept[b]
		}
		cur.hi = hi
		return append(out, cur)
	}
	cur := chunk{hi: hi}
	for i := len(bs) - 1; i >= 0; i-- {
		b := bs[i]
		cur.rows += kept[b]
		// A chunk starts at its lowest bucket, which holds lo only
		// when it is the first.
		if cur.rows >= target && b >= 0 && i > 0 {
			cur.lo = b * bucketNS
			out = append(out, cur)
			cur = chunk{hi: b * bucketNS}
			grow()
		}
	}
	cur.lo = lo
	out = append(out, cur)
	slices.Reverse(out)
	return out
}

// planCounts reads what plan needs but the rewrites: the rows filter
// keeps per bucket of time, counted in record, or in the copy cp when it is
// read whole; and, for a read of a copy, the buckets where the copy
// differs from record: by digests (copyAlone), or by those counts
// (copyByRecord).
func (s *Store) planCounts(ctx context.Context, lo, hi int64, filter string, cp *copyTable) (kept map[int64]int64, differ []int64, err error) {
	where := nsRange(lo, hi) + " AND (" + filter + ")"
	if cp != nil && s.kindOf(cp) == copyAlone {
		// The rows are counted in the copy beside the digests (a small
		// table: milliseconds), and in record only where they differ.
		err := both(ctx, func(ctx context.Context) (err error) {
			differ, err = s.copyDiffers(ctx, cp, lo, hi)
			return err
		}, func(ctx context.Context) (err error) {
			kept, err = s.bucketCounts(ctx, cp.name, where)
			return err
		})
		if err != nil || len(differ) == 0 {
			return kept, differ, err
		}
	}
	if kept, err = s.bucketCounts(ctx, "record", where); err != nil {
		return nil, nil, err
	}
	if cp != nil && s.kindOf(cp) == copyByRecord {
		copied, err := s.bucketCounts(ctx, cp.name, where)
		if err != nil {
			return nil, nil, err
		}
		differ = differing(kept, copied)
	}
	return kept, differ, nil
}

// differing is the buckets whose values differ between want and got, or
// that only one of them holds.
func differing[V comparable](want, got map[int64]V) []int64 {
	var out []int64
	for b, v := range want {
		if g, ok := got[b]; !ok || g != v {
			out = append(out, b)
		}
	}
	for b := range got {
		if _, ok := want[b]; !ok {
			out = append(out, b)
		}
	}
	return out
}

// chunkOf is the index of the chunk of bucket b: the last chunk that
// starts at or before it (the first chunk starts at lo, which may fall
// inside its first bucket).
func chunkOf(chunks []chunk, b int64) int {
	at := max(b, 0) * bucketNS
	i, _ := slices.BinarySearchFunc(chunks, at, func(c chunk, t int64) int { return cmp.Compare(c.lo, t+1) })
	return max(i-1, 0)
}

// rewritesIn is record's rewrites held per bucket of time, of the buckets
// that meet [lo, hi). The counts of the whole table are read once and kept
// until the store writes records again (forgetRewrites). A plan needs the
// rewrites only to choose how each chunk finds its current versions
// (current or currentAt, which keep the same rows), so counts that another
// writer made stale cost time, never answers. investigate plans five reads
// of the whole timeline: on the 10 M-line benchmark log each count took
// 0.1 s of the server's two cores.
//
// A read with a limit (window) counts them in its own window when the
// whole table's are not held: investigate's read of the last good record
// before its boundary reads a minute first, where a count of the whole
// table took 0.17 CPU-s of the servers.
func (s *Store) rewritesIn(ctx context.Context, lo, hi int64, window bool) (map[int64]int64, error) {
	s.mu.Lock()
	all := s.rewrites
	s.mu.Unlock()
	if all == nil && window {
		return s.bucketCounts(ctx, "record", nsRange(lo, hi)+" AND rewrite != 0")
	}
	if all == nil {
		var err error
		if all, err = s.bucketCounts(ctx, "record", "rewrite != 0"); err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.rewrites = all
		s.mu.Unlock()
	}
	out := map[int64]int64{}
	for b, n := range all {
		if bucketMeets(b, lo, hi) {
			out[b] = n
		}
	}
	return out, nil
}

// A digest sums up, per bucket of time, the requests that have a version
// a copy takes (its cond): how many, and the sum of a hash of each one's
// time, key and most stages. In record, the rows kept are those the copy
// takes; in the copy, all of its rows.
//
// Every version of a request after the first one the copy takes is
// taken too: marked, in the failed requests' copy (failedTable); by its
// condition, in the deletions' copy (a request's versions share its
// verb). So in record, a request with a
// version taken has its current version (the most stages) taken as well,
// and a merge, which drops only superseded versions, leaves the request's
// most stages as they were; in the copy likewise. The two tables' digests
// of a bucket agree, in any state of their merges, exactly when the copy
// holds the current version of every such request of the bucket (but for
// a collision of 64-bit sums): where they agree, the copy's latest version
// of each request is the current one, and a read from the copy, judged by
// its own rewrites, answers as one from record.
//
// Versions an older writer wrote (marked only right after a failure) can
// leave a request's current version unmarked after a copied one: once
// record's merges drop the copied versions, the digests differ there, and
// the bucket is read from record, correct but slower.
type digest struct{ requests, sum uint64 }

// copyDigests reads the digests of copy cp's rows in table (record or
// the copy) per bucket of time, of the times in where. The GROUP BY keys
// hold the shard key, so each shard's groups are final (perShard).
func (s *Store) copyDigests(ctx context.Context, cp *copyTable, table, where string) (map[int64]digest, error) {
	rows, err := s.conn.Query(perShard(ctx), fmt.Sprintf(
		"SELECT b, count(), sum(h) FROM (SELECT %s AS b, "+
			"cityHash64(time_ns, key, max(stages)) AS h FROM %s WHERE %s AND %s GROUP BY time_ns, key) GROUP BY b",
		bucketSQL, table, where, cp.cond))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]digest{}
	for rows.Next() {
		var b int64
		var d digest
		if err := rows.Scan(&b, &d.requests, &d.sum); err != nil {
			return nil, err
		}
		out[b] = d
	}
	return out, rows.Err()
}

// copyDiffers is the buckets meeting [lo, hi) where copy cp and record
// have different digests, both read over the whole
// buckets that meet [lo, hi): a read of an hour groups the keys of an
// hour, however long the table. record's are kept, with the range they
// cover, until the store writes records again (forgetRewrites) or a plan
// asks for another range: investigate plans its reads of failed requests
// over one window. Between processes they are kept in the database, by
// the state of record's parts (recordDigests). On the 10 M-line benchmark
// log, record's took about 0.15 s of the servers, where the copy's, read
// for each plan, take a tenth of that. A copy that another writer filled
// since differs, and is not read.
func (s *Store) copyDiffers(ctx context.Context, cp *copyTable, lo, hi int64) ([]int64, error) {
	blo, bhi := bucketSpan(lo, hi)
	rng := nsRange(blo, bhi)
	s.mu.Lock()
	want := s.digests[cp.name]
	if want.over != rng {
		want.of = nil
	}
	s.mu.Unlock()
	var got map[int64]digest
	// The two tables' digests are read at once.
	err := both(ctx, func(ctx context.Context) (err error) {
		if want.of != nil {
			return nil
		}
		if want.of, err = s.recordDigests(ctx, cp, blo, bhi); err != nil {
			return err
		}
		want.over = rng
		s.mu.Lock()
		if s.digests == nil {
			s.digests = map[string]digests{}
		}
		s.digests[cp.name] = want
		s.mu.Unlock()
		return nil
	}, func(ctx context.Context) (err error) {
		got, err = s.copyDigests(ctx, cp, cp.name, rng)
		return err
	})
	if err != nil {
		return nil, err
	}
	return differing(want.of, got), nil
}

// both runs f and g at once. The first to fail cancels the other, and its
// error is the one returned (not the other's cancellation); both have
// ended when both returns.
func both(ctx context.Context, f, g func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 1)
	go func() {
		err := g(ctx)
		if err != nil {
			cancel()
		}
		errs <- err
	}()
	err := f(ctx)
	if err != nil {
		cancel()
	}
	gerr := <-errs
	if err == nil || gerr != nil && errors.Is(err, context.Canceled) && !errors.Is(gerr, context.Canceled) {
		return gerr
	}
	return err
}

// digests are record's digests of a copy over the time condition over.
type digests struct {
	of   map[int64]digest
	over string
}

// bucketSpan is the span [blo, bhi) of the whole buckets that meet [lo,
// hi), bhi MaxInt64 for none (as nsRange takes it).
func bucketSpan(lo, hi int64) (blo, bhi int64) {
	blo, bhi = math.MinInt64, math.MaxInt64
	if lo >= 0 {
		blo = lo / bucketNS * bucketNS
	}
	if hi <= 0 {
		bhi = 0 // the bucket of no time, and of times before 1970
	} else if end := (hi-1)/bucketNS*bucketNS + bucketNS; end > 0 && hi != math.MaxInt64 {
		bhi = end
	}
	return blo, bhi
}

// bucketMeets reports whether bucket b (-1: no time, or before 1970)
// meets [lo, hi).
func bucketMeets(b, lo, hi int64) bool {
	if b < 0 {
		return lo < 0
	}
	start := b * bucketNS
	// lo < start+bucketNS, which overflows for the last bucket of int64
	return start < hi && (lo < start || lo-start < bucketNS)
}

// forgetRewrites drops the rewrite counts rewritesIn keeps, and record's
// digests of the copies copyDiffers keeps: the store wrote records.
func (s *Store) forgetRewrites() {
	s.mu.Lock()
	s.rewrites, s.digests = nil, nil
	s.mu.Unlock()
}

// bucketCounts counts the rows of table (record, or a copy) that match
// where by bucket of time: -1 for those with no time (and any before 1970).
func (s *Store) bucketCounts(ctx context.Context, table, where string) (map[int64]int64, error) {
	rows, err := s.conn.Query(ctx, fmt.Sprintf(
		"SELECT %s AS b, count() FROM %s WHERE %s GROUP BY b", bucketSQL, table, where))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]int64{}
	for rows.Next() {
		var b int64
		var n uint64
		if err := rows.Scan(&b, &n); err != nil {
			return nil, err
		}
		out[b] = int64(n)
	}
	return out, rows.Err()
}

// currentAt is current for a read of few rows: the rewrites it judges by
// are only those at the times of the rows filter keeps in rng, which are
// all the rewrites of those rows' records (every version of a record has
// its time and key).
//
// table is where the rows are read from (record, or a copy): the times of
// the rows it keeps are the same in both.
func currentAt(db, table, rng, filter string) string {
	return current(db, rng+" AND time_ns IN (SELECT time_ns FROM "+db+"."+table+"_local WHERE "+rng+" AND ("+filter+"))")
}

// PlansReads reports that each read of records is planned by queries of
// its own (plan, unplanned): a reader gains nothing from cutting a read
// into parts of its window, and pays a plan per part (analyze/outcome).
func (s *Store) PlansReads() bool { return true }

// chunkedRecords yields the records of q, which has no LIMIT in SQL, chunk
// by chunk (in q's order), each chunk read unordered and sorted here.
func (s *Store) chunkedRecords(ctx context.Context, q timeline.Query, yield func(*timeline.Record, error) bool) {
	filter, residual := recordFilter(q)
	lo, hi := timeline.Span{Since: q.Since, Until: q.Until}.NS()
	n := 0
	emit := func(r *timeline.Record) bool {
		n++
		return yield(r, nil) && (q.Limit <= 0 || n < q.Limit)
	}
	// A read with a limit plans its first chunk at the limit, and tries
	// without a plan only whether the filter keeps a few times as many
	// rows: more would be read to no use.
	first, unplannedRows := chunkRows, chunkRows
	if q.Limit > 0 {
		first = int64(q.Limit)
		unplannedRows = min(chunkRows, max(1024, 4*first))
	}
	cp := s.copyFor(q)
	if cp == nil {
		recs, ok, err := s.unplanned(ctx, q, lo, hi, filter, residual, unplannedRows)
		if err != nil {
			yield(nil, err) // says which shard (eachRecord, rewritesAt)
			return
		}
		if ok {
			for _, r := range recs {
				if !emit(r) {
					return
				}
			}
			return
		}
	}
	chunks, err := s.plan(ctx, lo, hi, filter, cp, first, q.Desc)
	if err != nil {
		yield(nil, fmt.Errorf("query records: %w", s.shardErr(ctx, err)))
		return
	}
	if q.Desc {
		slices.Reverse(chunks)
	}
	// The next chunk is read while the records of this one are handed
	// out: the reader's work on one chunk overlaps the servers' on the
	// next (investigate's failed requests: two chunks, 88,622 rows, on the
	// 10 M-line benchmark log). At most two chunks are held.
	ctx, cancel := context.WithCancel(ctx)
	var ahead <-chan readChunk // the read of the next chunk, begun
	defer func() {
		cancel()
		if ahead != nil {
			<-ahead // its query ends with ctx: nothing outlives the read
		}
	}()
	for i, c := range chunks {
		if oversized(c) {
			err := s.streamChunk(ctx, q, c, filter, residual, emit)
			if errors.Is(err, errStop) {
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
			continue
		}
		cur := ahead
		if cur == nil {
			cur = s.readAhead(ctx, q, c, filter, residual)
		}
		got := <-cur
		ahead = nil
		if got.err != nil {
			yield(nil, got.err)
			return
		}
		if i+1 < len(chunks) && !oversized(chunks[i+1]) {
			ahead = s.readAhead(ctx, q, chunks[i+1], filter, residual)
		}
		for _, r := range got.recs {
			if !emit(r) {
				return
			}
		}
	}
}

// readChunk is a chunk's records in q's order, or why they could not be
// read.
type readChunk struct {
	recs []*timeline.Record
	err  error
}

// readAhead reads chunk c's records in a goroutine of its own (sortChunk)
// and hands them over on the channel it returns, once.
func (s *Store) readAhead(ctx context.Context, q timeline.Query, c chunk, filter string, residual bool) <-chan readChunk {
	out := make(chan readChunk, 1)
	go func() {
		recs, err := s.sortChunk(ctx, q, c, filter, residual)
		out <- readChunk{recs, err}
	}()
	return out
}

// errStop is a chunk read ended because its reader stopped.
var errStop = errors.New("stopped")

// copyFor is the copy q's records can be read from, or nil: one the store
// keeps whose rows are all q's filter can keep. The deletions' copy, the
// smaller, is asked first.
func (s *Store) copyFor(q timeline.Query) *copyTable {
	if q.Where == nil {
		return nil
	}
	for _, cp := range copies {
		if s.kindOf(cp) != noCopy && cp.holds(q.Where.Expr()) {
			return cp
		}
	}
	return nil
}

// chunkQuery is the query of q's records in chunk c, unordered.
func (s *Store) chunkQuery(q timeline.Query, c chunk, filter string, residual bool) string {
	rng := nsRange(c.lo, c.hi)
	cur := current(s.db, rng)
	switch {
	case c.from != nil && s.kindOf(c.from) == copyAlone:
		cur = currentIn(s.db+"."+c.from.name+"_local", rng)
	case c.rows < c.rewrites:
		cur = currentAt(s.db, chunkTable(c), rng, filter)
	}
	return "SELECT " + readColumns(q, residual).cols + " FROM " + chunkTable(c) + " WHERE " + rng + " AND (" + filter + ") AND " + cur
}

// chunkTable is the table chunk c is read from.
func chunkTable(c chunk) string {
	if c.from != nil {
		return c.from.name
	}
	return "record"
}

// judgedHere reports whether a sorted chunk's current versions are
// judged here rather than by the server: a chunk of fewer rows than
// rewrites, whose current versions the server would judge by currentAt.
//
// currentAt makes each shard build the times of the rows the filter keeps
// twice, and then read the key of every row the filter keeps: on the
// 10 M-line benchmark log, 6,000 Secret deletions scattered over every
// part took 2.0 s with it and 0.8 s without. Here the rows are read with
// their key and stages, and beside them (a query of its own, on the other
// core) the most stages of the rewrites at the times of those rows
// (rewritesAt); a row is current when its request has no rewrite, or its
// stages are the rewrites' most, as current has it. A request's versions
// are on one shard (the shard key is its key), so the shards' rewrites
// together judge each row as its own shard's would.
func (s *Store) judgedHere(c chunk) bool {
	return c.rows < c.rewrites && !(c.from != nil && s.kindOf(c.from) == copyAlone)
}

// rewritesAt is the most stages of the rewrites of each request (time and
// key) in chunk c at the times at (a condition on time_ns).
func (s *Store) rewritesAt(ctx context.Context, c chunk, at string) (map[[2]int64]uint8, error) {
	rows, err := s.conn.Query(perShard(ctx), fmt.Sprintf(
		"SELECT time_ns, key, max(stages) FROM record WHERE %s AND %s AND rewrite != 0 GROUP BY time_ns, key",
		nsRange(c.lo, c.hi), at))
	if err != nil {
		return nil, fmt.Errorf("query records: %w", s.shardErr(ctx, err))
	}
	defer rows.Close()
	out := map[[2]int64]uint8{}
	for rows.Next() {
		var t, key int64
		var most uint8
		if err := rows.Scan(&t, &key, &most); err != nil {
			return nil, fmt.Errorf("read rewrites: %w", err)
		}
		out[[2]int64{t, key}] = most
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query records: %w", s.shardErr(ctx, err))
	}
	return out, nil
}

// namedTimes is the most times a query names in a list (about 20 bytes
// each, under the server's max_query_size of 256 KiB).
const namedTimes = 4096

// keptTimes is the condition on time_ns of the times of the rows filter
// keeps in chunk c.
func keptTimes(s *Store, c chunk, filter string) string {
	return "time_ns IN (SELECT time_ns FROM " + s.db + "." + chunkTable(c) + "_local WHERE " + nsRange(c.lo, c.hi) + " AND (" + filter + "))"
}

// timesOf are the distinct times of the versions read.
func timesOf[T any](read []version[T]) []int64 {
	ts := make([]int64, 0, len(read))
	for _, v := range read {
		ts = append(ts, v.ns)
	}
	slices.Sort(ts)
	return slices.Compact(ts)
}

// inTimes is the condition on time_ns of the times ts.
func inTimes(ts []int64) string {
	if len(ts) == 0 {
		return "0"
	}
	var b strings.Builder
	b.WriteString("time_ns IN (")
	for i, t := range ts {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(t, 10))
	}
	b.WriteString(")")
	return b.String()
}

// eachRecord runs query and hands each record that matches q (residual:
// checked with q.Where here too) and its time in nanoseconds to each,
// until each returns false (errStop).
// The columns pre scans into come before the record's; scanned, when
// not nil, is called for every row read, matched or not.
func (s *Store) eachRecord(ctx context.Context, query string, q timeline.Query, residual bool, each func(*timeline.Record, int64) bool, scanned func(), pre ...any) error {
	rows, err := s.conn.Query(ctx, query)
	if err != nil {
		return fmt.Errorf("query records: %w", s.shardErr(ctx, err))
	}
	defer rows.Close()
	rd := readColumns(q, residual)
	sc := newRecordScan(rd, pre...)
	for rows.Next() {
		r, t, err := sc.scan(rows)
		if err != nil {
			return fmt.Errorf("read record: %w", err)
		}
		if scanned != nil {
			scanned()
		}
		r.Bad = q.Bad[r.ID]
		if residual {
			if ok, _ := q.Where.Match(r); !ok {
				continue
			}
		}
		if rd.keep {
			q.Keep(r)
		} else if rd.pod {
			filtersql.KeepPod(r)
		}
		if !each(r, t) {
			return errStop
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("query records: %w", s.shardErr(ctx, err))
	}
	return nil
}

// streamChunk hands the records of an oversized chunk to emit in q's
// order, sorted by the server.
func (s *Store) streamChunk(ctx context.Context, q timeline.Query, c chunk, filter string, residual bool, emit func(*timeline.Record) bool) error {
	return s.eachRecord(ctx, s.chunkQuery(q, c, filter, residual)+" ORDER BY "+recordOrder(q), q, residual,
		func(r *timeline.Record, _ int64) bool { return emit(r) }, nil)
}

// sortChunk reads the records of chunk c and sorts them in q's order.
func (s *Store) sortChunk(ctx context.Context, q timeline.Query, c chunk, filter string, residual bool) ([]*timeline.Record, error) {
	if s.judgedHere(c) {
		read, err := judged(ctx, s, q, c, filter, residual, asTimed)
		if err != nil {
			return nil, err
		}
		return sortTimed(q, read), nil
	}
	var read []timed
	err := s.eachRecord(ctx, s.chunkQuery(q, c, filter, residual), q, residual, func(r *timeline.Record, ns int64) bool {
		read = append(read, timed{ns, r})
		return true
	}, nil)
	if err != nil {
		return nil, err
	}
	return sortTimed(q, read), nil
}

// timed is a record read and its time in nanoseconds.
type timed struct {
	ns int64
	r  *timeline.Record
}

// version is what was made of a row read, with its request's time, key
// and stages.
type version[T any] struct {
	v      T
	ns     int64
	key    int64
	stages uint8
}

// asTimed makes a record read a timed one.
func asTimed(r *timeline.Record, ns int64) (timed, bool) { return timed{ns, r}, true }

// versioned reads the rows of q in chunk c, superseded versions too, each
// as conv makes it (false: left out), with its key and stages; at most
// limit rows when limit > 0, and more says the server held more.
func versioned[T any](ctx context.Context, s *Store, q timeline.Query, c chunk, filter string, residual bool, limit int64,
	conv func(*timeline.Record, int64) (T, bool)) (read []version[T], more bool, err error) {
	var key int64
	var stages uint8
	query := "SELECT key, stages, " + readColumns(q, residual).cols + " FROM " + chunkTable(c) + " WHERE " + nsRange(c.lo, c.hi) + " AND (" + filter + ")"
	if limit > 0 {
		query += fmt.Sprintf(" LIMIT %d", limit+1)
	}
	rows := int64(0)
	err = s.eachRecord(ctx, query, q, residual, func(r *timeline.Record, ns int64) bool {
		if v, ok := conv(r, ns); ok {
			read = append(read, version[T]{v, ns, key, stages})
		}
		return true
	}, func() { rows++ }, &key, &stages)
	return read, limit > 0 && rows > limit, err
}

// judged reads the current versions of q's rows in chunk c, judged here,
// each as conv makes it: the rows with their key and stages, and beside
// them (a query of its own, on the other core) the most stages of the
// rewrites at their times. Only what conv makes of a row is held.
func judged[T any](ctx context.Context, s *Store, q timeline.Query, c chunk, filter string, residual bool,
	conv func(*timeline.Record, int64) (T, bool)) ([]T, error) {
	var read []version[T]
	var most map[[2]int64]uint8
	err := both(ctx, func(ctx context.Context) (err error) {
		read, _, err = versioned(ctx, s, q, c, filter, residual, 0, conv)
		return err
	}, func(ctx context.Context) (err error) {
		most, err = s.rewritesAt(ctx, c, keptTimes(s, c, filter))
		return err
	})
	if err != nil {
		return nil, err
	}
	return currentOf(read, most), nil
}

// currentOf keeps the versions that are current, given the most stages of
// the rewrites of each request (time and key) that has any: a version is
// current when its request has no rewrite, or its stages are that most,
// as current has it.
func currentOf[T any](read []version[T], most map[[2]int64]uint8) []T {
	out := make([]T, 0, len(read))
	for _, v := range read {
		if m, ok := most[[2]int64{v.ns, v.key}]; !ok || m == v.stages {
			out = append(out, v.v)
		}
	}
	return out
}

// sortTimed sorts the records read in q's order.
func sortTimed(q timeline.Query, read []timed) []*timeline.Record {
	sign := 1
	if q.Desc {
		sign = -1
	}
	slices.SortFunc(read, func(a, b timed) int {
		return sign * cmp.Or(cmp.Compare(a.ns, b.ns), cmp.Compare(a.r.ID, b.r.ID))
	})
	out := make([]*timeline.Record, len(read))
	for i, t := range read {
		out[i] = t.r
	}
	return out
}

// unplanned reads the records of q in [lo, hi) without a plan, when the
// filter keeps limit rows or fewer there (superseded versions counted):
// one read of at most that many rows, then the rewrites at their times,
// the chunk judged here. ok is false when the filter keeps more: the read
// stopped at limit+1 rows, and the plan reads them.
//
// A plan counts the rows the filter keeps per bucket of time, which is a
// scan of the filter's columns as long as the read itself: a filter that
// keeps few rows scattered over every part (investigate's ConfigMap and
// Secret deletions, on the 10 M-line log: 0.46-0.66 s) paid it twice. A
// read of failed requests is planned, for the plan chooses the failed
// requests' copy.
func (s *Store) unplanned(ctx context.Context, q timeline.Query, lo, hi int64, filter string, residual bool, limit int64) (recs []*timeline.Record, ok bool, err error) {
	c := chunk{lo: lo, hi: hi}
	read, more, err := versioned(ctx, s, q, c, filter, residual, limit, asTimed)
	if err != nil || more {
		return nil, false, err
	}
	if len(read) == 0 {
		return nil, true, nil // as a plan that keeps no chunk
	}
	// The rewrites at the times read, named: the server finds them by
	// its index of time alone, where the filter again would be a second
	// scan of its columns.
	var most map[[2]int64]uint8
	if times := timesOf(read); len(times) <= namedTimes {
		most, err = s.rewritesAt(ctx, c, inTimes(times))
	} else {
		most, err = s.rewritesAt(ctx, c, keptTimes(s, c, filter))
	}
	if err != nil {
		return nil, false, err
	}
	return sortTimed(q, currentOf(read, most)), true, nil
}
