package sqlite

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/faultline/faultline/timeline"
)

// BenchmarkAppend measures the writer appending audit lines to a large
// timeline, one line per op: lines that follow the last record held in
// time, 30 % of them the RequestReceived stage of a request whose
// ResponseComplete comes 64 lines later (a join), in transactions of
// 20,000 lines as ingest writes them. It reports lines/s.
//
// The timeline is a copy of $FAULTLINE_BENCH_DB (hack/bench/run builds one
// of 10 M records; the file named is never written), or else one of
// $FAULTLINE_BENCH_BASE lines (default 200,000) generated here, outside the
// timer:
//
//	go test ./timeline/sqlite -run '^$' -bench '^BenchmarkAppend$' -benchtime 100000x
//	FAULTLINE_BENCH_DB=/tmp/faultline-bench/10m.db go test ./timeline/sqlite -run '^$' -bench '^BenchmarkAppend$' -benchtime 1000000x
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "append.db")
	if src := os.Getenv("FAULTLINE_BENCH_DB"); src != "" {
		for _, suffix := range []string{"", "-wal"} {
			if err := copyFile(src+suffix, path+suffix); err != nil && !(suffix != "" && os.IsNotExist(err)) {
				b.Fatal(err)
			}
		}
	} else {
		base := 200_000
		if v := os.Getenv("FAULTLINE_BENCH_BASE"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				b.Fatalf("FAULTLINE_BENCH_BASE=%q: want a number of lines", v)
			}
			base = n
		}
		s, err := Open(ctx, path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		g := newLineGen(1, "base", time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC))
		appendLines(b, s, g, base)
		s.Close()
	}
	s, err := Open(ctx, path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	_, last, err := s.Bounds(ctx)
	if err != nil {
		b.Fatal(err)
	}
	counts, err := s.CountRecords(ctx, time.Time{}, time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	held := counts[timeline.SourceAudit]
	g := newLineGen(2, "append", last.Add(time.Minute))

	run := &timeline.IngestRun{Source: timeline.SourceAudit, Path: "bench-append"}
	if err := s.BeginRun(ctx, run); err != nil {
		b.Fatal(err)
	}
	batch, err := s.Batch(ctx, run.ID)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for b.Loop() {
		r := g.next()
		if _, err := batch.AddRecord(ctx, &r); err != nil {
			b.Fatal(err)
		}
		if n++; n%20_000 == 0 {
			if err := batch.Commit(ctx, run); err != nil {
				b.Fatal(err)
			}
			if batch, err = s.Batch(ctx, run.ID); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := batch.Commit(ctx, run); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(held), "records-held")
}

// appendLines writes n lines of g in batches of 20,000, in a run of its own.
func appendLines(b *testing.B, s *Store, g *lineGen, n int) {
	b.Helper()
	ctx := context.Background()
	run := &timeline.IngestRun{Source: timeline.SourceAudit, Path: "bench-base"}
	if err := s.BeginRun(ctx, run); err != nil {
		b.Fatal(err)
	}
	for done := 0; done < n; {
		batch, err := s.Batch(ctx, run.ID)
		if err != nil {
			b.Fatal(err)
		}
		for end := min(n, done+20_000); done < end; done++ {
			r := g.next()
			if _, err := batch.AddRecord(ctx, &r); err != nil {
				b.Fatal(err)
			}
		}
		if err := batch.Commit(ctx, run); err != nil {
			b.Fatal(err)
		}
	}
	run.Status = timeline.RunDone
	if err := s.FinishRun(ctx, run); err != nil {
		b.Fatal(err)
	}
}

// lineGen makes the records of audit lines in time order: 1,000 kubelets
// and a few controllers over 50 namespaces and 5,000 objects, about 330
// lines a second.
type lineGen struct {
	rng     *rand.Rand
	prefix  string
	t       time.Time
	n       int64
	pending []timeline.Record // requests whose ResponseComplete is to come
}

func newLineGen(seed uint64, prefix string, start time.Time) *lineGen {
	return &lineGen{rng: rand.New(rand.NewPCG(seed, 17)), prefix: prefix, t: start}
}

var (
	benchVerbs     = []string{"get", "get", "get", "update", "patch", "list", "watch", "create", "delete"}
	benchResources = []string{"pods", "leases", "nodes", "configmaps", "secrets", "events"}
	benchExtra     = []byte(`{"annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""},"groups":["system:nodes","system:authenticated"]}`)
)

func (g *lineGen) next() timeline.Record {
	g.n++
	g.t = g.t.Add(time.Duration(g.rng.IntN(6000)) * time.Microsecond)
	if len(g.pending) >= 64 {
		r := g.pending[0]
		g.pending = g.pending[1:]
		r.Stages, r.Code, r.Latency = timeline.StageResponseComplete, 200, g.t.Sub(r.Time)
		r.Evidence.Line = g.n
		return r
	}
	user := fmt.Sprintf("system:node:node-%04d", g.rng.IntN(1000))
	if g.rng.IntN(4) == 0 {
		user = fmt.Sprintf("system:serviceaccount:kube-system:controller-%d", g.rng.IntN(20))
	}
	ns, name := fmt.Sprintf("ns-%d", g.rng.IntN(50)), fmt.Sprintf("obj-%d", g.rng.IntN(5000))
	res := benchResources[g.rng.IntN(len(benchResources))]
	id := fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", g.rng.Uint32(), g.rng.IntN(1<<16), g.rng.IntN(1<<16), g.rng.IntN(1<<16), g.rng.Uint64()&(1<<48-1))
	r := timeline.Record{
		Key:  "audit\x00" + g.prefix + "\x00" + id,
		Time: g.t, Source: timeline.SourceAudit, Verb: benchVerbs[g.rng.IntN(len(benchVerbs))],
		User: user, UserAgent: "kubelet/v1.37.2 (linux/amd64) kubernetes/abcdef0", SourceIP: "10.0.0.1",
		Object: timeline.ObjectRef{Version: "v1", Resource: res, Namespace: ns, Name: name},
		Code:   200, Level: "Metadata", Latency: time.Duration(g.rng.IntN(20_000)) * time.Microsecond,
		Stages: timeline.StageResponseComplete, AuditID: id,
		URI:      "/api/v1/namespaces/" + ns + "/" + res + "/" + name,
		Extra:    benchExtra,
		Evidence: timeline.Evidence{Line: g.n},
	}
	if g.rng.IntN(10) < 3 {
		r.Stages, r.Code, r.Latency = timeline.StageRequestReceived, 0, 0
		g.pending = append(g.pending, r)
	}
	return r
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
