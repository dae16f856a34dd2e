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
	// (sqlite.Options.RedactConfigMaps).
	redactAll bool
}

// ingest ingests the evidence of fsys into the timeline at db (created if
// need be), then updates its statistics. It returns the ingest runs, also
// on failure. dir is the folder fsys reads ("" for the embedded fixtures):
// its files are read from disk, and one the file rule of input.Walk
// refuses fails the replay before the timeline is opened.
func (l incidentLoader) ingest(ctx context.Context, fsys fs.FS, dir, db string) ([]timeline.IngestRun, error) {
	load := evidence.Loader{Logger: l.logger, Now: l.now, Dir: dir,
		OnSkip: func(s *input.Skip) { l.warnf("%s", s) }}
	ev, err := load.Find(fsys)
	if err != nil {
		return nil, err
	}
	store, err := sqlite.Open(ctx, db, sqlite.Options{Logger: l.logger, Key: l.key, RedactConfigMaps: l.redactAll})
	if err != nil {
		return nil, err
	}
	runs, err := load.Ingest(ctx, store, fsys, ev)
	if err == nil {
		err = store.Analyze(ctx)
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
// over the timeline at db, with their defaults.
func analyzeIncident(ctx context.Context, db string, logger *slog.Logger) (*investigate.Report, *controlplane.Report, error) {
	ro, err := sqlite.Open(ctx, db, sqlite.Options{Logger: logger, ReadOnly: true})
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
