package audit

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
	"github.com/faultline/faultline/timeline/sqlite"
)

// benchFile is the audit log the benchmarks read: $FAULTLINE_BENCH_AUDIT
// (hack/bench/run makes a realistic one), or a small synthetic file.
func benchFile(b *testing.B) string {
	if p := os.Getenv("FAULTLINE_BENCH_AUDIT"); p != "" {
		return p
	}
	path := filepath.Join(b.TempDir(), "audit.log")
	var buf bytes.Buffer
	for i := range 20000 {
		buf.WriteString(goodLine("b" + string(rune('a'+i%26)) + itoa(i)))
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		if i /= 10; i == 0 {
			break
		}
	}
	return string(b[n:])
}

// BenchmarkDecode is the floor: reading and decoding every line on one
// goroutine, storing nothing.
func BenchmarkDecode(b *testing.B) {
	benchDecode(b, decode, toRecord)
}

// BenchmarkDecodeStdlib is BenchmarkDecode with the encoding/json decoder
// the fast path replaced (oracle_test.go), to compare in one run.
func BenchmarkDecodeStdlib(b *testing.B) {
	benchDecode(b, oldDecode, oldToRecord)
}

func benchDecode(b *testing.B, decode func([]byte) ([]event, error),
	toRecord func(*event, []byte) (*timeline.Record, []*timeline.ObjectVersion, error)) {
	path := benchFile(b)
	fi, _ := os.Stat(path)
	b.SetBytes(fi.Size())
	cpu0 := cpuTime()
	defer func() {
		// CPU seconds, not wall: on a machine shared with other work the
		// wall clock measures the neighbours as much as the decoder.
		if d := (cpuTime() - cpu0).Seconds(); d > 0 {
			b.ReportMetric(float64(fi.Size())*float64(b.N)/d/1e6, "MB/cpu-s")
		}
	}()
	for b.Loop() {
		src, err := input.Open(context.Background(), path, 0)
		if err != nil {
			b.Fatal(err)
		}
		lines := 0
		for {
			line, _, err := src.Line()
			if errors.Is(err, io.EOF) {
				break
			}
			evs, err := decode(line)
			if err != nil {
				continue
			}
			for i := range evs {
				toRecord(&evs[i], line)
			}
			lines++
		}
		src.Close()
		b.ReportMetric(float64(lines), "lines/op")
	}
}

// BenchmarkIngest is the whole ingest into a fresh database.
func BenchmarkIngest(b *testing.B) {
	benchIngest(b, func(b *testing.B) timeline.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "b.db"), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}

// BenchmarkIngestWindow is BenchmarkIngest keeping only the minute in the
// middle of the file (ingest audit --since/--until).
func BenchmarkIngestWindow(b *testing.B) {
	path := benchFile(b)
	first, err := FirstTime(path)
	if err != nil {
		b.Fatal(err)
	}
	last := lastTime(b, path)
	mid := time.Unix(0, first+(last.UnixNano()-first)/2).UTC()
	benchIngestOpt(b, func(b *testing.B) timeline.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "b.db"), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	}, Options{Window: timeline.Span{Since: mid, Until: mid.Add(time.Minute)}})
}

// lastTime is when the request of the last line of path was received.
func lastTime(b *testing.B, path string) time.Time {
	fh, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, min(fi.Size(), 4<<20)) // the last line is shorter
	if _, err := fh.ReadAt(data, fi.Size()-int64(len(data))); err != nil {
		b.Fatal(err)
	}
	data = bytes.TrimRight(data, "\n")
	t, ok := peekReceived(data[bytes.LastIndexByte(data, '\n')+1:])
	if !ok {
		b.Fatalf("%s: the last line has no time to peek", path)
	}
	return t
}

// benchIngest times the ingest of the benchmark file into the stores open
// makes, a fresh one each time (not timed).
func benchIngest(b *testing.B, open func(*testing.B) timeline.Store) {
	benchIngestOpt(b, open, Options{})
}

// benchIngestOpt is benchIngest with the ingest's options.
func benchIngestOpt(b *testing.B, open func(*testing.B) timeline.Store, opt Options) {
	path := benchFile(b)
	fi, _ := os.Stat(path)
	b.SetBytes(fi.Size())
	for b.Loop() {
		b.StopTimer()
		s := open(b)
		b.StartTimer()
		runs, err := Ingest(context.Background(), s, []string{path}, opt)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		b.ReportMetric(float64(runs[0].Lines), "lines/op")
		b.StartTimer()
	}
}

// cpuTime is the CPU time, user and system, the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIngestClickHouse is BenchmarkIngest into a ClickHouse store of
// its own on the cluster of $FAULTLINE_CLICKHOUSE_DSN (hack/clickhouse/up),
// to profile the client's share: -cpuprofile sees only this process.
func BenchmarkIngestClickHouse(b *testing.B) {
	benchIngest(b, func(b *testing.B) timeline.Store { return clickhousetest.New(b) })
}
