// Package nodelogs ingests node logs: the kernel's ring buffer (dmesg in
// its text forms), the journald JSON export of kubelet, containerd and the
// kernel (journalctl -o json), and a job's NCCL/MPI output (kubectl logs
// --timestamps). It keeps the lines that matter to an investigation as
// records on their Node (source "node"): NVIDIA Xid errors, ECC and row
// remapping, NVLink, kubelet PLEG stalls and evictions, OOM kills, NCCL
// timeouts and errors, a full conntrack table, and links going down and
// up. Every other line is counted and dropped: most lines match nothing,
// and a cheap substring test rejects them before any parsing.
//
// docs/nodelogs.md describes the formats, how a file's node is named, how
// a line becomes a record, and the Xid codes with their documented
// meanings.
package nodelogs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/faultline/faultline/ingest/commit"
	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/timeline"
)

// MaxLine is the longest line read; a longer one is a bad line.
const MaxLine = 4 << 20

// Options tune an ingest.
type Options struct {
	// Node names the node of every file; "" names each file's node from
	// the file (_HOSTNAME of a journal entry, its folder, its name).
	Node string
	// BootTime places raw dmesg lines ([ 1234.567890], seconds since
	// boot). Zero: such a line that matches is a bad line.
	BootTime time.Time
	Strict   bool
	OnSkip   input.OnSkip // hears of every bad line as it is skipped
	// BatchSize is the records per transaction; <= 0: commit.Size.
	BatchSize int
	// FS, if set, holds the files: paths name files of it (slash-separated),
	// read with input.OpenFS.
	FS     fs.FS
	Logger *slog.Logger // nil: discard
}

// File is one node log to read, and the folder it was found in: a file
// below Root is named by its first folder there (ROOT/NODE/...). Root is
// "" for a file named by itself.
type File struct {
	Path, Root string
}

// ErrStrict wraps the bad line that stopped a --strict ingest.
var ErrStrict = errors.New("stopped at the first bad line (--strict)")

// errBinaryJournal is why a folder's binary systemd journal is not read.
var errBinaryJournal = errors.New("a binary systemd journal: export it with journalctl --file FILE -o json")

// Expand turns the paths a user gave into the files to read: a file as
// it is (standard input too), a folder's files recursively, by the file
// rule of input.Walk (no FIFO, device or symlink leaving the folder;
// hidden files left out), with the folder as their Root. Refused files and
// binary journals (*.journal) are returned as skipped.
func Expand(paths []string) ([]File, []input.Skipped, error) {
	var files []File
	var skipped []input.Skipped
	for _, p := range paths {
		fi, err := os.Stat(p)
		if p != input.Stdin && err != nil {
			return nil, nil, fmt.Errorf("ingest nodelogs: %w", err)
		}
		if p == input.Stdin || !fi.IsDir() {
			files = append(files, File{Path: p})
			continue
		}
		walked, refused, err := input.Walk(p, true, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("ingest nodelogs: %w", err)
		}
		skipped = append(skipped, refused...)
		for _, w := range walked {
			if strings.HasSuffix(w, ".journal") || strings.HasSuffix(w, ".journal~") {
				skipped = append(skipped, input.Skipped{Path: w, Err: errBinaryJournal})
				continue
			}
			files = append(files, File{Path: w, Root: p})
		}
	}
	return files, skipped, nil
}

// IngestPaths is Expand, then Ingest: the files refused in folders are
// named in an *input.SkippedError after the others were ingested.
func IngestPaths(ctx context.Context, store timeline.Appender, paths []string, opt Options) ([]timeline.IngestRun, error) {
	files, skipped, err := Expand(paths)
	if err != nil {
		return nil, err
	}
	runs, err := Ingest(ctx, store, files, opt)
	if err == nil && len(skipped) > 0 {
		err = &input.SkippedError{Files: skipped}
	}
	return runs, err
}

// Ingest reads node logs into the store, one ingest run per file. Bad
// lines are reported and skipped; a file whose node cannot be named fails
// with a *NodeNameError.
func Ingest(ctx context.Context, store timeline.Appender, files []File, opt Options) ([]timeline.IngestRun, error) {
	if opt.Node != "" {
		if p := CheckNodeName(opt.Node); p != "" {
			return nil, &NodeNameError{Path: "", Name: opt.Node, From: fromOption, Problem: p}
		}
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	var runs []timeline.IngestRun
	for _, f := range files {
		run, err := ingestFile(ctx, store, f, opt)
		if run != nil {
			runs = append(runs, *run)
		}
		if err != nil {
			return runs, err
		}
	}
	return runs, nil
}

func ingestFile(ctx context.Context, store timeline.Appender, file File, opt Options) (*timeline.IngestRun, error) {
	// The source reads by rctx: stopping early (a bad line under Strict, a
	// failed commit) stops a read that waits on a pipe.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	src, err := input.OpenIn(rctx, opt.FS, file.Path, MaxLine)
	if err != nil {
		return nil, fmt.Errorf("ingest nodelogs: %w", err)
	}
	defer src.Close()
	run := &timeline.IngestRun{Source: timeline.SourceNode, Path: src.RunPath(), Size: src.Size}
	if err := store.BeginRun(ctx, run); err != nil {
		return nil, err
	}
	// Committed by count and by time: a kill loses at most the last
	// second's records, and a file never sits in one transaction.
	b, err := commit.Open(ctx, store, run)
	if err != nil {
		return run, err
	}
	if opt.BatchSize > 0 {
		b.Size = opt.BatchSize
	}
	fi := newFileIngest(run, store, b, src, file, opt)
	readErr := fi.readAll(rctx, cancel)
	var se *storeError
	var ne *NodeNameError
	switch {
	case errors.As(readErr, &se):
		err = se.err
	case errors.Is(readErr, ErrStrict), errors.As(readErr, &ne):
		err = readErr
	case readErr != nil && ctx.Err() == nil:
		err = fmt.Errorf("ingest nodelogs %s: %w", src.Name(), readErr)
	default:
		err = ctx.Err()
	}
	opt.Logger.Debug("node log read", "path", src.Name(), "format", fi.format.String(), "node", fi.node, "lines", run.Lines, "records", run.Records)
	return run, fi.finish(ctx, err)
}

// storeError is a failure to store, not a bad line: the ingest stops.
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }
