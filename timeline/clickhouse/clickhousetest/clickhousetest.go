// Package clickhousetest opens ClickHouse stores for tests: each test its
// own database on the cluster hack/clickhouse/up started, dropped when the
// test ends.
package clickhousetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
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
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvDSN, err)
	}
	var b [6]byte
	rand.Read(b[:])
	db := "test_" + hex.EncodeToString(b[:])
	u.Path = "/" + db
	dsn := u.String()
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
	s, err := clickhouse.Open(context.Background(), dsn, clickhouse.Options{})
	if err != nil {
		t.Logf("drop %s: %v", dsn, err)
		return
	}
	defer s.Close()
	u, _ := url.Parse(dsn)
	for _, addr := range s.Shards() {
		c, err := ch.Open(&ch.Options{Addr: []string{addr}})
		if err != nil {
			t.Logf("drop %s on %s: %v", dsn, addr, err)
			continue
		}
		if err := c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+u.Path[1:]); err != nil {
			t.Logf("drop %s on %s: %v", dsn, addr, err)
		}
		c.Close()
	}
}
