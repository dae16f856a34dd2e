package clickhouse_test

import (
	"context"
	"errors"
	"net/url"
	"testing"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/faultline/faultline/timeline/clickhouse"
	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
)

// TestOpenRefusesAnOlderSchema: a table made by another version, without a
// column this one writes, is named in a SchemaError at Open, not found out
// by the first query that reads the column.
func TestOpenRefusesAnOlderSchema(t *testing.T) {
	dsn := clickhousetest.DSN(t)
	u, _ := url.Parse(dsn)
	db := u.Path[1:]
	c, err := ch.Open(&ch.Options{Addr: []string{u.Host}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	for _, q := range []string{
		"CREATE DATABASE " + db,
		"CREATE TABLE " + db + ".watch_cursor_local (name String, updated_ns Int64) ENGINE = ReplacingMergeTree(updated_ns) ORDER BY name",
	} {
		if err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s, err := clickhouse.Open(ctx, dsn, clickhouse.Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded on a table without resource_version")
	}
	var se *clickhouse.SchemaError
	if !errors.As(err, &se) || se.Table != "watch_cursor_local" || se.Column != "resource_version" || se.Shard != 1 {
		t.Fatalf("Open: %v (%#v), want a SchemaError for watch_cursor_local.resource_version on shard 1", err, se)
	}
}
