// Package evidence ingests a recorded incident (fixtures/README.md) into a
// timeline: its audit logs (*.log, *.log.gz, *.log.xz), its objects/ dumps
// (kubectl get -o json or yaml, events too), its versions.jsonl (or
// versions.yaml), its nodelogs/ (dmesg, journald JSON, a job's NCCL
// output) and its metrics/ (Prometheus query_range answers, or exposition
// snapshots with their own timestamps), each kind with its ingester. It is the one loader of
// faultline replay, faultline eval and the tests that replay a fixture.
//
// The incident is an fs.FS: the fixtures embedded in the binary are read in
// place, with no copy to a temporary folder; a folder on disk is read from
// disk (Dir), so its runs name its files where they are.
package evidence

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/faultline/faultline/ingest/audit"
	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/ingest/kube"
	"github.com/faultline/faultline/ingest/metrics"
	"github.com/faultline/faultline/ingest/nodelogs"
	"github.com/faultline/faultline/ingest/versions"
	"github.com/faultline/faultline/timeline"
)

// ErrNone is an incident with nothing to ingest.
var ErrNone = errors.New("no evidence in it (*.log, *.log.gz, *.log.xz, objects/, versions.jsonl, nodelogs/, metrics/): see fixtures/README.md")

// Files are an incident's evidence files by kind, slash-separated names of
// its fs.FS in walk (lexical) order.
type Files struct {
	Audits, Objects, Versions []string
	// NodeLogs are the files below nodelogs/ (but its *.md), each named
	// to its node by the folder below nodelogs/ that holds it
	// (nodelogs/gpu-0086/dmesg.txt) or by its name (nodelogs/gpu-0086.dmesg).
	NodeLogs []string
	// Metrics are the files below metrics/ (but its *.md).
	Metrics []string
}

// nodeLogsDir and metricsDir are the folders of an incident's node logs
// and metrics.
const (
	nodeLogsDir = "nodelogs"
	metricsDir  = "metrics"
)

// Find lists the evidence files of fsys. With Dir set, each must pass
// the file rule (input.CheckInFolder: no FIFO, device or symlink leaving
// Dir) before anything is read. A file of no kind (README.md,
// expected.json) is left out; no evidence at all is ErrNone.
func (l Loader) Find(fsys fs.FS) (*Files, error) {
	ev := &Files{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		into := ev.kind(p)
		if into == nil {
			return nil
		}
		if l.Dir != "" {
			if err := input.CheckInFolder(l.Dir, l.onDisk(p)); err != nil {
				return err
			}
		}
		*into = append(*into, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(ev.Audits)+len(ev.Objects)+len(ev.Versions)+len(ev.NodeLogs)+len(ev.Metrics) == 0 {
		return nil, ErrNone
	}
	return ev, nil
}

// kind returns the list the file p belongs to; nil for a file that is no
// evidence.
func (ev *Files) kind(p string) *[]string {
	base := strings.TrimSuffix(strings.TrimSuffix(path.Base(p), ".gz"), ".xz")
	switch {
	case strings.HasPrefix(p, "objects/"):
		return &ev.Objects
	case strings.HasPrefix(p, nodeLogsDir+"/"):
		if strings.HasSuffix(p, ".md") {
			return nil // a README of how the logs were made
		}
		return &ev.NodeLogs
	case strings.HasPrefix(p, metricsDir+"/"):
		if strings.HasSuffix(p, ".md") {
			return nil
		}
		return &ev.Metrics
	case base == "versions.jsonl" || base == "versions.yaml":
		return &ev.Versions
	case strings.HasSuffix(base, ".log"):
		return &ev.Audits
	}
	return nil
}

// Loader ingests incidents. The zero Loader works: it logs nothing, hears
// of no skipped input, and stamps object versions with the time of day.
type Loader struct {
	Logger *slog.Logger
	Now    func() time.Time // the ingest time of dumped objects; nil: time.Now
	OnSkip input.OnSkip     // hears of each bad line or document, skipped
	// Dir, when set, is the folder on disk the fs.FS reads (os.DirFS(Dir)):
	// its files are read from disk, each first passing the file rule
	// (input.CheckInFolder: no FIFO, device or symlink leaving Dir), and
	// their runs record where they are.
	Dir string
	// AuditWindow keeps only the audit records of requests received in
	// it (audit.Options.Window); open: all of them.
	AuditWindow timeline.Span
}

// Load finds the evidence of fsys and ingests it into store: Find, then
// Ingest.
func (l Loader) Load(ctx context.Context, store timeline.Appender, fsys fs.FS) ([]timeline.IngestRun, error) {
	ev, err := l.Find(fsys)
	if err != nil {
		return nil, err
	}
	return l.Ingest(ctx, store, fsys, ev)
}

// onDisk is the path of the file p of Dir.
func (l Loader) onDisk(p string) string { return filepath.Join(l.Dir, filepath.FromSlash(p)) }

// Ingest ingests the evidence ev of fsys into store, audit logs first, then
// objects, then versions, then node logs, each kind with its ingester, and
// then metrics, and returns the ingest runs, also on failure. With Dir set,
// the files are read from disk.
func (l Loader) Ingest(ctx context.Context, store timeline.Appender, fsys fs.FS, ev *Files) ([]timeline.IngestRun, error) {
	logger := l.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	audits, objects, vers, mets := ev.Audits, ev.Objects, ev.Versions, ev.Metrics
	nodeLogs, nodeRoot := ev.NodeLogs, nodeLogsDir
	if l.Dir != "" {
		fsys = nil // read by path, from disk
		audits, objects, vers, mets = l.allOnDisk(audits), l.allOnDisk(objects), l.allOnDisk(vers), l.allOnDisk(mets)
		nodeLogs, nodeRoot = l.allOnDisk(nodeLogs), l.onDisk(nodeLogsDir)
	}
	var runs []timeline.IngestRun
	if len(audits) > 0 {
		r, err := audit.Ingest(ctx, store, audits, audit.Options{FS: fsys, Logger: logger, OnSkip: l.OnSkip, Window: l.AuditWindow})
		runs = append(runs, r...)
		if err != nil {
			return runs, err
		}
	}
	if len(objects) > 0 {
		r, err := kube.IngestFiles(ctx, store, objects, kube.FileOptions{FS: fsys, Now: l.Now, OnSkip: l.OnSkip})
		runs = append(runs, r...)
		if err != nil {
			return runs, err
		}
	}
	if len(vers) > 0 {
		r, err := versions.Ingest(ctx, store, vers, versions.Options{FS: fsys, OnSkip: l.OnSkip})
		runs = append(runs, r...)
		if err != nil {
			return runs, err
		}
	}
	if len(nodeLogs) > 0 {
		files := make([]nodelogs.File, len(nodeLogs))
		for i, p := range nodeLogs {
			files[i] = nodelogs.File{Path: p, Root: nodeRoot}
		}
		r, err := nodelogs.Ingest(ctx, store, files, nodelogs.Options{FS: fsys, OnSkip: l.OnSkip, Logger: logger})
		runs = append(runs, r...)
		if err != nil {
			return runs, err
		}
	}
	if len(mets) > 0 {
		r, err := metrics.Ingest(ctx, store, mets, metrics.Options{FS: fsys, OnSkip: l.OnSkip, Now: l.Now})
		runs = append(runs, r...)
		if err != nil {
			return runs, err
		}
	}
	return runs, nil
}

func (l Loader) allOnDisk(names []string) []string {
	paths := make([]string, len(names))
	for i, p := range names {
		paths[i] = l.onDisk(p)
	}
	return paths
}
