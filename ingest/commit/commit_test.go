package commit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

type fakeBatch struct {
	timeline.Batch
	st *fakeStore
}

func (b *fakeBatch) Commit(_ context.Context, p *timeline.IngestRun) error {
	if b.st.fail {
		return errors.New("disk full")
	}
	b.st.commits = append(b.st.commits, p.Records)
	return nil
}

func (b *fakeBatch) Rollback() error { return nil }

type fakeStore struct {
	fail    bool
	commits []int64 // the run's records at each commit
}

func (s *fakeStore) Batch(context.Context, int64) (timeline.Batch, error) {
	return &fakeBatch{st: s}, nil
}

func TestPeriodic(t *testing.T) {
	ctx := context.Background()
	t.Run("by count", func(t *testing.T) {
		st := &fakeStore{}
		run := &timeline.IngestRun{ID: 1}
		p, err := Open(ctx, st, run)
		if err != nil {
			t.Fatal(err)
		}
		p.Size, p.Every = 3, time.Hour
		for range 7 {
			run.Records++
			if err := p.Added(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]int64{3, 6, 7}, st.commits); diff != "" {
			t.Errorf("commits (-want +got):\n%s", diff)
		}
	})
	t.Run("by time", func(t *testing.T) {
		st := &fakeStore{}
		run := &timeline.IngestRun{ID: 1}
		p, _ := Open(ctx, st, run)
		p.Size, p.Every = 1000, time.Millisecond
		run.Records++
		time.Sleep(2 * time.Millisecond)
		if err := p.Added(ctx); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]int64{1}, st.commits); diff != "" {
			t.Errorf("a slow item is committed at once (-want +got):\n%s", diff)
		}
	})
	t.Run("a failed commit takes the counts back", func(t *testing.T) {
		st := &fakeStore{}
		run := &timeline.IngestRun{ID: 1}
		p, _ := Open(ctx, st, run)
		p.Size, p.Every = 2, time.Hour
		for range 2 {
			run.Records++
			run.Lines++
			p.Added(ctx)
		}
		st.fail = true
		run.Records, run.Lines = run.Records+1, run.Lines+1
		p.Added(ctx)
		run.Records, run.Lines = run.Records+1, run.Lines+1
		if err := p.Added(ctx); err == nil {
			t.Fatal("a failed commit was not reported")
		}
		if run.Records != 2 || run.Lines != 2 {
			t.Errorf("after a failed commit the run says %d records of %d lines, want the 2 committed", run.Records, run.Lines)
		}
		if err := p.Commit(ctx); err != nil {
			t.Errorf("a spent Periodic commits nothing: %v", err)
		}
	})
}
