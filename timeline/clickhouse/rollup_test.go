package clickhouse_test

import (
	"context"
	"fmt"
	"slices"
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

var rollT0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

// stage returns one audit stage of request id, as the audit ingester makes
// it.
func stage(id string, at time.Duration, st timeline.Stage, verb string, o timeline.ObjectRef, code int, lat time.Duration) timeline.Record {
	return timeline.Record{
		Key: "audit\x00" + id, Time: rollT0.Add(at), Source: timeline.SourceAudit, Verb: verb, Object: o,
		User: "system:node:node-1", UserAgent: "kubelet/v1.37.2 (linux/amd64) kubernetes/abcdef0",
		Code: code, Latency: lat, Stages: st, AuditID: id, URI: "/api/v1/x",
	}
}

// rollupRecords covers what the rollup rules tell apart, and the two ways
// a Panic that replaces a ResponseComplete leaves a cell: still holding
// another request (its maxima overstate, in both stores), or emptied and
// then filled again by a later request (its maxima start afresh).
func rollupRecords(t *testing.T) []timeline.Record {
	pods := timeline.ObjectRef{Version: "v1", Resource: "pods"}
	nsPods := timeline.ObjectRef{Version: "v1", Resource: "pods", Namespace: "ml"}
	pod := timeline.ObjectRef{Version: "v1", Resource: "pods", Namespace: "ml", Name: "p1"}
	below := time.Second - 20*time.Millisecond // in 1s's latency bucket, below it
	if timeline.LatencyBucket(below) != timeline.LatencyBucket(time.Second) {
		t.Fatalf("%v and 1s fall in different latency buckets", below)
	}
	var out []timeline.Record
	add := func(rs ...timeline.Record) { out = append(out, rs...) }
	with := func(r timeline.Record, user, uri, extra string) timeline.Record {
		if user != "" {
			r.User = user
		}
		if uri != "" {
			r.URI = uri
		}
		if extra != "" {
			r.Extra = []byte(extra)
		}
		return r
	}
	add(with(stage("a", 0, timeline.StageRequestReceived, "list", pods, 0, 0), "", "/api/v1/pods?limit=500", ""),
		with(stage("a", 0, timeline.StageResponseComplete, "list", pods, 200, 30*time.Millisecond), "", "/api/v1/pods?limit=500", ""),
		stage("b", 100*time.Millisecond, timeline.StageResponseStarted, "watch", nsPods, 200, 5*time.Millisecond),
		stage("b", 100*time.Millisecond, timeline.StageResponseComplete, "watch", nsPods, 200, 5*time.Minute),
		with(stage("c", 1500*time.Millisecond, timeline.StageResponseComplete, "get", pod, 404, 2*time.Millisecond),
			"system:serviceaccount:ml:worker-1", "", `{"annotations":{"apiserver.latency.k8s.io/apf-queue-wait":"1.5s"}}`),
		stage("d", 2*time.Second, timeline.StageRequestReceived, "get", pod, 0, 0),
		stage("e", 2*time.Second, timeline.StageRequestReceived, "create", nsPods, 0, 0),
		stage("e", 2*time.Second, timeline.StageResponseComplete, "create", pod, 201, 12*time.Millisecond))
	// f leaves a cell that f2 still holds.
	add(stage("f", 61*time.Second, timeline.StageResponseComplete, "update", pod, 200, time.Second),
		with(stage("f2", 61500*time.Millisecond, timeline.StageResponseComplete, "update", pod, 200, below), "system:node:node-2", "", ""),
		stage("f", 61*time.Second, timeline.StagePanic, "update", pod, 500, 1200*time.Millisecond))
	g := with(stage("g", 62*time.Second, timeline.StageResponseComplete, "get", timeline.ObjectRef{}, 200, time.Millisecond), "", "/readyz", "")
	ev := stage("h", 62*time.Second, timeline.StageResponseComplete, "", pod, 0, 0)
	ev.Source, ev.Key = timeline.SourceEvent, "event\x00h"
	add(g, ev,
		with(stage("i", 63*time.Second, timeline.StageResponseComplete, "list", pods, 429, 15*time.Second),
			"system:serviceaccount:ml:worker-2", "/api/v1/pods", `{"annotations":{"apiserver.latency.k8s.io/apf-queue-wait":"15.003456789s"}}`),
		with(stage("j", 125*time.Second, timeline.StageRequestReceived, "list", nsPods, 0, 0), "", "/api/v1/namespaces/ml/pods?resourceVersion=0", ""),
		with(stage("j", 125*time.Second, timeline.StageResponseComplete, "list", nsPods, 200, 3*time.Millisecond), "", "/api/v1/namespaces/ml/pods?resourceVersion=0", ""),
		stage("k", 126*time.Second, timeline.StagePanic, "patch", pod, 500, 40*time.Millisecond),
		stage("l", 127*time.Second, timeline.StageResponseStarted, "watch", pods, 200, time.Millisecond))
	// p empties its cell; q, later, fills it again.
	add(with(stage("p", 130*time.Second, timeline.StageResponseComplete, "update", pod, 200, time.Second), "alice", "", ""),
		with(stage("p", 130*time.Second, timeline.StagePanic, "update", pod, 500, 1200*time.Millisecond), "alice", "", ""),
		with(stage("q", 140*time.Second, timeline.StageResponseComplete, "update", pod, 200, below), "alice", "", ""))
	// s was slow until a Panic, fast, replaced its ResponseComplete: it
	// is no longer a slow request. r came in fast and ends slow.
	add(with(stage("s", 150*time.Second, timeline.StageResponseComplete, "update", pod, 200, 400*time.Millisecond), "bob", "", ""),
		with(stage("r", 151*time.Second, timeline.StageResponseStarted, "list", pods, 200, time.Millisecond), "bob", "", ""),
		with(stage("s", 150*time.Second, timeline.StagePanic, "update", pod, 500, 50*time.Millisecond), "bob", "", ""),
		with(stage("r", 151*time.Second, timeline.StageResponseComplete, "list", pods, 200, 2*time.Second), "bob", "", ""))
	for n := range 5 { // a burst of kubelets in one second
		r := stage(fmt.Sprintf("m%d", n), 180*time.Second+time.Duration(n)*time.Millisecond, timeline.StageResponseComplete,
			"get", pod, 200, time.Duration(n+1)*time.Millisecond)
		r.User = fmt.Sprintf("system:node:node-%d", n%3)
		add(r)
	}
	return out
}

// ingestRecords writes recs in batches of n, in one run that ends done,
// having written them all.
func ingestRecords(t *testing.T, s timeline.Appender, recs []timeline.Record, n int) {
	t.Helper()
	ctx := context.Background()
	run := &timeline.IngestRun{Source: timeline.SourceAudit, Path: "audit.log"}
	if err := s.BeginRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(recs); i += n {
		b, err := s.Batch(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs[i:min(i+n, len(recs))] {
			if _, err := b.AddRecord(ctx, &r); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	run.Status, run.Records = timeline.RunDone, int64(len(recs))
	if err := s.FinishRun(ctx, run); err != nil {
		t.Fatal(err)
	}
}

// rollupWindows are the windows TestRollupParity reads: all, the second
// minute and on (from inside a second), and the third minute alone, where
// the cell p emptied and q filled again is.
var rollupWindows = [][2]time.Time{
	{},
	{rollT0.Add(61500 * time.Millisecond), time.Time{}},
	{rollT0.Add(2 * time.Minute), rollT0.Add(3 * time.Minute)},
}

// TestRollupParity holds the ClickHouse store's RequestSummary to the
// SQLite store's, ids and order included, however the stages of a request
// are batched: the ids of new classes follow the batches, and a stage that
// joins a request in a later batch corrects what was counted.
func TestRollupParity(t *testing.T) {
	ctx := context.Background()
	recs := rollupRecords(t)
	reversed := slices.Clone(recs)
	slices.Reverse(reversed)
	for _, tc := range []struct {
		name string
		load func(t *testing.T, s timeline.Appender)
	}{
		{"one batch", func(t *testing.T, s timeline.Appender) { ingestRecords(t, s, recs, len(recs)) }},
		{"batches of 1", func(t *testing.T, s timeline.Appender) { ingestRecords(t, s, recs, 1) }},
		{"batches of 3", func(t *testing.T, s timeline.Appender) { ingestRecords(t, s, recs, 3) }},
		{"reingested", func(t *testing.T, s timeline.Appender) {
			ingestRecords(t, s, recs, 2)
			ingestRecords(t, s, recs, 5)
		}},
		{"reversed", func(t *testing.T, s timeline.Appender) { ingestRecords(t, s, reversed, 2) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lite, house := sqlitetest.New(t), clickhousetest.New(t)
			if st, err := house.RequestSummary(ctx, time.Time{}, time.Time{}); err != nil || !cmp.Equal(st, &timeline.RequestStats{}) {
				t.Fatalf("an empty store's summary: %+v, %v", st, err)
			}
			tc.load(t, lite)
			tc.load(t, house)
			checkRollupWindows(t, lite, house)
			// The emptied cells too many to list: every cell read life
			// by life.
			clickhouse.SetMaxListedCells(t, 0)
			checkRollupWindows(t, lite, house)
		})
	}
}

// checkRollupWindows compares the summaries and the slow requests of
// rollupWindows.
func checkRollupWindows(t *testing.T, lite, house timeline.Rollup) {
	t.Helper()
	ctx := context.Background()
	for _, w := range rollupWindows {
		sameRead(t, w, "summary", lite, house, func(s timeline.Rollup) (*timeline.RequestStats, error) {
			return s.RequestSummary(ctx, w[0], w[1])
		})
		sameRead(t, w, "slow requests", lite, house, func(s timeline.Rollup) ([]timeline.SlowRequest, error) {
			return s.SlowRequests(ctx, w[0], w[1])
		})
	}
}

// sameRead compares what read gives of window w in both stores.
func sameRead[T any](t *testing.T, w [2]time.Time, what string, lite, house timeline.Rollup, read func(timeline.Rollup) (T, error)) {
	t.Helper()
	want, err := read(lite)
	if err != nil {
		t.Fatal(err)
	}
	got, err := read(house)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("[%v, %v): ClickHouse's %s differs from SQLite's (-sqlite +clickhouse):\n%s", w[0], w[1], what, diff)
	}
}

// TestRollupRefilledCell checks the case TestRollupParity must catch: a
// cell emptied by a Panic and filled again in a later batch has the later
// request's maximum latency, not the one taken back.
func TestRollupRefilledCell(t *testing.T) {
	ctx := context.Background()
	s := clickhousetest.New(t)
	ingestRecords(t, s, rollupRecords(t), 1)
	w := rollupWindows[2]
	st, err := s.RequestSummary(ctx, w[0], w[1])
	if err != nil {
		t.Fatal(err)
	}
	var alice []timeline.RequestStat
	for _, c := range st.Classes {
		for _, r := range st.Stats {
			if c.User == "alice" && r.Class == c.ID {
				alice = append(alice, r)
			}
		}
	}
	want := []timeline.RequestStat{
		{Code: 200, LatencyBucket: timeline.LatencyBucket(time.Second), Count: 1, LatencySumNs: 980e6, LatencyMaxNs: 980e6},
		{Code: 500, LatencyBucket: timeline.LatencyBucket(1200 * time.Millisecond), Count: 1, LatencySumNs: 12e8, LatencyMaxNs: 12e8},
	}
	for i := range alice {
		alice[i].Class = 0
	}
	if diff := cmp.Diff(want, alice); diff != "" {
		t.Errorf("alice's stats (-want +got)\n%s", diff)
	}
}

// TestRollupParityInBatches loads a recorded audit log in small batches,
// so that many requests have their stages in different batches (joined to
// a row held, or to one the store remembers), and compares the rollups; a
// second load in batches of another size must change nothing.
func TestRollupParityInBatches(t *testing.T) {
	ctx := context.Background()
	fx, err := fixtures.Load("sample-audit")
	if err != nil {
		t.Fatal(err)
	}
	load := func(s timeline.Appender, n int) {
		if _, err := audit.Ingest(ctx, s, []string{"audit.log.gz"}, audit.Options{FS: fx.FS, BatchSize: n}); err != nil {
			t.Fatal(err)
		}
	}
	lite, house := sqlitetest.New(t), clickhousetest.New(t)
	load(lite, 700)
	load(house, 700)
	want, got := summaries(t, ctx, lite), summaries(t, ctx, house)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ClickHouse differs from SQLite (-sqlite +clickhouse):\n%s", diff)
	}
	load(house, 1000)
	if diff := cmp.Diff(got, summaries(t, ctx, house)); diff != "" {
		t.Errorf("a second load changed the ClickHouse rollup (-first +second):\n%s", diff)
	}
}
