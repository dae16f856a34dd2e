package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
)

// A database of its own per use (a test, an incident that faultline eval
// replays) is a DSN with another database name, dropped on every shard
// when done.

// WithDatabase returns dsn naming the database db instead of its own, on
// the same server and cluster.
func WithDatabase(dsn, db string) (string, error) {
	if _, err := parseDSN(dsn); err != nil {
		return "", err
	}
	if !identifier(db) {
		return "", &DSNError{dsn, "the database name " + db + " is not a plain identifier"}
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", &DSNError{dsn, err.Error()}
	}
	u.Path = "/" + db
	return u.String(), nil
}

// ShardAddrs lists the shards of the DSN's cluster, as host:port, in shard
// order.
func ShardAddrs(ctx context.Context, dsn string) ([]string, error) {
	c, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	shards, err := shardsOf(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("read the shards of %s: %w", c.addr, err)
	}
	out := make([]string, len(shards))
	for i, sh := range shards {
		out[i] = sh.addr
	}
	return out, nil
}

// DropDatabase drops the DSN's database, tables and all, on every shard of
// its cluster; a database that is not there is no error. It tries every
// shard, and returns a *ShardError for each that it could not drop it on
// (errors.Join). Its tables hold nothing of the Distributed engine's queue
// (the store inserts synchronously), so nothing is left behind on a shard
// that answered.
func DropDatabase(ctx context.Context, dsn string) error {
	c, err := parseDSN(dsn)
	if err != nil {
		return err
	}
	shards, err := shardsOf(ctx, c)
	if err != nil {
		return fmt.Errorf("drop database %s: %w", c.db, err)
	}
	var errs []error
	for _, sh := range shards {
		if err := dropOn(ctx, sh, c.db); err != nil {
			errs = append(errs, &ShardError{Shard: sh.num, Addr: sh.addr, Err: fmt.Errorf("drop database %s: %w", c.db, err)})
		}
	}
	return errors.Join(errs...)
}

// shardsOf lists the shards of c's cluster, as the server c names knows
// them.
func shardsOf(ctx context.Context, c config) ([]shard, error) {
	boot, err := connect(c.addr, "default", nil)
	if err != nil {
		return nil, err
	}
	defer boot.Close()
	return clusterShards(ctx, boot, c.cluster)
}

// databaseNotEmpty is ClickHouse's DATABASE_NOT_EMPTY: a table appeared in
// the database being dropped. A CREATE TABLE that its client abandoned (a
// context cancelled in the middle of Open) still runs to its end on the
// server, and may land in the middle of the drop.
const databaseNotEmpty = 219

// dropTries bounds how often dropOn drops a database again while tables
// land in it.
const dropTries = 10

// dropOn drops the database db on the shard sh, again (after a pause that
// grows) while tables of abandoned queries land in it.
func dropOn(ctx context.Context, sh shard, db string) error {
	conn, err := connect(sh.addr, "default", nil)
	if err != nil {
		return err
	}
	defer conn.Close()
	for try := 1; ; try++ {
		err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+db)
		var ex *ch.Exception
		if err == nil || !errors.As(err, &ex) || ex.Code != databaseNotEmpty || try == dropTries {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(try) * 50 * time.Millisecond):
		}
	}
}
