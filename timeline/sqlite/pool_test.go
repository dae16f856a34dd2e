package sqlite

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// TestReadersOutnumberConnections: more readers than the store has
// connections, each holding its rows open while it meets strings the cache
// has not seen. A reader must never need a second pool connection to
// resolve a string: with every connection held by a reader that waits for
// one, the store deadlocked (the TUI, which reads the histogram, the
// investigation in parts and the control plane at once, never settled on
// a loaded CI machine).
func TestReadersOutnumberConnections(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := openTest(t)
	const readers, per = 6, 3
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	var recs []timeline.Record
	for i := range readers * per {
		recs = append(recs, timeline.Record{
			Key: fmt.Sprintf("audit\x00%d", i), Time: t0.Add(time.Duration(i) * time.Second), Source: timeline.SourceAudit,
			Verb: "get", User: fmt.Sprintf("user-%d", i),
			Object: timeline.ObjectRef{Resource: "pods", Namespace: "default", Name: fmt.Sprintf("pod-%d", i)},
			Stages: timeline.StageResponseComplete, Code: 200,
			Evidence: timeline.Evidence{Line: int64(i + 1)},
		})
	}
	timelinetest.AddRecords(t, s, recs...)
	s.reads.mu.Lock()
	s.reads.m = nil // cold: every string is a miss
	s.reads.mu.Unlock()

	// Each of the first poolConns readers reads its first record and waits
	// until all of them hold their rows open (every connection), then reads
	// on: its next records' strings are misses. The others wait for a
	// connection.
	var started atomic.Int32
	all := make(chan struct{})
	begun := func() {
		if started.Add(1) == poolConns {
			close(all)
		}
	}
	errs := make(chan error, readers)
	for k := range readers {
		go func() {
			q := timeline.Query{Since: t0.Add(time.Duration(k*per) * time.Second), Until: t0.Add(time.Duration((k+1)*per) * time.Second)}
			n, first := 0, true
			for _, err := range s.Records(ctx, q) {
				if err != nil {
					errs <- err
					if first {
						begun()
					}
					return
				}
				n++
				if first {
					first = false
					begun()
					select {
					case <-all:
					case <-ctx.Done():
					}
				}
			}
			if n != per {
				errs <- fmt.Errorf("reader %d read %d records, want %d", k, n, per)
				return
			}
			errs <- nil
		}()
	}
	for range readers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
