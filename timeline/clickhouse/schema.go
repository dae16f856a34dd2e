package clickhouse

import (
	"context"
	"fmt"
	"strings"
)

// table is one table of the schema: created as NAME_local on every shard,
// and as NAME, a Distributed table over the NAME_local of every shard,
// sharded by shardKey.
type table struct {
	name, columns, engine, shardKey string
}

// day partitions by the UTC day of time_ns, as an integer (days since the
// epoch): a day's evidence is dropped or moved as a unit, and a query for
// an incident's hours reads only its days' parts.
const day = "intDiv(time_ns, 86400000000000)"

var schema = []table{
	{
		// A request's stages arrive as separate lines; the store joins them
		// (in memory, and against the rows held at commit) and writes the
		// joined row again under the same (time_ns, key). Its stages only
		// grow, so ReplacingMergeTree(stages) keeps the most complete row;
		// reads take FINAL.
		name: "record",
		columns: `id Int64, key Int64, time_ns Int64, source String, api_group String, api_version String,
			resource String, subresource String, kind String, namespace String, name String, uid String,
			verb String, reason String, user String, user_agent String, source_ip String, code Int32,
			type String, level String, latency_ns Int64, stages UInt8, audit_id String, uri String,
			message String, extra String, run_id Int64, line Int64`,
		engine:   "ReplacingMergeTree(stages) PARTITION BY " + day + " ORDER BY (time_ns, key)",
		shardKey: "intHash64(key)",
	},
	{
		// One version seen twice keeps its best sighting (rank: the kind
		// of sighting, then the earlier time; see rank).
		name: "object_version",
		columns: `key Int64, api_group String, api_version String, resource String, kind String,
			namespace String, name String, uid String, resource_version String, time_ns Int64,
			hash String, content String, run_id Int64, line Int64, seen Int8, rank UInt64`,
		engine:   "ReplacingMergeTree(rank) ORDER BY (resource, namespace, name, key)",
		shardKey: "intHash64(key)",
	},
	{
		name: "ingest_run",
		columns: `id Int64, source String, path String, size Int64, sha256 String, started_ns Int64,
			finished_ns Int64, first_ns Int64, last_ns Int64, lines Int64, records Int64, merged Int64,
			duplicates Int64, conflicts Int64, versions Int64, bad_lines Int64, status String,
			error String, updated_ns Int64`,
		engine:   "ReplacingMergeTree(updated_ns) ORDER BY id",
		shardKey: "intHash64(id)",
	},
	{
		name:     "watch_cursor",
		columns:  `name String, resource_version String, updated_ns Int64`,
		engine:   "ReplacingMergeTree(updated_ns) ORDER BY name",
		shardKey: "cityHash64(name)",
	},
	{
		name:     "bisect_session",
		columns:  `id Int64, started_ns Int64, ended_ns Int64, updated_ns Int64`,
		engine:   "ReplacingMergeTree(updated_ns) ORDER BY id",
		shardKey: "intHash64(id)",
	},
	{
		name:     "bisect_mark",
		columns:  `session_id Int64, seq Int64, kind String, time_ns Int64, note String, at_ns Int64`,
		engine:   "ReplacingMergeTree(at_ns) ORDER BY (session_id, seq)",
		shardKey: "intHash64(session_id)",
	},

	// The request rollup (rollup.go): each commit writes what its records
	// change, as rows that the engines sum at merge and reads sum again
	// (GROUP BY), so the rows of a commit that takes a request back are
	// negative and simply add up.
	{
		// Written once per class, with the id the writer gave it.
		name: "req_class",
		columns: `id Int64, verb String, api_group String, resource String, subresource String, scope String,
			user String, user_agent String`,
		engine:   "ReplacingMergeTree() ORDER BY id",
		shardKey: "intHash64(id)",
	},
	{
		name:     "req_second",
		columns:  `class Int64, sec Int64, n Int64`,
		engine:   "SummingMergeTree(n) PARTITION BY intDiv(sec, 86400) ORDER BY (sec, class)",
		shardKey: "cityHash64(class, sec)",
	},
	{
		name:     "req_client",
		columns:  `minute Int64, class Int64, user String, n Int64`,
		engine:   "SummingMergeTree(n) PARTITION BY intDiv(minute, 86400) ORDER BY (minute, class, user)",
		shardKey: "cityHash64(minute, class, user)",
	},
	{
		// The per-minute cells take maxima as well as sums, which
		// SummingMergeTree cannot keep (and 18.16 has no
		// SimpleAggregateFunction): rows are inserted plain into this
		// Null table, and a materialized view on each shard (views)
		// turns them into aggregate states in req_stat. A cell's
		// latency sum is kept as its high and low 32 bits, summed apart
		// (rollup.SplitSum), which cannot overflow.
		name: "req_stat_in",
		columns: `minute Int64, class Int64, code Int32, bucket Int32, epoch Int64, n Int64, etcd_lists Int64,
			unpaged_lists Int64, lat_hi Int64, lat_lo Int64, lat_max Int64, apf_wait_max Int64`,
		engine:   "Null",
		shardKey: statShard,
	},
	{
		// epoch tells apart the lives of a cell that a commit emptied
		// (see Store.epochs): a read sums each life apart and keeps those
		// that hold requests, as the SQLite store deletes an emptied row.
		name: "req_stat",
		columns: `minute Int64, class Int64, code Int32, bucket Int32, epoch Int64,
			sum_n AggregateFunction(sum, Int64), sum_etcd AggregateFunction(sum, Int64),
			sum_unpaged AggregateFunction(sum, Int64), sum_lat_hi AggregateFunction(sum, Int64),
			sum_lat_lo AggregateFunction(sum, Int64), max_lat AggregateFunction(max, Int64),
			max_apf AggregateFunction(max, Int64)`,
		engine:   "AggregatingMergeTree() PARTITION BY intDiv(minute, 86400) ORDER BY (minute, class, code, bucket, epoch)",
		shardKey: statShard,
	},
	{
		// The current epoch of each cell ever emptied: a handful, as only
		// a Panic that replaces a ResponseComplete empties one.
		name:     "req_stat_epoch",
		columns:  `minute Int64, class Int64, code Int32, bucket Int32, epoch Int64`,
		engine:   "ReplacingMergeTree(epoch) ORDER BY (minute, class, code, bucket)",
		shardKey: statShard,
	},
}

// statShard places the rows of one per-minute cell on one shard, where
// merges fold them.
const statShard = "cityHash64(minute, class, code, bucket)"

// views are the materialized views created on each shard after the
// tables: %[1]s is the database. The states are named apart from the
// columns they aggregate: an alias that names a column it reads is taken
// differently by ClickHouse's old and new query analyzers.
var views = []string{
	`CREATE MATERIALIZED VIEW IF NOT EXISTS %[1]s.req_stat_mv TO %[1]s.req_stat_local AS
	SELECT minute, class, code, bucket, epoch, sumState(n) AS sum_n, sumState(etcd_lists) AS sum_etcd,
		sumState(unpaged_lists) AS sum_unpaged, sumState(lat_hi) AS sum_lat_hi, sumState(lat_lo) AS sum_lat_lo,
		maxState(lat_max) AS max_lat, maxState(apf_wait_max) AS max_apf
	FROM %[1]s.req_stat_in_local GROUP BY minute, class, code, bucket, epoch`,
}

// insert is the INSERT of every column of the named table, in schema order
// (not of req_stat, whose column types hold commas).
func insert(name string) string {
	for _, t := range schema {
		if t.name != name {
			continue
		}
		var cols []string
		for _, c := range strings.Split(t.columns, ",") {
			cols = append(cols, strings.Fields(c)[0])
		}
		return "INSERT INTO " + name + " (" + strings.Join(cols, ", ") + ")"
	}
	panic("no table " + name)
}

// createSchema creates the database and every table on one shard, local
// tables and the Distributed tables over them; what exists is left alone.
func createSchema(ctx context.Context, sh shard, c config) error {
	conn, err := connect(sh.addr, "default", nil)
	if err != nil {
		return &ShardError{Shard: sh.num, Addr: sh.addr, Err: err}
	}
	defer conn.Close()
	stmts := []string{"CREATE DATABASE IF NOT EXISTS " + c.db}
	for _, t := range schema {
		cols := strings.Join(strings.Fields(t.columns), " ")
		stmts = append(stmts,
			fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s_local (%s) ENGINE = %s", c.db, t.name, cols, t.engine),
			fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s AS %s.%s_local ENGINE = Distributed(%s, %s, %s_local, %s)",
				c.db, t.name, c.db, t.name, c.cluster, c.db, t.name, t.shardKey))
	}
	for _, v := range views {
		stmts = append(stmts, strings.Join(strings.Fields(fmt.Sprintf(v, c.db)), " "))
	}
	for _, q := range stmts {
		if err := conn.Exec(ctx, q); err != nil {
			return &ShardError{Shard: sh.num, Addr: sh.addr, Err: fmt.Errorf("create schema: %w", err)}
		}
	}
	return nil
}

// final is the rows of table that match where, as merged (FINAL: one row
// per sorting key, the greatest version). It reads every column: FINAL over
// a Distributed table on ClickHouse 18.16 fails unless the query reads the
// version column.
func final(table, where string) string {
	return "(SELECT * FROM " + table + " FINAL WHERE " + where + ")"
}
