package clickhouse_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/faultline/faultline/timeline/clickhouse"
	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// openKeyed opens the store at dsn as each key check asks.
func openKeyed(dsn string) timelinetest.OpenKeyed {
	return func(t *testing.T, key []byte, all bool, log *slog.Logger) timelinetest.KeyedStore {
		t.Helper()
		s, err := clickhouse.Open(context.Background(), dsn, clickhouse.Options{Key: key, RedactConfigMaps: all, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// TestKeyMissingOrForeign holds the store to the rule that one store's
// values are hashed with one key (meta.go), as the SQLite store is.
func TestKeyMissingOrForeign(t *testing.T) {
	dsn := clickhousetest.DSN(t)
	s := openKeyed(dsn)(t, nil, false, nil)
	if fp, err := s.KeyFingerprint(context.Background()); err != nil || fp != "" {
		t.Errorf("fingerprint before any write = %q, %v; want none", fp, err)
	}
	s.Close()
	timelinetest.CheckKeyMissingOrForeign(t, openKeyed(dsn))
}

// TestRedactConfigMapsIsKept: the store keeps --redact-configmaps for
// every later writer (meta.go).
func TestRedactConfigMapsIsKept(t *testing.T) {
	timelinetest.CheckRedactConfigMapsIsKept(t, func(t *testing.T) timelinetest.OpenKeyed {
		return openKeyed(clickhousetest.DSN(t))
	})
}
