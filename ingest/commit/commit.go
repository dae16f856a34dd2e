// Package commit holds the one way ingesters write a long source: in
// transactions closed by count and by time, so a kill or a Ctrl-C loses at
// most the last second or the last few thousand items, and a run's counts
// never claim more than was committed.
package commit

import (
	"context"
	"errors"
	"time"

	"github.com/faultline/faultline/timeline"
)

// Defaults: a transaction holds at most Size items and stays open at most
// Every, so a slow stream commits about once a second.
const (
	Size  = 100000
	Every = time.Second
)

// Batcher is the part of the store a Periodic needs.
type Batcher interface {
	Batch(ctx context.Context, run int64) (timeline.Batch, error)
}

// Periodic is a batch that commits itself every Size items or Every,
// whichever comes first. It is used by one goroutine.
type Periodic struct {
	store Batcher
	run   *timeline.IngestRun
	cur   timeline.Batch
	n     int
	last  time.Time
	saved timeline.IngestRun // the run's counts as last committed
	// waiting are the runs whose inputs were read (Done) and whose end is
	// recorded once their items are committed.
	waiting []waiting
	// inTx says the run was begun in the open transaction (Continue): a
	// rollback takes its row too.
	inTx  bool
	Size  int
	Every time.Duration
}

// waiting is a run Done ended, to finish after the next commit.
type waiting struct {
	run    *timeline.IngestRun
	saved  timeline.IngestRun
	inTx   bool
	store  Finisher
	onDone func()
}

// Carrier is a batch that carries the items of several runs in one
// transaction (timeline/sqlite's, for samples): ForRun makes the items
// added next belong to run, BeginRun inserts a run in the transaction
// (the store's would wait for it) and does the same, and Commit writes
// the progress of each.
type Carrier interface {
	ForRun(run *timeline.IngestRun)
	BeginRun(ctx context.Context, run *timeline.IngestRun) error
}

// Open starts the first batch of run.
func Open(ctx context.Context, store Batcher, run *timeline.IngestRun) (*Periodic, error) {
	b, err := store.Batch(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	return &Periodic{store: store, run: run, cur: b, last: time.Now(), saved: *run, Size: Size, Every: Every}, nil
}

// Batch is the open batch: items are added to it.
func (p *Periodic) Batch() timeline.Batch { return p.cur }

// Added counts one item added to the open batch, and commits it (with the
// run's progress) when it is full or old enough. A failed commit takes the
// run's counts back to what was committed.
func (p *Periodic) Added(ctx context.Context) error { return p.AddedN(ctx, 1) }

// AddedN is Added for n items.
func (p *Periodic) AddedN(ctx context.Context, n int) error {
	p.n += n
	if p.n < p.Size && time.Since(p.last) < p.Every {
		return nil
	}
	if err := p.commit(ctx); err != nil {
		return err
	}
	b, err := p.store.Batch(ctx, p.run.ID)
	if err != nil {
		p.cur = nil
		return err
	}
	p.cur = b
	return nil
}

// Commit commits the open batch with the run's progress, even when ctx is
// done: what was read is kept. After it the Periodic is spent.
func (p *Periodic) Commit(ctx context.Context) error {
	if p.cur == nil {
		return nil
	}
	return p.commit(ctx)
}

func (p *Periodic) commit(ctx context.Context) error {
	b := p.cur
	p.cur = nil
	ctx = context.WithoutCancel(ctx)
	waits := p.waiting
	p.waiting = nil
	if err := b.Commit(ctx, p.run); err != nil {
		b.Rollback()
		Restore(p.run, &p.saved)
		if p.inTx {
			p.inTx = false
			refile(ctx, p.store, p.run)
		}
		for _, w := range waits { // read, but not kept: failed
			Restore(w.run, &w.saved)
			w.run.Status, w.run.Error = timeline.RunFailed, err.Error()
			if w.inTx {
				refile(ctx, w.store, w.run)
			}
			w.store.FinishRun(ctx, w.run)
			w.onDone()
		}
		return err
	}
	p.n, p.last, p.saved, p.inTx = 0, time.Now(), *p.run, false
	var errs []error
	for _, w := range waits { // each is ended, whatever another's end did
		errs = append(errs, w.store.FinishRun(ctx, w.run))
		w.onDone()
	}
	return errors.Join(errs...)
}

// refile records again a run whose row a rollback took (it was begun in
// the transaction), where the store can begin runs: its end, failed, is
// then written to a row that exists.
func refile(ctx context.Context, store any, run *timeline.IngestRun) {
	b, ok := store.(interface {
		BeginRun(ctx context.Context, run *timeline.IngestRun) error
	})
	if !ok {
		return
	}
	run.ID = 0
	_ = b.BeginRun(ctx, run) // the failure is the commit's, already returned
}

// Continue begins run, the next input of the same command, in the open
// transaction when the store's batch carries several runs (a Carrier),
// and reports whether it did. A SQLite commit writes every page the
// transaction changed: the snapshots of one target change the same pages
// file after file, and one commit for many files writes them once. The
// previous run is ended with Done before; without a Carrier, the caller
// commits, begins run with the store and opens a Periodic for it.
func (p *Periodic) Continue(ctx context.Context, run *timeline.IngestRun) (bool, error) {
	c, ok := p.cur.(Carrier)
	if !ok {
		return false, nil
	}
	c.ForRun(p.run) // its items so far are counted to it, not to run
	if err := c.BeginRun(ctx, run); err != nil {
		return true, err
	}
	p.run, p.saved, p.inTx = run, *run, true
	return true, nil
}

// Done ends the run like Finish, except that the transaction stays open
// for the next input (Continue): the run's end is recorded, and onDone
// called, after the commit that keeps its last items.
func (p *Periodic) Done(store Finisher, src Source, err error, onDone func()) {
	ended(p.run, src, err)
	p.waiting = append(p.waiting, waiting{p.run, p.saved, p.inTx, store, onDone})
	p.inTx = false // a waiting run now: the commit refiles it from there
}

// ended sets run's status, failed by err if set, and, once src is read to
// its end, its hash and size.
func ended(run *timeline.IngestRun, src Source, err error) {
	run.Status = timeline.RunDone
	if err != nil {
		run.Status, run.Error = timeline.RunFailed, err.Error()
	}
	if src != nil {
		src.Drain()
		run.SHA256 = src.SHA256()
		if run.Size < 0 {
			run.Size = src.BytesRead()
		}
	}
}

// Restore sets run's counts back to those of saved: the progress of the
// last commit, after a later one failed.
func Restore(run, saved *timeline.IngestRun) {
	run.Lines, run.Records, run.Merged, run.Duplicates, run.Conflicts = saved.Lines, saved.Records, saved.Merged, saved.Duplicates, saved.Conflicts
	run.Versions, run.BadLines, run.First, run.Last = saved.Versions, saved.BadLines, saved.First, saved.Last
}

// Source is what Finish reads of a run's input once it is read: the rest
// drained, then its hash and, where its size was unknown, its length.
type Source interface {
	Drain()
	SHA256() string
	BytesRead() int64
}

// Finisher records a run's final state (timeline.Appender's FinishRun).
type Finisher interface {
	FinishRun(ctx context.Context, run *timeline.IngestRun) error
}

// Finish ends the run, failed by err if set: what was read is committed
// even when ctx is done (Ctrl-C). src may be nil (input that is no file).
// It returns err, or the first error of the commit and of finishing the
// run.
func (p *Periodic) Finish(ctx context.Context, store Finisher, src Source, err error) error {
	run := p.run
	ended(run, src, err)
	if cerr := p.Commit(ctx); cerr != nil && err == nil {
		err = cerr
		run.Status, run.Error = timeline.RunFailed, err.Error()
	}
	if ferr := store.FinishRun(context.WithoutCancel(ctx), run); ferr != nil && err == nil {
		err = ferr
	}
	return err
}
