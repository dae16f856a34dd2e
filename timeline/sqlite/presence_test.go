package sqlite

import (
	"context"
	"database/sql/driver"
	"io"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/timeline"
)

// benchPresenceDB names the timeline file of analyze/cardinality's
// BenchmarkCardinality, kept by it when set (1 M series).
const benchPresenceDB = "FAULTLINE_CARDINALITY_BENCH_DB"

// BenchmarkPresenceSQL is the floor of BenchmarkCardinality: the bare
// SQL of PresentSeries over the same file and instants (the series with
// a sample in the five minutes before 10:00 or 11:00 on 2026-05-01), run
// as PresentSeries runs it (its id ranges side by side), each row's
// columns scanned and nothing decoded or kept. Without the file it
// skips: benchmarks do not run in CI.
func BenchmarkPresenceSQL(b *testing.B) {
	file := os.Getenv(benchPresenceDB)
	if file == "" {
		b.Skip(benchPresenceDB + " is not set: run BenchmarkCardinality with it first (docs/metrics.md)")
	}
	ctx := context.Background()
	vs := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	lookback := func(at time.Time) timeline.Span {
		return timeline.Span{Since: at.Add(-5*time.Minute + time.Nanosecond), Until: at.Add(time.Nanosecond)}
	}
	q := timeline.PresenceQuery{Spans: []timeline.Span{lookback(vs.Add(time.Hour)), lookback(vs)}}
	cpu0 := cpuTime()
	for b.Loop() {
		b.StopTimer()
		s, err := Open(ctx, file, Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		n := bareScan(ctx, b, s, q)
		b.StopTimer()
		s.Close()
		if n != 1_000_000 {
			b.Fatalf("%d rows, want 1,000,000", n)
		}
		b.StartTimer()
	}
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
}

// bareScan runs q's SQL over every id range side by side, on the
// driver's rows as PresentSeries reads them, and counts the rows.
func bareScan(ctx context.Context, b *testing.B, s *Store, q timeline.PresenceQuery) int {
	query, args := presenceSQL(q, nil)
	counts := make([]int, len(presenceParts))
	var wg sync.WaitGroup
	for i, r := range presenceParts {
		wg.Go(func() {
			err := s.rawQuery(ctx, query, append(slices.Clip(args), r[0], r[1]), func(rows driver.Rows) error {
				dest := make([]driver.Value, 4)
				for {
					if err := rows.Next(dest); err != nil {
						return err
					}
					counts[i]++
				}
			})
			if err != io.EOF {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
