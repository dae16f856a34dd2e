package clickhouse

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/rollup"
)

// The request rollup is counted by the SQLite store's rules
// (timeline/rollup): judgeAll tells the batch's Delta what became of each
// record (added, or a stage joined to a row held, with the row's values
// before), and the commit writes the Delta's rows after the records. The
// tables (schema.go) sum a cell's rows at merge, and reads sum them again,
// so a read costs the cells of its window whatever the records behind them.

// cell is one per-minute stat cell.
type cell struct {
	minute, class int64
	code, bucket  int
}

// rollupState is what the writer knows of the rollup held, read once.
type rollupState struct {
	classes   map[rollup.Class]int64
	nextClass int64
	// epochs holds the current epoch of the cells a commit emptied; 0 for
	// the others.
	epochs map[cell]int64
}

// countAdded counts a new row in the batch's rollup.
func (b *batch) countAdded(rw *row) {
	if rq, ok := rollup.RequestOf(rw.r); ok {
		rw.rq = &rq
		b.roll.Add(rw.rq, rw.r)
	}
}

// countJoined counts stage r joined to held, whose stages were old and
// values ov.
func (b *batch) countJoined(held *row, old timeline.Stage, r *timeline.Record, ov rollup.Values) {
	if held.rq == nil {
		rq, ok := rollup.RequestOf(held.r)
		if !ok {
			return
		}
		held.rq = &rq
	}
	b.roll.Join(held.rq, old, r, ov)
}

// heldValues are the values of a held row before r joins it (the APF wait
// read only where rollup.Replaces needs it).
func heldValues(h *timeline.Record, r *timeline.Record) rollup.Values {
	v := rollup.Values{Code: h.Code, Latency: int64(h.Latency)}
	if rollup.Replaces(h.Stages, r.Stages) {
		v.APF = rollup.APFQueueWait(h.Extra)
	}
	return v
}

// writeRollup writes the batch's rollup rows: its new classes first, so
// that no row refers to a class not held. A commit that fails here
// forgets what the store knew of the rollup, to read it again.
func (b *batch) writeRollup(ctx context.Context) error {
	d := &b.roll
	if d.Empty() && len(b.slow) == 0 {
		return nil
	}
	err := b.s.writeRollup(ctx, d, b.slow)
	if err != nil {
		b.s.mu.Lock()
		b.s.roll = nil
		b.s.mu.Unlock()
		return fmt.Errorf("write the request rollup: %w", err)
	}
	return nil
}

// writeRollup writes a batch's rollup rows and its slow requests' rows
// (slowTable).
func (s *Store) writeRollup(ctx context.Context, d *rollup.Delta, slow []slowRow) error {
	st, err := s.rollupState(ctx)
	if err != nil {
		return err
	}
	var added []timeline.RequestClass
	id := func(c rollup.Class) int64 {
		id, ok := st.classes[c]
		if !ok {
			id = st.nextClass
			st.nextClass++
			st.classes[c.Clone()] = id // kept past the batch: not its lines' strings
			added = append(added, timeline.RequestClass{ID: id, Verb: c.Verb, Group: c.Group, Resource: c.Resource,
				Subresource: c.Subresource, Scope: c.Scope, User: c.User, UserAgent: c.UserAgent})
		}
		return id
	}
	ids, _ := d.IDs(func(c rollup.Class) (int64, error) { return id(c), nil })
	// A slow request's class is the batch's when the batch counted its
	// final stage, or held already when an earlier batch did: numbering
	// it here adds no class unless a commit was cut short between its
	// records and its rollup.
	for i := range slow {
		if slow[i].slow {
			id(slow[i].class)
		}
	}
	err = s.insertRows(ctx, "req_class", len(added), func(i int) []any {
		c := &added[i]
		return []any{c.ID, c.Verb, c.Group, c.Resource, c.Subresource, c.Scope, c.User, c.UserAgent}
	})
	if err != nil {
		return err
	}
	if err := s.writeSlow(ctx, slow, id); err != nil {
		return err
	}
	secs := d.Seconds(ids)
	if err := s.insertRows(ctx, "req_second", len(secs), func(i int) []any {
		return []any{secs[i].Class, secs[i].Sec, secs[i].N}
	}); err != nil {
		return err
	}
	clients := d.Clients(ids)
	if err := s.insertRows(ctx, "req_client", len(clients), func(i int) []any {
		c := &clients[i]
		return []any{c.Minute, c.Class, c.User, c.N}
	}); err != nil {
		return err
	}
	return s.writeStats(ctx, st, d.Stats(ids))
}

// writeStats writes the per-minute cells, each in its current epoch, and
// starts a new epoch for those the commit emptied: the SQLite store
// deletes such a row, so a request counted there later starts its maxima
// afresh.
func (s *Store) writeStats(ctx context.Context, st *rollupState, stats []rollup.Stat) error {
	var taken []cell // cells the commit took requests back from
	err := s.insertRows(ctx, "req_stat_in", len(stats), func(i int) []any {
		r := &stats[i]
		c := cell{r.Minute, r.Class, r.Code, r.Bucket}
		if r.Retracted {
			taken = append(taken, c)
		}
		hi, lo := rollup.SplitSum(r.LatSum)
		return []any{r.Minute, r.Class, int32(r.Code), int32(r.Bucket), st.epochs[c], r.N, r.Etcd, r.Unpaged,
			hi, lo, r.LatMax, r.APFMax}
	})
	if err != nil || len(taken) == 0 {
		return err
	}
	emptied, err := s.emptied(ctx, st, taken)
	if err != nil {
		return err
	}
	for _, c := range emptied {
		st.epochs[c]++
	}
	return s.insertRows(ctx, "req_stat_epoch", len(emptied), func(i int) []any {
		c := emptied[i]
		return []any{c.minute, c.class, int32(c.code), int32(c.bucket), st.epochs[c]}
	})
}

// emptied returns the cells among taken that hold no request in their
// current epoch.
func (s *Store) emptied(ctx context.Context, st *rollupState, taken []cell) ([]cell, error) {
	held := map[cell]bool{}
	for part := range slices.Chunk(taken, lookupChunk/2) { // a tuple is about 30 characters: 75 KiB
		var in strings.Builder
		for i, c := range part {
			if i > 0 {
				in.WriteByte(',')
			}
			fmt.Fprintf(&in, "(%d,%d,%d,%d,%d)", c.minute, c.class, c.code, c.bucket, st.epochs[c])
		}
		err := s.queryCells(ctx, `SELECT minute, class, code, bucket, sumMerge(sum_n) AS cnt FROM req_stat
			WHERE (minute, class, code, bucket, epoch) IN (`+in.String()+`) GROUP BY minute, class, code, bucket`,
			func(c cell, n int64) { held[c] = n > 0 })
		if err != nil {
			return nil, err
		}
	}
	var out []cell
	for _, c := range taken {
		if !held[c] {
			out = append(out, c)
		}
	}
	return out, nil
}

// queryCells runs q, which reads a cell and a number per row, and calls
// each with every row.
func (s *Store) queryCells(ctx context.Context, q string, each func(c cell, v int64)) error {
	rows, err := s.conn.Query(ctx, q)
	if err != nil {
		return s.shardErr(ctx, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			c            cell
			code, bucket int32
			v            int64
		)
		if err := rows.Scan(&c.minute, &c.class, &code, &bucket, &v); err != nil {
			return err
		}
		c.code, c.bucket = int(code), int(bucket)
		each(c, v)
	}
	return s.shardErr(ctx, rows.Err())
}

// insertRows inserts n rows into the named table, row(i) giving the i-th.
func (s *Store) insertRows(ctx context.Context, table string, n int, row func(i int) []any) error {
	if n == 0 {
		return nil
	}
	ins, err := s.conn.PrepareBatch(ctx, insert(table))
	if err != nil {
		return fmt.Errorf("write %s: %w", table, s.shardErr(ctx, err))
	}
	for i := range n {
		if err := ins.Append(row(i)...); err != nil {
			return fmt.Errorf("write %s: %w", table, err)
		}
	}
	if err := ins.Send(); err != nil {
		return fmt.Errorf("write %s: %w", table, s.shardErr(ctx, err))
	}
	return nil
}

// rollupState returns what the writer knows of the rollup, reading the
// classes and the emptied cells' epochs the first time.
func (s *Store) rollupState(ctx context.Context) (*rollupState, error) {
	s.mu.Lock()
	st := s.roll
	s.mu.Unlock()
	if st != nil {
		return st, nil
	}
	st = &rollupState{classes: map[rollup.Class]int64{}, nextClass: 1, epochs: map[cell]int64{}}
	classes, err := s.requestClasses(ctx)
	if err != nil {
		return nil, err
	}
	for _, c := range classes {
		st.classes[rollup.Class{Verb: c.Verb, Group: c.Group, Resource: c.Resource, Subresource: c.Subresource,
			Scope: c.Scope, User: c.User, UserAgent: c.UserAgent}] = c.ID
		st.nextClass = max(st.nextClass, c.ID+1)
	}
	if st.epochs, err = s.epochs(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.roll = st
	s.mu.Unlock()
	return st, nil
}

// requestClasses reads every class held, by id.
func (s *Store) requestClasses(ctx context.Context) ([]timeline.RequestClass, error) {
	rows, err := s.conn.Query(ctx, `SELECT DISTINCT id, verb, api_group, resource, subresource, scope, user, user_agent
		FROM req_class ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read the request classes: %w", s.shardErr(ctx, err))
	}
	defer rows.Close()
	var out []timeline.RequestClass
	for rows.Next() {
		var c timeline.RequestClass
		if err := rows.Scan(&c.ID, &c.Verb, &c.Group, &c.Resource, &c.Subresource, &c.Scope, &c.User, &c.UserAgent); err != nil {
			return nil, fmt.Errorf("read the request classes: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the request classes: %w", s.shardErr(ctx, err))
	}
	return out, nil
}

// RequestSummary returns the rollup of [since, until) folded over the
// window (see timeline.Rollup), in the order the SQLite store gives it.
// Each read sums the rows of a cell (a commit's rows are not yet merged
// into one), so it costs the cells of the window, not the records.
func (s *Store) RequestSummary(ctx context.Context, since, until time.Time) (*timeline.RequestStats, error) {
	rd := &summaryRead{s: s, out: &timeline.RequestStats{}, used: map[int64]bool{}}
	rd.secs, rd.minutes = window("sec", since, until), window("minute", since, until)
	// The three tables are read at once: the shards sum one while this
	// process scans another.
	reads := []func(context.Context) error{rd.seconds, rd.stats, rd.clients}
	errs := make([]error, len(reads))
	var wg sync.WaitGroup
	for i, read := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = read(ctx)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("request summary: %w", err)
	}
	if err := rd.classes(ctx); err != nil {
		return nil, fmt.Errorf("request summary: %w", err)
	}
	return rd.out, nil
}

// window is the WHERE condition of a read of [since, until) on column col
// (sec, or a minute's start), as rollup.Window bounds it.
func window(col string, since, until time.Time) string {
	lo, hi := rollup.Window(since, until)
	cond := "1"
	if !since.IsZero() {
		cond += fmt.Sprintf(" AND %s >= %d", col, lo)
	}
	if !until.IsZero() {
		cond += fmt.Sprintf(" AND %s < %d", col, hi)
	}
	return cond
}

// summaryRead is one read of the rollup: its rows and the classes they
// refer to.
type summaryRead struct {
	s             *Store
	secs, minutes string // the window's conditions
	out           *timeline.RequestStats
	mu            sync.Mutex // guards used: the reads run at once
	used          map[int64]bool
}

// use marks a class as referred to.
func (rd *summaryRead) use(class int64) {
	rd.mu.Lock()
	rd.used[class] = true
	rd.mu.Unlock()
}

// perShard is the context of a query whose GROUP BY keys hold the
// Distributed table's shard key (statShard, or req_second's class and
// second): every group lives on one shard, so each shard's groups are
// final, HAVING included, and the initiator need not merge them. It takes
// the merge of 1.4 M aggregate states (req_stat) off one thread: on the
// 10 M-line benchmark log, 4.5 s to 2.4 s, the same rows; req_second 2.4
// s to 1.5 s.
func perShard(ctx context.Context) context.Context {
	return ch.Context(ctx, ch.WithSettings(ch.Settings{"distributed_group_by_no_merge": 1}))
}

// query runs q and scans each row with scan.
func (rd *summaryRead) query(ctx context.Context, q string, scan func(driver.Rows) error) error {
	rows, err := rd.s.conn.Query(ctx, q)
	if err != nil {
		return rd.s.shardErr(ctx, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return rd.s.shardErr(ctx, err)
	}
	return nil
}

func (rd *summaryRead) seconds(ctx context.Context) error {
	// FINAL sums a cell's rows (one per commit that counted it) by
	// merging the parts in key order, where a GROUP BY would hash every
	// cell: on the 10 M-line benchmark log, 0.4 s of the servers' CPU
	// against 2.0 s, the same rows; on one shard's cells spread over 40
	// unmerged parts, 0.3 s against 0.7 s. Only the window (sec, a key
	// column) is a condition in SQL: a condition on n could be applied
	// before the merge. A cell whose requests were all taken back sums to
	// nothing and is dropped here, as the SQLite store deletes it.
	//
	// Sorted here, not by the server: a day holds millions of cells, and
	// 18.16 sorted 1.9 M of them in 0.9 s of the read's 2.2 s.
	var got secondRows
	err := rd.query(ctx, `SELECT class, sec, n FROM req_second FINAL WHERE `+rd.secs,
		func(rows driver.Rows) error {
			var r timeline.RequestSecond
			if err := rows.Scan(&r.Class, &r.Sec, &r.Count); err != nil {
				return err
			}
			if r.Count > 0 {
				got.add(r)
			}
			return nil
		})
	if err != nil {
		return err
	}
	rd.out.Seconds = got.sorted()
	for class := range got.perClass {
		rd.use(class)
	}
	return nil
}

// secondRows gathers the rows of req_second as they come, in blocks that
// are never copied, and counts them by class.
type secondRows struct {
	blocks   [][]timeline.RequestSecond
	perClass map[int64]int
	n        int
}

// secondBlock is the rows of one block: 1.5 MiB.
const secondBlock = 1 << 16

func (g *secondRows) add(r timeline.RequestSecond) {
	if len(g.blocks) == 0 || len(g.blocks[len(g.blocks)-1]) == secondBlock {
		g.blocks = append(g.blocks, make([]timeline.RequestSecond, 0, secondBlock))
		if g.perClass == nil {
			g.perClass = map[int64]int{}
		}
	}
	last := &g.blocks[len(g.blocks)-1]
	*last = append(*last, r)
	g.perClass[r.Class]++
	g.n++
}

// sorted returns the rows in the order of class and second, as the SQLite
// store gives them: placed by class into one slice of the right size (the
// classes are few), then each class sorted by second. Each (class, second)
// comes once, from the one shard that holds it. On the 10 M-line
// benchmark log's 1.9 M rows this takes a fraction of what appending to
// one slice and sorting it by both keys took (about 0.9 s of CPU).
func (g *secondRows) sorted() []timeline.RequestSecond {
	if g.n == 0 {
		return nil
	}
	classes := slices.Sorted(maps.Keys(g.perClass))
	at := make(map[int64]int, len(classes))
	off := 0
	for _, c := range classes {
		at[c] = off
		off += g.perClass[c]
	}
	out := make([]timeline.RequestSecond, g.n)
	for _, b := range g.blocks {
		for _, r := range b {
			out[at[r.Class]] = r
			at[r.Class]++
		}
	}
	start := 0
	for _, c := range classes {
		end := start + g.perClass[c]
		slices.SortFunc(out[start:end], func(a, b timeline.RequestSecond) int { return cmp.Compare(a.Sec, b.Sec) })
		start = end
	}
	return out
}

// stats folds the window's per-minute cells by class, code and bucket.
// A life of a cell (epoch) that a commit emptied holds no request, but its
// maxima may be those of requests taken back; the SQLite store deletes
// such a row. Only the cells in req_stat_epoch were ever emptied (a commit
// that empties one starts its next epoch there), so those few are read
// life by life, keeping the lives that hold requests, and every other cell
// in one aggregation by class, code and bucket, which need not group the
// window's million minute cells: on the 10 M-line benchmark log, 1.85 s
// of the servers' time to 0.6 s, the same rows. (A commit cut short after
// it emptied a cell and before it wrote the cell's epoch leaves that cell
// unlisted, and the maxima taken back count: a commit is not a
// transaction here, SCHEMA.md.)
func (rd *summaryRead) stats(ctx context.Context) error {
	epochs, err := rd.s.epochs(ctx)
	if err != nil {
		return err
	}
	cells := slices.Collect(maps.Keys(epochs))
	folded := map[statKey]*foldedStat{}
	switch {
	case len(cells) > maxListedCells:
		// Too many to list in a query: every cell life by life.
		err = rd.foldStats(ctx, true, "1", folded)
	case len(cells) == 0:
		err = rd.foldStats(ctx, false, "1", folded)
	default:
		list := tuples(cells)
		if err = rd.foldStats(ctx, false, "(minute, class, code, bucket) NOT IN ("+list+")", folded); err == nil {
			err = rd.foldStats(ctx, true, "(minute, class, code, bucket) IN ("+list+")", folded)
		}
	}
	if err != nil {
		return err
	}
	for _, f := range folded {
		rd.use(f.Class)
		f.LatencySumNs = rollup.JoinSum(f.hi, f.lo)
		rd.out.Stats = append(rd.out.Stats, f.RequestStat)
	}
	slices.SortFunc(rd.out.Stats, func(a, b timeline.RequestStat) int {
		return cmp.Or(cmp.Compare(a.Minute, b.Minute), cmp.Compare(a.Class, b.Class), cmp.Compare(a.Code, b.Code),
			cmp.Compare(a.LatencyBucket, b.LatencyBucket))
	})
	return nil
}

// maxListedCells bounds the emptied cells a read lists in its query text
// (about 30 characters each); a variable for the tests.
var maxListedCells = 4096

// statKey is a stat of the summary: a class, code and latency bucket (and
// its minute, when folded per minute; else 0).
type statKey struct {
	minute       int64
	class        int64
	code, bucket int32
}

// foldedStat is a stat being folded, its latency sum in halves until the
// end (rollup.JoinSum saturates; a sum of joined parts could wrap).
type foldedStat struct {
	timeline.RequestStat
	hi, lo int64
}

// foldStats folds the cells of the window where cond holds into folded:
// byLife sums each life of a cell apart and keeps those that hold
// requests (grouped on the shards, which hold each cell whole); otherwise
// every life counts.
func (rd *summaryRead) foldStats(ctx context.Context, byLife bool, cond string, folded map[statKey]*foldedStat) error {
	group := "class, code, bucket"
	if byLife {
		ctx, group = perShard(ctx), "minute, class, code, bucket, epoch"
	}
	return rd.query(ctx, `SELECT toInt64(0), class, code, bucket, sumMerge(sum_n) AS cnt, sumMerge(sum_etcd),
			sumMerge(sum_unpaged), sumMerge(sum_lat_hi), sumMerge(sum_lat_lo), maxMerge(max_lat), maxMerge(max_apf)
		FROM req_stat WHERE `+rd.minutes+` AND `+cond+` GROUP BY `+group+` HAVING cnt > 0`,
		func(rows driver.Rows) error {
			var (
				k                        statKey
				n, etcd, unpaged, hi, lo int64
				latMax, apfMax           int64
			)
			if err := rows.Scan(&k.minute, &k.class, &k.code, &k.bucket, &n, &etcd, &unpaged, &hi, &lo, &latMax, &apfMax); err != nil {
				return err
			}
			r := folded[k]
			if r == nil {
				r = &foldedStat{RequestStat: timeline.RequestStat{Minute: k.minute, Class: k.class, Code: int(k.code),
					LatencyBucket: int(k.bucket), LatencyMaxNs: latMax, APFQueueWaitMaxNs: apfMax}}
				folded[k] = r
			}
			r.Count += n
			r.EtcdLists += etcd
			r.UnpagedLists += unpaged
			r.hi += hi
			r.lo += lo
			r.LatencyMaxNs = max(r.LatencyMaxNs, latMax)
			r.APFQueueWaitMaxNs = max(r.APFQueueWaitMaxNs, apfMax)
			return nil
		})
}

// epochs reads the current epoch of every cell a commit ever emptied.
func (s *Store) epochs(ctx context.Context) (map[cell]int64, error) {
	out := map[cell]int64{}
	err := s.queryCells(ctx, "SELECT minute, class, code, bucket, max(epoch) FROM req_stat_epoch GROUP BY minute, class, code, bucket",
		func(c cell, epoch int64) { out[c] = epoch })
	if err != nil {
		return nil, fmt.Errorf("read the rollup's epochs: %w", err)
	}
	return out, nil
}

// tuples writes cells as a list of (minute, class, code, bucket) tuples.
func tuples(cells []cell) string {
	var b strings.Builder
	for i, c := range cells {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "(%d,%d,%d,%d)", c.minute, c.class, c.code, c.bucket)
	}
	return b.String()
}

func (rd *summaryRead) clients(ctx context.Context) error {
	return rd.query(ctx, `SELECT class, min(minute), user, sum(n) AS cnt, max(minute) FROM req_client
		WHERE `+rd.minutes+` GROUP BY class, user HAVING cnt > 0 ORDER BY class, user`, func(rows driver.Rows) error {
		var r timeline.RequestClient
		if err := rows.Scan(&r.Class, &r.Minute, &r.User, &r.Count, &r.LastMinute); err != nil {
			return err
		}
		rd.use(r.Class)
		rd.out.Clients = append(rd.out.Clients, r)
		return nil
	})
}

// classes keeps the classes the rows refer to.
func (rd *summaryRead) classes(ctx context.Context) error {
	all, err := rd.s.requestClasses(ctx)
	if err != nil {
		return err
	}
	for _, c := range all {
		if rd.used[c.ID] {
			rd.out.Classes = append(rd.out.Classes, c)
		}
	}
	return nil
}
