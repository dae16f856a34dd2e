package cli

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/faultline/faultline/analyze/controlplane"
	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/ingest/evidence"
	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/clickhouse"
	"github.com/faultline/faultline/timeline/sqlite"
)

// incidentLoader ingests an incident folder (fixtures/README.md) into a
// timeline file the one way replay and eval share (evidence.Loader).
type incidentLoader struct {
	logger *slog.Logger
	now    func() time.Time
	warnf  func(format string, args ...any) // a bad line or document, skipped
	key    []byte                           // hashes secret values (sqlite.Options.Key)
	// redactAll hashes every ConfigMap value and env literal
	// (sqlite.Options.RedactConfigMaps, clickhouse.Options.RedactConfigMaps).
	redactAll bool
	// auditWindow keeps only the audit records of requests received in
	// it; open: all of them.
	auditWindow timeline.Span
}

// opener opens the timeline an incident is ingested into or read from.
type opener func(ctx context.Context) (timeline.Store, error)

// sqliteAt opens the SQLite timeline at db, created if need be.
func (l incidentLoader) sqliteAt(db string) opener {
	return func(ctx context.Context) (timeline.Store, error) {
		return sqlite.Open(ctx, db, sqlite.Options{Logger: l.logger, Key: l.key, RedactConfigMaps: l.redactAll})
	}
}

// clickhouseAt opens the ClickHouse store at dsn, its database and tables
// created on every shard if need be.
func (l incidentLoader) clickhouseAt(dsn string) opener {
	return func(ctx context.Context) (timeline.Store, error) {
		return clickhouse.Open(ctx, dsn, clickhouse.Options{Logger: l.logger, Key: l.key, RedactConfigMaps: l.redactAll})
	}
}

// sqliteReadOnly opens the SQLite timeline at db for reading.
func sqliteReadOnly(db string, logger *slog.Logger) opener {
	return func(ctx context.Context) (timeline.Store, error) {
		return sqlite.Open(ctx, db, sqlite.Options{Logger: logger, ReadOnly: true})
	}
}

// ingest ingests the evidence of fsys into the timeline open opens, then
// updates its statistics. It returns the ingest runs, also on failure. dir
// is the folder fsys reads ("" for the embedded fixtures): its files are
// read from disk, and one the file rule of input.Walk refuses fails the
// replay before the timeline is opened.
func (l incidentLoader) ingest(ctx context.Context, fsys fs.FS, dir string, open opener) ([]timeline.IngestRun, error) {
	load := evidence.Loader{Logger: l.logger, Now: l.now, Dir: dir, AuditWindow: l.auditWindow,
		OnSkip: func(s *input.Skip) { l.warnf("%s", s) }}
	ev, err := load.Find(fsys)
	if err != nil {
		return nil, err
	}
	store, err := open(ctx)
	if err != nil {
		return nil, err
	}
	runs, err := load.Ingest(ctx, store, fsys, ev)
	if err == nil {
		err = analyze(ctx, store)
	}
	return runs, cmp.Or(err, store.Close())
}

// checkIncidentFile applies the file rule to the file p (slash-separated)
// of the incident folder dir; nothing for the embedded fixtures (dir "").
func checkIncidentFile(dir, p string) error {
	if dir == "" {
		return nil
	}
	return input.CheckInFolder(dir, filepath.Join(dir, filepath.FromSlash(p)))
}

// analyzeIncident runs the investigation and the control-plane analysis
// over the timeline open opens, with their defaults.
func analyzeIncident(ctx context.Context, open opener) (*investigate.Report, *controlplane.Report, error) {
	ro, err := open(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer ro.Close()
	rep, err := investigate.Run(ctx, ro, investigate.Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("investigate: %w", err)
	}
	cp, err := controlplane.Analyze(ctx, ro, controlplane.Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("controlplane: %w", err)
	}
	return rep, cp, nil
}
