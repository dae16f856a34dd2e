package sqlite

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// workload returns n requests of two stages each, for ingester i.
func workload(i, n int) []timeline.Record {
	pod := timeline.ObjectRef{Version: "v1", Resource: "pods", Namespace: "ml", Name: fmt.Sprintf("p%d", i)}
	var out []timeline.Record
	for j := range n {
		id := fmt.Sprintf("w%d-%05d", i, j)
		at := time.Duration(j) * time.Millisecond
		out = append(out, stage(id, at, timeline.StageRequestReceived, "get", pod, 0, 0),
			stage(id, at, timeline.StageResponseComplete, "get", pod, 200, time.Millisecond))
	}
	return out
}

// TestConcurrentIngestsWaitForEachOther: three ingests into one new file
// at once (three stores, as three processes would open it) all succeed,
// while a reader reads, and leave what a sequential ingest leaves. Two of
// three used to fail with "database is locked".
func TestConcurrentIngestsWaitForEachOther(t *testing.T) {
	ctx := context.Background()
	const ingests, requests = 3, 2000
	file := filepath.Join(t.TempDir(), "t.db")
	var wg sync.WaitGroup
	errs := make(chan error, ingests+1)
	done := make(chan struct{})
	for i := range ingests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(ctx, file, Options{})
			if err != nil {
				errs <- fmt.Errorf("ingest %d: %w", i, err)
				return
			}
			defer s.Close()
			errs <- ingest(ctx, s, workload(i, requests), 100)
		}()
	}
	var reader sync.WaitGroup
	reader.Add(1)
	go func() { // a reader polls throughout and must not fail
		defer reader.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			s, err := Open(ctx, file, Options{ReadOnly: true})
			if err != nil {
				continue // not created yet, or not migrated yet
			}
			for _, err := range s.Records(ctx, timeline.Query{Limit: 10}) {
				if err != nil {
					errs <- fmt.Errorf("reader: %w", err)
					break
				}
			}
			if _, err := s.Runs(ctx); err != nil {
				errs <- fmt.Errorf("reader: %w", err)
			}
			s.Close()
		}
	}()
	wg.Wait()
	close(done)
	reader.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}

	seq := openTest(t)
	for i := range ingests {
		if err := ingest(ctx, seq, workload(i, requests), 100); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Open(ctx, file, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	opts := cmp.Options{
		cmpopts.IgnoreFields(timeline.Record{}, "ID", "Evidence"),
		cmpopts.SortSlices(func(a, b *timeline.Record) bool { return a.AuditID < b.AuditID }),
	}
	want := collect(t, seq, timeline.Query{})
	if diff := cmp.Diff(want, collect(t, got, timeline.Query{}), opts); diff != "" || len(want) != ingests*requests {
		t.Errorf("records of concurrent ingests (-sequential +concurrent)\n%s", diff)
	}
	if diff := cmp.Diff(requestStats(t, seq, time.Time{}, time.Time{}), requestStats(t, got, time.Time{}, time.Time{})); diff != "" {
		t.Errorf("rollup of concurrent ingests (-sequential +concurrent)\n%s", diff)
	}
}

// ingest is ingestRecords returning its error (for goroutines).
func ingest(ctx context.Context, s *Store, recs []timeline.Record, n int) error {
	run := &timeline.IngestRun{Source: timeline.SourceAudit, Path: "audit.log"}
	if err := s.BeginRun(ctx, run); err != nil {
		return err
	}
	for i := 0; i < len(recs); i += n {
		b, err := s.Batch(ctx, run.ID)
		if err != nil {
			return err
		}
		for _, r := range recs[i:min(i+n, len(recs))] {
			if _, err := b.AddRecord(ctx, &r); err != nil {
				b.Rollback()
				return err
			}
		}
		if err := b.Commit(ctx, run); err != nil {
			return err
		}
	}
	run.Status = timeline.RunDone
	return s.FinishRun(ctx, run)
}

// TestWriterNotesTheWait: a writer held up by another says so, once, and
// goes on when the lock is released, however long that takes.
func TestWriterNotesTheWait(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "t.db")
	first, err := Open(ctx, file, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	var log timelinetest.SyncBuffer
	second, err := Open(ctx, file, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()

	held, err := first.Batch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		b, err := second.Batch(ctx, 0)
		if err == nil {
			err = b.Rollback()
		}
		got <- err
	}()
	want := "waiting for another ingest to finish writing " + file
	for !strings.Contains(log.String(), want) {
		time.Sleep(10 * time.Millisecond) // polled: the note comes after busyTimeout
	}
	time.Sleep(2 * busyTimeout) // the waiter retries past its first timeout
	if err := held.Commit(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiting writer: %v", err)
	}
	if n := strings.Count(log.String(), "waiting for another ingest"); n != 1 {
		t.Errorf("noted the wait %d times, want once:\n%s", n, log.String())
	}
}
