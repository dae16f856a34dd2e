package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// TestRetryRead: a read is tried again after the errors of a stale
// connection between shards, once, and never after others or once its
// context ended.
func TestRetryRead(t *testing.T) {
	stale := &ch.Exception{Code: 102, Message: "Unexpected packet from server 127.0.0.1:39312 (expected TablesStatusResponse, got EndOfStream)"}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"stale connection", context.Background(), stale, true},
		{"wrapped", context.Background(), fmt.Errorf("jobs versions: %w", stale), true},
		{"network error", context.Background(), &ch.Exception{Code: 210}, true},
		{"read after EOF", context.Background(), &ch.Exception{Code: 32}, true},
		{"syntax error", context.Background(), &ch.Exception{Code: 62}, false},
		{"unknown table", context.Background(), &ch.Exception{Code: 60}, false},
		{"not an exception", context.Background(), errors.New("dial tcp: connection refused"), false},
		{"none", context.Background(), nil, false},
		{"context ended", cancelled, stale, false},
	} {
		if got := retryRead(tc.ctx, tc.err); got != tc.want {
			t.Errorf("%s: retryRead = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// fakeRows yields n rows, then ends with err.
type fakeRows struct {
	driver.Rows
	n   int
	err error
}

func (r *fakeRows) Next() bool {
	if r.n == 0 {
		return false
	}
	r.n--
	return true
}
func (r *fakeRows) Err() error   { return r.err }
func (r *fakeRows) Close() error { return nil }

// fakeConn answers its queries with the rows (or error) of each try in turn.
type fakeConn struct {
	driver.Conn
	tries []*fakeRows
	fail  []error
	n     int
}

func (c *fakeConn) Query(context.Context, string, ...any) (driver.Rows, error) {
	i := c.n
	c.n++
	if i < len(c.fail) && c.fail[i] != nil {
		return nil, c.fail[i]
	}
	return c.tries[i], nil
}

// TestRetryReadAfterHeader: a stale connection between shards that shows
// in the rows' error before any row tries the query once more; after a
// row, after a try at Query, or for another error, it does not.
func TestRetryReadAfterHeader(t *testing.T) {
	stale := &ch.Exception{Code: 101, Message: "Received from 127.0.0.1:29002. DB::NetException: Unexpected packet Data received from client"}
	syntax := &ch.Exception{Code: 62}
	for _, tc := range []struct {
		name    string
		tries   []*fakeRows
		fail    []error
		rows    int
		err     error
		queries int
	}{
		{"stale before any row", []*fakeRows{{err: stale}, {n: 3}}, nil, 3, nil, 2},
		{"stale twice", []*fakeRows{{err: stale}, {err: stale}}, nil, 0, stale, 2},
		{"stale after a row", []*fakeRows{{n: 1, err: stale}, {n: 3}}, nil, 1, stale, 1},
		{"Query tried twice already", []*fakeRows{nil, {err: stale}, {n: 3}}, []error{stale}, 0, stale, 2},
		{"another error", []*fakeRows{{err: syntax}, {n: 3}}, nil, 0, syntax, 1},
		{"the second try refused", []*fakeRows{{err: stale}}, []error{nil, syntax}, 0, syntax, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := &fakeConn{tries: tc.tries, fail: tc.fail}
			c := loggedConn{Conn: fc, log: slog.New(slog.DiscardHandler)}
			rows, err := c.Query(context.Background(), "SELECT 1")
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for rows.Next() {
				n++
			}
			if n != tc.rows || !errors.Is(rows.Err(), tc.err) || fc.n != tc.queries {
				t.Errorf("%d rows, err %v, %d queries; want %d, %v, %d", n, rows.Err(), fc.n, tc.rows, tc.err, tc.queries)
			}
			rows.Close()
		})
	}
}
