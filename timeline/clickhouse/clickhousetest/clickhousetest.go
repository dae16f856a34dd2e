// Package clickhousetest opens ClickHouse stores for tests: each test its
// own database on the cluster hack/clickhouse/up started, dropped when the
// test ends.
package clickhousetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/faultline/faultline/internal/testenv"
	"github.com/faultline/faultline/timeline/clickhouse"
)

// EnvDSN names the cluster the tests use: the DSN hack/clickhouse/up
// printed (hack/test sets it).
const EnvDSN = "FAULTLINE_CLICKHOUSE_DSN"

// DSN returns a DSN for a database of its own on the test cluster, and
// drops that database on every shard when the test ends. Without the
// cluster, the test skips (fails under CI).
func DSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvDSN)
	if base == "" {
		testenv.Missing(t, "no ClickHouse cluster: start one with dsn=$(bash hack/clickhouse/up) and set %s=$dsn", EnvDSN)
	}
	var b [6]byte
	rand.Read(b[:])
	dsn, err := clickhouse.WithDatabase(base, "test_"+hex.EncodeToString(b[:]))
	if err != nil {
		t.Fatalf("%s: %v", EnvDSN, err)
	}
	t.Cleanup(func() { Drop(t, dsn) })
	return dsn
}

// New opens a store on a database of its own (DSN), closed when the test
// ends.
func New(t testing.TB) *clickhouse.Store {
	t.Helper()
	s, err := clickhouse.Open(context.Background(), DSN(t), clickhouse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Drop drops the DSN's database on every shard of its cluster.
func Drop(t testing.TB, dsn string) {
	if err := clickhouse.DropDatabase(context.Background(), dsn); err != nil {
		t.Logf("drop %s: %v", dsn, err)
	}
}

// Databases lists the databases named prefix... on the shards of the DSN's
// cluster, as "SHARD-ADDRESS DATABASE", sorted: what a test left behind.
func Databases(t testing.TB, dsn, prefix string) []string {
	t.Helper()
	ctx := context.Background()
	addrs, err := clickhouse.ShardAddrs(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, addr := range addrs {
		c, err := ch.Open(&ch.Options{Addr: []string{addr}})
		if err != nil {
			t.Fatalf("databases on %s: %v", addr, err)
		}
		var names []struct {
			Name string `ch:"name"`
		}
		err = c.Select(ctx, &names, "SELECT name FROM system.databases WHERE startsWith(name, ?) ORDER BY name", prefix)
		c.Close()
		if err != nil {
			t.Fatalf("databases on %s: %v", addr, err)
		}
		for _, n := range names {
			out = append(out, addr+" "+n.Name)
		}
	}
	return out
}

// Cluster is a two-shard cluster of a test's own (hack/clickhouse/up), for
// tests that stop a shard: the shared cluster of EnvDSN must stay whole for
// the tests running beside them.
type Cluster struct {
	t    testing.TB
	dir  string
	port string
	// DSN is the store's DSN on the cluster.
	DSN string
}

// StartCluster starts a cluster on port (shard 1; shard 2 takes the next
// one), stopped and removed when the test ends. Without clickhouse-server
// the test skips (fails under CI). Choose ports below 32768, outside
// Linux's range of ephemeral ports (ip_local_port_range): a client's
// connection that happens to take the port keeps the shard from binding
// it. TestShardFaults failed once on 39302 with "Address already in use"
// while no server listened there, most likely so.
func StartCluster(t testing.TB, port int) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("clickhouse-server"); err != nil {
		testenv.Missing(t, "no clickhouse-server: bash hack/clickhouse/up installs it")
	}
	c := &Cluster{t: t, dir: t.TempDir(), port: strconv.Itoa(port)}
	out := strings.TrimSpace(c.run("up"))
	c.DSN = out[strings.LastIndex(out, "\n")+1:]
	t.Cleanup(func() { c.run("down") })
	return c
}

// StopShard stops shard n (1 or 2).
func (c *Cluster) StopShard(n int) { c.run("down", "--shard", strconv.Itoa(n)) }

// Restart starts the shards that are stopped, with their data.
func (c *Cluster) Restart() { c.run("up") }

// run runs hack/clickhouse/<script> args on the cluster.
func (c *Cluster) run(script string, args ...string) string {
	c.t.Helper()
	_, here, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(here), "..", "..", "..", "hack", "clickhouse", script)
	cmd := exec.Command("bash", append([]string{path}, args...)...)
	cmd.Env = append(os.Environ(), "FAULTLINE_CLICKHOUSE_DIR="+c.dir, "FAULTLINE_CLICKHOUSE_PORT="+c.port)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			c.t.Fatalf("hack/clickhouse/%s %v: %v\n%s", script, args, err, ee.Stderr)
		}
		c.t.Fatalf("hack/clickhouse/%s %v: %v", script, args, err)
	}
	return string(out)
}
