package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/rollup"
)

// slowStages makes the audit stages of n requests around SlowLatency, in
// random order: each request some of the four stages (a Panic may follow a
// ResponseComplete and make it fast or slow again), of a verb that
// SlowRequests keeps or not, some lists reading etcd, some with an APF
// queue wait, some seen twice.
func slowStages(rnd *rand.Rand, n int) []timeline.Record {
	verbs := []string{"list", "patch", "update", "create", "delete", "get", "watch"}
	lats := []time.Duration{time.Millisecond, timeline.SlowLatency - 1, timeline.SlowLatency, 700 * time.Millisecond, 3 * time.Second}
	users := []string{"system:node:node-1", "system:serviceaccount:ml:trainer-0", "admin"}
	var out []timeline.Record
	for i := range n {
		id := fmt.Sprintf("q%03d", i)
		verb := verbs[rnd.IntN(len(verbs))]
		o := timeline.ObjectRef{Version: "v1", Resource: "pods", Namespace: "ml"}
		if verb != "list" && verb != "watch" {
			o.Name = fmt.Sprintf("p%d", rnd.IntN(3))
		}
		user := users[rnd.IntN(len(users))]
		uri := "/api/v1/namespaces/ml/pods"
		if verb == "list" && rnd.IntN(2) == 0 {
			uri += "?resourceVersion=0"
		}
		for _, st := range []timeline.Stage{timeline.StageRequestReceived, timeline.StageResponseStarted,
			timeline.StageResponseComplete, timeline.StagePanic} {
			if rnd.IntN(3) == 0 {
				continue
			}
			r := stage(id, time.Duration(i)*time.Second/4, st, verb, o, 0, 0)
			r.User, r.URI = user, uri
			if st != timeline.StageRequestReceived {
				r.Code = []int{200, 429, 500}[rnd.IntN(3)]
				r.Latency = lats[rnd.IntN(len(lats))]
			}
			if rnd.IntN(3) == 0 {
				r.Extra = fmt.Appendf(nil, `{"annotations":{"apiserver.latency.k8s.io/apf-queue-wait":"%dms","apiserver.latency.k8s.io/total":"1s"}}`,
					rnd.IntN(900)+1)
			}
			out = append(out, r)
			if rnd.IntN(8) == 0 {
				out = append(out, r) // seen again
			}
		}
	}
	rnd.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// wantSlow is rollup.Slow of every record read back whole, in [since, until).
func wantSlow(t *testing.T, s *Store, since, until time.Time) []timeline.SlowRequest {
	t.Helper()
	var want []timeline.SlowRequest
	for _, r := range collect(t, s, timeline.Query{Since: since, Until: until}) {
		if sr, ok := rollup.Slow(r); ok {
			want = append(want, sr)
		}
	}
	slices.SortFunc(want, timeline.CompareSlow)
	return want
}

func checkSlow(t *testing.T, s *Store, what string) {
	t.Helper()
	mid := rollT0.Add(5 * time.Second)
	for _, w := range [][2]time.Time{{}, {mid, {}}, {{}, mid}, {rollT0.Add(2 * time.Second), rollT0.Add(7 * time.Second)}} {
		got, err := s.SlowRequests(context.Background(), w[0], w[1])
		if err != nil {
			t.Fatal(err)
		}
		if diff := gocmp.Diff(wantSlow(t, s, w[0], w[1]), got); diff != "" {
			t.Fatalf("%s, window %v: SlowRequests against rollup.Slow of every record (-want +got)\n%s", what, w, diff)
		}
	}
}

// TestSlowTableIsExact holds req_slow, kept by the writer, to rollup.Slow
// of every record read back, however the stages come: in random order and
// batches; with the open requests forgotten between batches, so that a
// stage joins its request by the database's path; ingested again; and as
// fillSlow (migration 0015) makes it of the records.
func TestSlowTableIsExact(t *testing.T) {
	ctx := context.Background()
	slow := 0
	for seed := range 24 {
		rnd := rand.New(rand.NewPCG(uint64(seed), 17))
		recs := slowStages(rnd, 40)
		s := openTest(t)
		for i := 0; i < len(recs); {
			n := min(1+rnd.IntN(12), len(recs)-i)
			ingestRecords(t, s, recs[i:i+n], n) // a batch (and a run) of its own
			if rnd.IntN(2) == 0 {
				s.open.reset()
			}
			i += n
		}
		checkSlow(t, s, fmt.Sprintf("seed %d", seed))
		all, err := s.SlowRequests(ctx, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		slow += len(all)

		slices.Reverse(recs)
		ingestRecords(t, s, recs, 5)
		checkSlow(t, s, fmt.Sprintf("seed %d, again", seed))

		tx, err := s.beginWrite(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM req_slow`); err != nil {
			t.Fatal(err)
		}
		if err := fillSlow(ctx, s, tx); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		checkSlow(t, s, fmt.Sprintf("seed %d, filled", seed))
	}
	if slow < 100 {
		t.Errorf("%d slow requests in all: the stages test too few", slow)
	}
}

// TestMigrationFillsSlowTable opens a timeline of schema 14 (records
// written, no req_slow, record_slow held, and a bulk load killed with
// record_slow among its dropped indexes): the migration fills the table
// from the records, drops the index and forgets it.
func TestMigrationFillsSlowTable(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "t.db")
	s, err := Open(ctx, file, Options{Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	ingestRecords(t, s, slowStages(rand.New(rand.NewPCG(7, 7)), 60), 0)
	want, err := s.SlowRequests(ctx, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatal("no slow requests")
	}
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	s = reopenAfter(t, s, file, ms[12].sql+`
		DROP TABLE req_slow;
		INSERT INTO meta (k, v) VALUES ('bulk_indexes', '{"record_slow": "CREATE INDEX record_slow ON record (time_ns)", "record_user": "CREATE INDEX record_user ON record (user, time_ns)"}');
		DROP INDEX record_user;
		PRAGMA user_version = 14;`)
	got, err := s.SlowRequests(ctx, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("after the migration (-written +filled)\n%s", diff)
	}
	idx, err := bulkPending(ctx, s.db)
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(map[string]string{"record_user": "CREATE INDEX record_user ON record (user, time_ns)"}, idx); diff != "" {
		t.Errorf("bulk_indexes (-want +got)\n%s", diff)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'record_slow'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("record_slow: %d, %v; want it dropped", n, err)
	}
	if msg, err := s.IntegrityCheck(ctx); err != nil || msg != "ok" {
		t.Errorf("integrity_check: %q, %v", msg, err)
	}
}
