package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/term"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/clickhouse"
	"github.com/faultline/faultline/timeline/redact"
	"github.com/faultline/faultline/timeline/sqlite"
)

// IOStreams are the command's standard streams and what they are attached to.
type IOStreams struct {
	In          io.Reader
	Out         io.Writer // results only
	ErrOut      io.Writer // progress, warnings, summaries
	StdoutIsTTY bool
	StderrIsTTY bool
}

// Factory hands commands their dependencies; tests replace fields.
type Factory struct {
	IO      IOStreams
	Getenv  func(string) string
	Now     func() time.Time
	Version string

	// set from global flags
	dbPath   string
	storeDSN string // --store: a ClickHouse cluster instead of the --db file
	// --allow-partial: answer with a shard of --store down; partial lists
	// the shards left out, for the warning after the answer.
	allowPartial bool
	partial      []*clickhouse.ShardError
	verbose      bool
	logger       *slog.Logger
	key          []byte // Key's, once read
	keyErr       error

	// Name is the name the binary was run as: "kubectl-faultline" when
	// kubectl runs it as a plugin, and usage then says "kubectl faultline".
	Name      string
	noHeaders bool // --no-headers, on the commands that print tables
	// --redact-configmaps (ingest, replay): hash every ConfigMap value and
	// env literal, not only those that look like credentials.
	redactConfigMaps bool
}

// System returns the factory for a real process.
func System() *Factory {
	return &Factory{
		IO: IOStreams{
			In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
			StdoutIsTTY: term.IsTerminal(int(os.Stdout.Fd())),
			StderrIsTTY: term.IsTerminal(int(os.Stderr.Fd())),
		},
		Getenv:  os.Getenv,
		Now:     time.Now,
		Version: version,
		Name:    filepath.Base(os.Args[0]),
	}
}

// Logger returns the diagnostic logger: stderr, debug with -v, else warnings.
func (f *Factory) Logger() *slog.Logger {
	if f.logger == nil {
		level := slog.LevelWarn
		if f.verbose {
			level = slog.LevelDebug
		}
		f.logger = slog.New(slog.NewTextHandler(f.IO.ErrOut, &slog.HandlerOptions{Level: level}))
	}
	return f.logger
}

// OpenStore opens the timeline named by --store (a ClickHouse cluster) or
// else --db, creating it if needed, with the key that hashes secret values.
func (f *Factory) OpenStore(ctx context.Context) (timeline.Store, error) {
	if f.storeDSN != "" {
		return f.openClickHouse(ctx, clickhouse.Options{Key: f.Key(), RedactConfigMaps: f.redactConfigMaps})
	}
	return sqlite.Open(ctx, f.dbPath, sqlite.Options{Logger: f.Logger(), Key: f.Key(), RedactConfigMaps: f.redactConfigMaps})
}

// storeName names the timeline in messages: the --store DSN or the --db
// file.
func (f *Factory) storeName() string {
	if f.storeDSN != "" {
		return f.storeDSN
	}
	return f.dbPath
}

// storeFlag is the flag that names the timeline, for a Try: line.
func (f *Factory) storeFlag() string {
	if f.storeDSN != "" {
		return "--store '" + f.storeDSN + "'"
	}
	return "--db " + f.dbPath
}

// openClickHouse opens the ClickHouse store --store names, with opt's
// key and redaction settings (the logger and --allow-partial are the
// factory's).
func (f *Factory) openClickHouse(ctx context.Context, opt clickhouse.Options) (timeline.Store, error) {
	opt.Logger, opt.AllowPartial = f.Logger(), f.allowPartial
	s, err := clickhouse.Open(ctx, f.storeDSN, opt)
	if err != nil {
		return nil, err
	}
	f.partial = s.Unavailable()
	return s, nil
}

// redactConfigMapsUsage is the help of --redact-configmaps.
const redactConfigMapsUsage = "hash every ConfigMap value and env literal, not only those that look like credentials (SECURITY.md); the timeline keeps the setting"

// Key returns the key that hashes secret values (redact.KeyPath: env
// FAULTLINE_KEY, else $XDG_CONFIG_HOME/faultline/key, else
// ~/.config/faultline/key), creating it on first use. A key that cannot be
// read or made is nil: the store then warns once and stores such values as
// "redacted (no key)".
func (f *Factory) Key() []byte {
	if f.key != nil || f.keyErr != nil {
		return f.key
	}
	path, err := redact.KeyPath(f.Getenv)
	if err == nil {
		f.key, err = redact.LoadKey(path, true)
	}
	if err != nil {
		f.keyErr = err
		f.Logger().Warn("no key to hash secret values", "err", err)
	}
	return f.key
}

// OpenStoreReadOnly opens an existing timeline for reading.
func (f *Factory) OpenStoreReadOnly(ctx context.Context) (timeline.Store, error) {
	if f.storeDSN != "" {
		// Reading needs no key: none is loaded (nor made), and none is
		// missed. A database without a timeline is refused, as a --db
		// file that is not there is: a name mistyped must not read as a
		// quiet cluster.
		s, err := f.openClickHouse(ctx, clickhouse.Options{Existing: true})
		var nt *clickhouse.NoTimelineError
		if errors.As(err, &nt) {
			return nil, usagef("faultline ingest audit "+f.storeFlag()+" audit.log",
				"%s: ingest some evidence first, or point --store (or FAULTLINE_STORE) at one", nt)
		}
		return s, err
	}
	if err := sqlite.CheckPath(f.dbPath); err != nil {
		return nil, err
	}
	if _, err := os.Stat(f.dbPath); err != nil {
		return nil, usagef("faultline ingest audit --db "+f.dbPath+" audit.log",
			"no timeline at %s: ingest some evidence first, or point --db (or FAULTLINE_DB) at one", f.dbPath)
	}
	s, err := sqlite.Open(ctx, f.dbPath, sqlite.Options{Logger: f.Logger(), ReadOnly: true})
	if errors.Is(err, sqlite.ErrNeedsMigration) {
		// An older timeline: migrate it once (migrations only add), then read.
		rw, err := sqlite.Open(ctx, f.dbPath, sqlite.Options{Logger: f.Logger(), Key: f.Key()})
		if err != nil {
			return nil, err
		}
		rw.Close()
		return sqlite.Open(ctx, f.dbPath, sqlite.Options{Logger: f.Logger(), ReadOnly: true})
	}
	return s, err
}

// analyzer is a store that refreshes its query planner's statistics after
// an ingest (SQLite).
type analyzer interface {
	Analyze(ctx context.Context) error
}

// analyze refreshes the store's statistics, if it keeps any, even when ctx
// is done: what was ingested is kept and should be read fast.
func analyze(ctx context.Context, store timeline.Store) error {
	if a, ok := store.(analyzer); ok {
		return a.Analyze(context.WithoutCancel(ctx))
	}
	return nil
}
