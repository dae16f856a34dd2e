package clickhouse_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/clickhouse"
	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// TestRecordsLandWhereDistributedPutsThem: records written straight to the
// shards are on the shard the Distributed table's shard key names
// (intHash64(key) over the weights), computed by the server itself, so
// every version of a record is on one shard whoever writes it.
func TestRecordsLandWhereDistributedPutsThem(t *testing.T) {
	ctx := context.Background()
	dsn := clickhousetest.DSN(t)
	s, err := clickhouse.Open(ctx, dsn, clickhouse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	var recs []timeline.Record
	for i := range 200 {
		recs = append(recs, timeline.Record{Key: fmt.Sprint("k", i), Time: t0.Add(time.Duration(i) * time.Second),
			Source: timeline.SourceEvent, Reason: "BackOff"})
	}
	timelinetest.AddRecords(t, s, recs...)
	u, _ := url.Parse(dsn)
	var total uint64
	for i, addr := range s.Shards() {
		c, err := ch.Open(&ch.Options{Addr: []string{addr}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		rows, err := c.Query(ctx, "SELECT key, intHash64(key) FROM "+u.Path[1:]+".record_local")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var key int64
			var h uint64
			if err := rows.Scan(&key, &h); err != nil {
				t.Fatal(err)
			}
			if got := clickhouse.IntHash64(uint64(key)); got != h {
				t.Errorf("intHash64(%d) = %d here, %d on the server", key, got, h)
			}
			if j := s.ShardOf(key); j != i {
				t.Errorf("key %d is on shard %d, and the shard key names shard %d", key, i+1, j+1)
			}
			total++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if total != uint64(len(recs)) {
		t.Errorf("the shards hold %d rows, want %d", total, len(recs))
	}
}
