// Package commit holds the one way ingesters write a long source: in
// transactions closed by count and by time, so a kill or a Ctrl-C loses at
// most the last second or the last few thousand items, and a run's counts
// never claim more than was committed.
package commit

import (
	"context"
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
	Size  int
	Every time.Duration
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
func (p *Periodic) Added(ctx context.Context) error {
	p.n++
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
	if err := b.Commit(context.WithoutCancel(ctx), p.run); err != nil {
		b.Rollback()
		Restore(p.run, &p.saved)
		return err
	}
	p.n, p.last, p.saved = 0, time.Now(), *p.run
	return nil
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
	if cerr := p.Commit(ctx); cerr != nil && err == nil {
		err = cerr
		run.Status, run.Error = timeline.RunFailed, err.Error()
	}
	if ferr := store.FinishRun(context.WithoutCancel(ctx), run); ferr != nil && err == nil {
		err = ferr
	}
	return err
}
