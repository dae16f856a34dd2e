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
}

// insert is the INSERT of every column of the named table, in schema order.
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
