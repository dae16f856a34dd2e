// Package clickhouse is a timeline.Store on a ClickHouse cluster: the
// evidence of a fleet's days, sharded over servers, where one SQLite file
// holds an incident's hours. SCHEMA.md says how the tables are laid out and
// why.
//
// The store talks the native protocol (clickhouse-go/v2). Its DSN names one
// server of the cluster and the cluster:
//
//	clickhouse://127.0.0.1:19001/faultline?cluster=faultline
//
// Open creates the database and each table on every shard of the cluster
// (no ZooKeeper: one DDL per shard, not ON CLUSTER), and a Distributed
// table over each that the store reads and writes through. The SQL runs on
// ClickHouse 18.16 (what Debian ships) and on current releases alike.
package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/redact"
)

// Scheme is the URL scheme of a ClickHouse store's DSN.
const Scheme = "clickhouse"

// Options tune Open.
type Options struct {
	Logger *slog.Logger // nil discards
	// Key hashes Secret values, env literals and args (timeline/redact),
	// as the SQLite store's Key does.
	Key []byte
	// AllowPartial answers queries with a shard down from the shards that
	// answer (the caller marks its output partial); without it such a
	// query fails with a *ShardError.
	AllowPartial bool
	// RedactConfigMaps hashes every ConfigMap value and env literal, not
	// only those that look like credentials; once a write used it, the
	// store keeps it for every later writer (meta.go).
	RedactConfigMaps bool
	// Existing opens only a store that holds a timeline already: a
	// database without one (a name mistyped, nothing ingested yet) is a
	// *NoTimelineError, where a writer would create it.
	Existing bool
}

// NoTimelineError is a database of the cluster that holds no timeline,
// opened to be read (Options.Existing).
type NoTimelineError struct {
	Addr, DB string
}

func (e *NoTimelineError) Error() string {
	return fmt.Sprintf("no timeline in database %s at %s", e.DB, e.Addr)
}

// DSNError is a store DSN that cannot be used.
type DSNError struct {
	DSN    string
	Reason string
}

func (e *DSNError) Error() string {
	return fmt.Sprintf("store %q: %s (want clickhouse://HOST:PORT/DATABASE[?cluster=NAME])", e.DSN, e.Reason)
}

// ShardError is a shard of the cluster that did not answer.
type ShardError struct {
	Shard int    // 1-based, as system.clusters numbers them
	Addr  string // host:port
	Err   error
}

func (e *ShardError) Error() string {
	return fmt.Sprintf("clickhouse shard %d (%s) is unavailable: %v", e.Shard, e.Addr, e.Err)
}

func (e *ShardError) Unwrap() error { return e.Err }

// Store is the ClickHouse timeline. It implements timeline.Store.
type Store struct {
	conn     driver.Conn // the server the DSN names: reads and writes through Distributed tables
	db       string
	cluster  string
	shards   []shard
	log      *slog.Logger
	red      redact.Redactor
	down     []*ShardError // shards that did not answer at Open (AllowPartial)
	settings ch.Settings
	// failed is how every shard keeps the failed requests' copy
	// (failedTable): the least of the shards' kinds.
	failed copyKind
	// deleted is how every shard keeps the deletions' copy
	// (deletedTable): noCopy unless every shard does.
	deleted copyKind
	// slow says every shard keeps slowTable: made with its record table,
	// it holds every slow request written.
	slow bool

	// metaMu guards pendingMeta, the facts the first write records
	// (meta.go); held while they are written, apart from mu, which reads
	// and writes take briefly.
	metaMu      sync.Mutex
	pendingMeta [][2]string

	mu        sync.Mutex       // guards what follows
	open      openSet          // requests written that await a final stage (openreq.go)
	nextID    int64            // the next record id; 0: not read yet
	lastStamp int64            // the last stamp given
	ranks     map[int64]uint64 // the versions held: key -> rank; nil: not read yet
	// heldMax is the time of the latest request (record with stages)
	// held, read once (heldMaxRead) and kept as rows are written: one
	// writer at a time.
	heldMax     int64
	heldMaxRead bool
	roll        *rollupState // the request rollup held; nil: not read yet
	// rewrites are the rewrites held per bucket of time (rewritesIn), and
	// digests record's digests of each copy over a time condition
	// (copyDiffers); nil: not read since the last
	// write.
	rewrites map[int64]int64
	digests  map[string]digests // by copy
	// direct are connections to each shard, for writing records straight
	// to its local table (shardwrite.go); opened at the first write.
	direct []driver.Conn
}

// shard is one server of the cluster.
type shard struct {
	num    int
	weight uint64 // its share of the rows a Distributed table spreads
	addr   string
}

var _ timeline.Store = (*Store)(nil)

// config is a parsed DSN.
type config struct {
	addr, db, cluster string
}

// DefaultCluster is the cluster a DSN without ?cluster= names: the one
// hack/clickhouse/up configures.
const DefaultCluster = "faultline"

// parseDSN reads clickhouse://HOST:PORT/DATABASE?cluster=NAME. The database
// defaults to faultline, the cluster to DefaultCluster.
func parseDSN(dsn string) (config, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return config{}, &DSNError{dsn, err.Error()}
	}
	if u.Scheme != Scheme {
		return config{}, &DSNError{dsn, "the scheme is not " + Scheme}
	}
	if u.Host == "" || u.Port() == "" {
		return config{}, &DSNError{dsn, "no host:port"}
	}
	c := config{addr: u.Host, db: strings.Trim(u.Path, "/"), cluster: u.Query().Get("cluster")}
	if c.db == "" {
		c.db = "faultline"
	}
	if !identifier(c.db) {
		return config{}, &DSNError{dsn, "the database name " + c.db + " is not a plain identifier"}
	}
	switch {
	case !u.Query().Has("cluster"):
		c.cluster = DefaultCluster
	case c.cluster == "":
		return config{}, &DSNError{dsn, "an empty ?cluster= (leave it out for " + DefaultCluster + ")"}
	}
	if !identifier(c.cluster) {
		return config{}, &DSNError{dsn, "the cluster name " + c.cluster + " is not a plain identifier"}
	}
	for k := range u.Query() {
		if k != "cluster" {
			return config{}, &DSNError{dsn, "unknown parameter " + k}
		}
	}
	return c, nil
}

// identifier reports whether s is a name safe to write into SQL unquoted.
func identifier(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// IsDSN reports whether s names a ClickHouse store rather than a file.
func IsDSN(s string) bool { return strings.HasPrefix(s, Scheme+"://") }

func connect(addr, db string, settings ch.Settings) (driver.Conn, error) {
	return ch.Open(&ch.Options{
		Addr:     []string{addr},
		Auth:     ch.Auth{Database: db},
		Settings: settings,
	})
}

// Open connects to the cluster the DSN names and creates what is missing of
// the schema on every shard.
func Open(ctx context.Context, dsn string, opt Options) (*Store, error) {
	c, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	settings := ch.Settings{
		// A batch is committed when every shard holds it, not when the
		// local server has queued it for them.
		"insert_distributed_sync": 1,
	}
	if opt.AllowPartial {
		settings["skip_unavailable_shards"] = 1
	}
	shards, err := shardsOf(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", c.addr, err)
	}
	if opt.Existing {
		if err := holdsTimeline(ctx, c); err != nil {
			return nil, err
		}
	}
	var down []*ShardError
	failed, deleted, slow := copyAlone, copyAlone, true
	for _, sh := range shards {
		k, err := createSchema(ctx, sh, c)
		var se *ShardError
		switch {
		case err == nil:
			failed, deleted, slow = min(failed, k.failed), min(deleted, k.deleted), slow && k.slow
		case opt.AllowPartial && errors.As(err, &se) && ping(ctx, sh.addr) != nil:
			// Its tables were made when it was up; the answers leave
			// its rows out, and say so (Unavailable). Whether it keeps
			// the copies and the slow requests is not known: reads
			// stay on record.
			down = append(down, se)
			failed, deleted, slow = noCopy, noCopy, false
		default:
			return nil, err
		}
	}
	conn, err := connect(c.addr, c.db, settings)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", c.addr, err)
	}
	s := &Store{conn: loggedConn{conn, log}, db: c.db, cluster: c.cluster, shards: shards, log: log, down: down,
		settings: settings, failed: failed, deleted: deleted, slow: slow}
	if err := s.useKey(ctx, dsn, opt); err != nil {
		conn.Close()
		return nil, fmt.Errorf("open store %s: %w", c.addr, err)
	}
	return s, nil
}

// holdsTimeline returns a *NoTimelineError unless the server the DSN names
// has the timeline's record table in its database.
func holdsTimeline(ctx context.Context, c config) error {
	conn, err := connect(c.addr, "default", nil)
	if err != nil {
		return fmt.Errorf("open store %s: %w", c.addr, err)
	}
	defer conn.Close()
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name = 'record'", c.db).Scan(&n); err != nil {
		return fmt.Errorf("open store %s: %w", c.addr, err)
	}
	if n == 0 {
		return &NoTimelineError{Addr: c.addr, DB: c.db}
	}
	return nil
}

// clusterShards lists the shards of cluster from system.clusters.
func clusterShards(ctx context.Context, conn driver.Conn, cluster string) ([]shard, error) {
	rows, err := conn.Query(ctx, "SELECT shard_num, shard_weight, host_address, port FROM system.clusters WHERE cluster = ? ORDER BY shard_num, replica_num", cluster)
	if err != nil {
		return nil, fmt.Errorf("read the cluster %s: %w", cluster, err)
	}
	defer rows.Close()
	var out []shard
	for rows.Next() {
		var (
			num, weight uint32
			host        string
			port        uint16
		)
		if err := rows.Scan(&num, &weight, &host, &port); err != nil {
			return nil, fmt.Errorf("read the cluster %s: %w", cluster, err)
		}
		if len(out) > 0 && out[len(out)-1].num == int(num) {
			continue // a replica of a shard already listed
		}
		out = append(out, shard{num: int(num), weight: uint64(weight), addr: fmt.Sprintf("%s:%d", host, port)})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, unknownCluster(ctx, conn, cluster)
	}
	return out, nil
}

// unknownCluster is the error for a cluster the server does not know: it
// names those the server does, for the DSN's ?cluster=.
func unknownCluster(ctx context.Context, conn driver.Conn, cluster string) error {
	err := fmt.Errorf("the server knows no cluster %q (remote_servers in its config; name one with ?cluster=NAME in the DSN)", cluster)
	rows, qerr := conn.Query(ctx, "SELECT DISTINCT cluster FROM system.clusters ORDER BY cluster")
	if qerr != nil {
		return err
	}
	defer rows.Close()
	var known []string
	for rows.Next() {
		var name string
		if rows.Scan(&name) == nil {
			known = append(known, strconv.Quote(name))
		}
	}
	if len(known) == 0 {
		return fmt.Errorf("%w; it knows none", err)
	}
	return fmt.Errorf("%w; it knows %s", err, strings.Join(known, ", "))
}

// Close closes the connection.
func (s *Store) Close() error {
	err := s.conn.Close()
	for _, c := range s.direct {
		if c != nil {
			err = errors.Join(err, c.Close())
		}
	}
	return err
}

// Shards lists the cluster's shards, as host:port.
func (s *Store) Shards() []string {
	out := make([]string, len(s.shards))
	for i, sh := range s.shards {
		out[i] = sh.addr
	}
	return out
}

// Unavailable lists the shards that did not answer when the store was
// opened with AllowPartial: every answer leaves their rows out.
func (s *Store) Unavailable() []*ShardError { return s.down }

// ping reports whether the server at addr answers.
func ping(ctx context.Context, addr string) error {
	c, err := connect(addr, "default", nil)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Ping(ctx)
}
