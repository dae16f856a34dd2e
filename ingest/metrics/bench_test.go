package metrics_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline/faultline/ingest/metrics"
	"github.com/faultline/faultline/timeline/sqlite"
)

// queryRangeJSON writes a query_range response of series x points
// samples, 15 s apart, as Prometheus writes it.
func queryRangeJSON(series, points int) []byte {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for i := range series {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metric":{"__name__":"coredns_dns_requests_total","instance":"10.0.%d.%d:9153","job":"coredns","type":"A"},"values":[`, i/256, i%256)
		for j := range points {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `[%d.%03d,"%d"]`, 1714557600+15*j, j%1000, j*7+i)
		}
		b.WriteString("]}")
	}
	b.WriteString("]}}")
	return []byte(b.String())
}

// BenchmarkIngestMetrics ingests 1 M samples (100 series x 10,000 points
// of query_range JSON) into a new SQLite file.
func BenchmarkIngestMetrics(b *testing.B) {
	dir := b.TempDir()
	file := filepath.Join(dir, "query_range.json")
	if err := os.WriteFile(file, queryRangeJSON(100, 10000), 0o600); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		s, err := sqlite.Open(ctx, filepath.Join(dir, fmt.Sprintf("t%d.db", i)), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		runs, err := metrics.Ingest(ctx, s, []string{file}, metrics.Options{})
		if err != nil || runs[0].Records != 1_000_000 {
			b.Fatalf("%v: %+v", err, runs)
		}
		s.Close()
	}
	b.ReportMetric(1e6*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkIngestExposition ingests the /metrics snapshots named by the
// glob FAULTLINE_BENCH_EXPOSITION (default testdata/coredns.prom; see
// hack/bench/README.md for metricsgen's) into a new SQLite file, one run a
// file, as ingest metrics does: to profile the snapshot path with
// -cpuprofile.
func BenchmarkIngestExposition(b *testing.B) {
	glob := cmp.Or(os.Getenv("FAULTLINE_BENCH_EXPOSITION"), "testdata/coredns.prom")
	files, _ := filepath.Glob(glob)
	if len(files) == 0 {
		b.Fatalf("FAULTLINE_BENCH_EXPOSITION=%s names no file", glob)
	}
	dir := b.TempDir()
	ctx := context.Background()
	var n int64
	for i := 0; b.Loop(); i++ {
		s, err := sqlite.Open(ctx, filepath.Join(dir, fmt.Sprintf("t%d.db", i)), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		runs, err := metrics.Ingest(ctx, s, files, metrics.Options{})
		if err != nil {
			b.Fatal(err)
		}
		n = 0
		for _, r := range runs {
			n += r.Lines
		}
		s.Close()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}
