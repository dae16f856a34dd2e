// Package audit ingests kube-apiserver audit logs into the timeline: plain
// audit.k8s.io Event lines, EventList batches, and the AKS, GKE and EKS
// (CloudWatch) export envelopes. Each request becomes one record (its stages
// joined by audit ID); request and response bodies become object versions.
package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/timeline"
)

// Options tune an ingest.
type Options struct {
	Strict    bool // stop at the first bad line
	MaxLine   int  // longest line read; <= 0: input.DefaultMaxLine
	BatchSize int  // records per transaction; <= 0: 20000
	Workers   int  // decoding goroutines; <= 0: GOMAXPROCS
	Logger    *slog.Logger
	// OnBadLine, if set, hears of every bad line as it is skipped.
	OnBadLine func(*BadLine)
	// OnProgress, if set, is called about every 250 ms and once at the end
	// of each source.
	OnProgress func(Progress)
}

// BadLine is a line that could not be ingested.
type BadLine struct {
	Path string
	Line int64
	Err  error
}

func (b *BadLine) Error() string { return fmt.Sprintf("%s:%d: %v", b.Path, b.Line, b.Err) }
func (b *BadLine) Unwrap() error { return b.Err }

// Progress reports an ingest under way.
type Progress struct {
	Path    string
	Bytes   int64 // read so far (compressed bytes for gzip)
	Size    int64 // of the file; -1 unknown
	Records int64 // records and stages handled
	Elapsed time.Duration
}

// ErrStrict wraps the bad line that stopped a --strict ingest.
var ErrStrict = errors.New("stopped at the first bad line (--strict)")

const (
	chunkLines = 256
	chunkBytes = 1 << 20
)

type chunk struct {
	seq   int
	lines []rawLine
}

type rawLine struct {
	no   int64
	data []byte
	err  error // from reading (over-long line)
}

type item struct {
	line     int64
	rec      *timeline.Record
	versions []*timeline.ObjectVersion
}

type decoded struct {
	seq   int
	items []item
	bad   []*BadLine
}

// FirstTime returns the time of the first audit record in a file, for
// ordering rotated logs: it reads at most a few lines.
func FirstTime(path string) (int64, bool) {
	src, err := input.Open(path, 0)
	if err != nil {
		return 0, false
	}
	defer src.Close()
	for range 16 {
		line, _, err := src.Line()
		if errors.Is(err, io.EOF) {
			return 0, false
		}
		if err != nil {
			continue
		}
		evs, err := decode(line)
		if err != nil || len(evs) == 0 {
			continue
		}
		if r, _, err := toRecord(&evs[0], line); err == nil {
			return r.Time.UnixNano(), true
		}
	}
	return 0, false
}

// Ingest reads each path (files, directories of rotated logs in time order,
// "-" for stdin) into the store, one ingest run per file. It returns the
// runs. Bad lines are skipped (reported through OnBadLine) unless Strict.
func Ingest(ctx context.Context, store timeline.Store, paths []string, opt Options) ([]timeline.IngestRun, error) {
	files, skipped, err := input.Expand(paths, FirstTime)
	if err != nil {
		return nil, fmt.Errorf("ingest audit: %w", err)
	}
	for _, s := range skipped {
		if opt.Logger != nil {
			opt.Logger.Warn("skipped a file with no audit records in its first lines", "path", s)
		}
	}
	return input.Each(files, func(f string) (*timeline.IngestRun, error) { return ingestFile(ctx, store, f, opt) })
}

func ingestFile(ctx context.Context, store timeline.Store, path string, opt Options) (*timeline.IngestRun, error) {
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	src, err := input.Open(path, opt.MaxLine)
	if err != nil {
		return nil, fmt.Errorf("ingest audit: %w", err)
	}
	defer src.Close()
	name := src.RunPath()
	run := &timeline.IngestRun{Source: timeline.SourceAudit, Path: name, Size: src.Size}
	if err := store.BeginRun(ctx, run); err != nil {
		return nil, fmt.Errorf("ingest audit %s: %w", src.Name(), err)
	}
	log.Debug("ingest audit", "path", src.Name(), "run", run.ID)
	w := &writer{store: store, run: run, committed: *run, opt: opt, src: src, start: time.Now()}
	err = w.pipeline(ctx)
	if err == nil {
		src.Drain()
		run.SHA256 = src.SHA256()
		run.Status = timeline.RunDone
	} else {
		run.Status, run.Error = timeline.RunFailed, err.Error()
	}
	if run.Size < 0 {
		run.Size = src.BytesRead()
	}
	w.progress(true)
	// The run's final state is written even when ctx is cancelled: what was
	// committed stays, and says how far it got.
	if ferr := store.FinishRun(context.WithoutCancel(ctx), run); ferr != nil {
		err = errors.Join(err, ferr)
	}
	return run, err
}

type writer struct {
	store timeline.Store
	run   *timeline.IngestRun
	// committed is run as of the last committed batch: a batch that fails
	// (a full disk) takes its counts back, so the summary and the run say
	// what the timeline holds, not what was read.
	committed timeline.IngestRun
	opt       Options
	src       *input.Source
	start     time.Time
	lastProg  time.Time
	handled   int64
	lastLine  int64 // so a line holding many events (EventList) counts once
}

func (w *writer) progress(final bool) {
	if w.opt.OnProgress == nil {
		return
	}
	now := time.Now()
	if !final && now.Sub(w.lastProg) < 250*time.Millisecond {
		return
	}
	w.lastProg = now
	w.opt.OnProgress(Progress{Path: w.src.Name(), Bytes: w.src.BytesRead(), Size: w.src.Size,
		Records: w.handled, Elapsed: now.Sub(w.start)})
}

// pipeline runs reader -> decoders -> this writer, keeping line order.
func (w *writer) pipeline(parent context.Context) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	workers := w.opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	chunks := make(chan chunk, workers)
	results := make(chan decoded, workers)
	var readErr error
	go func() {
		defer close(chunks)
		readErr = w.read(ctx, chunks)
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range chunks {
				select {
				case results <- w.decodeChunk(c):
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(results) }()

	err := w.write(ctx, results)
	cancel()
	for range results { // let decoders finish
	}
	if err != nil {
		return err
	}
	if err := parent.Err(); err != nil {
		return err
	}
	return readErr
}

// read splits the source into chunks of lines. A file that is one JSON
// document spread over many lines (a pretty-printed EventList) is read whole
// as a single line.
func (w *writer) read(ctx context.Context, out chan<- chunk) error {
	var (
		c     = chunk{}
		size  int
		first = true
	)
	send := func() bool {
		if len(c.lines) == 0 {
			return true
		}
		select {
		case out <- c:
		case <-ctx.Done():
			return false
		}
		c = chunk{seq: c.seq + 1}
		size = 0
		return true
	}
	for {
		line, no, err := w.src.Line()
		if errors.Is(err, io.EOF) {
			send()
			return nil
		}
		var tooLong *input.ErrLineTooLong
		switch {
		case errors.As(err, &tooLong):
			c.lines = append(c.lines, rawLine{no: no, err: &FieldError{"line", tooLong.Error()}})
			continue
		case err != nil:
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue // blank lines separate nothing
		}
		if first {
			first = false
			if doc, ok, err := w.document(line); err != nil {
				return err
			} else if ok {
				line = doc
			}
		}
		c.lines = append(c.lines, rawLine{no: no, data: bytes.Clone(line)})
		size += len(line)
		if len(c.lines) >= chunkLines || size >= chunkBytes {
			if !send() {
				return ctx.Err()
			}
		}
	}
}

// document recognises a file that opens with a lone "{" or "[" (or any first
// line that is an unterminated JSON value) and returns the whole file as one
// value.
func (w *writer) document(first []byte) ([]byte, bool, error) {
	t := bytes.TrimSpace(first)
	if len(t) == 0 || (t[0] != '{' && t[0] != '[') || jsonComplete(t) {
		return nil, false, nil
	}
	max := w.opt.MaxLine
	if max <= 0 {
		max = input.DefaultMaxLine
	}
	doc := bytes.Clone(first)
	for {
		line, _, err := w.src.Line()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, false, err
		}
		doc = append(append(doc, '\n'), line...)
		if len(doc) > max {
			return nil, false, fmt.Errorf("%s: a multi-line JSON document over the %d-byte limit (--max-line-size)", w.src.Name(), max)
		}
	}
	if doc = bytes.TrimSpace(doc); len(doc) > 0 && doc[0] == '[' {
		doc = append(append([]byte(`{"kind":"EventList","items":`), doc...), '}')
	}
	return doc, true, nil
}

// jsonComplete reports whether b closes every bracket it opens.
func jsonComplete(b []byte) bool {
	depth, inStr, esc := 0, false, false
	for _, c := range b {
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
	}
	return depth <= 0 && !inStr
}

func (w *writer) decodeChunk(c chunk) decoded {
	out := decoded{seq: c.seq}
	for _, l := range c.lines {
		if l.err != nil {
			out.bad = append(out.bad, &BadLine{Path: w.src.Name(), Line: l.no, Err: l.err})
			continue
		}
		evs, err := decode(l.data)
		if err != nil {
			out.bad = append(out.bad, &BadLine{Path: w.src.Name(), Line: l.no, Err: err})
			continue
		}
		for i := range evs {
			rec, vs, err := toRecord(&evs[i], l.data)
			if err != nil {
				out.bad = append(out.bad, &BadLine{Path: w.src.Name(), Line: l.no, Err: err})
				break
			}
			rec.Evidence.Line = l.no
			for _, v := range vs {
				v.Evidence.Line = l.no
			}
			out.items = append(out.items, item{line: l.no, rec: rec, versions: vs})
		}
	}
	return out
}

// write stores decoded chunks in order, committing every BatchSize records.
func (w *writer) write(ctx context.Context, results <-chan decoded) error {
	size := w.opt.BatchSize
	if size <= 0 {
		size = 20000
	}
	var (
		pending = map[int]decoded{}
		next    = 0
		batch   timeline.Batch
		inBatch = 0
	)
	commit := func() error {
		if batch == nil {
			return nil
		}
		err := batch.Commit(context.WithoutCancel(ctx), w.run)
		batch, inBatch = nil, 0
		if err != nil {
			w.uncount()
			return err
		}
		w.committed = *w.run
		return nil
	}
	defer func() {
		if batch != nil {
			batch.Rollback()
			w.uncount()
		}
	}()
	for res := range results {
		pending[res.seq] = res
		for {
			d, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			for _, b := range mergeOrder(d) {
				if b.bad != nil {
					w.run.BadLines++
					w.run.Lines++
					if w.opt.OnBadLine != nil {
						w.opt.OnBadLine(b.bad)
					}
					if w.opt.Strict {
						if err := commit(); err != nil {
							return err
						}
						return fmt.Errorf("%w: %w", ErrStrict, b.bad)
					}
					continue
				}
				if batch == nil {
					var err error
					if batch, err = w.store.Batch(ctx, w.run.ID); err != nil {
						return err
					}
				}
				if err := w.add(ctx, batch, b.item); err != nil {
					return fmt.Errorf("ingest audit %s:%d: %w", w.src.Name(), b.item.line, err)
				}
				inBatch++
			}
			if inBatch >= size {
				if err := commit(); err != nil {
					return err
				}
			}
			w.progress(false)
		}
		if err := ctx.Err(); err != nil {
			if cerr := commit(); cerr != nil {
				return cerr
			}
			return err
		}
	}
	return commit()
}

type entry struct {
	item *item
	bad  *BadLine
}

// mergeOrder interleaves a chunk's records and bad lines by line number.
func mergeOrder(d decoded) []entry {
	out := make([]entry, 0, len(d.items)+len(d.bad))
	i, j := 0, 0
	for i < len(d.items) || j < len(d.bad) {
		if j >= len(d.bad) || (i < len(d.items) && d.items[i].line <= d.bad[j].Line) {
			out = append(out, entry{item: &d.items[i]})
			i++
		} else {
			out = append(out, entry{bad: d.bad[j]})
			j++
		}
	}
	return out
}

// uncount takes back the counts of a batch that was not committed.
func (w *writer) uncount() {
	r, c := w.run, &w.committed
	r.Lines, r.Records, r.Merged, r.Duplicates, r.Conflicts = c.Lines, c.Records, c.Merged, c.Duplicates, c.Conflicts
	r.Versions, r.BadLines, r.First, r.Last = c.Versions, c.BadLines, c.First, c.Last
}

// add stores one record and its versions and counts the outcome.
func (w *writer) add(ctx context.Context, b timeline.Batch, it *item) error {
	res, err := b.AddRecord(ctx, it.rec)
	if err != nil {
		return err
	}
	w.handled++
	if it.line != w.lastLine {
		w.run.Lines++
		w.lastLine = it.line
	}
	w.run.Tally(res)
	if t := it.rec.Time; !t.IsZero() {
		if w.run.First.IsZero() || t.Before(w.run.First) {
			w.run.First = t
		}
		if t.After(w.run.Last) {
			w.run.Last = t
		}
	}
	for _, v := range it.versions {
		added, err := b.AddVersion(ctx, v)
		if err != nil {
			return err
		}
		if added {
			w.run.Versions++
		}
	}
	return nil
}
