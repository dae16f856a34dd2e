package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"testing"

	ch "github.com/ClickHouse/clickhouse-go/v2"
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
