package timelinetest

import (
	"context"
	"errors"

	"github.com/faultline/faultline/timeline"
)

// ErrDiskFull is what SQLite says when the disk fills.
var ErrDiskFull = errors.New("database or disk is full")

// FullDisk is an appender whose disk fills after Commits batches: the next
// batch's Commit rolls it back and fails with ErrDiskFull.
type FullDisk struct {
	timeline.Appender
	Commits int // batches that commit; the next fails
}

func (s *FullDisk) Batch(ctx context.Context, run int64) (timeline.Batch, error) {
	b, err := s.Appender.Batch(ctx, run)
	if err != nil {
		return nil, err
	}
	fail := s.Commits == 0
	s.Commits--
	return &fullBatch{Batch: b, fail: fail}, nil
}

type fullBatch struct {
	timeline.Batch
	fail bool
}

func (b *fullBatch) Commit(ctx context.Context, progress *timeline.IngestRun) error {
	if b.fail {
		b.Batch.Rollback()
		return ErrDiskFull
	}
	return b.Batch.Commit(ctx, progress)
}
