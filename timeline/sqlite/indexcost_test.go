package sqlite

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkIndexCost measures what each index of the record table costs an
// insert: the same 100,000 record rows (1,000 nodes, 50 namespaces, 5,000
// objects, in time order, 1 % errors) inserted through one prepared
// statement into a copy of the record table with no index, with the unique
// key alone (as it was: a 64-bit hash; as it is: time and key), and with
// each secondary index added to it. Each sub-benchmark reports ns/record;
// compare them within one run.
func BenchmarkIndexCost(b *testing.B) {
	const rows = 100_000
	data := indexCostRows(rows)
	for _, c := range indexCostCases() {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				insertIndexCostRows(b, c.index, data)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows*b.N), "ns/record")
		})
	}
}

// indexCase is a set of indexes on the copy of the record table.
type indexCase struct {
	name  string
	index []string
}

// indexCostCases: no index, each unique key alone, the time key with each
// secondary index, and each key with all of them.
func indexCostCases() []indexCase {
	unique := map[string]string{
		"hash-key": "CREATE UNIQUE INDEX t_key ON t (key)",
		"time-key": "CREATE UNIQUE INDEX t_time_key ON t (time_ns, key)",
	}
	secondary := []struct{ name, sql string }{
		{"user", "CREATE INDEX t_user ON t (user, time_ns)"},
		{"resource", "CREATE INDEX t_resource ON t (resource, verb, time_ns)"},
		{"object", "CREATE INDEX t_object ON t (namespace, name, time_ns)"},
		{"error", "CREATE INDEX t_error ON t (code, time_ns) WHERE code >= 400"},
		{"reason", "CREATE INDEX t_reason ON t (reason, time_ns) WHERE reason != 0"},
	}
	cases := []indexCase{{"none", nil}, {"hash-key", []string{unique["hash-key"]}}, {"time-key", []string{unique["time-key"]}}}
	var all []string
	for _, s := range secondary {
		all = append(all, s.sql)
		cases = append(cases, indexCase{"time-key+" + s.name, []string{unique["time-key"], s.sql}})
	}
	return append(cases,
		indexCase{"time-key+all", append([]string{unique["time-key"]}, all...)},
		indexCase{"hash-key+all+time", append([]string{unique["hash-key"], "CREATE INDEX t_time ON t (time_ns)"}, all...)})
}

// costRow is the varying columns of one record row.
type costRow struct {
	key, t, user, resource, verb, ns, name, code int64
}

// indexCostRows makes n rows: 1,000 nodes, 50 namespaces, 5,000 objects,
// in time order, 1 % errors.
func indexCostRows(n int) []costRow {
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	data := make([]costRow, n)
	for i := range data {
		code := int64(200)
		if rng.IntN(100) == 0 {
			code = 500
		}
		data[i] = costRow{int64(rng.Uint64()), t0 + int64(i)*int64(time.Millisecond), 10 + rng.Int64N(1000),
			1010 + rng.Int64N(20), 1030 + rng.Int64N(6), 1040 + rng.Int64N(50), 1100 + rng.Int64N(5000), code}
	}
	return data
}

// insertIndexCostRows inserts data into a fresh copy of the record table
// with index, timing only the inserts and their commit.
func insertIndexCostRows(b *testing.B, index []string, data []costRow) {
	ctx := context.Background()
	b.StopTimer()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "b.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, "CREATE TABLE t AS SELECT * FROM record WHERE 0;"+strings.Join(index, ";")); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO t (id, key, time_ns, source, api_group, api_version, resource,
		subresource, kind, namespace, name, uid, verb, reason, user, user_agent, source_ip, code, type, level,
		latency_ns, stages, audit_id, uri, message, run_id, line, extra)
		VALUES (NULL, ?, ?, 1, 0, 2, ?, 0, 0, ?, ?, '', ?, 0, ?, 3, 4, ?, 0, 5, 1000000, 4,
		'0b6a7d3e-2f1c-4f57-9d0c-3c8f1f3c2a11', '/api/v1/namespaces/ns-1/pods/pod-1', '', 1, ?, NULL)`)
	if err != nil {
		b.Fatal(err)
	}
	for i, r := range data {
		if _, err := st.ExecContext(ctx, r.key, r.t, r.resource, r.ns, r.name, r.verb, r.user, r.code, i); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	s.Close()
	b.StartTimer()
}
