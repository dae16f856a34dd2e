package clickhouse

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/faultline/faultline/timeline/redact"
)

// The meta table holds the facts about a database that every later writer
// must honour, as the SQLite store's meta table does (timeline/sqlite
// SCHEMA.md):
//
//   - key_fingerprint: the fingerprint of the key that hashed its secret
//     values (redact.Fingerprint). A writer with another key, or none,
//     stores new values as redact.NoKey: hashes made with two keys could
//     never be compared.
//   - redact_configmaps: "1" once a writer hashed every ConfigMap value
//     (Options.RedactConfigMaps); every later writer does too, so no value
//     flips between clear and hash.
//
// A fact is recorded by the first write (Batch), not by Open, so a reader
// with a shard down (AllowPartial) opens without writing. The first row of
// a fact wins (argMin by at_ns), as the SQLite store's ON CONFLICT DO
// NOTHING keeps the first.
const (
	metaKeyFingerprint   = "key_fingerprint"
	metaRedactConfigMaps = "redact_configmaps"
)

// readMeta reads the facts recorded, the first of each.
func (s *Store) readMeta(ctx context.Context) (map[string]string, error) {
	rows, err := s.conn.Query(ctx, "SELECT k, argMin(v, at_ns) FROM meta GROUP BY k")
	if err != nil {
		return nil, fmt.Errorf("read meta: %w", s.shardErr(ctx, err))
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("read meta: %w", err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read meta: %w", s.shardErr(ctx, err))
	}
	return out, nil
}

// useKey sets up the redactor from opt and the facts recorded, and notes
// the facts the first write must record (pendingMeta). A missing or
// foreign key is not an error: reading needs no key.
func (s *Store) useKey(ctx context.Context, dsn string, opt Options) error {
	meta, err := s.readMeta(ctx)
	if err != nil {
		return err
	}
	fp, all := meta[metaKeyFingerprint], meta[metaRedactConfigMaps] != ""
	s.red = redact.ForStore(opt.Key, fp, opt.RedactConfigMaps || all, func(why string) {
		s.log.Warn(redact.NoKeyWarning, "store", dsn, "reason", why)
	})
	if fp == "" && s.red.Key != nil {
		s.pendingMeta = append(s.pendingMeta, [2]string{metaKeyFingerprint, redact.Fingerprint(opt.Key)})
	}
	if opt.RedactConfigMaps && !all {
		s.pendingMeta = append(s.pendingMeta, [2]string{metaRedactConfigMaps, "1"})
	}
	return nil
}

// recordMeta writes the facts useKey noted, once, before the first write
// that depends on them.
func (s *Store) recordMeta(ctx context.Context) error {
	s.metaMu.Lock()
	defer s.metaMu.Unlock()
	if len(s.pendingMeta) == 0 {
		return nil
	}
	now := time.Now().UnixNano()
	pending := s.pendingMeta
	if err := s.insertRows(ctx, "meta", len(pending), func(i int) []any {
		return []any{pending[i][0], pending[i][1], now}
	}); err != nil {
		return err
	}
	s.log.Debug("recorded store facts", slog.Any("facts", pending))
	s.pendingMeta = nil
	return nil
}

// KeyFingerprint returns the fingerprint of the key that hashed this
// store's values, or "" if none did.
func (s *Store) KeyFingerprint(ctx context.Context) (string, error) {
	meta, err := s.readMeta(ctx)
	if err != nil {
		return "", err
	}
	return meta[metaKeyFingerprint], nil
}
