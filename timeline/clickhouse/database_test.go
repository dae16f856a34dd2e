package clickhouse_test

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/clickhouse"
	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
	"github.com/faultline/faultline/timeline/timelinetest"
)

func TestWithDatabase(t *testing.T) {
	for _, tc := range []struct {
		dsn, db, want string
		reason        string // of the *DSNError; "" for none
	}{
		{dsn: "clickhouse://ch:9000/faultline?cluster=c", db: "faultline_eval_1a", want: "clickhouse://ch:9000/faultline_eval_1a?cluster=c"},
		{dsn: "clickhouse://ch:9000?cluster=c", db: "x", want: "clickhouse://ch:9000/x?cluster=c"},
		{dsn: "clickhouse://ch:9000/faultline?cluster=c", db: "x;DROP", reason: "the database name x;DROP is not a plain identifier"},
		{dsn: "clickhouse://ch:9000/faultline", db: "x", want: "clickhouse://ch:9000/x"},
		{dsn: "clickhouse://ch:9000/faultline?cluster=", db: "x", reason: "an empty ?cluster= (leave it out for faultline)"},
	} {
		got, err := clickhouse.WithDatabase(tc.dsn, tc.db)
		var de *clickhouse.DSNError
		switch {
		case tc.reason == "" && (err != nil || got != tc.want):
			t.Errorf("WithDatabase(%q, %q) = %q, %v; want %q", tc.dsn, tc.db, got, err, tc.want)
		case tc.reason != "" && (!errors.As(err, &de) || de.Reason != tc.reason):
			t.Errorf("WithDatabase(%q, %q) = %q, %v; want a *DSNError saying %q", tc.dsn, tc.db, got, err, tc.reason)
		}
	}
}

// TestDropDatabase: a store's database, with its tables, views and rows,
// is gone from every shard after DropDatabase; dropping it again is no
// error.
func TestDropDatabase(t *testing.T) {
	ctx := context.Background()
	dsn := clickhousetest.DSN(t)
	s, err := clickhouse.Open(ctx, dsn, clickhouse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	timelinetest.AddRecords(t, s, timeline.Record{Key: "k", Source: timeline.SourceEvent, Reason: "BackOff"})
	s.Close()
	u, _ := url.Parse(dsn)
	db := strings.TrimPrefix(u.Path, "/")
	addrs, err := clickhouse.ShardAddrs(ctx, dsn)
	if err != nil || len(addrs) != 2 {
		t.Fatalf("ShardAddrs = %v, %v; want the cluster's 2 shards", addrs, err)
	}
	if diff := cmp.Diff([]string{addrs[0] + " " + db, addrs[1] + " " + db}, clickhousetest.Databases(t, dsn, db)); diff != "" {
		t.Fatalf("before the drop (-want +got)\n%s", diff)
	}
	for range 2 {
		if err := clickhouse.DropDatabase(ctx, dsn); err != nil {
			t.Fatalf("DropDatabase: %v", err)
		}
		if got := clickhousetest.Databases(t, dsn, db); len(got) > 0 {
			t.Errorf("after the drop, still %v", got)
		}
	}
}

// TestDropDatabaseShardDown: with a shard down, DropDatabase drops the
// database on the shards that answer and names the one it could not; run
// again once that shard is back, it drops it there too.
func TestDropDatabaseShardDown(t *testing.T) {
	c := clickhousetest.StartCluster(t, 29321)
	ctx := context.Background()
	s, err := clickhouse.Open(ctx, c.DSN, clickhouse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	c.StopShard(2)
	err = clickhouse.DropDatabase(ctx, c.DSN)
	var se *clickhouse.ShardError
	if !errors.As(err, &se) || se.Shard != 2 || se.Addr != "127.0.0.1:29322" {
		t.Fatalf("DropDatabase with shard 2 down: %v; want a *ShardError naming shard 2", err)
	}
	c.Restart()
	if diff := cmp.Diff([]string{"127.0.0.1:29322 faultline"}, clickhousetest.Databases(t, c.DSN, "faultline")); diff != "" {
		t.Errorf("left after the drop with shard 2 down (-want +got)\n%s", diff)
	}
	if err := clickhouse.DropDatabase(ctx, c.DSN); err != nil {
		t.Fatalf("DropDatabase again: %v", err)
	}
	if got := clickhousetest.Databases(t, c.DSN, "faultline"); len(got) > 0 {
		t.Errorf("after the second drop, still %v", got)
	}
}

// TestDefaultCluster: a DSN without ?cluster= opens the cluster
// hack/clickhouse/up configures, and one naming a cluster the server does
// not know fails with the names of those it does.
func TestDefaultCluster(t *testing.T) {
	ctx := context.Background()
	dsn := clickhousetest.DSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cluster := u.Query().Get("cluster")
	u.RawQuery = ""
	s, err := clickhouse.Open(ctx, u.String(), clickhouse.Options{})
	switch {
	case cluster == clickhouse.DefaultCluster && err != nil:
		t.Fatalf("open %s: %v", u, err)
	case cluster != clickhouse.DefaultCluster && err == nil:
		t.Fatalf("open %s: no error, though the server's cluster is %q", u, cluster)
	case err == nil:
		s.Close()
	}

	u.RawQuery = "cluster=nope"
	_, err = clickhouse.Open(ctx, u.String(), clickhouse.Options{})
	want := `the server knows no cluster "nope" (remote_servers in its config; name one with ?cluster=NAME in the DSN); it knows `
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), strconv.Quote(cluster)) {
		t.Fatalf("open with ?cluster=nope: %v; want an error containing %q and naming %q", err, want, cluster)
	}
}
