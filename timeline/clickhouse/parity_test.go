package clickhouse_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/fixtures"
	"github.com/faultline/faultline/ingest/evidence"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

// store is what the parity test reads and writes of both stores.
type store interface {
	timeline.Appender
	timeline.Reader
	timeline.Rollup
}

// TestFixtureParity loads every recorded fixture into SQLite and into
// ClickHouse and compares what the two give back: every record and every
// version, as JSON lines, sorted; the runs' counts; and the request rollup
// (RequestSummary) over the whole span and over its middle third, and its
// slow requests (SlowRequests). A second
// load into ClickHouse must find everything held: no record, stage or
// version added, the rollup unchanged.
func TestFixtureParity(t *testing.T) {
	fxs, err := fixtures.List()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := func() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) }
	for _, fx := range fxs {
		t.Run(fx.Name, func(t *testing.T) {
			lite, house := sqlitetest.New(t), clickhousetest.New(t)
			want := load(t, ctx, lite, fx, now)
			got := load(t, ctx, house, fx, now)
			if _, err := fs.Stat(fx.FS, "audit.log.gz"); err == nil && len(want.Rollup[0].Stats) == 0 {
				t.Error("an audit log made no request rollup: the comparison proves nothing")
			}
			t.Logf("rollup: %d classes, %d seconds, %d stats, %d clients; middle third: %d seconds",
				len(want.Rollup[0].Classes), len(want.Rollup[0].Seconds), len(want.Rollup[0].Stats),
				len(want.Rollup[0].Clients), len(want.Rollup[1].Seconds))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ClickHouse differs from SQLite (-sqlite +clickhouse):\n%s", diff)
			}
			again := load(t, ctx, house, fx, now)
			if diff := cmp.Diff(got.Lines, again.Lines); diff != "" {
				t.Errorf("a second load changed the ClickHouse timeline (-first +second):\n%s", diff)
			}
			if diff := cmp.Diff([]any{got.Rollup, got.Slow}, []any{again.Rollup, again.Slow}); diff != "" {
				t.Errorf("a second load changed the ClickHouse rollup (-first +second):\n%s", diff)
			}
			for _, r := range again.Runs[len(got.Runs):] {
				if r.Records != 0 || r.Merged != 0 || r.Versions != 0 {
					t.Errorf("second load, run %s: %d records, %d stages, %d versions added; want none",
						r.Path, r.Records, r.Merged, r.Versions)
				}
			}
		})
	}
}

// loaded is what a store gives back after a load.
type loaded struct {
	Lines  []string // records and versions as JSON, sorted
	Runs   []runCounts
	Rollup [2]*timeline.RequestStats // over all, and over the middle third
	Slow   []timeline.SlowRequest
}

type runCounts struct {
	Path                                          string
	Lines, Records, Merged, Duplicates, Conflicts int64
	Versions, BadLines                            int64
}

func load(t *testing.T, ctx context.Context, s store, fx fixtures.Fixture, now func() time.Time) loaded {
	t.Helper()
	if _, err := (evidence.Loader{Now: now}).Load(ctx, s, fx.FS); err != nil {
		t.Fatal(err)
	}
	var out loaded
	for r, err := range s.Records(ctx, timeline.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(r)
		out.Lines = append(out.Lines, "record "+string(b))
	}
	vs, err := s.Versions(ctx, timeline.VersionQuery{History: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		b, _ := json.Marshal(v)
		out.Lines = append(out.Lines, "version "+string(b))
	}
	slices.Sort(out.Lines)
	runs, err := s.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		out.Runs = append(out.Runs, runCounts{r.Path, r.Lines, r.Records, r.Merged, r.Duplicates, r.Conflicts, r.Versions, r.BadLines})
	}
	out.Rollup = summaries(t, ctx, s)
	if out.Slow, err = s.SlowRequests(ctx, time.Time{}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	return out
}

// summaries reads the rollup over all and over the middle third of the
// span held, whose ends fall inside seconds.
func summaries(t *testing.T, ctx context.Context, s store) [2]*timeline.RequestStats {
	t.Helper()
	first, last, err := s.Bounds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	third := last.Sub(first) / 3
	var out [2]*timeline.RequestStats
	for i, w := range [][2]time.Time{{}, {first.Add(third + 300*time.Millisecond), last.Add(-third + 700*time.Millisecond)}} {
		if out[i], err = s.RequestSummary(ctx, w[0], w[1]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
