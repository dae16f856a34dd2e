package cardinality

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite"
)

// The benchmark timeline: 1 M series of 20 metrics x 50 targets (5 jobs)
// x 20 paths x 50 pods. Pods 0-19 have a sample only before Vs, 20-29
// at both instants, 30-49 only before At: 600,000 series at each
// instant, 1.2 M samples.
const (
	benchMetrics, benchTargets, benchPaths, benchPods = 20, 50, 20, 50
	benchSeries                                       = benchMetrics * benchTargets * benchPaths * benchPods
)

var (
	benchVs = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	benchAt = benchVs.Add(time.Hour)
)

// benchDB is the benchmark's timeline file, built once per process (go
// test -count 3 reuses it) and removed by TestMain.
var benchDB struct {
	once sync.Once
	dir  string
	file string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDB.dir != "" {
		os.RemoveAll(benchDB.dir)
	}
	os.Exit(code)
}

func benchSeriesAt(i int) (*timeline.Series, []timeline.Sample) {
	pod, rest := i%benchPods, i/benchPods
	path, rest := rest%benchPaths, rest/benchPaths
	target, metric := rest%benchTargets, rest/benchTargets
	labels := timeline.Labels{
		{Name: "code", Value: strconv.Itoa(200 + 100*(metric%4))},
		{Name: "instance", Value: fmt.Sprintf("10.0.%d.%d:9090", target/10, target%10)},
		{Name: "job", Value: "job-" + strconv.Itoa(target%5)},
		{Name: "path", Value: "/api/v1/resource-" + strconv.Itoa(path)},
		{Name: "pod", Value: "trainer-7d9f8c-" + strconv.Itoa(pod)},
	}
	s := timeline.NewSeries("app_requests_"+strconv.Itoa(metric)+"_total", labels)
	var samples []timeline.Sample
	if pod < 30 {
		samples = append(samples, timeline.Sample{Time: benchVs.Add(-time.Minute), Value: float64(i)})
	}
	if pod >= 20 {
		samples = append(samples, timeline.Sample{Time: benchAt.Add(-time.Minute), Value: float64(i)})
	}
	return s, samples
}

// buildBenchDB writes the benchmark's series through the store's batch
// API, 50,000 series a transaction, in the order of their IDs.
func buildBenchDB(ctx context.Context, file string) error {
	s, err := sqlite.Open(ctx, file, sqlite.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	run := &timeline.IngestRun{Source: timeline.SourceMetrics, Path: "bench"}
	if err := s.BeginRun(ctx, run); err != nil {
		return err
	}
	// In ID order: the series and sample B-trees grow at their ends.
	order := make([]int, benchSeries)
	ids := make([]int64, benchSeries)
	for i := range order {
		sr, _ := benchSeriesAt(i)
		order[i], ids[i] = i, sr.ID
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(ids[a], ids[b]) })
	for lo := 0; lo < benchSeries; lo += 50_000 {
		b, err := s.Batch(ctx, run.ID)
		if err != nil {
			return err
		}
		for _, i := range order[lo : lo+50_000] {
			sr, samples := benchSeriesAt(i)
			n, err := b.AddSamples(ctx, sr, samples)
			if err != nil {
				b.Rollback()
				return err
			}
			run.Records += int64(n)
		}
		if err := b.Commit(ctx, run); err != nil {
			return err
		}
	}
	run.Status = timeline.RunDone
	return s.FinishRun(ctx, run)
}

// benchDBEnv names a timeline file the benchmark keeps between runs
// (built if absent): for timing the bare SQL beside the analysis
// (docs/metrics.md, "Cardinality").
const benchDBEnv = "FAULTLINE_CARDINALITY_BENCH_DB"

// benchFile builds the benchmark's timeline once and returns its path.
func benchFile(b *testing.B) string {
	b.Helper()
	benchDB.once.Do(func() {
		if benchDB.file = os.Getenv(benchDBEnv); benchDB.file != "" {
			if _, err := os.Stat(benchDB.file); err == nil {
				return
			}
		} else {
			if benchDB.dir, benchDB.err = os.MkdirTemp("", "cardinality-bench-"); benchDB.err != nil {
				return
			}
			benchDB.file = filepath.Join(benchDB.dir, "t.db")
		}
		start := time.Now()
		benchDB.err = buildBenchDB(context.Background(), benchDB.file)
		b.Logf("built %d series in %s", benchSeries, time.Since(start).Round(time.Millisecond))
	})
	if benchDB.err != nil {
		b.Fatal(benchDB.err)
	}
	return benchDB.file
}

// BenchmarkCardinality measures 1 M series (600,000 at each of two
// instants an hour apart) in a SQLite timeline file, churn included:
// the whole analysis faultline cardinality --at --vs runs, on a store
// opened anew (no dictionary cached).
func BenchmarkCardinality(b *testing.B) {
	ctx := context.Background()
	file := benchFile(b)
	cpu0 := cpuTime()
	for b.Loop() {
		b.StopTimer()
		s, err := sqlite.Open(ctx, file, sqlite.Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		rep, err := Run(ctx, s, Options{At: benchAt, Vs: benchVs})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		s.Close()
		if rep.Series != 600_000 || rep.Churn.Appeared != 400_000 || rep.Worst == nil || rep.Worst.Label != "pod" {
			b.Fatalf("series %d, appeared %d, worst %+v", rep.Series, rep.Churn.Appeared, rep.Worst)
		}
		b.StartTimer()
	}
	// CPU time as well as wall time: on a loaded machine the wall time
	// says more of the neighbours than of the analysis.
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
