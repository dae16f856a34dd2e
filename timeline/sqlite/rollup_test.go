package sqlite

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/rollup"
)

var rollT0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

// stage returns one audit stage of request id, as the audit ingester makes it.
func stage(id string, at time.Duration, st timeline.Stage, verb string, o timeline.ObjectRef, code int, lat time.Duration) timeline.Record {
	return timeline.Record{
		Key: "audit\x00" + id, Time: rollT0.Add(at), Source: timeline.SourceAudit, Verb: verb, Object: o,
		User: "system:node:node-1", UserAgent: "kubelet/v1.37.2 (linux/amd64) kubernetes/abcdef0",
		Code: code, Latency: lat, Stages: st, AuditID: id, URI: "/api/v1/x",
	}
}

// rollupRecords covers what the rollup rules tell apart.
func rollupRecords() []timeline.Record {
	pods := timeline.ObjectRef{Version: "v1", Resource: "pods"}
	nsPods := timeline.ObjectRef{Version: "v1", Resource: "pods", Namespace: "ml"}
	pod := timeline.ObjectRef{Version: "v1", Resource: "pods", Namespace: "ml", Name: "p1"}
	var out []timeline.Record
	add := func(rs ...timeline.Record) { out = append(out, rs...) }

	// a: RequestReceived, then ResponseComplete: a paged cluster list.
	a1 := stage("a", 0, timeline.StageRequestReceived, "list", pods, 0, 0)
	a2 := stage("a", 0, timeline.StageResponseComplete, "list", pods, 200, 30*time.Millisecond)
	a1.URI, a2.URI = "/api/v1/pods?limit=500", "/api/v1/pods?limit=500"
	add(a1, a2)
	// b: a watch: ResponseStarted after 5ms, ResponseComplete after 5m.
	add(stage("b", 100*time.Millisecond, timeline.StageResponseStarted, "watch", nsPods, 200, 5*time.Millisecond),
		stage("b", 100*time.Millisecond, timeline.StageResponseComplete, "watch", nsPods, 200, 5*time.Minute))
	// c: a 404 get that waited in an APF queue.
	c := stage("c", 1500*time.Millisecond, timeline.StageResponseComplete, "get", pod, 404, 2*time.Millisecond)
	c.User = "system:serviceaccount:ml:worker-1"
	c.UserAgent = "trainer/2.3 (linux/amd64) client-go/v0.37.2"
	c.Extra = []byte(`{"annotations":{"apiserver.latency.k8s.io/apf-queue-wait":"1.5s"}}`)
	add(c)
	// d: only RequestReceived: not counted.
	add(stage("d", 2*time.Second, timeline.StageRequestReceived, "get", pod, 0, 0))
	// e: a create whose name appears only at ResponseComplete: the class is
	// the record's (namespace scope).
	add(stage("e", 2*time.Second, timeline.StageRequestReceived, "create", nsPods, 0, 0),
		stage("e", 2*time.Second, timeline.StageResponseComplete, "create", pod, 201, 12*time.Millisecond))
	// f: ResponseComplete, then Panic (the apiserver writes one or the
	// other; the rollup moves the request to the Panic values).
	add(stage("f", 61*time.Second, timeline.StageResponseComplete, "update", pod, 200, time.Second),
		stage("f", 61*time.Second, timeline.StagePanic, "update", pod, 500, 1200*time.Millisecond))
	// g: a non-resource request; h: an Event: neither counted.
	g := stage("g", 62*time.Second, timeline.StageResponseComplete, "get", timeline.ObjectRef{}, 200, time.Millisecond)
	g.URI = "/readyz"
	h := stage("h", 62*time.Second, timeline.StageResponseComplete, "", pod, 0, 0)
	h.Source, h.Key = timeline.SourceEvent, "event\x00h"
	add(g, h)
	// i: an unpaged cluster list throttled with a 429 after 15s in a queue.
	i := stage("i", 63*time.Second, timeline.StageResponseComplete, "list", pods, 429, 15*time.Second)
	i.URI = "/api/v1/pods"
	i.User = "system:serviceaccount:ml:worker-2"
	i.UserAgent = "trainer/2.3 (linux/amd64) client-go/v0.37.2"
	i.Extra = []byte(`{"annotations":{"apiserver.latency.k8s.io/apf-queue-wait":"15.003456789s"}}`)
	add(i)
	// j: a watch-cache list, at RequestReceived then ResponseComplete; k:
	// Panic only; l: a watch still open (ResponseStarted only).
	j1 := stage("j", 125*time.Second, timeline.StageRequestReceived, "list", nsPods, 0, 0)
	j2 := stage("j", 125*time.Second, timeline.StageResponseComplete, "list", nsPods, 200, 3*time.Millisecond)
	j1.URI, j2.URI = "/api/v1/namespaces/ml/pods?resourceVersion=0", "/api/v1/namespaces/ml/pods?resourceVersion=0"
	add(j1, j2,
		stage("k", 126*time.Second, timeline.StagePanic, "patch", pod, 500, 40*time.Millisecond),
		stage("l", 127*time.Second, timeline.StageResponseStarted, "watch", pods, 200, time.Millisecond))
	for n := range 5 { // a burst of kubelets in one second
		r := stage(fmt.Sprintf("m%d", n), 180*time.Second+time.Duration(n)*time.Millisecond, timeline.StageResponseComplete,
			"get", pod, 200, time.Duration(n+1)*time.Millisecond)
		r.User = fmt.Sprintf("system:node:node-%d", n%3)
		add(r)
	}
	return out
}

// ingestRecords writes recs in batches of size n (0: one batch).
func ingestRecords(t *testing.T, s *Store, recs []timeline.Record, n int) {
	t.Helper()
	if n == 0 {
		n = max(len(recs), 1)
	}
	if err := ingest(context.Background(), s, recs, n); err != nil {
		t.Fatal(err)
	}
}

// classedStats is a RequestStats with class ids replaced by the classes,
// so that two databases compare.
type classedStats struct {
	Seconds []classed[timeline.RequestSecond]
	Stats   []classed[timeline.RequestStat]
	Clients []classed[timeline.RequestClient]
}

type classed[T any] struct {
	Class timeline.RequestClass
	Row   T
}

func requestStats(t *testing.T, s *Store, since, until time.Time) classedStats {
	t.Helper()
	st, err := s.RequestStats(context.Background(), since, until)
	if err != nil {
		t.Fatal(err)
	}
	classes := map[int64]timeline.RequestClass{}
	for _, c := range st.Classes {
		id := c.ID
		c.ID = 0
		classes[id] = c
	}
	class := func(id int64) timeline.RequestClass {
		c, ok := classes[id]
		if !ok {
			t.Fatalf("class %d referenced but not returned", id)
		}
		return c
	}
	var out classedStats
	for _, r := range st.Seconds {
		c := class(r.Class)
		r.Class = 0
		out.Seconds = append(out.Seconds, classed[timeline.RequestSecond]{c, r})
	}
	for _, r := range st.Stats {
		c := class(r.Class)
		r.Class = 0
		out.Stats = append(out.Stats, classed[timeline.RequestStat]{c, r})
	}
	for _, r := range st.Clients {
		c := class(r.Class)
		r.Class = 0
		out.Clients = append(out.Clients, classed[timeline.RequestClient]{c, r})
	}
	if len(classes) != len(st.Classes) {
		t.Errorf("%d classes returned, %d distinct", len(st.Classes), len(classes))
	}
	byClass := func(a, b timeline.RequestClass) int {
		return cmp.Or(cmp.Compare(a.Verb, b.Verb), cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource),
			cmp.Compare(a.Subresource, b.Subresource), cmp.Compare(a.Scope, b.Scope), cmp.Compare(a.User, b.User),
			cmp.Compare(a.UserAgent, b.UserAgent))
	}
	slices.SortFunc(out.Seconds, func(a, b classed[timeline.RequestSecond]) int {
		return cmp.Or(byClass(a.Class, b.Class), cmp.Compare(a.Row.Sec, b.Row.Sec))
	})
	slices.SortFunc(out.Stats, func(a, b classed[timeline.RequestStat]) int {
		return cmp.Or(cmp.Compare(a.Row.Minute, b.Row.Minute), byClass(a.Class, b.Class), cmp.Compare(a.Row.Code, b.Row.Code),
			cmp.Compare(a.Row.LatencyBucket, b.Row.LatencyBucket))
	})
	slices.SortFunc(out.Clients, func(a, b classed[timeline.RequestClient]) int {
		return cmp.Or(cmp.Compare(a.Row.Minute, b.Row.Minute), byClass(a.Class, b.Class), cmp.Compare(a.Row.User, b.Row.User))
	})
	return out
}

// backfill empties the rollup and rebuilds it with migration 0005, as for
// a database written before it.
func backfill(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ms, func(m migration) bool { return m.version == 5 })
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, table := range []string{"req_bucket", "req_class", "req_second", "req_stat", "req_client"} {
		if _, err := tx.ExecContext(ctx, "DROP TABLE "+table); err != nil {
			t.Fatal(err)
		}
	}
	// 0005 reads the URI and extra as schema 5 held them: a temporary view
	// (which shadows the table) decodes them (rowenc.go).
	if _, err := tx.ExecContext(ctx, `CREATE TEMP VIEW record AS SELECT r.id, r.time_ns, r.source, r.stages, r.code,
		r.latency_ns, r.verb, r.api_group, r.resource, r.subresource, r.namespace, r.name, r.user, r.user_agent, `+
		uriSQL("r")+` AS uri, `+extraSQL("r")+` AS extra FROM main.record r`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, ms[i].sql); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `DROP VIEW temp.record`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	s.classes.mu.Lock()
	clear(s.classes.m)
	s.classes.mu.Unlock()
}

func TestRollupCountsEachRequestOnce(t *testing.T) {
	s := openTest(t)
	ingestRecords(t, s, rollupRecords(), 0)
	got := requestStats(t, s, time.Time{}, time.Time{})

	var perSec, stat, etcd, unpaged int64
	for _, r := range got.Seconds {
		perSec += r.Row.Count
	}
	for _, r := range got.Stats {
		stat += r.Row.Count
		etcd += r.Row.EtcdLists
		unpaged += r.Row.UnpagedLists
	}
	// a b c e f i j k l m0..m4 reached a response stage; l is still open.
	if perSec != 14 || stat != 13 {
		t.Errorf("counted %d requests per second and %d completed, want 14 and 13", perSec, stat)
	}
	if etcd != 2 || unpaged != 1 { // a (paged, most recent) and i (unpaged); j reads the cache
		t.Errorf("etcd lists %d, unpaged %d; want 2 and 1", etcd, unpaged)
	}
	want := map[string]timeline.RequestStat{ // by verb: the single-request cells
		"watch":  {Minute: rollT0.Unix(), Code: 200, LatencyBucket: timeline.LatencyBucket(5 * time.Minute), Count: 1, LatencySumNs: int64(5 * time.Minute), LatencyMaxNs: int64(5 * time.Minute)},
		"create": {Minute: rollT0.Unix(), Code: 201, LatencyBucket: timeline.LatencyBucket(12 * time.Millisecond), Count: 1, LatencySumNs: 12e6, LatencyMaxNs: 12e6},
		"update": {Minute: rollT0.Unix() + 60, Code: 500, LatencyBucket: timeline.LatencyBucket(1200 * time.Millisecond), Count: 1, LatencySumNs: 12e8, LatencyMaxNs: 12e8},
		"list":   {Minute: rollT0.Unix() + 60, Code: 429, LatencyBucket: timeline.LatencyBucket(15 * time.Second), Count: 1, EtcdLists: 1, UnpagedLists: 1, LatencySumNs: 15e9, LatencyMaxNs: 15e9, APFQueueWaitMaxNs: 15003456789},
	}
	for _, r := range got.Stats {
		w, ok := want[r.Class.Verb]
		if !ok || r.Row.Minute != w.Minute {
			continue
		}
		delete(want, r.Class.Verb)
		if diff := gocmp.Diff(w, r.Row); diff != "" {
			t.Errorf("%s stat (-want +got)\n%s", r.Class.Verb, diff)
		}
		if r.Class.Verb == "create" && r.Class.Scope != timeline.ScopeNamespace {
			t.Errorf("create classed at scope %q, want the record's, %q", r.Class.Scope, timeline.ScopeNamespace)
		}
	}
	if len(want) > 0 {
		t.Errorf("no stat rows for %v", want)
	}
	var burst []timeline.RequestClient
	for _, r := range got.Clients {
		if r.Row.Minute == rollT0.Unix()+180 {
			burst = append(burst, r.Row)
		}
	}
	wantBurst := []timeline.RequestClient{
		{Minute: rollT0.Unix() + 180, User: "system:node:node-0", Count: 2},
		{Minute: rollT0.Unix() + 180, User: "system:node:node-1", Count: 2},
		{Minute: rollT0.Unix() + 180, User: "system:node:node-2", Count: 1},
	}
	if diff := gocmp.Diff(wantBurst, burst); diff != "" {
		t.Errorf("burst clients (-want +got)\n%s", diff)
	}
}

// TestRollupIsExact holds the rollup kept by the writer to the one the
// migration backfills, however the stages arrive: in batches, re-ingested,
// in reverse, and after a rolled-back batch.
func TestRollupIsExact(t *testing.T) {
	recs := rollupRecords()
	reversed := slices.Clone(recs)
	slices.Reverse(reversed)

	ref := openTest(t)
	ingestRecords(t, ref, recs, 0)
	want := requestStats(t, ref, time.Time{}, time.Time{})
	backfill(t, ref)
	if diff := gocmp.Diff(want, requestStats(t, ref, time.Time{}, time.Time{})); diff != "" {
		t.Errorf("backfill differs from the writer's rollup (-writer +backfill)\n%s", diff)
	}

	for _, tc := range []struct {
		name string
		run  func(t *testing.T, s *Store)
	}{
		{"batches of 3", func(t *testing.T, s *Store) { ingestRecords(t, s, recs, 3) }},
		{"reingested", func(t *testing.T, s *Store) {
			ingestRecords(t, s, recs, 0)
			ingestRecords(t, s, recs, 4)
		}},
		// Reversed, the create's ResponseComplete is written first and its
		// record has a name: the record differs, and the rollup with it.
		{"reversed", func(t *testing.T, s *Store) { ingestRecords(t, s, reversed, 2) }},
		{"rolled back", func(t *testing.T, s *Store) {
			ctx := context.Background()
			run := &timeline.IngestRun{Source: timeline.SourceAudit, Path: "x"}
			if err := s.BeginRun(ctx, run); err != nil {
				t.Fatal(err)
			}
			b, err := s.Batch(ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if _, err := b.AddRecord(ctx, &r); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.Rollback(); err != nil {
				t.Fatal(err)
			}
			if st := requestStats(t, s, time.Time{}, time.Time{}); len(st.Seconds)+len(st.Stats)+len(st.Clients) > 0 {
				t.Errorf("a rolled-back batch left %d+%d+%d rollup rows", len(st.Seconds), len(st.Stats), len(st.Clients))
			}
			ingestRecords(t, s, recs, 5)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t)
			tc.run(t, s)
			got := requestStats(t, s, time.Time{}, time.Time{})
			if tc.name != "reversed" {
				if diff := gocmp.Diff(want, got); diff != "" {
					t.Errorf("(-want +got)\n%s", diff)
				}
			}
			backfill(t, s)
			if diff := gocmp.Diff(got, requestStats(t, s, time.Time{}, time.Time{})); diff != "" {
				t.Errorf("backfill differs from the writer's rollup (-writer +backfill)\n%s", diff)
			}
		})
	}
}

// perMinute ingests one record per minute (record i at minute i), and
// returns each minute's single stat row as the writer keeps it and as the
// backfill rebuilds it.
func perMinute(t *testing.T, recs []timeline.Record) (writer, backfilled []timeline.RequestStat) {
	t.Helper()
	s := openTest(t)
	for i := range recs {
		recs[i].Time = rollT0.Add(time.Duration(i) * time.Minute)
		recs[i].Key = fmt.Sprintf("audit\x00%d", i)
	}
	ingestRecords(t, s, recs, 0)
	read := func() []timeline.RequestStat {
		st, err := s.RequestStats(context.Background(), time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Stats) != len(recs) {
			t.Fatalf("%d stat rows for %d requests", len(st.Stats), len(recs))
		}
		return st.Stats
	}
	writer = read()
	backfill(t, s)
	return writer, read()
}

// TestListRulesInGoAndSQL holds the list rules to one table in Go
// (timeline.ListFromEtcd, ListHasLimit), in the writer, and in the SQL of
// the backfill: each URI is a cluster-scope list in a minute of its own.
func TestListRulesInGoAndSQL(t *testing.T) {
	cases := []struct {
		uri            string
		etcd, hasLimit bool
	}{
		{"/api/v1/pods", true, false},                                                  // Most Recent
		{"/api/v1/pods?resourceVersion=", true, false},                                 // "" is unset
		{"/api/v1/pods?limit=500", true, true},                                         // Most Recent, paged
		{"/api/v1/pods?limit=500&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ", true, true}, // continuation: Exact
		{"/api/v1/pods?resourceVersion=0", false, false},                               // Any: watch cache
		{"/api/v1/pods?resourceVersion=0&limit=500", false, true},                      // Any, the limit ignored
		{"/api/v1/pods?resourceVersion=12345", false, false},                           // Not older than
		{"/api/v1/pods?resourceVersion=12345&limit=500", true, true},                   // Exact
		{"/api/v1/pods?resourceVersion=12345&resourceVersionMatch=NotOlderThan&limit=500", false, true},
		{"/api/v1/pods?resourceVersion=12345&resourceVersionMatch=Exact", true, false},
		{"/api/v1/pods?resourceVersionMatch=NotOlderThan&resourceVersion=0", false, false},
		{"/api/v1/pods?resourceVersionMatch=Exact", true, false}, // invalid (400), counted as asked
		{"/api/v1/pods?limit=0", true, false},
		{"/api/v1/pods?limit=000&resourceVersion=7", false, false},
		{"/api/v1/pods?limit=0010&resourceVersion=7", true, true},
		{"/api/v1/pods?limit=abc", true, false},
		{"/api/v1/pods?continue=&resourceVersion=0", false, false}, // an empty token is none
		{"/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1&resourceVersion=0", false, false},
		{"/api/v1/pods?labelSelector=app%3Dx&limit=500&resourceVersion=0", false, true},
		{"/apis/kubeflow.org/v2beta1/mpijobs?resourceVersion=99&limit=1", true, true},
		{"/api/v1/pods?xresourceVersion=0", true, false},                   // another parameter
		{"/api/v1/pods?resourceVersion=0&resourceVersion=5", false, false}, // the first wins
		{"/api/v1/pods?watch=1&resourceVersion=0?x", false, false},
	}
	var recs []timeline.Record
	for _, tc := range cases {
		if got := [2]bool{timeline.ListFromEtcd(tc.uri), timeline.ListHasLimit(tc.uri)}; got != [2]bool{tc.etcd, tc.hasLimit} {
			t.Errorf("%s: Go [etcd, limit] = %v, want [%v %v]", tc.uri, got, tc.etcd, tc.hasLimit)
		}
		r := stage("", 0, timeline.StageResponseComplete, "list", timeline.ObjectRef{Version: "v1", Resource: "pods"}, 200, time.Millisecond)
		r.URI = tc.uri
		recs = append(recs, r)
	}
	writer, backfilled := perMinute(t, recs)
	for i, tc := range cases {
		want := [2]int64{0, 0}
		if tc.etcd {
			want[0] = 1
		}
		if !tc.hasLimit {
			want[1] = 1 // cluster scope: unpaged
		}
		if got := [2]int64{writer[i].EtcdLists, writer[i].UnpagedLists}; got != want {
			t.Errorf("%s: writer [etcd, unpaged] = %v, want %v", tc.uri, got, want)
		}
		if got := [2]int64{backfilled[i].EtcdLists, backfilled[i].UnpagedLists}; got != want {
			t.Errorf("%s: backfill (SQL) [etcd, unpaged] = %v, want %v", tc.uri, got, want)
		}
	}
}

// TestAPFQueueWaitInGoAndSQL reads the APF queue wait annotation, as the
// apiserver writes it, in the writer and in the backfill.
func TestAPFQueueWaitInGoAndSQL(t *testing.T) {
	cases := []struct {
		extra string
		want  int64
	}{
		{`{"annotations":{"apiserver.latency.k8s.io/apf-queue-wait":"700.192745ms"}}`, 700192745},
		{`{"annotations":{"apiserver.latency.k8s.io/apf-queue-wait":"15.003456789s"}}`, 15003456789},
		{`{"annotations":{"apiserver.latency.k8s.io/apf-queue-wait":"1m5.25s"}}`, 65250000000},
		{`{"annotations":{"apiserver.latency.k8s.io/apf-queue-wait":"1h0m0.5s"}}`, 3600500000000},
		{`{"annotations":{"apiserver.latency.k8s.io/apf-queue-wait":"2.5µs"}}`, 2500},
		{`{"annotations":{"apiserver.latency.k8s.io/apf-queue-wait":"812ns"}}`, 812},
		{`{"annotations":{"apiserver.latency.k8s.io/apf-queue-wait":"0s"}}`, 0},
		{`{"annotations":{"apiserver.latency.k8s.io/apf-queue-wait":"1h"}}`, 0}, // not Duration.String's form
		{`{"annotations":{"apiserver.latency.k8s.io/apf-queue-wait":7}}`, 0},
		{`{"annotations":{"apiserver.latency.k8s.io/total":"2s"}}`, 0},
		{`{"groups":["apf-queue-wait"]}`, 0},
		{``, 0},
	}
	var recs []timeline.Record
	for _, tc := range cases {
		r := stage("", 0, timeline.StageResponseComplete, "get", timeline.ObjectRef{Version: "v1", Resource: "pods"}, 200, time.Millisecond)
		if tc.extra != "" {
			r.Extra = []byte(tc.extra)
		}
		recs = append(recs, r)
	}
	writer, backfilled := perMinute(t, recs)
	for i, tc := range cases {
		if got := writer[i].APFQueueWaitMaxNs; got != tc.want {
			t.Errorf("%s: writer %d, want %d", tc.extra, got, tc.want)
		}
		if got := backfilled[i].APFQueueWaitMaxNs; got != tc.want {
			t.Errorf("%s: backfill (SQL) %d, want %d", tc.extra, got, tc.want)
		}
	}
}

// TestFoldsAndBucketsInGoAndSQL holds the backfill's user and user agent
// folds and latency buckets to Go's.
func TestFoldsAndBucketsInGoAndSQL(t *testing.T) {
	users := []string{"system:node:node-1", "system:serviceaccount:ml:w", "system:serviceaccount:x", "alice", ""}
	agents := []string{"trainer/2.3 (linux/amd64) client-go/v0.37.2", "curl 8", "a b/c", "a/b c", "plain", ""}
	var lats []time.Duration
	for b := range timeline.LatencyBuckets - 1 {
		up := timeline.LatencyBucketUpper(b)
		lats = append(lats, up, up+1)
	}
	lats = append(lats, 0, -1, 2*time.Hour)
	var recs []timeline.Record
	for i, lat := range lats {
		r := stage("", 0, timeline.StageResponseComplete, "get", timeline.ObjectRef{Version: "v1", Resource: "pods"}, 200, lat)
		r.User, r.UserAgent = users[i%len(users)], agents[i%len(agents)]
		recs = append(recs, r)
	}
	s := openTest(t)
	for i := range recs {
		recs[i].Time = rollT0.Add(time.Duration(i) * time.Minute)
		recs[i].Key = fmt.Sprintf("audit\x00%d", i)
	}
	ingestRecords(t, s, recs, 0)
	want := requestStats(t, s, time.Time{}, time.Time{})
	for i, r := range want.Stats {
		rec := recs[i]
		w := [3]any{timeline.FoldUser(rec.User), timeline.FoldUserAgent(rec.UserAgent), timeline.LatencyBucket(rec.Latency)}
		if got := [3]any{r.Class.User, r.Class.UserAgent, r.Row.LatencyBucket}; got != w {
			t.Errorf("record %d: writer %v, want %v", i, got, w)
		}
	}
	backfill(t, s)
	if diff := gocmp.Diff(want, requestStats(t, s, time.Time{}, time.Time{})); diff != "" {
		t.Errorf("backfill (-writer +backfill)\n%s", diff)
	}
	// The bucket table the backfill reads is Go's.
	rows, err := s.db.Query("SELECT b, upper_ns FROM req_bucket ORDER BY b")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got, wantUp []int64
	for rows.Next() {
		var b, up int64
		if err := rows.Scan(&b, &up); err != nil {
			t.Fatal(err)
		}
		got = append(got, up)
		wantUp = append(wantUp, int64(timeline.LatencyBucketUpper(int(b))))
	}
	if len(got) != timeline.LatencyBuckets-1 {
		t.Errorf("req_bucket has %d rows, want %d", len(got), timeline.LatencyBuckets-1)
	}
	if diff := gocmp.Diff(wantUp, got); diff != "" {
		t.Errorf("req_bucket (-Go +SQL)\n%s", diff)
	}
}

func TestRequestStatsWindow(t *testing.T) {
	s := openTest(t)
	ingestRecords(t, s, rollupRecords(), 0)
	ctx := context.Background()
	for _, tc := range []struct {
		name              string
		since, until      time.Time
		firstSec, lastSec int64
	}{
		{"all", time.Time{}, time.Time{}, rollT0.Unix(), rollT0.Unix() + 180},
		{"second minute", rollT0.Add(time.Minute), rollT0.Add(2 * time.Minute), rollT0.Unix() + 61, rollT0.Unix() + 63},
		{"from 1.5s", rollT0.Add(1500 * time.Millisecond), time.Time{}, rollT0.Unix() + 2, rollT0.Unix() + 180},
		{"until 1.5s", time.Time{}, rollT0.Add(1500 * time.Millisecond), rollT0.Unix(), rollT0.Unix() + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := s.RequestStats(ctx, tc.since, tc.until)
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Seconds) == 0 {
				t.Fatal("no seconds")
			}
			lo, hi := st.Seconds[0].Sec, st.Seconds[0].Sec
			used := map[int64]bool{}
			for i, r := range st.Seconds {
				lo, hi = min(lo, r.Sec), max(hi, r.Sec)
				used[r.Class] = true
				if i > 0 {
					p := st.Seconds[i-1]
					if p.Class > r.Class || p.Class == r.Class && p.Sec >= r.Sec {
						t.Errorf("seconds out of (class, sec) order at %d", i)
					}
				}
			}
			if lo != tc.firstSec || hi != tc.lastSec {
				t.Errorf("seconds from %d to %d, want %d to %d", lo-rollT0.Unix(), hi-rollT0.Unix(),
					tc.firstSec-rollT0.Unix(), tc.lastSec-rollT0.Unix())
			}
			for _, r := range st.Stats {
				used[r.Class] = true
				if at := time.Unix(r.Minute, 0); at.Before(tc.since) || !tc.until.IsZero() && !at.Before(tc.until) {
					t.Errorf("stat minute %v outside the window", at)
				}
			}
			for _, r := range st.Clients {
				used[r.Class] = true
				if at := time.Unix(r.Minute, 0); at.Before(tc.since) || !tc.until.IsZero() && !at.Before(tc.until) {
					t.Errorf("client minute %v outside the window", at)
				}
			}
			if len(st.Classes) != len(used) {
				t.Errorf("%d classes returned, %d referenced", len(st.Classes), len(used))
			}
			for _, c := range st.Classes {
				if !used[c.ID] {
					t.Errorf("class %d (%s %s) returned but not referenced", c.ID, c.Verb, c.Resource)
				}
			}
		})
	}
}

// SlowRequests returns the requests of the verbs it names that took
// SlowLatency or longer at their final stage, each with its class, in time
// order; a window bounds them by their received time.
func TestSlowRequests(t *testing.T) {
	s := openTest(t)
	pod := timeline.ObjectRef{Version: "v1", Resource: "pods", Namespace: "ml", Name: "p1"}
	at := stage("s1", 190*time.Second, timeline.StageResponseComplete, "patch", pod, 200, timeline.SlowLatency)
	under := stage("s2", 191*time.Second, timeline.StageResponseComplete, "patch", pod, 200, timeline.SlowLatency-1)
	get := stage("s3", 192*time.Second, timeline.StageResponseComplete, "get", pod, 200, time.Second)
	// A watch-cache list that waited for a seat, its extra split as the
	// writer stores it (the authorization annotations and groups in the
	// middle).
	cached := stage("s4", 193*time.Second, timeline.StageResponseComplete, "list",
		timeline.ObjectRef{Version: "v1", Resource: "configmaps", Namespace: "node-config"}, 200, 617*time.Millisecond)
	cached.URI = "/api/v1/namespaces/node-config/configmaps?labelSelector=pool%3Dh100-a&resourceVersion=0"
	cached.User = "system:serviceaccount:ml:metrics-exporter-0007"
	cached.UserAgent = "metrics-exporter/3.17.6 (linux/amd64) client-go/v0.37.2"
	cached.Extra = []byte(`{"annotations":{"apiserver.latency.k8s.io/apf-queue-wait":"598.125088ms","apiserver.latency.k8s.io/total":"617.005775ms",` +
		`"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"RBAC"},"groups":["system:serviceaccounts","system:authenticated"]}`)
	ingestRecords(t, s, append(rollupRecords(), at, under, get, cached), 0)
	ctx := context.Background()
	class := func(verb, scope, user, ua string) timeline.RequestClass {
		return timeline.RequestClass{Verb: verb, Resource: "pods", Scope: scope, User: user, UserAgent: ua}
	}
	f := timeline.SlowRequest{Class: class("update", "object", "system:node:*", "kubelet"), Received: rollT0.Add(61 * time.Second),
		Latency: 1200 * time.Millisecond, Code: 500}
	i := timeline.SlowRequest{Class: class("list", "cluster", "system:serviceaccount:ml:*", "trainer"), Received: rollT0.Add(63 * time.Second),
		Latency: 15 * time.Second, APFWait: 15003456789, Code: 429, Etcd: true}
	s1 := timeline.SlowRequest{Class: class("patch", "object", "system:node:*", "kubelet"), Received: rollT0.Add(190 * time.Second),
		Latency: timeline.SlowLatency, Code: 200}
	s4 := timeline.SlowRequest{Class: timeline.RequestClass{Verb: "list", Resource: "configmaps", Scope: "namespace",
		User: "system:serviceaccount:ml:*", UserAgent: "metrics-exporter"}, Received: rollT0.Add(193 * time.Second),
		Latency: 617 * time.Millisecond, APFWait: 598125088, Code: 200}
	for _, tc := range []struct {
		name         string
		since, until time.Time
		want         []timeline.SlowRequest
	}{
		{"all", time.Time{}, time.Time{}, []timeline.SlowRequest{f, i, s1, s4}},
		{"window", rollT0.Add(62 * time.Second), rollT0.Add(190 * time.Second), []timeline.SlowRequest{i}},
		{"from", rollT0.Add(63 * time.Second), time.Time{}, []timeline.SlowRequest{i, s1, s4}},
	} {
		got, err := s.SlowRequests(ctx, tc.since, tc.until)
		if err != nil {
			t.Fatal(err)
		}
		if diff := gocmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got)\n%s", tc.name, diff)
		}
	}
	// The store decodes its rows its own way: the same as rollup.Slow of
	// every record read back whole.
	var want []timeline.SlowRequest
	for r, err := range s.Records(ctx, timeline.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		if sr, ok := rollup.Slow(r); ok {
			want = append(want, sr)
		}
	}
	slices.SortFunc(want, timeline.CompareSlow)
	got, err := s.SlowRequests(ctx, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("SlowRequests against rollup.Slow of every record (-want +got)\n%s", diff)
	}
}

// The partial index's literal is timeline.SlowLatency: a query with
// another term could not use it (migration 0015 reads the slow records
// through it, then drops it).
func TestSlowIndexLiteral(t *testing.T) {
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	term := fmt.Sprintf("latency_ns >= %d", int64(timeline.SlowLatency))
	if !strings.Contains(ms[12].sql, term) || !strings.Contains(slowRead, term) {
		t.Errorf("migration %s or slowRead lacks %q", ms[12].name, term)
	}
}
