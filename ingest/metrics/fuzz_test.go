package metrics_test

import (
	"os"
	"testing"
	"time"

	"github.com/faultline/faultline/ingest/metrics"
	"github.com/faultline/faultline/timeline"
)

// seeds adds the testdata files of real formats to f's corpus.
func seeds(f *testing.F, files ...string) {
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// checkSeries fails on a series a parser made that the store would refuse.
func checkSeries(t *testing.T, s *timeline.Series, samples []timeline.Sample) error {
	if s.ID != timeline.SeriesID(s.Metric, s.Labels) {
		t.Fatalf("series %s: ID is not SeriesID", s)
	}
	for i := 1; i < len(s.Labels); i++ {
		if s.Labels[i-1].Name >= s.Labels[i].Name {
			t.Fatalf("series %s: labels not sorted or repeated", s)
		}
	}
	for _, sm := range samples {
		if err := timeline.CheckTime(sm.Time); err != nil {
			t.Fatalf("series %s: %v", s, err)
		}
	}
	return nil
}

func FuzzParseAPI(f *testing.F) {
	seeds(f, "testdata/query_range.json", "testdata/query.json", "testdata/error.json", "testdata/bad.json")
	f.Add([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1e9,"1"],[-1.5,"-Inf"]]}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		metrics.ParseAPI(data, "", func(s *timeline.Series, samples []timeline.Sample) error {
			return checkSeries(t, s, samples)
		}, func(fe *metrics.FieldError) {
			if fe.Line < 1 {
				t.Fatalf("bad input without a line: %v", fe)
			}
		})
	})
}

// fuzzExposition runs the exposition parser of format on data.
func fuzzExposition(t *testing.T, data []byte, format metrics.Format) {
	if len(data) > 1<<16 {
		return // bound the work of one input
	}
	at := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	metrics.ParseExposition(data, format, at, func(s *timeline.Series, samples []timeline.Sample) error {
		return checkSeries(t, s, samples)
	}, func(fe *metrics.FieldError) {
		if fe.Line < 1 || fe.Line > int64(len(data))+1 {
			t.Fatalf("bad line %d of %d bytes: %v", fe.Line, len(data), fe)
		}
	})
}

func FuzzParseText(f *testing.F) {
	seeds(f, "testdata/coredns.prom", "testdata/bad.prom")
	f.Add([]byte("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_count 2\nh_sum 3 1714557600000\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzExposition(t, data, metrics.FormatText) })
}

func FuzzParseOpenMetrics(f *testing.F) {
	seeds(f, "testdata/coredns.om")
	f.Add([]byte("# TYPE c counter\nc_total 1 1714557600.25\nc_created 1714557000\n# EOF\n"))
	f.Add([]byte("# TYPE x_seconds gauge\n# UNIT x_seconds seconds\nx_seconds{a=\"b\"} 1.5\n# EOF"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzExposition(t, data, metrics.FormatOpenMetrics) })
}
