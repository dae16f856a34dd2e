package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"maps"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/timeline"
)

// Series and samples (migration 0012, SCHEMA.md "Series and samples").

// seriesWriter is a batch's state for samples: what it holds until it
// writes them, its statements, the series_str ids it interned (forgotten
// on rollback), and the corrections to the run's tallies its writes
// learned.
type seriesWriter struct {
	pending   map[int64]pendingSeries // series to write, with their samples' span
	rows      []sampleRow             // samples to write
	added     []int64                 // series rows this batch inserted
	putSample *sql.Stmt               // sampleRows rows
	putSeries *sql.Stmt               // seriesRows rows
	putSpans  *sql.Stmt               // seriesRows spans
	getStr    *sql.Stmt
	putStr    *sql.Stmt
	newStrs   []string
	args      []any // putSamples' parameters, reused
	// records are the samples reported new that were held, by run:
	// subtracted from its tallies at commit.
	records map[int64]int64
	// run is the run samples are added for (0: the batch's), and runs
	// those of ForRun, whose progress Commit writes too.
	run  int64
	runs map[int64]*timeline.IngestRun
}

// pendingSeries is a series a batch holds samples of, and their span.
type pendingSeries struct {
	s      *timeline.Series
	lo, hi int64
	run    int64 // the run that first brought it in this batch
}

// sampleRow is one sample a batch holds.
type sampleRow struct {
	series, t int64
	v         float64
	run       int64
}

// Statements carry many rows: one statement per row spends more in
// database/sql and cgo than in SQLite. A batch writes what it holds every
// flushRows samples and at commit, so a series' row is written once a
// flush, however many of its samples came (a /metrics snapshot brings one
// sample of each of thousands of series), and samples of many series share
// a statement. The samples of a flush are written in (series, time) order:
// a snapshot's samples fall one to a series, all over the table, and a
// large flush (of many snapshots: commit.Carrier) turns them into runs of
// neighbours (1 M samples of 100 snapshots, the store alone: 6.2 s in
// 8,192-sample flushes, 2.2 s in one). A held sample takes 32 bytes: 32 MiB
// at most, the memory handed from batch to batch (spareRows).
const (
	sampleRows = 256     // samples an INSERT carries (4 parameters each)
	seriesRows = 128     // series an INSERT carries (6 parameters each)
	flushRows  = 1 << 20 // samples a batch holds before it writes them
)

const (
	insertSampleHead = "INSERT INTO sample (series, time_ns, value, run_id) VALUES "
	insertSampleTail = " ON CONFLICT DO NOTHING"
	insertSeriesHead = "INSERT INTO series (id, metric, labels, first_ns, last_ns, run_id) VALUES "
	insertSeriesTail = ` ON CONFLICT (id) DO UPDATE SET first_ns = min(first_ns, excluded.first_ns),
		last_ns = max(last_ns, excluded.last_ns) WHERE excluded.first_ns < first_ns OR excluded.last_ns > last_ns`
	// A series held already needs only its span widened: no labels to
	// encode, no insert to try first.
	updateSpansHead = "UPDATE series SET first_ns = min(first_ns, v.column2), last_ns = max(last_ns, v.column3) FROM (VALUES "
	updateSpansTail = ") AS v WHERE series.id = v.column1 AND (v.column2 < series.first_ns OR v.column3 > series.last_ns)"
)

// insertRows is head, n groups of k parameters, and tail.
func insertRows(head string, n, k int, tail string) string {
	group := "(" + strings.TrimSuffix(strings.Repeat("?,", k), ",") + "),"
	return head + strings.TrimSuffix(strings.Repeat(group, n), ",") + tail
}

// AddSamples takes s and its samples into the batch, which writes them
// with the next flush (every flushRows samples, and at commit). It reports
// them all new; Commit corrects the run's tallies for those held already.
func (b *batch) AddSamples(ctx context.Context, s *timeline.Series, samples []timeline.Sample) (int, error) {
	if len(samples) == 0 {
		return 0, nil
	}
	lo, hi, err := sampleSpan(samples)
	if err != nil {
		return 0, fmt.Errorf("add samples of %s: %w", s, err)
	}
	w := &b.series
	if w.pending == nil {
		w.pending = map[int64]pendingSeries{}
		w.rows = b.s.takeRows()
	}
	run := cmp.Or(w.run, b.run)
	p, ok := w.pending[s.ID]
	if ok {
		lo, hi, run = min(lo, p.lo), max(hi, p.hi), p.run
	}
	w.pending[s.ID] = pendingSeries{s, lo, hi, run}
	for _, sm := range samples {
		w.rows = append(w.rows, sampleRow{s.ID, ns(sm.Time), sm.Value, cmp.Or(w.run, b.run)})
	}
	if len(w.rows) >= flushRows {
		if err := b.flushSamples(context.WithoutCancel(ctx)); err != nil {
			return 0, fmt.Errorf("add samples: %w", err)
		}
	}
	return len(samples), nil
}

// sampleSpan is the first and last time of samples, checked.
func sampleSpan(samples []timeline.Sample) (lo, hi int64, err error) {
	lo, hi = math.MaxInt64, math.MinInt64
	for _, sm := range samples {
		if err := checkTime("time", sm.Time); err != nil {
			return 0, 0, err
		}
		t := ns(sm.Time)
		lo, hi = min(lo, t), max(hi, t)
	}
	return lo, hi, nil
}

// flushSamples writes the series and samples the batch holds: each
// series' row once, new or with its span widened, then the samples in
// (series, time) order, the first given of a (series, time) kept. Samples
// held already are counted in the corrections of their runs.
func (b *batch) flushSamples(ctx context.Context) error {
	w := &b.series
	held, fresh := b.s.heldSeries().split(slices.Sorted(maps.Keys(w.pending)))
	// Series without a row until now have no samples: theirs cannot
	// clash with a held one.
	absent, err := b.absentSeries(ctx, fresh)
	if err != nil {
		return fmt.Errorf("add samples: %w", err)
	}
	for chunk := range slices.Chunk(fresh, seriesRows) {
		if err := b.putSeries(ctx, chunk); err != nil {
			return err
		}
	}
	for chunk := range slices.Chunk(held, seriesRows) {
		if err := b.putSpans(ctx, chunk); err != nil {
			return err
		}
	}
	w.added = append(w.added, fresh...)
	slices.SortStableFunc(w.rows, func(x, y sampleRow) int {
		return cmp.Or(cmp.Compare(x.series, y.series), cmp.Compare(x.t, y.t))
	})
	if w.records == nil {
		w.records = map[int64]int64{}
	}
	rows := w.dedupe(w.rows)
	for chunk := range slices.Chunk(rows, sampleRows) {
		if err := b.putSamples(ctx, chunk, absent); err != nil {
			return fmt.Errorf("add samples: %w", err)
		}
	}
	clear(w.pending)
	w.rows = w.rows[:0]
	return nil
}

// dedupe drops from rows, sorted by (series, time) with the order given
// kept among equals, each sample of a (series, time) after the first, and
// counts it held for its run.
func (w *seriesWriter) dedupe(rows []sampleRow) []sampleRow {
	out := rows[:0]
	for i, r := range rows {
		if i > 0 && len(out) > 0 && r.series == out[len(out)-1].series && r.t == out[len(out)-1].t {
			w.records[r.run]--
			continue
		}
		out = append(out, r)
	}
	return out
}

// execRows runs the INSERT or UPDATE of len(args)/k rows of k parameters
// each: the statement of full rows prepared once a transaction, a shorter
// one (the end of a flush) for its one use.
func (b *batch) execRows(ctx context.Context, full **sql.Stmt, rows, k int, head, tail string, args []any) (sql.Result, error) {
	n := len(args) / k
	if n == rows {
		st, err := b.stmt(ctx, full, insertRows(head, rows, k, tail))
		if err != nil {
			return nil, err
		}
		return st.ExecContext(ctx, args...)
	}
	st, err := b.tx.PrepareContext(ctx, insertRows(head, n, k, tail))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return st.ExecContext(ctx, args...)
}

// putSamples inserts up to sampleRows samples, of distinct (series,
// time), and counts those held already in the corrections of their runs.
// A statement tells only how many of its rows were new: when its rows are
// of several runs and of series that may hold samples (not in absent), it
// first asks which are held.
func (b *batch) putSamples(ctx context.Context, rows []sampleRow, absent map[int64]bool) error {
	w := &b.series
	var held map[sampleKey]bool
	if !oneRun(rows) && !allAbsent(rows, absent) {
		var err error
		if held, err = b.heldSamples(ctx, rows); err != nil {
			return err
		}
		for _, r := range rows {
			if held[sampleKey{r.series, r.t}] {
				w.records[r.run]--
			}
		}
	}
	w.args = w.args[:0]
	for _, r := range rows {
		var v any = r.v
		if math.IsNaN(r.v) {
			v = nil
		}
		w.args = append(w.args, r.series, r.t, v, r.run)
	}
	res, err := b.execRows(ctx, &w.putSample, sampleRows, 4, insertSampleHead, insertSampleTail, w.args)
	if err != nil {
		return err
	}
	added, err := res.RowsAffected()
	if err != nil {
		return err
	}
	switch {
	case oneRun(rows):
		w.records[rows[0].run] -= int64(len(rows)) - added
	case int(added) != len(rows)-len(held):
		return fmt.Errorf("samples of series %d to %d: %d of %d written, %d held before: the store changed under its writer",
			rows[0].series, rows[len(rows)-1].series, added, len(rows), len(held))
	}
	return nil
}

// sampleKey is a sample's place: its series and time.
type sampleKey struct{ series, t int64 }

func oneRun(rows []sampleRow) bool {
	for _, r := range rows {
		if r.run != rows[0].run {
			return false
		}
	}
	return true
}

func allAbsent(rows []sampleRow, absent map[int64]bool) bool {
	for i, r := range rows {
		if (i == 0 || r.series != rows[i-1].series) && !absent[r.series] {
			return false
		}
	}
	return true
}

// heldSamples is which of rows' places hold a sample already.
func (b *batch) heldSamples(ctx context.Context, rows []sampleRow) (map[sampleKey]bool, error) {
	args := make([]any, 0, 2*len(rows))
	for _, r := range rows {
		args = append(args, r.series, r.t)
	}
	q := insertRows("SELECT series, time_ns FROM sample WHERE (series, time_ns) IN (VALUES ", len(rows), 2, ")")
	res, err := b.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	held := map[sampleKey]bool{}
	for res.Next() {
		var k sampleKey
		if err := res.Scan(&k.series, &k.t); err != nil {
			return nil, err
		}
		held[k] = true
	}
	return held, res.Err()
}

// absentSeries is which of ids, sorted, have no row in the series table.
func (b *batch) absentSeries(ctx context.Context, ids []int64) (map[int64]bool, error) {
	absent := make(map[int64]bool, len(ids))
	for _, id := range ids {
		absent[id] = true
	}
	for chunk := range slices.Chunk(ids, seriesRows) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		q := "SELECT id FROM series WHERE id IN (" + strings.TrimSuffix(strings.Repeat("?,", len(chunk)), ",") + ")"
		res, err := b.tx.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		for res.Next() {
			var id int64
			if err := res.Scan(&id); err != nil {
				res.Close()
				return nil, err
			}
			delete(absent, id)
		}
		if err := errors.Join(res.Err(), res.Close()); err != nil {
			return nil, err
		}
	}
	return absent, nil
}

// ForRun makes the samples added next belong to run, another run of the
// same command (a file of one ingest metrics): the batch carries the
// samples of many files in one transaction, and Commit writes run's
// progress, corrected, with that of the run it was given.
func (b *batch) ForRun(run *timeline.IngestRun) {
	w := &b.series
	if w.runs == nil {
		w.runs = map[int64]*timeline.IngestRun{}
	}
	w.runs[run.ID] = run
	w.run = run.ID
}

// BeginRun inserts run in the batch's transaction (the store's BeginRun
// would wait for it to end) and makes the samples added next belong to it
// (ForRun). A rollback takes the run back with its samples.
func (b *batch) BeginRun(ctx context.Context, run *timeline.IngestRun) error {
	if run.Status == "" {
		run.Status = timeline.RunRunning
	}
	if run.Started.IsZero() {
		run.Started = time.Now().UTC()
	}
	err := insertRun(run, func(q string, args ...any) (sql.Result, error) {
		return b.tx.ExecContext(context.WithoutCancel(ctx), q, args...)
	})
	if err != nil {
		return err
	}
	b.ForRun(run)
	return nil
}

// commitRuns applies the corrections of the samples written to the
// tallies of their runs, and writes the progress of the runs of ForRun
// other than progress (which Commit writes).
func (b *batch) commitRuns(ctx context.Context, progress *timeline.IngestRun) error {
	w := &b.series
	for id, held := range w.records {
		r := w.runs[id]
		if r == nil {
			r = progress // samples of the batch's own run
		}
		if r != nil {
			r.Records += held
			r.Duplicates -= held
		}
	}
	clear(w.records)
	for id, r := range w.runs {
		if progress != nil && id == progress.ID {
			continue
		}
		if err := updateRun(ctx, b.tx, r); err != nil {
			return err
		}
	}
	clear(w.runs)
	w.run = 0
	return nil
}

// putSeries writes the rows of up to seriesRows pending series: new, or
// the span of the one held widened.
func (b *batch) putSeries(ctx context.Context, ids []int64) error {
	args := make([]any, 0, 6*len(ids))
	for _, id := range ids {
		p := b.series.pending[id]
		metric, blob, err := b.encodeSeries(ctx, p.s)
		if err != nil {
			return fmt.Errorf("add series %s: %w", p.s, err)
		}
		args = append(args, id, metric, blob, p.lo, p.hi, p.run)
	}
	if _, err := b.execRows(ctx, &b.series.putSeries, seriesRows, 6, insertSeriesHead, insertSeriesTail, args); err != nil {
		return fmt.Errorf("add series: %w", err)
	}
	return nil
}

// putSpans widens the spans of up to seriesRows series held.
func (b *batch) putSpans(ctx context.Context, ids []int64) error {
	args := make([]any, 0, 3*len(ids))
	for _, id := range ids {
		p := b.series.pending[id]
		args = append(args, id, p.lo, p.hi)
	}
	if _, err := b.execRows(ctx, &b.series.putSpans, seriesRows, 3, updateSpansHead, updateSpansTail, args); err != nil {
		return fmt.Errorf("widen series: %w", err)
	}
	return nil
}

// encodeSeries is s's metric as a series_str id and its labels as the
// BLOB of varint id pairs the series table holds.
func (b *batch) encodeSeries(ctx context.Context, s *timeline.Series) (int64, []byte, error) {
	metric, err := b.seriesStr(ctx, s.Metric)
	if err != nil {
		return 0, nil, err
	}
	blob := []byte{}
	for _, l := range s.Labels {
		n, err := b.seriesStr(ctx, l.Name)
		if err != nil {
			return 0, nil, err
		}
		v, err := b.seriesStr(ctx, l.Value)
		if err != nil {
			return 0, nil, err
		}
		blob = binary.AppendUvarint(binary.AppendUvarint(blob, uint64(n)), uint64(v))
	}
	return metric, blob, nil
}

// seriesStr interns str in series_str.
func (b *batch) seriesStr(ctx context.Context, str string) (int64, error) {
	c := b.s.seriesStrs()
	if id, ok := c.get(str); ok {
		return id, nil
	}
	get, err := b.stmt(ctx, &b.series.getStr, `SELECT id FROM series_str WHERE s = ?`)
	if err != nil {
		return 0, err
	}
	var id int64
	err = get.QueryRowContext(ctx, str).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		put, perr := b.stmt(ctx, &b.series.putStr, `INSERT INTO series_str (s) VALUES (?)`)
		if perr != nil {
			return 0, perr
		}
		res, perr := put.ExecContext(ctx, str)
		if perr != nil {
			return 0, perr
		}
		id, err = res.LastInsertId()
		b.series.newStrs = append(b.series.newStrs, str)
	}
	if err != nil {
		return 0, fmt.Errorf("intern %q: %w", str, err)
	}
	c.put(str, id)
	return id, nil
}

// forgetSeries drops what an uncommitted transaction interned.
func (b *batch) forgetSeries() {
	c := b.s.seriesStrs()
	for _, str := range b.series.newStrs {
		c.del(str)
	}
	b.series.newStrs = nil
	b.s.spareRows(b.series.rows)
	b.series.rows = nil
}

// seriesStrs is the writer's series_str cache.
func (s *Store) seriesStrs() *strCache {
	s.seriesDict.once.Do(func() { s.seriesDict.w = &strCache{m: map[string]int64{}} })
	return s.seriesDict.w
}

// seriesDictionary caches series_str both ways: the writer's string ->
// id, and the readers' id -> string, loaded by scans of the rows added
// since the last (rows are never rewritten), with each string's rank in
// sorted order, by which the series are sorted.
type seriesDictionary struct {
	once     sync.Once
	w        *strCache
	heldOnce sync.Once
	held     *seriesSet // series rows committed (flushSamples)
	mu       sync.Mutex
	byID     []string // index: id; ids are dense from 1
	loaded   int64    // the highest id loaded
	rank     []uint32 // index: id; the string's place in byte order; for len(byID) ids
	// spare is the memory of a batch's held samples, handed from one
	// batch to the next (spareRows): a long ingest commits every second,
	// and growing the next batch's anew cost it a sixth of its time.
	spare struct {
		sync.Mutex
		rows []sampleRow
	}
}

// takeRows is the spare memory for a batch's samples, empty, or nil.
func (s *Store) takeRows() []sampleRow {
	sp := &s.seriesDict.spare
	sp.Lock()
	defer sp.Unlock()
	rows := sp.rows
	sp.rows = nil
	return rows[:0]
}

// spareRows keeps the memory of a batch's samples, written or dropped, for
// the next batch.
func (s *Store) spareRows(rows []sampleRow) {
	if cap(rows) == 0 {
		return
	}
	sp := &s.seriesDict.spare
	sp.Lock()
	defer sp.Unlock()
	if cap(rows) > cap(sp.rows) {
		sp.rows = rows[:0]
	}
}

// dict returns the id -> string and id -> rank tables, brought up to date
// with series_str.
func (s *Store) dict(ctx context.Context) ([]string, []uint32, error) {
	d := &s.seriesDict
	d.mu.Lock()
	defer d.mu.Unlock()
	rows, err := s.db.QueryContext(ctx, "SELECT id, s FROM series_str WHERE id > ? ORDER BY id", d.loaded)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var str string
		if err := rows.Scan(&id, &str); err != nil {
			return nil, nil, err
		}
		for int64(len(d.byID)) <= id {
			d.byID = append(d.byID, "")
		}
		d.byID[id] = str
		d.loaded = id
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	if len(d.rank) != len(d.byID) {
		d.rank = ranks(d.byID)
	}
	return d.byID, d.rank, nil
}

// ranks numbers the strings of dict in byte order (strings.Compare), so
// that series compare by their ids' ranks as CompareSeries compares them
// by their strings, without reading the strings again.
func ranks(dict []string) []uint32 {
	ids := make([]uint32, len(dict))
	for i := range ids {
		ids[i] = uint32(i)
	}
	slices.SortFunc(ids, func(a, b uint32) int { return strings.Compare(dict[a], dict[b]) })
	rank := make([]uint32, len(dict))
	for r, id := range ids {
		rank[id] = uint32(r)
	}
	return rank
}

// Series yields the series q selects, by metric then labels.
func (s *Store) Series(ctx context.Context, q timeline.SeriesQuery) iter.Seq2[*timeline.Series, error] {
	return timeline.SeriesOf(s.series(ctx, q))
}

// seriesRow is a series read, with its sort key: the ranks (plus one) of
// its metric, then of each label's name and value, packed into words
// most significant first, zero-padded, so that keys compare as words.
type seriesRow struct {
	k0  uint64   // key[0], compared without a look into key
	key []uint64 // the rest
	id  int64
	s   *timeline.Series
}

func compareRows(a, b seriesRow) int {
	if a.k0 != b.k0 {
		return cmp.Compare(a.k0, b.k0)
	}
	if c := slices.Compare(a.key, b.key); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

func (s *Store) series(ctx context.Context, q timeline.SeriesQuery) ([]*timeline.Series, error) {
	dict, rank, err := s.dict(ctx)
	if err != nil {
		return nil, err
	}
	query, args := seriesSQL(q, dict)
	if query == "" {
		return nil, nil // a metric never seen
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var read []seriesRow
	var blob []byte
	a := seriesArena{width: uint(bits.Len(uint(len(dict))))}
	for rows.Next() {
		var id, metric int64
		if err := rows.Scan(&id, &metric, &blob); err != nil {
			return nil, err
		}
		sr, key, err := a.decode(id, metric, blob, dict, rank)
		if err != nil {
			return nil, err
		}
		if q.Match(sr) {
			read = append(read, seriesRow{key[0], key[1:], id, sr})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// The order of timeline.CompareSeries: ranks compare as the strings
	// do, and a key that ends first (fewer labels) is padded with zeros,
	// below every rank plus one.
	slices.SortFunc(read, compareRows)
	out := make([]*timeline.Series, len(read))
	for i, r := range read {
		out[i] = r.s
	}
	return out, nil
}

// seriesSQL selects the series of q's metric with samples in its span;
// the matchers are judged in Go (SeriesQuery.Match). It returns "" for a
// metric the dictionary does not hold.
func seriesSQL(q timeline.SeriesQuery, dict []string) (string, []any) {
	var where []string
	lo, hi := timeline.Span{Since: q.Since, Until: q.Until}.NS()
	args := []any{lo, hi}
	if !q.Since.IsZero() || !q.Until.IsZero() {
		where = append(where, spanCond(1, 2))
	}
	if q.Metric != "" {
		id := slices.Index(dict, q.Metric)
		if id <= 0 {
			return "", nil
		}
		where, args = append(where, "metric = ?3"), append(args, id)
	}
	query := "SELECT id, metric, labels FROM series"
	if len(where) == 0 {
		return query, nil
	}
	return query + " WHERE " + strings.Join(where, " AND "), args
}

// spanCond is true for a series with a sample in [?lo, ?hi), the
// numbered parameters. first_ns and last_ns are sample times: a series
// whose first or last sample lies in the span needs no look into sample.
func spanCond(lo, hi int) string {
	return fmt.Sprintf(`(last_ns >= ?%[1]d AND first_ns < ?%[2]d AND (first_ns >= ?%[1]d OR last_ns < ?%[2]d OR
		EXISTS (SELECT 1 FROM sample WHERE series = series.id AND time_ns >= ?%[1]d AND time_ns < ?%[2]d)))`, lo, hi)
}

// seriesArena hands out series, labels and sort keys from large blocks: a
// read of a million series makes a few hundred allocations, not millions.
type seriesArena struct {
	width  uint // bits of a rank plus one
	series []timeline.Series
	labels []timeline.Label
	keys   []uint64
	ranks  []uint32 // the key being packed
}

const arenaBlock = 4096

// takeLabels returns n labels from the arena's blocks.
func (a *seriesArena) takeLabels(n int) timeline.Labels {
	if cap(a.labels)-len(a.labels) < n {
		a.labels = make([]timeline.Label, 0, max(n, 4*arenaBlock))
	}
	l := len(a.labels)
	a.labels = a.labels[:l+n]
	return a.labels[l : l+n : l+n]
}

// pack packs a.ranks (each plus one, width bits) into a key from the
// arena's blocks.
func (a *seriesArena) pack() []uint64 {
	n := (len(a.ranks)*int(a.width) + 63) / 64
	if cap(a.keys)-len(a.keys) < n {
		a.keys = make([]uint64, 0, max(n, 2*arenaBlock))
	}
	k := len(a.keys)
	a.keys = a.keys[:k+n]
	key := a.keys[k : k+n : k+n]
	clear(key)
	pos := uint(0) // bits written
	for _, r := range a.ranks {
		v := uint64(r) + 1
		for left := a.width; left > 0; {
			w, room := pos/64, 64-pos%64
			take := min(left, room)
			chunk := (v >> (left - take)) & (1<<take - 1)
			key[w] |= chunk << (room - take)
			left -= take
			pos += take
		}
	}
	return key
}

// decode reads a series row's labels blob through the dictionary, and
// its sort key through the ranks.
func (a *seriesArena) decode(id, metric int64, blob []byte, dict []string, rank []uint32) (*timeline.Series, []uint64, error) {
	str := func(x uint64) (string, bool) {
		if x == 0 || x >= uint64(len(dict)) {
			return "", false
		}
		return dict[x], true
	}
	m, ok := str(uint64(metric))
	if !ok {
		return nil, nil, fmt.Errorf("series %d: no string %d", id, metric)
	}
	a.ranks = append(a.ranks[:0], rank[metric])
	for rest := blob; len(rest) > 0; {
		nm, k := binary.Uvarint(rest)
		if k <= 0 {
			return nil, nil, fmt.Errorf("series %d: bad labels", id)
		}
		v, k2 := binary.Uvarint(rest[k:])
		if k2 <= 0 {
			return nil, nil, fmt.Errorf("series %d: bad labels", id)
		}
		rest = rest[k+k2:]
		for _, x := range []uint64{nm, v} {
			if _, ok := str(x); !ok {
				return nil, nil, fmt.Errorf("series %d: no string %d", id, x)
			}
		}
		a.ranks = append(a.ranks, rank[nm], rank[v])
	}
	n := (len(a.ranks) - 1) / 2
	var labels timeline.Labels
	if n > 0 {
		labels = a.takeLabels(n)
		for rest, i := blob, 0; i < n; i++ {
			nm, k := binary.Uvarint(rest)
			v, k2 := binary.Uvarint(rest[k:])
			rest = rest[k+k2:]
			labels[i] = timeline.Label{Name: dict[nm], Value: dict[v]}
		}
	}
	if len(a.series) == cap(a.series) {
		a.series = make([]timeline.Series, 0, arenaBlock)
	}
	a.series = append(a.series, timeline.Series{ID: id, Metric: m, Labels: labels})
	return &a.series[len(a.series)-1], a.pack(), nil
}

// Samples yields the samples of the series in [since, until), by series
// in the order given, then time.
func (s *Store) Samples(ctx context.Context, series []int64, since, until time.Time) iter.Seq2[timeline.Sample, error] {
	return func(yield func(timeline.Sample, error) bool) {
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
		if !since.IsZero() {
			lo = boundNS(since)
		}
		if !until.IsZero() {
			hi = boundNS(until)
		}
		st, err := s.db.PrepareContext(ctx, "SELECT time_ns, value FROM sample WHERE series = ? AND time_ns >= ? AND time_ns < ? ORDER BY time_ns")
		if err != nil {
			yield(timeline.Sample{}, fmt.Errorf("read samples: %w", err))
			return
		}
		defer st.Close()
		for _, id := range series {
			if !s.samplesOf(ctx, st, id, lo, hi, yield) {
				return
			}
		}
	}
}

// samplesOf yields one series' samples; false: stop.
func (s *Store) samplesOf(ctx context.Context, st *sql.Stmt, id, lo, hi int64, yield func(timeline.Sample, error) bool) bool {
	rows, err := st.QueryContext(ctx, id, lo, hi)
	if err != nil {
		yield(timeline.Sample{}, fmt.Errorf("read samples of series %d: %w", id, err))
		return false
	}
	defer rows.Close()
	for rows.Next() {
		var t int64
		var v sql.NullFloat64
		if err := rows.Scan(&t, &v); err != nil {
			yield(timeline.Sample{}, fmt.Errorf("read samples of series %d: %w", id, err))
			return false
		}
		val := math.NaN()
		if v.Valid {
			val = v.Float64
		}
		if !yield(timeline.Sample{Series: id, Time: fromNS(t), Value: val}, nil) {
			return false
		}
	}
	if err := rows.Err(); err != nil {
		yield(timeline.Sample{}, fmt.Errorf("read samples of series %d: %w", id, err))
		return false
	}
	return true
}

// seriesSet is the ids of series rows committed, as far as this Store
// wrote or saw them: their flushes only widen spans. Rows are never
// deleted, so an id in it is held. It starts over past maxHeldSeries.
type seriesSet struct {
	mu sync.Mutex
	m  map[int64]struct{}
}

// maxHeldSeries bounds a seriesSet (some 40 MiB).
const maxHeldSeries = 1 << 20

// heldSeries is the Store's seriesSet.
func (s *Store) heldSeries() *seriesSet {
	s.seriesDict.heldOnce.Do(func() { s.seriesDict.held = &seriesSet{m: map[int64]struct{}{}} })
	return s.seriesDict.held
}

// split parts ids into those held and the others, in their order.
func (h *seriesSet) split(ids []int64) (held, fresh []int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range ids {
		if _, ok := h.m[id]; ok {
			held = append(held, id)
		} else {
			fresh = append(fresh, id)
		}
	}
	return held, fresh
}

// add records ids as committed.
func (h *seriesSet) add(ids []int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.m)+len(ids) > maxHeldSeries {
		clear(h.m)
	}
	for _, id := range ids {
		h.m[id] = struct{}{}
	}
}
