package metrics_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/ingest/metrics"
	"github.com/faultline/faultline/timeline"
)

// parsed runs ParseExposition on data and lists its samples and bad lines.
func parsed(t *testing.T, data string, f metrics.Format) (samples, bad []string, err error) {
	t.Helper()
	at := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	_, err = metrics.ParseExposition([]byte(data), f, at, func(s *timeline.Series, ss []timeline.Sample) error {
		for _, sm := range ss {
			samples = append(samples, fmt.Sprintf("%s %s=%g", s, sm.Time.Format("15:04:05.000"), sm.Value))
		}
		return nil
	}, func(fe *metrics.FieldError) { bad = append(bad, fmt.Sprintf("%d: %s", fe.Line, fe.Field)) })
	return samples, bad, err
}

// Each bad line is named by its number, past blank lines, comments and a
// label value spanning lines, and the reading goes on after it.
func TestExpositionBadLines(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		f          metrics.Format
		samples    []string
		bad        []string
	}{
		{"text", "# a comment\n\n  \na 1\nb{x=\"1\",x=\"2\"} 2\nc{ 3\n\nd 4 notats\ne{v=\"two\nlines\"} 5\nf{ 6\ng 7 99999999999999999\nh 8", metrics.FormatText,
			[]string{`a{} 09:00:00.000=1`, `e{v="two\nlines"} 09:00:00.000=5`, `h{} 09:00:00.000=8`},
			[]string{"5: b", "6: text", "8: text", "11: text", "12: g"}},
		{"openmetrics", "# TYPE c counter\nc_total 1\nbad line\nc_total{x=\"1\"} 2 # {t=\"x\"} 1\nc_created{x=\"1\"} 1714550000\n\n# TYPE d gauge\nd 1 1714557600.5\n# EOF\n", metrics.FormatOpenMetrics,
			[]string{`c_total{} 09:00:00.000=1`, `c_total{x="1"} 09:00:00.000=2`, `d{} 10:00:00.500=1`},
			[]string{"3: openmetrics", "6: openmetrics"}},
		{"normalized le and quantile", "# TYPE h histogram\nh_bucket{le=\"1.0\"} 1\nh_bucket{le=\"+Inf\"} 2\n# TYPE s summary\ns{quantile=\"0.50\"} 1\ny{le=\"1.0\"} 3\n", metrics.FormatText,
			[]string{`h_bucket{le="1"} 09:00:00.000=1`, `h_bucket{le="+Inf"} 09:00:00.000=2`, `s{quantile="0.5"} 09:00:00.000=1`, `y{le="1.0"} 09:00:00.000=3`},
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			samples, bad, err := parsed(t, tc.data, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.samples, samples); diff != "" {
				t.Errorf("samples (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.bad, bad); diff != "" {
				t.Errorf("bad lines (-want +got):\n%s", diff)
			}
		})
	}
}

// An OpenMetrics snapshot that does not end with # EOF is refused whole,
// at its last line.
func TestOpenMetricsWithoutEOF(t *testing.T) {
	_, _, err := parsed(t, "a 1\nb 2\n", metrics.FormatOpenMetrics)
	var fe *metrics.FieldError
	if !errors.As(err, &fe) || fe.Line != 2 || !strings.Contains(fe.Problem, "# EOF") {
		t.Fatalf("got %v, want line 2: no # EOF", err)
	}
}

// Guards against the hang issue 20 found: expfmt's OpenMetrics decoder
// checked each line against the spec's grammar in time superlinear in its
// length, so a file of long lines could take hours. A line past
// MaxLineBytes now refuses the file, named, before any parser reads it,
// and lines just under it parse in linear time.
func TestLongLinesFinishFast(t *testing.T) {
	long := strings.Repeat("y", metrics.MaxLineBytes)
	under := strings.Repeat("z", metrics.MaxLineBytes/3)
	for _, f := range []metrics.Format{metrics.FormatText, metrics.FormatOpenMetrics} {
		t.Run(string(f), func(t *testing.T) {
			start := time.Now()
			_, _, err := parsed(t, "# TYPE a gauge\na 1\na{x=\""+long+"\"} 2\n# EOF\n", f)
			var fe *metrics.FieldError
			if !errors.As(err, &fe) || fe.Line != 3 || !strings.Contains(fe.Problem, "over the 1 MiB") {
				t.Errorf("got %v, want line 3 refused", err)
			}
			samples, bad, err := parsed(t, strings.Repeat("a{x=\""+under+"\"} 1\nb{x=\""+under+"\"} 2 # {t=\""+under+"\"} 1\n", 4)+"# EOF\n", f)
			if err != nil || len(samples)+len(bad) != 8 {
				t.Errorf("lines under the bound: %d samples, bad %q, %v", len(samples), bad, err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s: the parse of 5 MiB of long lines must be linear", d)
			}
		})
	}
}
