package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/redact"
	"github.com/faultline/faultline/timeline/rollup"
)

const noTime = timeline.NoTimeNS

func ns(t time.Time) int64      { return timeline.UnixNS(t) }
func fromNS(n int64) time.Time  { return timeline.FromUnixNS(n) }
func boundNS(t time.Time) int64 { return timeline.BoundNS(t) }

// keyHash maps a natural key to the key column, as the SQLite store does.
func keyHash(key string) int64 { return timeline.KeyHash(key) }

// stamp is a strictly increasing wall-clock nanosecond count: the version
// column of rows that are rewritten (runs, cursors, bisect sessions).
func (s *Store) stamp() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := time.Now().UnixNano()
	if n <= s.lastStamp {
		n = s.lastStamp + 1
	}
	s.lastStamp = n
	return n
}

// BeginRun writes the run and sets run.ID: one more than the highest held.
// Ingest runs one writer at a time (as the SQLite store's lock enforces).
func (s *Store) BeginRun(ctx context.Context, run *timeline.IngestRun) error {
	if run.Status == "" {
		run.Status = timeline.RunRunning
	}
	if run.Started.IsZero() {
		run.Started = time.Now().UTC()
	}
	var max int64
	if err := s.conn.QueryRow(ctx, "SELECT toInt64(max(id)) FROM ingest_run").Scan(&max); err != nil {
		return fmt.Errorf("begin ingest run: %w", s.shardErr(ctx, err))
	}
	run.ID = max + 1
	if err := s.writeRun(ctx, run); err != nil {
		return fmt.Errorf("begin ingest run: %w", err)
	}
	if err := s.markSlowRun(ctx, run.ID); err != nil {
		return fmt.Errorf("begin ingest run: %w", err)
	}
	return nil
}

// FinishRun writes the run's final counts and status.
func (s *Store) FinishRun(ctx context.Context, run *timeline.IngestRun) error {
	if run.Finished.IsZero() {
		run.Finished = time.Now().UTC()
	}
	if err := s.writeRun(ctx, run); err != nil {
		return fmt.Errorf("finish ingest run %d: %w", run.ID, err)
	}
	if run.Status == timeline.RunDone && run.Records > 0 {
		// For the first reader (storedDigests); a cache, so a failure
		// costs that reader time, never the run.
		if err := s.storeAllDigests(ctx, run.Records); err != nil {
			s.log.Debug("clickhouse: record's digests not stored at the end of the run", "run", run.ID, "err", err)
		}
	}
	return nil
}

func (s *Store) writeRun(ctx context.Context, run *timeline.IngestRun) error {
	b, err := s.conn.PrepareBatch(ctx, insert("ingest_run"))
	if err != nil {
		return s.shardErr(ctx, err)
	}
	if err := b.Append(run.ID, string(run.Source), run.Path, run.Size, run.SHA256, ns(run.Started), ns(run.Finished),
		ns(run.First), ns(run.Last), run.Lines, run.Records, run.Merged, run.Duplicates, run.Conflicts, run.Versions,
		run.BadLines, string(run.Status), run.Error, s.stamp(), ns(run.Since), ns(run.Until), run.Outside); err != nil {
		return err
	}
	if err := b.Send(); err != nil {
		return s.shardErr(ctx, err)
	}
	return nil
}

// openKey is where a record with stages is held: its time and key.
type openKey struct {
	t   int64
	key int64
}

// row is one record row as it will be written.
type row struct {
	r     *timeline.Record // as redacted, its ID set
	key   int64
	dirty bool // to be written: new, or a stage joined
	// held says a version of the row is in the database already: the
	// next version written is marked a rewrite (see current), and
	// heldCopied that the failed requests' copy took that version (it
	// failed, or was itself a marked rewrite): the next is then a marked
	// rewrite, which the copy takes too (failedView).
	held, heldCopied bool
	// heldSlow says the version held was a slow request (slowTable): the
	// next version written, if not slow, is written there as no longer
	// slow.
	heldSlow bool
	// rq is the request's rollup class, once counted (rollup.go); nil
	// before, or for a record the rollup does not count.
	rq *rollup.Request
}

// rewrite is the rewrite column of the version of rw written next.
func (rw *row) rewrite() uint8 {
	switch {
	case rw.held && rw.heldCopied:
		return markedRewrite
	case rw.held:
		return plainRewrite
	}
	return 0
}

// copied reports whether the failed requests' copy takes the version of
// rw written next (failedView).
func (rw *row) copied() bool { return copiedRow(rw.r.Code, rw.rewrite()) }

// sameRequest reports whether a held record and an incoming one under the
// same key are one request (as the SQLite store judges it): the same verb,
// user and object, where an empty name agrees with any.
func sameRequest(h, in *timeline.Record) bool {
	a, b := &h.Object, &in.Object
	return h.Verb == in.Verb && h.User == in.User && a.Group == b.Group && a.Resource == b.Resource &&
		a.Subresource == b.Subresource && a.Namespace == b.Namespace && (a.Name == b.Name || a.Name == "" || b.Name == "")
}

// conflict is judge's outcome for a key held by another record: try the
// next key.
const conflict timeline.AddResult = -1

// finalStages end a request.
const finalStages = timeline.StageResponseComplete | timeline.StagePanic

// judge decides what r is to the row held under its key, and joins it into
// held when it is a further stage (Merged). It is the SQLite store's rule.
func judge(held *timeline.Record, r *timeline.Record) timeline.AddResult {
	old := held.Stages
	switch {
	case !sameRequest(held, r):
		return conflict
	case r.Stages == 0 && old == 0 && string(held.Extra) != string(r.Extra):
		return conflict
	case r.Stages == 0 || old&r.Stages != 0:
		if held.Code != r.Code && (r.Stages == 0 || r.Stages == latest(old)) {
			return conflict
		}
		return timeline.Duplicate
	}
	if r.Stages > old {
		held.Code, held.Latency, held.Message, held.Extra = r.Code, r.Latency, r.Message, r.Extra
	}
	held.Stages |= r.Stages
	return timeline.Merged
}

func latest(s timeline.Stage) timeline.Stage {
	for s&(s-1) != 0 {
		s &= s - 1
	}
	return s
}

// Batch opens a write batch. Records wait in memory until flushAt of them
// (or Commit), then are judged in order against the rows held and what
// changed is written.
func (s *Store) Batch(ctx context.Context, run int64) (timeline.Batch, error) {
	if err := s.recordMeta(ctx); err != nil {
		return nil, err
	}
	return &batch{s: s, run: run}, nil
}

// flushAt is how many records or versions a batch holds before it judges
// and writes them: a record holds its source line in memory (its strings
// point into it) until then, so 100,000 of them held 400 MB.
var flushAt = 20000 // a variable for the tests

// versionBytesAt is how many bytes of content the versions a batch holds
// may reach before a flush writes them. Below it, and below flushAt
// versions, they wait for the commit: a flush of records every 20,000
// lines wrote a part of about a hundred versions to each shard, and the
// servers merged each version about thirty times over (part_log, 10 M
// lines: 543 parts a shard), as the table grows unpartitioned.
var versionBytesAt = 16 << 20

type batch struct {
	s        *Store
	run      int64
	recs     []*timeline.Record
	versions []*timeline.ObjectVersion
	verBytes int              // the content of versions
	ranks    map[int64]uint64 // the versions of this batch, not written yet: key -> rank
	cursors  [][2]string
	samples  sampleBuf          // series.go
	delta    timeline.IngestRun // corrections to the run's tallies, learned by flushes

	// A flush's working state: the rows known by key, staged ones by time
	// and key, whole ones (no stages) by key alone.
	staged map[openKey]*row
	whole  map[int64]*row
	order  []*row // rows to write, in the order first seen
	roll   rollup.Delta
	slow   []slowRow // the batch's rows of slowTable, written with the rollup

	// The inserts of record rows into each shard, appended to by the
	// flushes and sent at commit (shardwrite.go), and the keys of the rows
	// they hold.
	pend     []driver.Batch
	pendRows []int // the rows each insert of pend holds
	unsent   map[int64]bool
}

// AddRecord takes r into the batch. What r is (a new record, a stage of a
// held one, a duplicate, a conflict) is judged when the batch is flushed,
// against what the database holds: AddRecord reports Added, and Commit
// corrects the run's tallies.
func (b *batch) AddRecord(ctx context.Context, r *timeline.Record) (timeline.AddResult, error) {
	if r.Key == "" {
		return 0, errors.New("add record: empty natural key")
	}
	if err := timeline.CheckTime(r.Time); err != nil {
		return 0, fmt.Errorf("add record: %w", err)
	}
	redact.Record(r)
	c := *r
	if c.Evidence.Run == 0 {
		c.Evidence.Run = b.run
	}
	b.recs = append(b.recs, &c)
	if len(b.recs) >= flushAt {
		if err := b.flush(context.WithoutCancel(ctx), false); err != nil {
			return 0, fmt.Errorf("add record: %w", err)
		}
	}
	return timeline.Added, nil
}

func (b *batch) SetCursor(ctx context.Context, name, resourceVersion string) error {
	b.cursors = append(b.cursors, [2]string{name, resourceVersion})
	return nil
}

func (b *batch) Rollback() error {
	b.abortRows()
	b.recs, b.versions, b.cursors, b.ranks, b.verBytes = nil, nil, nil, nil, 0
	b.samples = sampleBuf{}
	b.staged, b.whole, b.order, b.roll, b.slow = nil, nil, nil, rollup.Delta{}, nil
	b.delta = timeline.IngestRun{}
	b.s.mu.Lock()
	b.s.open.forget() // it may hold rows this batch wrote, never sent
	b.s.mu.Unlock()
	return nil
}

// flush judges the records held in order against the rows held (a
// re-ingest finds every one held: duplicates), gives new rows their ids,
// and writes the rows, then the versions when all is true or they are
// many (flushAt, versionBytesAt). A flush cut short leaves rows a rerun
// finds held; versions not written yet stay the batch's own, so a batch
// rolled back leaves none claimed held.
func (b *batch) flush(ctx context.Context, all bool) error {
	if err := b.judgeAll(ctx, &b.delta); err != nil {
		return err
	}
	if err := b.writeRows(ctx); err != nil {
		return err
	}
	wrote := all || b.versionsFull()
	if wrote {
		if err := b.writeVersions(ctx); err != nil {
			return err
		}
	}
	b.remember()
	s := b.s
	s.mu.Lock()
	if wrote {
		for k, rk := range b.ranks {
			s.ranks[k] = rk
		}
	}
	for _, rw := range b.order {
		if rw.r.Stages != 0 {
			s.heldMax = max(s.heldMax, ns(rw.r.Time))
		}
	}
	s.mu.Unlock()
	b.recs = nil
	if wrote {
		b.versions, b.ranks, b.verBytes = nil, nil, 0
	}
	b.staged, b.whole, b.order = nil, nil, nil
	return nil
}

// Commit flushes what the batch holds, then writes the cursors and the
// run's progress, its tallies corrected for the outcomes the flushes
// learned: never a run that claims rows not written.
func (b *batch) Commit(ctx context.Context, progress *timeline.IngestRun) error {
	ctx = context.WithoutCancel(ctx)
	err := b.flush(ctx, true)
	if err == nil {
		err = b.sendRows(ctx)
	}
	if err != nil {
		b.Rollback()
		return fmt.Errorf("commit batch: %w", err)
	}
	// The rollup of every flush of the batch is written once, here: new
	// classes take their ids per batch, in sorted order, as in SQLite.
	for _, write := range []func(context.Context) error{b.flushSamples, b.writeCursors, b.writeRollup} {
		if err := write(ctx); err != nil {
			b.Rollback()
			return fmt.Errorf("commit batch: %w", err)
		}
	}
	if progress != nil {
		d := &b.delta
		progress.Records += d.Records
		progress.Merged += d.Merged
		progress.Duplicates += d.Duplicates
		progress.Conflicts += d.Conflicts
		if err := b.s.writeRun(ctx, progress); err != nil {
			b.Rollback()
			return fmt.Errorf("commit batch: %w", err)
		}
	}
	b.delta, b.roll, b.slow = timeline.IngestRun{}, rollup.Delta{}, nil
	return nil
}

// versionsFull reports whether the versions held are to be written
// before the commit: flushAt of them, or versionBytesAt of content.
func (b *batch) versionsFull() bool {
	return len(b.versions) >= flushAt || b.verBytes >= versionBytesAt
}

// remember keeps the requests written by this batch that await a final
// stage, and forgets those that got one.
func (b *batch) remember() {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rw := range b.order {
		if rw.r.Stages == 0 {
			continue
		}
		k := openKey{ns(rw.r.Time), rw.key}
		if rw.r.Stages&finalStages != 0 {
			s.open.del(k)
			continue
		}
		s.open.put(k, rw.r, rw.copied())
	}
}

// retally moves one record's count in progress from Added to res.
func retally(p *timeline.IngestRun, res timeline.AddResult) {
	if p == nil || res == timeline.Added {
		return
	}
	p.Records--
	p.Tally(res)
}
