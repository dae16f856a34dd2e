package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/hack/bench/internal/gencmd"
	"github.com/faultline/faultline/ingest/metrics"
	"github.com/faultline/faultline/timeline"
)

// Each format reads back, with faultline's own parsers, as the same series
// with the same values: the query_range answer's point p is snapshot p.
func TestFormatsReadBackAlike(t *testing.T) {
	const series, points = 60, 3
	ctx := context.Background()
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	o := options{format: "api", series: series, points: points, step: 15 * time.Second, start: start, seed: 1}
	set := newSet(series, 1)
	var api bytes.Buffer
	if err := writeAPI(ctx, &api, o, set); err != nil {
		t.Fatal(err)
	}
	type key struct {
		id int64
		t  time.Time
	}
	want := map[key]float64{}
	ids := map[int64]bool{}
	err := metrics.ParseAPI(api.Bytes(), "", func(s *timeline.Series, samples []timeline.Sample) error {
		if ids[s.ID] {
			t.Errorf("series %s twice", s)
		}
		ids[s.ID] = true
		if len(samples) != points {
			t.Errorf("%s: %d samples, want %d", s, len(samples), points)
		}
		for _, sm := range samples {
			want[key{s.ID, sm.Time}] = sm.Value
		}
		return nil
	}, func(fe *metrics.FieldError) { t.Errorf("bad: %v", fe) })
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != series {
		t.Fatalf("%d series, want %d", len(ids), series)
	}
	for _, format := range []string{"text", "openmetrics"} {
		t.Run(format, func(t *testing.T) {
			o := o
			o.format, o.out = format, t.TempDir()
			if err := writeSnapshots(ctx, o, set); err != nil {
				t.Fatal(err)
			}
			got := map[key]float64{}
			for p := range points {
				name := filepath.Join(o.out, "scrape-0000"+string(rune('1'+p))+".prom")
				data, err := os.ReadFile(name)
				if err != nil {
					t.Fatal(err)
				}
				if f := metrics.Detect(data); string(f) != format {
					t.Errorf("%s: detected as %q", name, f)
				}
				fi, _ := os.Stat(name)
				if at := start.Add(time.Duration(p) * o.step); !fi.ModTime().Equal(at) {
					t.Errorf("%s: mtime %s, want %s", name, fi.ModTime(), at)
				}
				_, err = metrics.ParseExposition(data, metrics.Format(format), fi.ModTime().UTC(), func(s *timeline.Series, samples []timeline.Sample) error {
					for _, sm := range samples {
						got[key{s.ID, sm.Time}] = sm.Value
					}
					return nil
				}, func(fe *metrics.FieldError) { t.Errorf("%s: bad: %v", name, fe) })
				if err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-api +%s)\n%s", format, diff)
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	o := options{format: "api", series: 100, points: 10, step: 15 * time.Second, start: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), seed: 5}
	var a, b bytes.Buffer
	if err := writeAPI(context.Background(), &a, o, newSet(100, 5)); err != nil {
		t.Fatal(err)
	}
	if err := writeAPI(context.Background(), &b, o, newSet(100, 5)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two runs with the same flags differ")
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-format", "proto"}, {"-series", "0"}, {"-format", "text"}, {"-step", "1us"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != gencmd.ExitUsage || !bytes.Contains(errb.Bytes(), []byte("Try: metricsgen")) {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
}
