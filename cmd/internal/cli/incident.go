package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/controlplane"
	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/ingest/audit"
	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/ingest/kube"
	"github.com/faultline/faultline/ingest/versions"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite"
)

// errNoEvidence is an incident folder with nothing to ingest.
var errNoEvidence = errors.New("no evidence in it (*.log, *.log.gz, *.log.xz, objects/, versions.jsonl): see fixtures/README.md")

// incidentLoader ingests an incident folder (fixtures/README.md) the one
// way replay and eval share.
type incidentLoader struct {
	logger *slog.Logger
	now    func() time.Time
	warnf  func(format string, args ...any) // a bad line or document, skipped
	key    []byte                           // hashes secret values (sqlite.Options.Key)
	// redactAll hashes every ConfigMap value and env literal
	// (sqlite.Options.RedactConfigMaps).
	redactAll bool
}

// stagedEvidence is an incident's evidence copied to a work folder, by kind.
type stagedEvidence struct {
	audits, objects, versions []string
}

// ingest copies the evidence of fsys into work and ingests each kind with
// its ingester into the timeline at db (created if need be), then updates
// its statistics. It returns the ingest runs, also on failure. dir is the
// folder fsys reads ("" for the embedded fixtures): its files are read by
// the file rule of input.Walk.
func (l incidentLoader) ingest(ctx context.Context, fsys fs.FS, dir, work, db string) ([]timeline.IngestRun, error) {
	ev, err := stageEvidence(fsys, dir, work)
	if err != nil {
		return nil, err
	}
	store, err := sqlite.Open(ctx, db, sqlite.Options{Logger: l.logger, Key: l.key, RedactConfigMaps: l.redactAll})
	if err != nil {
		return nil, err
	}
	runs, err := l.ingestInto(ctx, store, ev)
	if err == nil {
		err = store.Analyze(ctx)
	}
	return runs, cmp.Or(err, store.Close())
}

func (l incidentLoader) ingestInto(ctx context.Context, store *sqlite.Store, ev *stagedEvidence) ([]timeline.IngestRun, error) {
	var runs []timeline.IngestRun
	if len(ev.audits) > 0 {
		r, err := audit.Ingest(ctx, store, ev.audits, audit.Options{Logger: l.logger, OnSkip: func(b *input.Skip) { l.warnf("%s", b) }})
		runs = append(runs, r...)
		if err != nil {
			return runs, err
		}
	}
	if len(ev.objects) > 0 {
		r, err := kube.IngestFiles(ctx, store, ev.objects, kube.FileOptions{Now: l.now,
			OnSkip: func(s *input.Skip) { l.warnf("%s", s) }})
		runs = append(runs, r...)
		if err != nil {
			return runs, err
		}
	}
	if len(ev.versions) > 0 {
		r, err := versions.Ingest(ctx, store, ev.versions, versions.Options{OnSkip: func(b *input.Skip) { l.warnf("%s", b) }})
		runs = append(runs, r...)
		if err != nil {
			return runs, err
		}
	}
	return runs, nil
}

// stageEvidence copies the evidence files of fsys (which may be the
// binary's embedded fixtures) into work, sorted by kind. When fsys reads the
// folder dir, an evidence file the file rule refuses (a FIFO, a device, a
// symlink leaving dir) fails the replay before anything is read: copying it
// would read outside the folder, hang, or fill memory.
func stageEvidence(fsys fs.FS, dir, work string) (*stagedEvidence, error) {
	ev := &stagedEvidence{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		var into *[]string
		base := strings.TrimSuffix(strings.TrimSuffix(path.Base(p), ".gz"), ".xz")
		switch {
		case strings.HasPrefix(p, "objects/"):
			into = &ev.objects
		case base == "versions.jsonl" || base == "versions.yaml":
			into = &ev.versions
		case strings.HasSuffix(base, ".log"):
			into = &ev.audits
		default:
			return nil
		}
		if err := checkIncidentFile(dir, p); err != nil {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		*into = append(*into, dst)
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		return nil, err
	}
	if len(ev.audits)+len(ev.objects)+len(ev.versions) == 0 {
		return nil, errNoEvidence
	}
	return ev, nil
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
