package kube

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/faultline/faultline/ingest/commit"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/timeline"
)

// FileOptions tune IngestFiles.
type FileOptions struct {
	// OnSkip hears of every document that could not be ingested.
	OnSkip input.OnSkip
	Now    func() time.Time
	// BatchSize is the objects per transaction; <= 0: commit.Size.
	BatchSize int
	// FS, if set, holds the files: paths name files of it (no folders, no
	// standard input), read with input.OpenFS.
	FS fs.FS
}

// IngestFiles reads offline dumps into the store, one ingest run per file:
// `kubectl get ... -o json` or `-o yaml` output (Lists or single objects),
// multi-document YAML, and folders of them (must-gather style), walked in
// name order by the file rule of input.Walk; files it refuses are named in
// an *input.SkippedError after the others were ingested. Events become records, everything else object versions.
func IngestFiles(ctx context.Context, store timeline.Appender, paths []string, opt FileOptions) ([]timeline.IngestRun, error) {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	var files []string
	var skipped []input.Skipped
	if opt.FS != nil {
		files, paths = paths, nil
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if p != input.Stdin && err != nil {
			return nil, fmt.Errorf("ingest objects: %w", err)
		}
		if p == input.Stdin || !fi.IsDir() {
			files = append(files, p)
			continue
		}
		walked, refused, err := input.Walk(p, true, func(path string) bool {
			switch strings.ToLower(filepath.Ext(strings.TrimSuffix(path, ".gz"))) {
			case ".json", ".yaml", ".yml":
				return true
			}
			return false
		})
		if err != nil {
			return nil, fmt.Errorf("ingest objects: %w", err)
		}
		files, skipped = append(files, walked...), append(skipped, refused...)
	}
	runs, err := input.Each(files, func(f string) (*timeline.IngestRun, error) { return ingestFile(ctx, store, f, opt) })
	if err == nil && len(skipped) > 0 {
		err = &input.SkippedError{Files: skipped}
	}
	return runs, err
}

func ingestFile(ctx context.Context, store timeline.Appender, path string, opt FileOptions) (*timeline.IngestRun, error) {
	src, err := input.OpenIn(ctx, opt.FS, path, 0)
	if err != nil {
		return nil, fmt.Errorf("ingest objects: %w", err)
	}
	defer src.Close()
	name := src.RunPath()
	run := &timeline.IngestRun{Source: timeline.SourceObject, Path: name, Size: src.Size}
	if err := store.BeginRun(ctx, run); err != nil {
		return nil, err
	}
	// Committed by count and by time: a kill loses at most the last
	// second's objects, and a dump never sits in one transaction.
	batch, err := commit.Open(ctx, store, run)
	if err != nil {
		return run, err
	}
	if opt.BatchSize > 0 {
		batch.Size = opt.BatchSize
	}
	var item, bad int64
	var storeErr error
	d := &dumpReader{
		r: bufio.NewReaderSize(src.Reader(), 1<<16),
		obj: func(doc int, m map[string]any) {
			if storeErr != nil { // the store failed: nothing more is written
				return
			}
			item++
			run.Lines = item + bad
			// The object is in memory: store it even if ctx is done.
			err := addObject(context.WithoutCancel(ctx), batch.Batch(), run, &unstructured.Unstructured{Object: m}, item, opt.Now())
			var bo *badObject
			switch {
			case errors.As(err, &bo):
				run.BadLines++
				opt.OnSkip.Report(&input.Skip{Path: src.Name(), Doc: doc, Err: err})
			case err != nil:
				storeErr = err
				return
			}
			storeErr = batch.Added(ctx)
		},
		bad: func(doc int, err error) {
			bad++
			run.Lines = item + bad
			run.BadLines++
			opt.OnSkip.Report(&input.Skip{Path: src.Name(), Doc: doc, Err: err})
		},
		stop: func() bool { return ctx.Err() != nil || storeErr != nil },
	}
	readErr := d.read()
	if storeErr != nil {
		// Commit what the open batch holds (or, failing that, take the
		// counts back to the last commit): no transaction is left open to
		// hold the writer lock against the next file.
		batch.Commit(ctx)
		run.Status, run.Error = timeline.RunFailed, storeErr.Error()
		store.FinishRun(context.WithoutCancel(ctx), run)
		return run, storeErr
	}
	run.Lines = item + bad
	return run, finishFile(ctx, store, batch, run, src, readErr)
}

// finishFile ends the run of a file read to its end (or to readErr, or to
// ctx being done): what was read is committed even when ctx is done
// (Ctrl-C), and the run says how far it got.
func finishFile(ctx context.Context, store timeline.Appender, batch *commit.Periodic, run *timeline.IngestRun, src *input.Source, readErr error) error {
	src.Drain()
	run.SHA256, run.Status = src.SHA256(), timeline.RunDone
	if readErr != nil && ctx.Err() == nil {
		run.Status, run.Error = timeline.RunFailed, readErr.Error()
	}
	if run.Size < 0 {
		run.Size = src.BytesRead()
	}
	if err := ctx.Err(); err != nil {
		run.Status, run.Error = timeline.RunFailed, err.Error()
	}
	if err := batch.Commit(ctx); err != nil {
		run.Status, run.Error = timeline.RunFailed, err.Error()
		store.FinishRun(context.WithoutCancel(ctx), run)
		return err
	}
	return store.FinishRun(context.WithoutCancel(ctx), run)
}

// addObject stores one dumped object, the resource guessed from its kind
// (no API to ask).
func addObject(ctx context.Context, b timeline.Batch, run *timeline.IngestRun, u *unstructured.Unstructured, item int64, now time.Time) error {
	kind := u.GetKind()
	if kind == "" || u.GetName() == "" {
		return &badObject{fmt.Errorf("item %d: not a Kubernetes object (kind %q, name %q)", item, kind, u.GetName())}
	}
	gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
	if err != nil {
		return &badObject{fmt.Errorf("item %d: apiVersion: %w", item, err)}
	}
	t := target{gvr: gv.WithResource(resourceFor(kind)), kind: kind}
	if kind == "Event" && gv.Group != "" && gv.Group != "events.k8s.io" {
		t.gvr.Resource = "custom-events" // an Event kind of another group is no core Event
	}
	err = storeObject(ctx, b, run, t, u, timeline.Evidence{Run: run.ID, Line: item}, now, nil)
	if bad := (*badObject)(nil); errors.As(err, &bad) {
		return &badObject{fmt.Errorf("%s %s/%s: %w", kind, u.GetNamespace(), u.GetName(), bad.err)}
	}
	return err
}

// resourceFor guesses the plural resource of a kind, as kubectl does when
// no discovery is at hand.
func resourceFor(kind string) string {
	if kind == "" {
		return ""
	}
	k := strings.ToLower(kind)
	switch {
	case k == "endpoints":
		return k
	case strings.HasSuffix(k, "s"), strings.HasSuffix(k, "x"), strings.HasSuffix(k, "ch"), strings.HasSuffix(k, "sh"):
		return k + "es"
	case strings.HasSuffix(k, "y") && !strings.ContainsAny(k[len(k)-2:len(k)-1], "aeiou"):
		return k[:len(k)-1] + "ies"
	}
	return k + "s"
}
