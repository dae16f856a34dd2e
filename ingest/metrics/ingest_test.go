package metrics_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/ingest/metrics"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

// seriesText lists the store's series as text, with their samples.
func seriesText(t *testing.T, s timeline.SeriesReader) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for sr, err := range s.Series(ctx, timeline.SeriesQuery{}) {
		if err != nil {
			t.Fatal(err)
		}
		line := sr.String()
		for sm, err := range s.Samples(ctx, []int64{sr.ID}, time.Time{}, time.Time{}) {
			if err != nil {
				t.Fatal(err)
			}
			line += " " + sm.Time.Format("15:04:05.000") + "=" + fmtValue(sm.Value)
		}
		out = append(out, line)
	}
	return out
}

func fmtValue(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func TestIngestAPI(t *testing.T) {
	ctx := context.Background()
	s := sqlitetest.New(t)
	for pass, want := range []struct{ added, held int64 }{{9, 0}, {0, 9}} {
		runs, err := metrics.Ingest(ctx, s, []string{"testdata/query_range.json", "testdata/query.json"}, metrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var added, held int64
		for _, r := range runs {
			added, held = added+r.Records, held+r.Duplicates
		}
		if added != want.added || held != want.held {
			t.Errorf("pass %d: %d samples added, %d held; want %d and %d", pass+1, added, held, want.added, want.held)
		}
	}
	want := []string{
		`{instance="node-2:9100", job="node"} 10:00:00.500=2`,
		`coredns_dns_request_duration_seconds_sum{instance="10.0.0.2:9153", job="coredns", server="dns://:53", zone="."} 10:00:00.123=NaN 10:00:15.123=+Inf 10:00:30.123=-Inf 10:00:45.123=0.0015`,
		`node_nf_conntrack_entries{instance="node-1:9100", job="node"} 10:00:00.500=18231`,
		`up{instance="10.0.0.2:9153", job="coredns"} 10:00:00.000=1 10:00:15.000=1 10:00:30.000=0`,
	}
	if diff := cmp.Diff(want, seriesText(t, s)); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
}

func TestIngestExposition(t *testing.T) {
	ctx := context.Background()
	s := sqlitetest.New(t)
	at := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	var frs []metrics.FileRun
	_, err := metrics.Ingest(ctx, s, []string{"testdata/coredns.prom", "testdata/coredns.om"}, metrics.Options{
		Time: at, OnRun: func(fr metrics.FileRun) { frs = append(frs, fr) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(frs) != 2 || frs[0].Format != metrics.FormatText || frs[1].Format != metrics.FormatOpenMetrics {
		t.Fatalf("formats: %+v", frs)
	}
	if frs[0].Times != metrics.TimeMixed || !frs[0].Fallback.Equal(at) || frs[0].Series != 15 {
		t.Errorf("text snapshot: %s at %s, %d series; want %s at %s, 15", frs[0].Times, frs[0].Fallback, frs[0].Series, metrics.TimeMixed, at)
	}
	got := strings.Join(seriesText(t, s), "\n")
	for _, want := range []string{
		`coredns_dns_requests_total{proto="udp", type="A", zone="."} 10:00:00.500=1523`, // OpenMetrics: seconds
		`node_nf_conntrack_entries{} 10:00:00.000=18231`,                                // text: milliseconds
		`queue_depth_gcount{} 09:00:00.000=3`,
		`request_duration_seconds_bucket{le="+Inf"} 09:00:00.000=5`,
		`go_gc_duration_seconds{quantile="0.5"} 09:00:00.000=5.1024e-05`,
		`up{} 09:00:00.000=NaN`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %s in\n%s", want, got)
		}
	}
	if strings.Contains(got, "_created") {
		t.Errorf("a _created line was stored as a series:\n%s", got)
	}
}

func TestSnapshotTimeIsTheFilesMtime(t *testing.T) {
	ctx := context.Background()
	s := sqlitetest.New(t)
	file := filepath.Join(t.TempDir(), "metrics.txt")
	if err := os.WriteFile(file, []byte("a 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
	os.Chtimes(file, mtime, mtime)
	var fr metrics.FileRun
	if _, err := metrics.Ingest(ctx, s, []string{file}, metrics.Options{OnRun: func(f metrics.FileRun) { fr = f }}); err != nil {
		t.Fatal(err)
	}
	if fr.Times != metrics.TimeMtime || !fr.Fallback.Equal(mtime) {
		t.Errorf("samples timed by %s at %s, want %s at %s", fr.Times, fr.Fallback, metrics.TimeMtime, mtime)
	}
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		file    string
		skipped []string
		err     string
	}{
		{"testdata/bad.json", []string{
			"testdata/bad.json:8: data.result[0].values[1][1]: \"1\": want a string such as \"1.5\" or \"NaN\"",
			"testdata/bad.json:8: data.result[0].values[2][1]: \"x\": not a number (want a float, NaN, +Inf or -Inf)",
			"testdata/bad.json:8: data.result[0].values[3][0]: \"\\\"y\\\"\": want Unix seconds",
			"testdata/bad.json:11: data.result[1].metric.job: \"7\": want a string",
		}, ""},
		{"testdata/bad.prom", []string{"testdata/bad.prom:3: text: "}, ""},
		{"testdata/error.json", nil, `testdata/error.json: Prometheus answered status error: bad_data: invalid parameter "query": 1:5: parse error: unexpected end of input`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			s := sqlitetest.New(t)
			var skipped []string
			_, err := metrics.Ingest(ctx, s, []string{tc.file}, metrics.Options{OnSkip: func(sk *input.Skip) { skipped = append(skipped, sk.Error()) }})
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			if len(skipped) != len(tc.skipped) {
				t.Fatalf("skipped %q, want %q", skipped, tc.skipped)
			}
			for i := range skipped {
				if !strings.HasPrefix(skipped[i], tc.skipped[i]) {
					t.Errorf("skipped %q, want %q...", skipped[i], tc.skipped[i])
				}
			}
		})
	}
}

func TestStrictStopsAtTheFirstBadInput(t *testing.T) {
	s := sqlitetest.New(t)
	runs, err := metrics.Ingest(context.Background(), s, []string{"testdata/bad.json"}, metrics.Options{Strict: true})
	if !errors.Is(err, metrics.ErrStrict) {
		t.Fatalf("error %v, want ErrStrict", err)
	}
	if len(runs) != 1 || runs[0].Status != timeline.RunFailed {
		t.Errorf("runs %+v, want one failed", runs)
	}
}

// A file past MaxBytes is refused, named, with what to do instead, and
// nothing of it is half-read into memory.
func TestIngestTooLarge(t *testing.T) {
	defer func(old int64) { metrics.MaxBytes = old }(metrics.MaxBytes)
	metrics.MaxBytes = 64
	_, err := metrics.Ingest(context.Background(), sqlitetest.New(t), []string{"testdata/query_range.json"}, metrics.Options{})
	var tl *metrics.TooLargeError
	if !errors.As(err, &tl) || !strings.Contains(err.Error(), "testdata/query_range.json is over") || !strings.Contains(err.Error(), "--prometheus") {
		t.Fatalf("got %v, want a TooLargeError naming the file and the live read", err)
	}
}
