package clickhouse

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/cel-go/common/ast"

	"github.com/faultline/faultline/timeline/filtersql"
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
		// joined row again under the same (time_ns, key), marked rewrite.
		// Its stages only grow, so ReplacingMergeTree(stages) keeps the
		// most complete row; reads take the current versions (current).
		name: "record",
		//
		// The strings that repeat are LowCardinality: a dictionary per
		// part and an index per row (the URI and the extra JSON too:
		// about one value in ten is new). An audit ID in the canonical
		// UUID form is kept as a UUID, 16 bytes; another in audit_id.
		// Measured on the 1 M-line benchmark log, after OPTIMIZE FINAL:
		// 75.3 bytes per record with plain strings, 64.2 with the UUID
		// and LowCardinality for the short strings, 54.3 with name, uri
		// and extra LowCardinality too.
		columns: `id Int64, key Int64, time_ns Int64, source LC, api_group LC, api_version LC,
			resource LC, subresource LC, kind LC, namespace LC, name LC, uid String,
			verb LC, reason LC, user LC, user_agent LC, source_ip LC, code Int32,
			type LC, level LC, latency_ns Int64, stages UInt8, audit_uuid UUID, audit_id String, uri LC,
			message String, extra LC, run_id Int64, line Int64, rewrite UInt8`,
		engine:   "ReplacingMergeTree(stages) PARTITION BY " + day + " ORDER BY (time_ns, key)",
		shardKey: "intHash64(key)",
	},
	{
		// One version seen twice keeps its best sighting (rank: the kind
		// of sighting, then the earlier time; see rank).
		//
		// Reads take one kind (or one object) at a time, and each part
		// they meet is read a granule at least, whose content column is
		// the bodies of the rows around it: granules of 1,024 rows, not
		// 8,192. On the 10 M-line benchmark log's versions, five parts
		// a shard as an ingest leaves them, one kind's versions were
		// read in 20-78 ms instead of 74-236 (SCHEMA.md).
		name: "object_version",
		columns: `key Int64, api_group String, api_version String, resource String, kind String,
			namespace String, name String, uid String, resource_version String, time_ns Int64,
			hash String, content String, run_id Int64, line Int64, seen Int8, rank UInt64`,
		engine:   "ReplacingMergeTree(rank) ORDER BY (resource, namespace, name, key) SETTINGS index_granularity = 1024",
		shardKey: "intHash64(key)",
	},
	{
		name: "ingest_run",
		columns: `id Int64, source String, path String, size Int64, sha256 String, started_ns Int64,
			finished_ns Int64, first_ns Int64, last_ns Int64, lines Int64, records Int64, merged Int64,
			duplicates Int64, conflicts Int64, versions Int64, bad_lines Int64, status String,
			error String, updated_ns Int64, since_ns Int64, until_ns Int64, outside Int64`,
		engine:   "ReplacingMergeTree(updated_ns) ORDER BY id",
		shardKey: "intHash64(id)",
	},
	{
		// Facts every writer honours (meta.go); the first row of a key
		// wins, so the engine keeps every row.
		name:     "meta",
		columns:  `k String, v String, at_ns Int64`,
		engine:   "MergeTree() ORDER BY (k, at_ns)",
		shardKey: "cityHash64(k)",
	},
	{
		// record's digests of a copy over the whole table (storedDigests),
		// with the state of record's parts they were read at: a cache any
		// reader fills and any reader may use. The latest row of a copy
		// is the one kept: an earlier state does not come back.
		name: "record_digest",
		columns: `copy String, parts String, blo Int64, bhi Int64, buckets Array(Int64),
			requests Array(UInt64), sums Array(UInt64), at_ns Int64`,
		engine:   "ReplacingMergeTree(at_ns) ORDER BY copy",
		shardKey: "cityHash64(copy)",
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

	// Prometheus evidence (series.go): a series keyed by
	// timeline.SeriesID, its labels in two arrays in name order; its raw
	// samples on the same shard (both sharded by the series id), one row
	// per (series, time_ns), which the writer looks up before it inserts
	// (a row written twice is folded at merge, and reads take FINAL).
	{
		name:     "series",
		columns:  `id Int64, metric String, names Array(String), values Array(String), run_id Int64`,
		engine:   "ReplacingMergeTree() ORDER BY id",
		shardKey: "intHash64(id)",
	},
	{
		name:     "sample",
		columns:  `series Int64, time_ns Int64, value Float64, run_id Int64`,
		engine:   "ReplacingMergeTree() PARTITION BY " + day + " ORDER BY (series, time_ns)",
		shardKey: "intHash64(series)",
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

// insert is the INSERT of every column of the named table, in schema
// order.
func insert(name string) string {
	return "INSERT INTO " + name + " (" + strings.Join(columnNames(tableNamed(name).columns), ", ") + ")"
}

// tableNamed is the schema's table of that name, slowTable included.
func tableNamed(name string) table {
	for _, t := range append(slices.Clip(schema), slowTable) {
		if t.name == name {
			return t
		}
	}
	panic("no table " + name)
}

// columnNames are the names in a table's column list: split at the commas
// outside parentheses (AggregateFunction(sum, Int64) holds one).
func columnNames(columns string) []string {
	var names []string
	depth, start := 0, 0
	for i := 0; i <= len(columns); i++ {
		if i < len(columns) {
			switch columns[i] {
			case '(':
				depth++
			case ')':
				depth--
			}
			if columns[i] != ',' || depth > 0 {
				continue
			}
		}
		if f := strings.Fields(columns[start:i]); len(f) > 0 {
			names = append(names, f[0])
		}
		start = i + 1
	}
	return names
}

// A copy is a table of some of record's rows, every column, kept by a
// materialized view as they are written: a read whose filter admits only
// such rows reads it instead of record, where a filter that keeps few rows
// scattered over every granule decompresses nearly every column whole. A
// plan uses it only for the buckets of time where it is known to hold what
// record does (plan).
type copyTable struct {
	name string // the table; its local table is name_local
	// cond is the rows of record it takes, in SQL: in a copy that judges
	// its current versions alone (copyAlone), every version of a request
	// after the first one it takes.
	cond string
	// holds reports whether a filter keeps only rows the copy takes.
	holds func(ast.Expr) bool
}

// copies are the copies a store may keep, in the order a read looks for
// one (copyFor): the smaller first.
var copies = []*copyTable{deletedCopy, failedCopy}

var failedCopy = &copyTable{name: "failed", cond: copiedSQL, holds: func(e ast.Expr) bool {
	return filtersql.AtLeast(e, "code", failedCode)
}}

// deletedCopy is the deletions' copy (deletedTable).
var deletedCopy = &copyTable{name: "deleted", cond: "verb IN ('" + strings.Join(deleteVerbs, "', '") + "')",
	holds: func(e ast.Expr) bool { return filtersql.OneOf(e, "verb", deleteVerbs) }}

// deleteVerbs are the verbs of the requests the deletions' copy takes.
var deleteVerbs = []string{"delete", "deletecollection"}

// kindOf is how every shard keeps copy cp.
func (s *Store) kindOf(cp *copyTable) copyKind {
	if cp == deletedCopy {
		return s.deleted
	}
	return s.failed
}

// deletedTable is a copy of the record rows of deletions, every version:
// an investigation reads the deletions of the objects its pods used
// (analyze/identity), and a user asks who deleted what. On the 10 M-line
// benchmark log they are one record in a few hundred, in every granule of
// record: a read of the ConfigMap and Secret deletions of the pods' names
// took 1.3 s, and the rewrites at their times 0.6 s more (SCHEMA.md). A
// request's versions share its verb, so the copy holds every version of
// each request it takes and judges its current versions alone
// (copyAlone), with no marks.
var deletedTable = func() table {
	t := tableNamed("record")
	t.name = deletedCopy.name
	return t
}()

// deletedView fills deletedTable from every insert into record_local.
var deletedView = "CREATE MATERIALIZED VIEW IF NOT EXISTS %[1]s.deleted_mv TO %[1]s.deleted_local AS " +
	"SELECT * FROM %[1]s.record_local WHERE " + deletedCopy.cond

// failedTable is a copy of the record rows of failed requests (code 400 or
// above), every version, kept by failedView as they are written. A read
// whose filter admits only such records (filtersql.AtLeast) reads it
// instead of record: on the 10 M-line benchmark log such rows are about
// one in forty, spread over every granule of record, so a read of them
// from record decompresses nearly every column whole (SCHEMA.md). A plan
// uses it only for the buckets of time where it is known to hold what
// record does (plan).
//
// The copy also takes every version of a request after the first one it
// took (rewrite = markedRewrite): the writer marks a rewrite whose
// previous version the copy took, because it failed or was marked itself,
// even one that succeeded. So a request's current version is in the copy
// whenever any of its versions is; the copy judges its current versions
// from its own rewrites, without reading record's (copyAlone), and a plan
// can check it against record in any state of either table's merges
// (plan). (An older writer marked only the rewrite right after a failed
// version: the latest version the copy holds still failed exactly when
// the current one did, see currentIn.) A copy made before the marks
// (failedViewUnmarked, by an older faultline) lacks them: its current
// versions are judged from record's rewrites (copyByRecord).
var failedTable = func() table {
	t := tableNamed("record")
	t.name = "failed"
	return t
}()

// failedCode is the least code of a row failedTable holds.
const failedCode = 400

// The rewrite column of a record row: the first version of a record is
// written unmarked; a later one is a rewrite, marked markedRewrite when the
// failed requests' copy took the version it supersedes (copiedRow).
const (
	plainRewrite  = 1
	markedRewrite = 2
)

// copiedRow reports whether the failed requests' copy takes a row of this
// code and rewrite column (failedView's condition).
func copiedRow(code int, rewrite uint8) bool {
	return code >= failedCode || rewrite == markedRewrite
}

// copiedSQL is copiedRow's condition in SQL.
var copiedSQL = "(code >= " + strconv.Itoa(failedCode) + " OR rewrite = " + strconv.Itoa(markedRewrite) + ")"

// failedView fills failedTable from every insert into record_local: the
// failed versions, and the marked rewrites.
var failedView = failedViewOf("failed_mv2", " OR rewrite = "+strconv.Itoa(markedRewrite))

// failedViewUnmarked is the view an older faultline made: the failed
// versions only. It is created again (if missing) only in a database
// that has it, alongside its copy.
var failedViewUnmarked = failedViewOf("failed_mv", "")

// failedViewOf is the statement of a view named name that copies into
// failedTable the failed rows of record_local, and those that also meet
// or (a condition after OR, or nothing); %[1]s in it is the database.
func failedViewOf(name, or string) string {
	return "CREATE MATERIALIZED VIEW IF NOT EXISTS %[1]s." + name + " TO %[1]s.failed_local AS " +
		"SELECT * FROM %[1]s.record_local WHERE code >= " + strconv.Itoa(failedCode) + or
}

// copyKind is how far a database's copy (failedTable, deletedTable) can
// be read.
type copyKind int

const (
	// noCopy: the database keeps no copy (its record table was made
	// before the copy existed), or a shard's is unknown (down).
	noCopy copyKind = iota
	// copyByRecord: the copy holds the failed versions only, and its
	// current versions are judged from record's rewrites.
	copyByRecord
	// copyAlone: the copy also holds the marked rewrites (every version
	// after the first one it takes; right after a failure only, if an
	// older writer wrote them), and judges its current versions by itself.
	copyAlone
)

// kept is what a shard keeps beside its record table, each made with it
// or never: a table made later would miss the rows already held.
type kept struct {
	failed  copyKind // failedTable
	deleted copyKind // deletedTable: copyAlone or noCopy
	slow    bool     // slowTable
}

// createSchema creates the database and every table on one shard, local
// tables and the Distributed tables over them; what exists is left alone.
// It reports what the shard keeps beside record. A database whose record
// table was made before failedTable (by an older faultline) does not get
// one, as the copy would miss the rows already held, and its reads stay on
// record; one whose copy was made before the marked rewrites keeps it as
// it is (copyByRecord), as the copy would miss the marked rewrites already
// held. The same holds of deletedTable and slowTable: a database made
// before one does not get it, and reads record instead.
func createSchema(ctx context.Context, sh shard, c config) (k kept, err error) {
	// 18.16 creates LowCardinality columns only with this setting; later
	// versions accept it and ignore it.
	conn, err := connect(sh.addr, "default", ch.Settings{"allow_experimental_low_cardinality_type": 1})
	if err != nil {
		return kept{}, &ShardError{Shard: sh.num, Addr: sh.addr, Err: err}
	}
	defer conn.Close()
	if err := conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+c.db); err != nil {
		return kept{}, &ShardError{Shard: sh.num, Addr: sh.addr, Err: fmt.Errorf("create schema: %w", err)}
	}
	held, err := tablesOf(ctx, conn, c.db)
	if err != nil {
		return kept{}, &ShardError{Shard: sh.num, Addr: sh.addr, Err: fmt.Errorf("check schema: %w", err)}
	}
	switch {
	case held["failed_mv2"] || !held["record_local"]:
		k.failed = copyAlone
	case held["failed_local"]:
		k.failed = copyByRecord
	}
	if held["deleted_mv"] || !held["record_local"] {
		k.deleted = copyAlone
	}
	k.slow = held[slowTable.name+"_local"] || !held["record_local"]
	tables := schema
	if k.failed != noCopy {
		tables = append(slices.Clip(tables), failedTable)
	}
	if k.deleted != noCopy {
		tables = append(slices.Clip(tables), deletedTable)
	}
	if k.slow {
		tables = append(slices.Clip(tables), slowTable)
	}
	var stmts []string
	for _, t := range tables {
		// LC in a column list is short for LowCardinality(String).
		cols := strings.ReplaceAll(strings.Join(strings.Fields(t.columns), " "), " LC,", " LowCardinality(String),")
		stmts = append(stmts,
			fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s_local (%s) ENGINE = %s", c.db, t.name, cols, t.engine),
			fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s AS %s.%s_local ENGINE = Distributed(%s, %s, %s_local, %s)",
				c.db, t.name, c.db, t.name, c.cluster, c.db, t.name, t.shardKey))
	}
	vs := views
	switch k.failed {
	case copyAlone:
		vs = append(slices.Clip(vs), failedView)
	case copyByRecord:
		vs = append(slices.Clip(vs), failedViewUnmarked)
	}
	if k.deleted != noCopy {
		vs = append(slices.Clip(vs), deletedView)
	}
	for _, v := range vs {
		stmts = append(stmts, strings.Join(strings.Fields(fmt.Sprintf(v, c.db)), " "))
	}
	// Every shard's parts, which tell the state of record's (partsKey).
	stmts = append(stmts, fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s AS system.parts ENGINE = Distributed(%s, system, parts)",
		c.db, shardParts, c.cluster))
	for _, q := range stmts {
		if err := conn.Exec(ctx, q); err != nil {
			return kept{}, &ShardError{Shard: sh.num, Addr: sh.addr, Err: fmt.Errorf("create schema: %w", err)}
		}
	}
	if err := addColumns(ctx, conn, c.db); err != nil {
		return kept{}, &ShardError{Shard: sh.num, Addr: sh.addr, Err: fmt.Errorf("upgrade schema: %w", err)}
	}
	return k, checkColumns(ctx, conn, sh, c.db, tables)
}

// addedColumns are columns added to a table after databases were made
// with it, with the value an older row reads: createSchema adds them to
// such a database (ClickHouse 18.16 has no ADD COLUMN IF NOT EXISTS).
// Only columns whose default is what an older writer meant belong here.
var addedColumns = []struct{ table, column, def string }{
	// ingest audit --since/--until: an older run kept every record.
	{"ingest_run", "since_ns", "Int64 DEFAULT " + noTimeSQL},
	{"ingest_run", "until_ns", "Int64 DEFAULT " + noTimeSQL},
	{"ingest_run", "outside", "Int64 DEFAULT 0"},
}

// noTimeSQL is timeline.NoTimeNS as a ClickHouse literal.
var noTimeSQL = "toInt64(" + strconv.FormatInt(noTime, 10) + ")"

// addColumns adds the addedColumns a database of db lacks, to the local
// table and the Distributed one. Two processes that upgrade at once both
// try; the one that finds the column there already carries on.
func addColumns(ctx context.Context, conn driver.Conn, db string) error {
	have, err := columnsOf(ctx, conn, db)
	if err != nil {
		return err
	}
	for _, a := range addedColumns {
		for _, tab := range []string{a.table + "_local", a.table} {
			if have[[2]string{tab, a.column}] {
				continue
			}
			err := conn.Exec(ctx, fmt.Sprintf("ALTER TABLE %s.%s ADD COLUMN %s %s", db, tab, a.column, a.def))
			if err == nil {
				continue
			}
			var n uint64
			if cerr := conn.QueryRow(ctx, "SELECT count() FROM system.columns WHERE database = ? AND table = ? AND name = ?",
				db, tab, a.column).Scan(&n); cerr != nil || n == 0 {
				return err
			}
		}
	}
	return nil
}

// tablesOf is the set of the tables database db holds.
func tablesOf(ctx context.Context, conn driver.Conn, db string) (map[string]bool, error) {
	rows, err := conn.Query(ctx, "SELECT name FROM system.tables WHERE database = ?", db)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		out[name] = true
	}
	return out, rows.Err()
}

// SchemaError is a database made by another version of faultline: a table
// lacks a column this one reads or writes.
type SchemaError struct {
	Database, Table, Column string
	Shard                   int
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("database %s on shard %d was made by another version of faultline: table %s has no column %s;"+
		" ingest into a new database (another DSN path) or drop this one", e.Database, e.Shard, e.Table, e.Column)
}

// checkColumns checks that the tables that existed before createSchema
// have every column of the schema: CREATE TABLE IF NOT EXISTS leaves an
// older table as it is, and ClickHouse 18.16 has no ADD COLUMN IF NOT
// EXISTS.
func checkColumns(ctx context.Context, conn driver.Conn, sh shard, db string, tables []table) error {
	have, err := columnsOf(ctx, conn, db)
	if err != nil {
		return &ShardError{Shard: sh.num, Addr: sh.addr, Err: fmt.Errorf("check schema: %w", err)}
	}
	for _, t := range tables {
		for _, name := range columnNames(t.columns) {
			for _, tab := range []string{t.name + "_local", t.name} {
				if !have[[2]string{tab, name}] {
					return &SchemaError{Database: db, Table: tab, Column: name, Shard: sh.num}
				}
			}
		}
	}
	return nil
}

// columnsOf is the set of (table, column) of database db.
func columnsOf(ctx context.Context, conn driver.Conn, db string) (map[[2]string]bool, error) {
	rows, err := conn.Query(ctx, "SELECT table, name FROM system.columns WHERE database = ?", db)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have := map[[2]string]bool{}
	for rows.Next() {
		var t, c string
		if err := rows.Scan(&t, &c); err != nil {
			return nil, err
		}
		have[[2]string{t, c}] = true
	}
	return have, rows.Err()
}

// final is the rows of table that match where, as merged (FINAL: one row
// per sorting key, the greatest version). It reads every column: FINAL over
// a Distributed table on ClickHouse 18.16 fails unless the query reads the
// version column.
func final(table, where string) string {
	return "(SELECT * FROM " + table + " FINAL WHERE " + where + ")"
}

// current is the condition that keeps, of the rows of record in the time
// range rng, the current version of each record, as FINAL would merge them
// but without FINAL's cost: FINAL reads every column of every row in the
// range and merges them, where most rows have one version only.
//
// A record has one version unless a later stage joined it after it was
// written; each later version is written marked a rewrite (rewrite != 0),
// with more stages. So a row is current when no rewrite shares its
// (time_ns, key), or when it is the rewrite with the most stages. A merge
// keeps the row with the most stages, itself a rewrite when there was
// more than one version, so the rule holds before, during and after
// merges. Every version of a record lives on one shard (the shard key is
// its key): each shard judges its own rows, from its local table.
func current(db, rng string) string { return currentIn(db+".record_local", rng) }

// currentIn is current, judged from the rewrites of local, a shard's local
// table: record_local, or failed_local for the rows of a copy that holds
// every version after a failed one (copyAlone). The latest version of a
// request either failed, and is copied, or is copied when the version
// before it was copied (markedRewrite), or follows an unfailed version, as
// does every version after the last that the copy holds: so the copy's
// latest version failed exactly when the request's current one did. (The
// argument needs only the marks an older writer made too: every rewrite
// right after a failed version.)
func currentIn(local, rng string) string {
	return fmt.Sprintf("((time_ns, key) NOT IN (SELECT time_ns, key FROM %[1]s WHERE %[2]s AND rewrite != 0)"+
		" OR (time_ns, key, stages) IN (SELECT time_ns, key, max(stages) FROM %[1]s WHERE %[2]s AND rewrite != 0 GROUP BY time_ns, key))",
		local, rng)
}

// noUUID is the UUID column's value for an audit ID that is not a
// canonical UUID (kept in audit_id instead).
const noUUID = "00000000-0000-0000-0000-000000000000"

// auditIDSQL is the audit ID of a record row.
const auditIDSQL = "if(audit_uuid = toUUID('" + noUUID + "'), audit_id, toString(audit_uuid))"

// splitAuditID is the audit_uuid and audit_id columns of an audit ID: a
// UUID in the canonical form (lower-case hex, as the apiserver writes it)
// goes in audit_uuid, which reads back the same text; any other ID, and
// the nil UUID, in audit_id.
func splitAuditID(id string) (uuid, rest string) {
	if len(id) != len(noUUID) || id == noUUID {
		return noUUID, id
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return noUUID, id
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return noUUID, id
			}
		}
	}
	return id, ""
}
