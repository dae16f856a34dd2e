package sqlite_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
	"github.com/faultline/faultline/timeline/timelinetest"
)

func TestSeries(t *testing.T) { timelinetest.CheckSeries(t, sqlitetest.New(t)) }

// TestSeriesSurviveReopen reads series written by another Store on the
// same file: the dictionary is read from the file, not from the writer's
// cache.
func TestSeriesSurviveReopen(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "t.db")
	s, err := sqlite.Open(ctx, file, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	timelinetest.CheckSeries(t, s)
	s.Close()
	r, err := sqlite.Open(ctx, file, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for _, err := range r.Series(ctx, timeline.SeriesQuery{Metric: "up"}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 {
		t.Errorf("read %d series of up after reopening, want 2", n)
	}
}

// TestSeriesOrder reads series back in timeline.CompareSeries order,
// which the store computes from the strings' ranks packed into words:
// names that are prefixes of others, fewer labels first, values interned
// out of order, and keys (up to 17 ranks of 5 bits) that cross a word.
func TestSeriesOrder(t *testing.T) {
	ctx := context.Background()
	s := sqlitetest.New(t)
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"", "a", "ab", "b", "a\x00", "zz", "Z", "é", "10", "9", "instance", "job", "pod", "c", "d", "e", "f", "g", "h", "i"}
	var want []*timeline.Series
	seen := map[int64]bool{}
	for len(want) < 300 {
		m := map[string]string{}
		for range rng.IntN(9) {
			m[words[1+rng.IntN(len(words)-1)]] = words[rng.IntN(len(words))]
		}
		sr := timeline.NewSeries(words[1+rng.IntN(3)], timeline.NewLabels(m))
		if !seen[sr.ID] {
			seen[sr.ID] = true
			want = append(want, sr)
		}
	}
	run := &timeline.IngestRun{Source: timeline.SourceMetrics, Path: "order"}
	if err := s.BeginRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	b, err := s.Batch(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, sr := range want {
		if _, err := b.AddSamples(ctx, sr, []timeline.Sample{{Time: time.Unix(1e9, 0), Value: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(ctx, run); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(want, timeline.CompareSeries)
	var got []*timeline.Series
	for sr, err := range s.Series(ctx, timeline.SeriesQuery{}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, sr)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}
