package sqlite

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/faultline/faultline/timeline/timelinetest"
)

// openKeyed opens the timeline at file as each key check asks.
func openKeyed(file string) timelinetest.OpenKeyed {
	return func(t *testing.T, key []byte, all bool, log *slog.Logger) timelinetest.KeyedStore {
		t.Helper()
		s, err := Open(context.Background(), file, Options{Key: key, RedactConfigMaps: all, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// TestKeyMissingOrForeign guards the rule that one timeline's values are
// hashed with one key: reopened without it, or with another, the timeline
// still opens and reads, new values are stored as NoKey, and one warning
// says so.
func TestKeyMissingOrForeign(t *testing.T) {
	timelinetest.CheckKeyMissingOrForeign(t, openKeyed(filepath.Join(t.TempDir(), "t.db")))
}

// TestRedactConfigMapsIsKept: the timeline keeps --redact-configmaps for
// every later writer (meta.redact_configmaps).
func TestRedactConfigMapsIsKept(t *testing.T) {
	timelinetest.CheckRedactConfigMapsIsKept(t, func(t *testing.T) timelinetest.OpenKeyed {
		return openKeyed(filepath.Join(t.TempDir(), "t.db"))
	})
}

// TestOldSaltIsDeleted guards against the per-database salt of older
// versions staying beside the hashes it made guessable.
func TestOldSaltIsDeleted(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "t.db")
	s, err := Open(ctx, file, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec("INSERT INTO meta (k, v) VALUES ('salt', 'abcd')"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(ctx, file, Options{Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	if err := s.db.QueryRow("SELECT count(*) FROM meta WHERE k = 'salt'").Scan(&n); err != nil || n != 0 {
		t.Errorf("salt rows = %d, %v; want 0", n, err)
	}
}
