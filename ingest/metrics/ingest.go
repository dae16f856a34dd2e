package metrics

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/faultline/faultline/ingest/commit"
	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/timeline"
)

// Options tune an ingest of files.
type Options struct {
	Format Format // FormatAuto: by content (Detect)
	Strict bool   // stop at the first bad piece of input
	OnSkip input.OnSkip
	// Time is the time of the samples of a snapshot that carry none (zero:
	// the file's modification time, or the ingest's start for standard
	// input).
	Time time.Time
	// Nameless is the metric of API series without __name__ (the results
	// of expressions); "" leaves them nameless.
	Nameless string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// FS, if set, holds the files.
	FS fs.FS
	// OnRun hears how each file's samples were timed, once its samples
	// are committed.
	OnRun func(FileRun)
	// BatchSize is samples per transaction (<= 0: BatchSamples where the
	// store's batch is a commit.Carrier, else commit.Size).
	BatchSize int
}

// BatchSamples is how many samples a transaction holds at most: the
// files of one ingest share their transactions where the store allows it
// (commit.Carrier), and a transaction also closes after commit.Every.
const BatchSamples = 1 << 20

// TimeSource says where a snapshot's sample times came from.
type TimeSource string

// Where a snapshot's sample times came from.
const (
	TimeOwn   TimeSource = "own timestamps"   // every sample carried one
	TimeFlag  TimeSource = "--time"           // Options.Time
	TimeMtime TimeSource = "file mtime"       // the file's modification time
	TimeStart TimeSource = "ingest start"     // standard input: no mtime
	TimeAPI   TimeSource = "API timestamps"   // an API response: every sample has one
	TimeMixed TimeSource = "own and fallback" // some carried one
)

// FileRun tells how one file was read: its run, its format, how many
// series it had, and where its sample times came from (and the time given
// to those without one).
type FileRun struct {
	Run      *timeline.IngestRun
	Format   Format
	Series   int64
	Times    TimeSource
	Fallback time.Time
}

// ErrStrict wraps the bad input that stopped a --strict ingest.
var ErrStrict = errors.New("stopped at the first bad input (--strict)")

// Ingest reads metrics files into the store, one run per file. The files
// share their transactions where the store allows it (commit.Continue):
// each run ends, and OnRun hears of it, once its samples are committed.
func Ingest(ctx context.Context, store timeline.Appender, paths []string, opt Options) ([]timeline.IngestRun, error) {
	in := &ingest{store: store, opt: opt, cache: newSeriesCache()}
	var runs []*timeline.IngestRun
	var err error
	for _, p := range paths {
		var run *timeline.IngestRun
		run, err = in.file(ctx, p)
		if run != nil {
			runs = append(runs, run)
		}
		if err != nil {
			break
		}
	}
	if in.open != nil { // the files read since the last commit
		err = errors.Join(err, in.open.Commit(ctx))
	}
	out := make([]timeline.IngestRun, len(runs))
	for i, r := range runs {
		out[i] = *r
	}
	return out, err
}

// ingest is one Ingest: its files, and the transaction they share.
type ingest struct {
	store timeline.Appender
	opt   Options
	cache *seriesCache     // snapshots of one target repeat its series
	open  *commit.Periodic // the transaction the next file goes on with, or nil
	buf   []byte           // the memory a file is read into, reused
}

func (in *ingest) file(ctx context.Context, path string) (*timeline.IngestRun, error) {
	src, err := input.OpenIn(ctx, in.opt.FS, path, 0)
	if err != nil {
		return nil, fmt.Errorf("ingest metrics: %w", err)
	}
	defer src.Close()
	run := &timeline.IngestRun{Source: timeline.SourceMetrics, Path: src.RunPath(), Size: src.Size}
	w, err := in.begin(ctx, run, src.Name())
	if err != nil && run.ID == 0 {
		return nil, err
	}
	if err != nil {
		return run, err
	}
	data, rerr := readBoundedInto(in.buf, src.Reader(), src.Name(), src.Size)
	in.buf = data[:0]
	if rerr == nil {
		rerr = ctx.Err()
	}
	fr := &FileRun{Run: run}
	if rerr == nil {
		rerr = w.parse(data, in.opt, fileTime(in.opt, src), in.cache, fr)
	}
	fr.Series = w.series
	onDone := func() {
		if in.opt.OnRun != nil {
			in.opt.OnRun(*fr)
		}
	}
	rerr = classify(ctx, src.Name(), rerr)
	if _, carries := w.batch.Batch().(commit.Carrier); carries && rerr == nil {
		w.batch.Done(in.store, src, nil, onDone)
		in.open = w.batch
		return run, nil
	}
	in.open = nil
	err = w.batch.Finish(ctx, in.store, src, rerr)
	onDone()
	return run, err
}

// begin begins run and opens its writer: in the transaction of the files
// before it where the store allows, else in a transaction of its own.
func (in *ingest) begin(ctx context.Context, run *timeline.IngestRun, name string) (*writer, error) {
	if in.open != nil { // only a Carrier stays open
		if _, err := in.open.Continue(ctx, run); err != nil {
			return nil, err
		}
		return &writer{ctx: ctx, run: run, batch: in.open, name: name, opt: in.opt}, nil
	}
	if err := in.store.BeginRun(ctx, run); err != nil {
		return nil, err
	}
	w, err := newWriter(ctx, in.store, run, name, in.opt)
	if err != nil {
		return nil, errors.Join(err, in.store.FinishRun(context.WithoutCancel(ctx), failed(run, err)))
	}
	return w, nil
}

// failed marks run failed by err.
func failed(run *timeline.IngestRun, err error) *timeline.IngestRun {
	run.Status, run.Error = timeline.RunFailed, err.Error()
	return run
}

// classify turns what stopped a file into the run's error.
func classify(ctx context.Context, name string, err error) error {
	var se *storeError
	var ae *APIError
	var fe *FieldError
	var tl *TooLargeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &tl):
		return fmt.Errorf("ingest metrics: %w", err)
	case errors.As(err, &se):
		return se.err
	case errors.Is(err, ErrStrict), errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return err
	case errors.As(err, &ae):
		return fmt.Errorf("ingest metrics %s: %w", name, err)
	case errors.As(err, &fe):
		return fmt.Errorf("ingest metrics: %w", &input.Skip{Path: name, Line: fe.Line, Err: fe})
	}
	return fmt.Errorf("ingest metrics %s: %w", name, err)
}

// fallback is the time of snapshot samples without one, and where it came
// from.
type fallback struct {
	t   time.Time
	src TimeSource
}

func fileTime(opt Options, src *input.Source) fallback {
	if !opt.Time.IsZero() {
		return fallback{opt.Time.UTC(), TimeFlag}
	}
	if src.Path != input.Stdin && opt.FS == nil {
		if fi, err := os.Stat(src.Path); err == nil {
			return fallback{fi.ModTime().UTC(), TimeMtime}
		}
	}
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	return fallback{now().UTC(), TimeStart}
}

// parse reads data in its format into the run.
func (w *writer) parse(data []byte, opt Options, fb fallback, cache *seriesCache, fr *FileRun) error {
	f := opt.Format
	if f == FormatAuto {
		f = Detect(data)
	}
	fr.Format = f
	if f == FormatAPI {
		fr.Times = TimeAPI
		return ParseAPI(data, opt.Nameless, w.add, w.skip)
	}
	own, err := parseExposition(data, f, fb.t, cache, w.add, w.skip)
	switch {
	case own == 0:
		fr.Times, fr.Fallback = fb.src, fb.t
	case own == int(w.samples):
		fr.Times = TimeOwn
	default:
		fr.Times, fr.Fallback = TimeMixed, fb.t
	}
	if w.stop != nil {
		return w.stop
	}
	return err
}

// writer stores the series of one run in periodic commits.
type writer struct {
	ctx     context.Context // Ctrl-C stops the reading, not the commits
	run     *timeline.IngestRun
	batch   *commit.Periodic
	name    string // the input, in messages
	opt     Options
	series  int64
	samples int64
	stop    error // the --strict stop, or a store failure
}

func newWriter(ctx context.Context, store timeline.Appender, run *timeline.IngestRun, name string, opt Options) (*writer, error) {
	b, err := commit.Open(ctx, store, run)
	if err != nil {
		return nil, err
	}
	if _, carries := b.Batch().(commit.Carrier); carries {
		b.Size = BatchSamples // a store that writes sorted flushes
	}
	if opt.BatchSize > 0 {
		b.Size = opt.BatchSize
	}
	return &writer{ctx: ctx, run: run, batch: b, name: name, opt: opt}, nil
}

// skip reports a bad piece of input; under --strict the next add stops.
func (w *writer) skip(fe *FieldError) {
	w.run.BadLines++
	bad := &input.Skip{Path: w.name, Line: fe.Line, Err: fe}
	w.opt.OnSkip.Report(bad)
	if w.opt.Strict && w.stop == nil {
		w.stop = fmt.Errorf("%w: %w", ErrStrict, bad)
	}
}

// add stores one series' samples.
func (w *writer) add(s *timeline.Series, samples []timeline.Sample) error {
	if w.stop != nil {
		return w.stop
	}
	if err := w.ctx.Err(); err != nil {
		return err
	}
	ctx := context.WithoutCancel(w.ctx) // commits keep what was read
	n, err := w.batch.Batch().AddSamples(ctx, s, samples)
	if err != nil {
		return &storeError{err}
	}
	w.series++
	w.samples += int64(len(samples))
	r := w.run
	r.Lines += int64(len(samples))
	r.Records += int64(n)
	r.Duplicates += int64(len(samples) - n)
	for _, sm := range samples {
		if r.First.IsZero() || sm.Time.Before(r.First) {
			r.First = sm.Time
		}
		if sm.Time.After(r.Last) {
			r.Last = sm.Time
		}
	}
	// Counted after the series: a commit never splits a series' samples.
	if err := w.batch.AddedN(ctx, len(samples)); err != nil {
		return &storeError{err}
	}
	return nil
}

// storeError is a failure to store, not bad input: the ingest stops.
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }
