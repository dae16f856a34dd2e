package commit

import (
	"context"
	"errors"
	"fmt"
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

// carrierBatch carries several runs (Carrier), as timeline/sqlite's does.
type carrierBatch struct {
	fakeBatch
	began []int64
}

func (b *carrierBatch) ForRun(*timeline.IngestRun) {}
func (b *carrierBatch) BeginRun(_ context.Context, run *timeline.IngestRun) error {
	run.ID = int64(len(b.began) + 2)
	b.began = append(b.began, run.ID)
	return nil
}

type carrierStore struct {
	fakeStore
	finished []string // "ID status records" as FinishRun heard them
	refiled  []string // the paths of the runs BeginRun recorded again
}

func (s *carrierStore) Batch(context.Context, int64) (timeline.Batch, error) {
	return &carrierBatch{fakeBatch: fakeBatch{st: &s.fakeStore}}, nil
}

// BeginRun records a run again after a rollback took the row it was
// begun with (refile).
func (s *carrierStore) BeginRun(_ context.Context, run *timeline.IngestRun) error {
	s.refiled = append(s.refiled, run.Path)
	run.ID = int64(10 + len(s.refiled))
	return nil
}

func (s *carrierStore) FinishRun(_ context.Context, run *timeline.IngestRun) error {
	s.finished = append(s.finished, fmt.Sprintf("%d %s %d", run.ID, run.Status, run.Records))
	return nil
}

// The inputs of one command go on in one transaction (Continue): an
// input read (Done) is recorded ended only after the commit that keeps its
// items, and when that commit fails it ends failed, its counts back to
// the last commit's.
func TestPeriodicCarriesRuns(t *testing.T) {
	ctx := context.Background()
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("commit fails %v", fail), func(t *testing.T) {
			st := &carrierStore{}
			first := &timeline.IngestRun{ID: 1}
			p, err := Open(ctx, st, first)
			if err != nil {
				t.Fatal(err)
			}
			p.Size, p.Every = 100, time.Hour
			var heard []int64
			for i := range 3 {
				run := first
				if i > 0 {
					run = &timeline.IngestRun{Path: fmt.Sprint(i + 1)}
					if ok, err := p.Continue(ctx, run); !ok || err != nil {
						t.Fatalf("Continue: %v %v, want a carried run", ok, err)
					}
				}
				run.Records += 10
				if err := p.AddedN(ctx, 10); err != nil {
					t.Fatal(err)
				}
				p.Done(st, nil, nil, func() { heard = append(heard, run.ID) })
				if len(st.finished) != 0 || len(heard) != 0 {
					t.Fatalf("input %d: ended before its commit: %v, heard %v", i, st.finished, heard)
				}
			}
			st.fail = fail
			err = p.Commit(ctx)
			if (err != nil) != fail {
				t.Fatalf("Commit: %v, want failed %v", err, fail)
			}
			want := []string{"1 done 10", "2 done 10", "3 done 10"}
			var refiled []string
			if fail {
				// The runs begun in the transaction lost their rows with
				// it: they are recorded again, failed.
				want = []string{"1 failed 0", "11 failed 0", "12 failed 0"}
				refiled = []string{"2", "3"}
			}
			if diff := cmp.Diff(refiled, st.refiled); diff != "" {
				t.Errorf("runs recorded again (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, st.finished); diff != "" {
				t.Errorf("runs ended (-want +got):\n%s", diff)
			}
			wantHeard := []int64{1, 2, 3}
			if fail {
				wantHeard = []int64{1, 11, 12}
			}
			if diff := cmp.Diff(wantHeard, heard); diff != "" {
				t.Errorf("onDone heard (-want +got):\n%s", diff)
			}
		})
	}
}
