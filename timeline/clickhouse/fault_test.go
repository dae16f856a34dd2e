package clickhouse_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/fixtures"
	"github.com/faultline/faultline/ingest/audit"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/clickhouse"
	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

// TestShardFaults stops a shard in the middle of an ingest, and checks that
// the ingest fails naming it; that queries with it down fail naming it, or,
// with AllowPartial, answer from the other shard and say which is missing;
// and that a rerun once it is back completes with nothing lost and nothing
// duplicated (the same records as SQLite holds).
func TestShardFaults(t *testing.T) {
	c := clickhousetest.StartCluster(t, 29301)
	ctx := context.Background()
	fx, err := fixtures.Load("thousand-workers")
	if err != nil {
		t.Fatal(err)
	}
	opt := audit.Options{FS: fx.FS, BatchSize: 500}
	s, err := clickhouse.Open(ctx, c.DSN, clickhouse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	opt.OnProgress = func(p audit.Progress) {
		if p.Records >= 2000 { // some batches committed, most not
			once.Do(func() { c.StopShard(2) })
		}
	}
	_, err = audit.Ingest(ctx, s, []string{"audit.log.gz"}, opt)
	s.Close()
	var se *clickhouse.ShardError
	if !errors.As(err, &se) || se.Shard != 2 || !strings.Contains(err.Error(), "shard 2 (127.0.0.1:29302) is unavailable") {
		t.Fatalf("ingest with shard 2 stopped: err %v; want a *ShardError naming shard 2", err)
	}

	if _, err := clickhouse.Open(ctx, c.DSN, clickhouse.Options{}); !errors.As(err, &se) || se.Shard != 2 {
		t.Errorf("open with shard 2 down: err %v; want a *ShardError naming shard 2", err)
	}
	partial, err := clickhouse.Open(ctx, c.DSN, clickhouse.Options{AllowPartial: true})
	if err != nil {
		t.Fatalf("open with shard 2 down, AllowPartial: %v", err)
	}
	if un := partial.Unavailable(); len(un) != 1 || un[0].Shard != 2 {
		t.Errorf("Unavailable() = %v; want shard 2", un)
	}
	some := count(t, partial)
	// A bisect session is one row on one shard: with a shard down, the
	// open session may be on it, unseen, and a new one would not end it.
	// Writes to the bisect log need every shard; reading it is a partial
	// answer like any other.
	if _, err := partial.StartBisect(ctx, time.Unix(1, 0)); !errors.As(err, &se) || se.Shard != 2 {
		t.Errorf("StartBisect with shard 2 down, AllowPartial: err %v; want a *ShardError naming shard 2", err)
	}
	if _, err := partial.ResetBisect(ctx, time.Unix(1, 0)); !errors.As(err, &se) || se.Shard != 2 {
		t.Errorf("ResetBisect with shard 2 down, AllowPartial: err %v; want a *ShardError naming shard 2", err)
	}
	if err := partial.AddBisectMark(ctx, timeline.BisectMark{Session: 1, Kind: timeline.BisectGood, Time: time.Unix(1, 0)}); !errors.As(err, &se) || se.Shard != 2 {
		t.Errorf("AddBisectMark with shard 2 down, AllowPartial: err %v; want a *ShardError naming shard 2", err)
	}
	partial.Close()

	c.Restart()
	s, err = clickhouse.Open(ctx, c.DSN, clickhouse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	opt.OnProgress = nil
	if _, err := audit.Ingest(ctx, s, []string{"audit.log.gz"}, opt); err != nil {
		t.Fatalf("rerun with shard 2 back: %v", err)
	}
	lite := sqlitetest.New(t)
	if _, err := audit.Ingest(ctx, lite, []string{"audit.log.gz"}, audit.Options{FS: fx.FS}); err != nil {
		t.Fatal(err)
	}
	// The same records, not only as many: each as what it says (the runs
	// that brought it differ, one ingest against two).
	got, wantRecs := records(t, s), records(t, lite)
	if diff := cmp.Diff(wantRecs, got); diff != "" {
		t.Errorf("after the rerun, ClickHouse's records (+) against SQLite's (-): %d against %d\n%s", len(got), len(wantRecs), diff)
	}
	if want := len(wantRecs); some == 0 || some >= want {
		t.Errorf("with shard 2 down the partial answer held %d of %d records; want some, not all", some, want)
	}
}

// records lists what each record of s says, sorted: its time, source,
// verb, user, object, code, latency, stages and message.
func records(t *testing.T, s timeline.Reader) []string {
	t.Helper()
	var out []string
	for r, err := range s.Records(context.Background(), timeline.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %s %s %s %+v %d %s %d %q", r.Time.UTC().Format(time.RFC3339Nano), r.Source, r.Verb,
			r.User, r.Object, r.Code, r.Latency, r.Stages, r.Message))
	}
	slices.Sort(out)
	return out
}

func count(t *testing.T, s timeline.Reader) int {
	t.Helper()
	n := 0
	for _, err := range s.Records(context.Background(), timeline.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}
