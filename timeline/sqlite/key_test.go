package sqlite

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/redact"
)

// addSecret stores one version of Secret ns/s holding value under key p and
// returns the stored body.
func addSecret(t *testing.T, s *Store, rv, value string) string {
	t.Helper()
	ctx := context.Background()
	run := &timeline.IngestRun{Source: timeline.SourceObject, Path: "x"}
	if err := s.BeginRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	b, err := s.Batch(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	v := timeline.ObjectVersion{
		Object:          timeline.ObjectRef{Resource: "secrets", Kind: "Secret", Namespace: "ns", Name: "s", UID: "u1"},
		ResourceVersion: rv, Time: time.Unix(5, 0),
		Content: []byte(`{"kind":"Secret","metadata":{"name":"s","namespace":"ns"},"stringData":{"p":"` + value + `"}}`),
	}
	if _, err := b.AddVersion(ctx, &v); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return string(v.Content)
}

// TestKeyMissingOrForeign guards the rule that one timeline's values are
// hashed with one key: reopened without it, or with another, the timeline
// still opens and reads, new values are stored as NoKey, and one warning
// says so.
func TestKeyMissingOrForeign(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "t.db")
	key := bytes.Repeat([]byte{2}, redact.KeySize)
	s, err := Open(ctx, file, Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	first := addSecret(t, s, "1", "hunter2")
	s.Close()
	if !strings.Contains(first, "hmac-sha256:") {
		t.Fatalf("with the key: %s", first)
	}
	for _, tt := range []struct {
		name string
		key  []byte
	}{{"no key", nil}, {"another key", bytes.Repeat([]byte{3}, redact.KeySize)}} {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			s, err := Open(ctx, file, Options{Key: tt.key, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for i, v := range []string{"hunter3", "hunter4"} {
				got := addSecret(t, s, tt.name+string(rune('a'+i)), v)
				if !strings.Contains(got, redact.NoKey) || strings.Contains(got, "hmac-sha256:") {
					t.Errorf("stored %s", got)
				}
			}
			if n := strings.Count(log.String(), "level=WARN"); n != 1 {
				t.Errorf("%d warnings, want 1:\n%s", n, log.String())
			}
			if fp, _ := s.KeyFingerprint(ctx); fp != redact.Fingerprint(key) {
				t.Errorf("fingerprint = %q, want the first key's %q", fp, redact.Fingerprint(key))
			}
		})
	}
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
