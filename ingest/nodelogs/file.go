package nodelogs

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tidwall/gjson"

	"github.com/faultline/faultline/ingest/commit"
	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/timeline"
)

// format is how a file's lines are written, found from its first
// non-empty line.
type format int

const (
	formatUnknown format = iota // no non-empty line yet
	formatJournal               // journalctl -o json
	formatText                  // timestamped text: dmesg, kubectl logs --timestamps
)

func (f format) String() string {
	return [...]string{"unknown", "journal", "text"}[f]
}

// fileIngest reads one file into its run. Its lines are read and
// matched on a goroutine of their own (readLines), which hands what
// matched, in order, to the goroutine that stores it (store): so a pipe
// that goes quiet still has its records committed within about a second.
type fileIngest struct {
	run   *timeline.IngestRun
	store timeline.Appender
	batch *commit.Periodic
	src   *input.Source
	opt   Options
	// Read by readLines alone until it has returned:
	format format
	// node is the file's node, named by fileNode (from says how);
	// nodeErr is why it cannot be used.
	node, from string
	nodeErr    error
	// Of the store's goroutine:
	pending    int       // records added since lastCommit (about)
	lastCommit time.Time // of the open batch
}

func newFileIngest(run *timeline.IngestRun, store timeline.Appender, b *commit.Periodic, src *input.Source, file File, opt Options) *fileIngest {
	node, from := fileNode(opt, file.Path, file.Root, opt.FS != nil)
	return &fileIngest{run: run, store: store, batch: b, src: src, opt: opt, node: node, from: from,
		nodeErr: checkFileNode(src.Name(), node, from), lastCommit: time.Now()}
}

// found is a line that matched, or a bad line (err set).
type found struct {
	line      int64
	time      time.Time
	node      string
	component string // from the journal; "" for the match's own
	msg       string
	m         Match
	err       error
}

// chunk is what readLines hands on: the lines read since the last chunk,
// and what of them matched or was bad. The last chunk is done, with the
// error that ended the read (nil at the end of the file).
type chunk struct {
	lines int64
	found []found
	done  bool
	err   error
}

// Chunks are handed on when this full, or when the source is about to
// wait for more input (a pipe).
const (
	chunkFound = 256
	chunkLines = 32 << 10
)

// readAll reads the file to its end, storing what matches. It stops at a
// store's failure (a *storeError), a bad line under Strict, a node that
// cannot be named (a *NodeNameError), or when ctx is done. cancel stops
// the reading goroutine, which it waits for.
func (f *fileIngest) readAll(ctx context.Context, cancel context.CancelFunc) error {
	chunks := make(chan chunk, 4)
	go f.readLines(ctx, chunks)
	defer func() {
		cancel()
		for range chunks { // until readLines has returned
		}
	}()
	tick := time.NewTicker(commit.Every / 4)
	defer tick.Stop()
	for {
		select {
		case c, ok := <-chunks:
			if !ok { // readLines stopped by ctx before its last chunk
				return ctx.Err()
			}
			if err := f.apply(ctx, c); err != nil || c.done {
				return cmp.Or(err, c.err)
			}
		case <-tick.C:
			if err := f.commitIdle(ctx); err != nil {
				return err
			}
		}
	}
}

// apply stores a chunk's records and reports its bad lines.
func (f *fileIngest) apply(ctx context.Context, c chunk) error {
	f.run.Lines += c.lines
	for i := range c.found {
		e := &c.found[i]
		var err error
		if e.err != nil {
			err = f.bad(e.line, e.err)
		} else {
			err = f.add(ctx, e)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// commitIdle commits what a stream (a pipe, standard input) brought, once
// it has waited commit.Every: a file commits by its batches alone.
func (f *fileIngest) commitIdle(ctx context.Context) error {
	if f.src.Size >= 0 || f.pending == 0 || time.Since(f.lastCommit) < f.batch.Every {
		return nil
	}
	size, every := f.batch.Size, f.batch.Every
	if err := f.batch.Commit(ctx); err != nil {
		f.batch = nil
		return &storeError{err}
	}
	b, err := commit.Open(ctx, f.store, f.run)
	if err != nil {
		f.batch = nil
		return &storeError{err}
	}
	b.Size, b.Every = size, every
	f.batch, f.pending, f.lastCommit = b, 0, time.Now()
	return nil
}

// readLines reads the lines and hands on chunks of them, then closes out.
func (f *fileIngest) readLines(ctx context.Context, out chan<- chunk) {
	defer close(out)
	var c chunk
	send := func() bool {
		select {
		case out <- c:
			c = chunk{}
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		if c.lines > 0 && (len(c.found) >= chunkFound || c.lines >= chunkLines || f.src.Buffered() == 0) {
			if !send() {
				return
			}
		}
		err := f.next(ctx, &c)
		if err != nil || c.done {
			c.done, c.err = true, err
			send()
			return
		}
	}
}

// next reads one line into c: a line that matched or is bad joins
// c.found; c.done is set at the end of the file.
func (f *fileIngest) next(ctx context.Context, c *chunk) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	line, no, err := f.src.Line()
	var tl *input.ErrLineTooLong
	var dmg *input.DamagedError
	switch {
	case errors.Is(err, io.EOF):
		c.done = true
		return nil
	case errors.As(err, &tl):
		c.lines++
		c.found = append(c.found, found{line: no, err: &FieldError{Field: "line", Problem: tl.Error()}})
		return nil
	case errors.As(err, &dmg):
		c.found = append(c.found, found{line: dmg.Lines + 1, err: &FieldError{Field: "file", Problem: dmg.Error()}})
		return nil
	case err != nil:
		return err
	}
	e, counted, err := f.line(line)
	if counted {
		c.lines++
	}
	if e != nil {
		e.line = no
		c.found = append(c.found, *e)
	}
	return err
}

// line reads one line: most match nothing and cost a few substring
// searches. counted is false for an empty line.
func (f *fileIngest) line(line []byte) (e *found, counted bool, err error) {
	if len(line) == 0 {
		return nil, false, nil
	}
	if f.format == formatUnknown {
		t := bytes.TrimSpace(line)
		if len(t) == 0 {
			return nil, false, nil
		}
		if err := f.detect(t[0]); err != nil {
			return nil, false, err
		}
	}
	if f.format == formatJournal {
		e, err = f.journal(line)
		return e, true, err
	}
	return f.text(line), true, nil
}

// detect sets the format from the first byte of the first non-empty line;
// a text file needs its node named now: none of its lines names it.
func (f *fileIngest) detect(first byte) error {
	if first == '{' {
		f.format = formatJournal
		return nil
	}
	f.format = formatText
	return f.nodeErr
}

// text reads a timestamped text line; nil for a line that matches
// nothing, with or without a timestamp.
func (f *fileIngest) text(line []byte) *found {
	if !mayMatch(line) {
		return nil
	}
	t, msg, terr := splitTime(line, f.opt.BootTime)
	if terr != nil {
		msg = line
	}
	m, ok := Classify(string(msg))
	switch {
	case !ok:
		return nil
	case terr != nil:
		return &found{err: terr}
	}
	return &found{time: t, node: f.node, msg: string(msg), m: m}
}

// journal reads a journald JSON line; nil for a line that matches
// nothing. An entry without _HOSTNAME needs the file's node: the error is
// then the file's.
func (f *fileIngest) journal(line []byte) (*found, error) {
	if !journalGate(line) {
		return nil, nil
	}
	if !gjson.ValidBytes(line) || !gjson.ParseBytes(line).IsObject() {
		return &found{err: &FieldError{Field: "json", Problem: "not a JSON object: want journalctl -o json, one entry a line"}}, nil
	}
	j := parseJournal(line)
	msg, err := j.text()
	if err != nil {
		return &found{err: err}, nil
	}
	m, ok := Classify(msg)
	if !ok {
		return nil, nil
	}
	t, err := journalTime(j.realtime)
	if err != nil {
		return &found{err: err}, nil
	}
	e := &found{time: t, node: f.opt.Node, component: j.component(), msg: msg, m: m}
	switch {
	case e.node != "":
	case j.hostname != "":
		if e.node, err = hostNode(j.hostname); err != nil {
			return &found{err: err}, nil
		}
	case f.nodeErr != nil:
		return nil, f.nodeErr
	default:
		e.node = f.node
	}
	return e, nil
}

// bad reports a bad line; under Strict it stops the file.
func (f *fileIngest) bad(no int64, err error) error {
	b := &input.Skip{Path: f.src.Name(), Line: no, Err: err}
	f.run.BadLines++
	f.opt.OnSkip.Report(b)
	if f.opt.Strict {
		return fmt.Errorf("%w: %w", ErrStrict, b)
	}
	return nil
}

// add stores the record of a matched line; an error of the store is a
// *storeError.
func (f *fileIngest) add(ctx context.Context, e *found) error {
	rec := newRecord(e)
	rec.Evidence = timeline.Evidence{Run: f.run.ID, Line: e.line}
	res, err := f.batch.Batch().AddRecord(context.WithoutCancel(ctx), rec)
	if err != nil {
		return &storeError{err}
	}
	run := f.run
	run.Tally(res)
	if run.First.IsZero() || rec.Time.Before(run.First) {
		run.First = rec.Time
	}
	if rec.Time.After(run.Last) {
		run.Last = rec.Time
	}
	f.pending++
	if err := f.batch.Added(ctx); err != nil {
		return &storeError{err}
	}
	return nil
}

// finish ends the run, failed by err if set: what was read is committed
// even when ctx is done (Ctrl-C). It returns err, or the first error of
// the commit and of finishing the run.
func (f *fileIngest) finish(ctx context.Context, err error) error {
	run, src, store := f.run, f.src, f.store
	run.Status = timeline.RunDone
	if err != nil {
		run.Status, run.Error = timeline.RunFailed, err.Error()
	}
	src.Drain()
	run.SHA256 = src.SHA256()
	if run.Size < 0 {
		run.Size = src.BytesRead()
	}
	if f.batch != nil { // nil after a failed commit, whose error is err
		if cerr := f.batch.Commit(ctx); cerr != nil && err == nil {
			err = cerr
			run.Status, run.Error = timeline.RunFailed, err.Error()
		}
	}
	if ferr := store.FinishRun(context.WithoutCancel(ctx), run); ferr != nil && err == nil {
		err = ferr
	}
	return err
}
