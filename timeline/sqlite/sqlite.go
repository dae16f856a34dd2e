// Package sqlite keeps the timeline in a SQLite file: the schema and its
// embedded migrations, the batched writer, and the queries. SCHEMA.md beside
// this file documents the tables.
package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/redact"
)

// ApplicationID marks a SQLite file as a faultline timeline ("Fltl").
const ApplicationID = 0x466c746c

//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, n := range names {
		base := path.Base(n)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with NNNN_", base)
		}
		b, err := migrationFS.ReadFile(n)
		if err != nil {
			return nil, err
		}
		if len(ms) > 0 && ms[len(ms)-1].version+1 != v {
			return nil, fmt.Errorf("migration %s: want version %d", base, ms[len(ms)-1].version+1)
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	return ms, nil
}

// SchemaVersion is the schema version this binary writes.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// Store is the SQLite timeline. It implements timeline.Store.
type Store struct {
	db    *sql.DB
	path  string
	log   *slog.Logger
	red   redact.Redactor // hashes secret values with the key from Options
	cache *strCache
	// classes maps request classes to their req_class ids (rollup.go).
	classes classCache
	reads   struct { // id -> string, for reading
		mu sync.Mutex
		m  map[int64]string
	}
}

var _ timeline.Store = (*Store)(nil)

// Options tune Open.
type Options struct {
	Logger   *slog.Logger // nil discards
	ReadOnly bool         // refuse to create or migrate; open for reading
	// CacheKiB is SQLite's page cache per connection (0: 32 MiB). A
	// long-lived reader (the TUI) trades some speed for memory with less.
	CacheKiB int
	// Key hashes Secret values, env literals and args (timeline/redact). It
	// lives outside the database (redact.KeyPath); the database records its
	// fingerprint. Without it, or with another key than the fingerprint's,
	// the timeline reads as ever but new such values are stored as
	// redact.NoKey, with one warning.
	Key []byte
}

// ErrNotTimeline is returned for a file that is not a faultline database.
var ErrNotTimeline = errors.New("not a faultline database")

// ErrNeedsMigration is returned by a read-only Open of a file whose schema
// is older than this binary's.
var ErrNeedsMigration = errors.New("the timeline's schema needs migrating")

// Open opens (creating and migrating where needed) the timeline at path.
func Open(ctx context.Context, file string, opt Options) (*Store, error) {
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opt.ReadOnly {
		if _, err := os.Stat(file); err != nil {
			return nil, fmt.Errorf("open timeline: %w", err)
		}
	}
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_foreign_keys", "on")
	q.Set("_busy_timeout", "10000")
	q.Set("_txlock", "immediate")
	q.Set("_synchronous", "NORMAL")
	cache := opt.CacheKiB
	if cache <= 0 {
		cache = 32 << 10 // KiB: 32 MiB per connection
	}
	q.Set("_cache_size", strconv.Itoa(-cache))
	if opt.ReadOnly {
		q.Set("mode", "ro")
	}
	dsn := "file:" + (&url.URL{Path: file}).EscapedPath() + "?" + q.Encode()
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("open timeline %s: %w", file, err)
	}
	db.SetMaxOpenConns(4)
	s := &Store{db: db, path: file, log: log, cache: &strCache{m: map[string]int64{}}}
	s.classes.m = map[classKey]int64{}
	if err := s.migrate(ctx, opt.ReadOnly); err != nil {
		db.Close()
		return nil, fmt.Errorf("open timeline %s: %w", file, err)
	}
	if err := s.useKey(ctx, opt.Key, opt.ReadOnly); err != nil {
		db.Close()
		return nil, fmt.Errorf("open timeline %s: %w", file, err)
	}
	return s, nil
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// DB exposes the database handle to this module's tests and tools.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) migrate(ctx context.Context, readOnly bool) error {
	var appID, version int
	if err := s.db.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		var se sqlite3.Error
		if errors.As(err, &se) && se.Code == sqlite3.ErrNotADB {
			return fmt.Errorf("%w: not a SQLite file", ErrNotTimeline)
		}
		return err
	}
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return err
	}
	ms, err := migrations()
	if err != nil {
		return err
	}
	latest := ms[len(ms)-1].version
	switch {
	case appID == ApplicationID:
	case appID == 0 && version == 0:
		var n int
		if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%w: a SQLite file with %d other tables (application_id 0)", ErrNotTimeline, n)
		}
	default:
		return fmt.Errorf("%w: SQLite application_id is %#x, want %#x", ErrNotTimeline, appID, ApplicationID)
	}
	if version > latest {
		return fmt.Errorf("schema version %d is newer than this faultline knows (%d): upgrade faultline", version, latest)
	}
	if version == latest {
		return nil
	}
	if readOnly {
		return fmt.Errorf("%w: version %d, this faultline writes %d", ErrNeedsMigration, version, latest)
	}
	for _, m := range ms[version:] {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d; PRAGMA application_id = %d", m.version, ApplicationID)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		s.log.Debug("migrated timeline", "file", s.path, "to", m.name)
	}
	return nil
}

// useKey checks the key against the fingerprint the database recorded
// (recording it on first use) and sets up the redactor. A missing or foreign
// key is not an error: reading needs no key, and new values that would need
// it are stored as redact.NoKey rather than hashed with a key their
// predecessors were not (those hashes could never be compared). The per-
// database salt of older versions, which sat beside its hashes, is deleted.
func (s *Store) useKey(ctx context.Context, key []byte, readOnly bool) error {
	var fp string
	err := s.db.QueryRowContext(ctx, "SELECT v FROM meta WHERE k = 'key_fingerprint'").Scan(&fp)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read key fingerprint: %w", err)
	}
	why := ""
	switch {
	case len(key) == 0:
		why = "no key"
	case fp != "" && fp != redact.Fingerprint(key):
		why = "the key " + redact.Fingerprint(key) + " is not the key " + fp + " that hashed this timeline's values"
		key = nil
	}
	if !readOnly {
		if fp == "" && len(key) > 0 {
			if _, err := s.db.ExecContext(ctx, "INSERT INTO meta (k, v) VALUES ('key_fingerprint', ?) ON CONFLICT (k) DO NOTHING", redact.Fingerprint(key)); err != nil {
				return fmt.Errorf("record key fingerprint: %w", err)
			}
		}
		if _, err := s.db.ExecContext(ctx, "DELETE FROM meta WHERE k = 'salt'"); err != nil {
			return fmt.Errorf("delete salt: %w", err)
		}
	}
	var once sync.Once
	s.red = redact.Redactor{Key: key, OnNoKey: func() {
		once.Do(func() {
			s.log.Warn("secret values, env literals and args are stored as \""+redact.NoKey+"\": changes to them will not show",
				"file", s.path, "reason", why)
		})
	}}
	return nil
}

// KeyFingerprint returns the fingerprint of the key that hashed this
// timeline's values, or "" if none did.
func (s *Store) KeyFingerprint(ctx context.Context) (string, error) {
	var fp string
	err := s.db.QueryRowContext(ctx, "SELECT v FROM meta WHERE k = 'key_fingerprint'").Scan(&fp)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return fp, err
}

// IntegrityCheck runs PRAGMA integrity_check and returns its verdict ("ok").
func (s *Store) IntegrityCheck(ctx context.Context) (string, error) {
	rows, err := s.db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", err
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n"), rows.Err()
}

// keyHash maps a natural key to the 64-bit integer the unique indexes hold.
func keyHash(key string) int64 {
	sum := sha256.Sum256([]byte(key))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// Analyze refreshes the query planner's statistics, approximately and in
// bounded time, so that filters pick the index that fits them. Run it after
// an ingest.
func (s *Store) Analyze(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, "PRAGMA analysis_limit = 1000; ANALYZE"); err != nil {
		return fmt.Errorf("analyze timeline: %w", err)
	}
	return nil
}
