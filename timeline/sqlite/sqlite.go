// Package sqlite keeps the timeline in a SQLite file: the schema and its
// embedded migrations, the batched writer, and the queries. SCHEMA.md beside
// this file documents the tables.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/redact"
	"github.com/faultline/faultline/timeline/rollup"
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

// poolConns is how many connections the store reads and writes on.
const poolConns = 4

// strsCacheKiB is the page cache of the connection that looks interned
// strings up by id: a few pages of strs' primary key.
const strsCacheKiB = 2048

// Store is the SQLite timeline. It implements timeline.Store.
type Store struct {
	db *sql.DB
	// strs resolves interned string ids for readers (strOf), on a pool of
	// its own: a reader holds one of db's connections while its rows are
	// open, and were it to take a second to look a string up, poolConns
	// readers could each hold one and wait for another, for ever.
	strs  *sql.DB
	path  string
	log   *slog.Logger
	red   redact.Redactor // hashes secret values with the key from Options
	cache *strCache
	// pageCache is SQLite's page cache per connection, in bytes.
	pageCache int64
	// classes maps request classes to their req_class ids (rollup.go).
	classes classCache
	// open remembers the requests this store added that await a final
	// stage (openreq.go).
	open openCache
	// seriesDict caches series_str (series.go).
	seriesDict seriesDictionary
	reads      struct { // id -> string, for reading
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
	// RedactConfigMaps hashes every ConfigMap value and env literal, not only
	// those that look like credentials (redact.Credential). The timeline
	// remembers it: once a file was written with it, every later write
	// hashes them too, so a value never flips between clear and hash.
	RedactConfigMaps bool
}

// ErrNotTimeline is returned for a file that is not a faultline database.
var ErrNotTimeline = errors.New("not a faultline database")

// ErrNeedsMigration is returned by a read-only Open of a file whose schema
// is older than this binary's.
var ErrNeedsMigration = errors.New("the timeline's schema needs migrating")

// PathError is a database path that cannot hold a timeline: empty, or a
// form SQLite keeps in memory or reads as a URI. Such a path would "ingest"
// into a database that vanishes on close, so it is refused before anything
// is opened. The caller names the flag or setting the path came from.
type PathError struct {
	Path   string
	Reason string
}

func (e *PathError) Error() string {
	return fmt.Sprintf("timeline path %q: %s", e.Path, e.Reason)
}

// ReadOnlyError is a timeline that cannot be written where writing was
// asked for: the file is not writable, or its directory is not (SQLite
// creates PATH-wal and PATH-shm beside the file).
type ReadOnlyError struct {
	Path  string
	Cause string
}

func (e *ReadOnlyError) Error() string {
	return fmt.Sprintf("timeline %s cannot be written: %s", e.Path, e.Cause)
}

// CheckPath refuses paths that cannot persist, with a *PathError; Open
// calls it first. SQLite reads ":memory:" (and
// "file::memory:", "file:x?mode=memory") as an in-memory database and "" as
// a temporary one deleted on close; Open prefixes "file:" itself, so a path
// that already starts with it is a URI the user meant SQLite to parse, which
// Open does not do.
func CheckPath(file string) error {
	switch {
	case strings.TrimSpace(file) == "":
		return &PathError{Path: file, Reason: "empty: SQLite would keep a temporary database and delete it on close"}
	case file == ":memory:" || strings.Contains(file, "mode=memory"):
		return &PathError{Path: file, Reason: "an in-memory database keeps nothing once faultline exits"}
	case strings.HasPrefix(strings.ToLower(file), "file:"):
		return &PathError{Path: file, Reason: "a SQLite URI; give a plain file path"}
	}
	return nil
}

// FileMode is the mode of a timeline file created by Open: a timeline holds
// audit records (users, source IPs, messages) and secret hashes. SQLite gives
// the -wal and -shm files the main file's mode.
const FileMode = 0o600

// Open opens (creating and migrating where needed) the timeline at path.
//
// A file is proven to be a timeline before anything is written to it: Open
// first reads its application_id, user_version and schema over a read-only
// connection, and only then opens it for writing, switches it to WAL and
// migrates it. A foreign SQLite file is refused byte-identical.
func Open(ctx context.Context, file string, opt Options) (*Store, error) {
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := CheckPath(file); err != nil {
		return nil, err
	}
	if opt.ReadOnly {
		if _, err := os.Stat(file); err != nil {
			return nil, fmt.Errorf("open timeline: %w", err)
		}
	} else if err := create(file); err != nil {
		return nil, fmt.Errorf("open timeline: %w", err)
	}
	cache := opt.CacheKiB
	if cache <= 0 {
		cache = 32 << 10 // KiB: 32 MiB per connection
	}
	probe, err := sql.Open("sqlite3", dsn(file, true, cache))
	if err != nil {
		return nil, fmt.Errorf("open timeline %s: %w", file, err)
	}
	_, err = identify(ctx, probe)
	probe.Close()
	if err != nil {
		return nil, openErr(file, err)
	}
	if !opt.ReadOnly {
		// SQLite would open an unwritable file read-only, and fail at the
		// first write.
		if f, err := os.OpenFile(file, os.O_WRONLY, 0); err != nil {
			return nil, &ReadOnlyError{Path: file, Cause: fmt.Sprintf("the file is not writable (%v)", errors.Unwrap(err))}
		} else {
			f.Close()
		}
	}
	db, err := sql.Open("sqlite3", dsn(file, opt.ReadOnly, cache))
	if err != nil {
		return nil, fmt.Errorf("open timeline %s: %w", file, err)
	}
	db.SetMaxOpenConns(poolConns)
	strs, err := sql.Open("sqlite3", dsn(file, opt.ReadOnly, strsCacheKiB))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open timeline %s: %w", file, err)
	}
	strs.SetMaxOpenConns(1) // a lookup holds it for one point read
	s := &Store{db: db, strs: strs, path: file, log: log, cache: &strCache{m: map[string]int64{}}, pageCache: int64(cache) << 10}
	s.classes.m = map[rollup.Class]int64{}
	if err := s.migrate(ctx, opt.ReadOnly); err != nil {
		s.Close()
		return nil, openErr(file, err)
	}
	if err := s.useKey(ctx, opt.Key, opt.ReadOnly, opt.RedactConfigMaps); err != nil {
		s.Close()
		return nil, openErr(file, err)
	}
	return s, nil
}

// create makes file with FileMode if it does not exist, whatever the umask:
// SQLite would create it 0644 less the umask.
func create(file string) error {
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE|os.O_EXCL, FileMode)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := f.Chmod(FileMode); err != nil { // the umask applied to OpenFile
		f.Close()
		return err
	}
	return f.Close()
}

// dsn is the connection string for file. Per-connection settings live here
// (a PRAGMA sent with Exec reaches one pooled connection only). A read-only
// connection sets no journal mode: it must not change the file.
func dsn(file string, readOnly bool, cacheKiB int) string {
	q := url.Values{}
	q.Set("_foreign_keys", "on")
	q.Set("_busy_timeout", strconv.Itoa(int(busyTimeout.Milliseconds())))
	q.Set("_txlock", "immediate")
	q.Set("_cache_size", strconv.Itoa(-cacheKiB))
	if readOnly {
		q.Set("mode", "ro")
	} else {
		q.Set("_journal_mode", "WAL")
		q.Set("_synchronous", "NORMAL")
	}
	return "file:" + (&url.URL{Path: file}).EscapedPath() + "?" + q.Encode()
}

// openErr says what failed to open: a ReadOnlyError names the file itself.
func openErr(file string, err error) error {
	err = readOnlyErr(file, err)
	var ro *ReadOnlyError
	if errors.As(err, &ro) {
		return err
	}
	return fmt.Errorf("open timeline %s: %w", file, err)
}

// readOnlyErr turns SQLite's "attempt to write a readonly database" or
// "unable to open database file" (it cannot create the -wal or -shm beside
// the file, which even reading a WAL database needs) into a ReadOnlyError
// that says which of the file and its directory cannot be written.
func readOnlyErr(file string, err error) error {
	var se sqlite3.Error
	if !errors.As(err, &se) || (se.Code != sqlite3.ErrReadonly && se.Code != sqlite3.ErrCantOpen) {
		return err
	}
	if cause := unwritable(file); cause != "" {
		return &ReadOnlyError{Path: file, Cause: cause}
	}
	return err
}

// unwritable says why file or its directory cannot be written, or "".
func unwritable(file string) string {
	if f, err := os.OpenFile(file, os.O_WRONLY, 0); err != nil {
		return fmt.Sprintf("the file is not writable (%v)", errors.Unwrap(err))
	} else {
		f.Close()
	}
	dir := filepath.Dir(file)
	f, err := os.CreateTemp(dir, ".faultline-probe-*")
	if err != nil {
		return fmt.Sprintf("its directory %s is not writable, and SQLite creates %s-wal and %s-shm there (%v)",
			dir, filepath.Base(file), filepath.Base(file), errors.Unwrap(err))
	}
	f.Close()
	os.Remove(f.Name())
	return ""
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error { return errors.Join(s.db.Close(), s.strs.Close()) }

// MemoryOutsideHeap is what the store may hold outside the Go heap while
// an ingest writes: the page caches of the writer and of one reader, and
// the string lookups' (strs).
func (s *Store) MemoryOutsideHeap() int64 { return 2*s.pageCache + strsCacheKiB<<10 }

// identify reads what db holds: a timeline at some schema version (0 for a
// new, empty file), or ErrNotTimeline. It only reads, in one statement: one
// snapshot of the file, for another process may be migrating it (its first
// migration sets application_id and user_version together, and two reads
// apart could see the one before it and the other after).
func identify(ctx context.Context, db queryer) (version int, err error) {
	var appID, tables int
	err = db.QueryRowContext(ctx, `SELECT (SELECT application_id FROM pragma_application_id()),
		(SELECT user_version FROM pragma_user_version()), (SELECT count(*) FROM sqlite_schema)`).Scan(&appID, &version, &tables)
	if err != nil {
		var se sqlite3.Error
		if errors.As(err, &se) && se.Code == sqlite3.ErrNotADB {
			return 0, fmt.Errorf("%w: not a SQLite file", ErrNotTimeline)
		}
		return 0, err
	}
	switch {
	case appID == ApplicationID:
	case appID == 0 && version == 0:
		if tables > 0 {
			return 0, fmt.Errorf("%w: a SQLite file with %d other tables (application_id 0)", ErrNotTimeline, tables)
		}
	default:
		return 0, fmt.Errorf("%w: SQLite application_id is %#x, want %#x", ErrNotTimeline, appID, ApplicationID)
	}
	if latest := SchemaVersion(); version > latest {
		return 0, fmt.Errorf("schema version %d is newer than this faultline knows (%d): upgrade faultline", version, latest)
	}
	return version, nil
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// migrate brings the schema to this binary's version. Each migration runs
// in its own write transaction and reads the version inside it, so that
// processes opening a new file at once apply each migration once.
func (s *Store) migrate(ctx context.Context, readOnly bool) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	latest := ms[len(ms)-1].version
	for {
		var version int
		err := s.retry(ctx, func() error { // the first connection switches the file to WAL
			var err error
			version, err = identify(ctx, s.db)
			return err
		})
		if err != nil {
			return err
		}
		if version == latest {
			return nil
		}
		if readOnly {
			return fmt.Errorf("%w: version %d, this faultline writes %d", ErrNeedsMigration, version, latest)
		}
		if err := s.migrateOne(ctx, ms, version); err != nil {
			return err
		}
	}
}

// migrateOne applies the migration after version, unless another process
// did so first.
func (s *Store) migrateOne(ctx context.Context, ms []migration, version int) error {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var now int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&now); err != nil {
		return err
	}
	if now != version {
		return nil // another process migrated meanwhile
	}
	m := ms[version]
	if err := runMigration(ctx, s, tx, m.sql); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d; PRAGMA application_id = %d", m.version, ApplicationID)); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	s.log.Debug("migrated timeline", "file", s.path, "to", m.name)
	return nil
}

// useKey checks the key against the fingerprint the database recorded
// (recording it on first use) and sets up the redactor. A missing or foreign
// key is not an error: reading needs no key, and new values that would need
// it are stored as redact.NoKey rather than hashed with a key their
// predecessors were not (those hashes could never be compared). The per-
// database salt of older versions, which sat beside its hashes, is deleted.
// redactConfigMaps, once given for a writable timeline, is recorded in meta
// (redact_configmaps) and holds for every later open.
func (s *Store) useKey(ctx context.Context, key []byte, readOnly, redactConfigMaps bool) error {
	var fp, all string
	if err := s.db.QueryRowContext(ctx, "SELECT v FROM meta WHERE k = 'redact_configmaps'").Scan(&all); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read redact_configmaps: %w", err)
	}
	if redactConfigMaps && all == "" && !readOnly {
		if _, err := s.exec(ctx, "INSERT INTO meta (k, v) VALUES ('redact_configmaps', '1') ON CONFLICT (k) DO NOTHING"); err != nil {
			return fmt.Errorf("record redact_configmaps: %w", err)
		}
	}
	err := s.db.QueryRowContext(ctx, "SELECT v FROM meta WHERE k = 'key_fingerprint'").Scan(&fp)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read key fingerprint: %w", err)
	}
	s.red = redact.ForStore(key, fp, redactConfigMaps || all != "", func(why string) {
		s.log.Warn(redact.NoKeyWarning, "file", s.path, "reason", why)
	})
	if !readOnly {
		if fp == "" && s.red.Key != nil {
			if _, err := s.exec(ctx, "INSERT INTO meta (k, v) VALUES ('key_fingerprint', ?) ON CONFLICT (k) DO NOTHING", redact.Fingerprint(key)); err != nil {
				return fmt.Errorf("record key fingerprint: %w", err)
			}
		}
		if _, err := s.exec(ctx, "DELETE FROM meta WHERE k = 'salt'"); err != nil {
			return fmt.Errorf("delete salt: %w", err)
		}
	}
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
func keyHash(key string) int64 { return timeline.KeyHash(key) }

// Analyze refreshes the query planner's statistics, approximately and in
// bounded time, so that filters pick the index that fits them. Run it after
// an ingest.
func (s *Store) Analyze(ctx context.Context) error {
	if _, err := s.exec(ctx, "PRAGMA analysis_limit = 1000; ANALYZE"); err != nil {
		return fmt.Errorf("analyze timeline: %w", err)
	}
	return nil
}
