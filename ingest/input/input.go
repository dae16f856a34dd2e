// Package input opens the files an ingester reads: plain, gzip- or
// xz-compressed files, directories of rotated logs, and standard input, as streams of lines
// of any length up to a limit. It hashes and counts the bytes it reads, so an
// ingest run can say exactly which evidence it rests on.
package input

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"

	"github.com/ulikunitz/xz"

	"github.com/faultline/faultline/timeline"
)

// Stdin is the path that names standard input.
const Stdin = "-"

// DefaultMaxLine is the longest line read whole; longer lines are reported
// and skipped. Audit lines of several MiB are real (RequestResponse LISTs).
const DefaultMaxLine = 32 << 20

// Skipped is a file of a directory that Expand left out, and why.
type Skipped struct {
	Path string
	Err  error // ErrEmpty for an empty file
}

// ErrEmpty is the reason an empty file is skipped: a log rotated a moment
// ago is empty, and holds nothing to lose.
var ErrEmpty = errors.New("empty")

// Expand turns the paths a user gave into the files to read. A directory
// contributes the files the rule of Walk admits (hidden ones skipped; the
// refused ones returned as skipped) for which firstTime
// finds a first record, ordered by that time, then by name; the others are
// returned as skipped, with firstTime's reason, for the caller to report:
// a file left out silently is evidence lost without a word. Files named
// explicitly are always read.
func Expand(paths []string, firstTime func(path string) (int64, error)) (files []string, skipped []Skipped, err error) {
	for _, p := range paths {
		if p == Stdin {
			files = append(files, p)
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil, nil, err
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		walked, refused, err := Walk(p, false, nil)
		if err != nil {
			return nil, nil, err
		}
		skipped = append(skipped, refused...)
		type file struct {
			path string
			t    int64
		}
		var found []file
		var why error
		for _, path := range walked {
			t, err := firstTime(path)
			if err != nil {
				skipped = append(skipped, Skipped{path, err})
				if why == nil || errors.Is(why, ErrEmpty) {
					why = fmt.Errorf("%s: %w", path, err)
				}
				continue
			}
			found = append(found, file{path, t})
		}
		sort.Slice(found, func(i, j int) bool {
			if found[i].t != found[j].t {
				return found[i].t < found[j].t
			}
			return found[i].path < found[j].path
		})
		if len(found) == 0 {
			if why != nil {
				return nil, nil, fmt.Errorf("%s: directory holds no readable records (%w)", p, why)
			}
			return nil, nil, fmt.Errorf("%s: directory holds no readable records", p)
		}
		for _, f := range found {
			files = append(files, f.path)
		}
	}
	return files, skipped, nil
}

// Each runs one ingest per file, in order, and collects the runs: also the
// run of a file that failed, whose error ends the loop.
func Each(files []string, ingest func(path string) (*timeline.IngestRun, error)) ([]timeline.IngestRun, error) {
	var runs []timeline.IngestRun
	for _, f := range files {
		run, err := ingest(f)
		if run != nil {
			runs = append(runs, *run)
		}
		if err != nil {
			return runs, err
		}
	}
	return runs, nil
}

// Source is one opened input.
type Source struct {
	Path string // as given; "-" for standard input
	Size int64  // on-disk size, -1 when unknown (stdin)

	f      io.Closer // the file; nil for standard input
	inFS   bool      // opened by OpenFS: Path names a file of an fs.FS
	hasher hash.Hash
	count  *countingReader
	gz     io.Closer // the decompressor, when there is one to close
	r      *bufio.Reader
	max    int
	line   int64

	format  string // "gzip", "xz" or "" for plain bytes
	damaged bool   // a DamagedError was returned
}

// Name returns the path for messages: "<stdin>" for standard input.
func (s *Source) Name() string {
	if s.Path == Stdin {
		return "<stdin>"
	}
	return s.Path
}

// RunPath is the path an ingest run records: absolute for files, "-" for
// standard input, so a run says which evidence it read wherever it ran; the
// name as given for a file of an fs.FS, which has no place on disk.
func (s *Source) RunPath() string {
	if s.Path == Stdin || s.inFS {
		return s.Path
	}
	if abs, err := filepath.Abs(s.Path); err == nil {
		return abs
	}
	return s.Path
}

// xzMagic opens an xz stream.
var xzMagic = []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}

// Open opens path (or standard input for "-"), decompressing gzip or xz
// found by its magic bytes. maxLine <= 0 means DefaultMaxLine. Reads from
// standard input or a FIFO return ctx.Err() once ctx is done; devices and
// sockets are refused (files.go has the rule).
func Open(ctx context.Context, path string, maxLine int) (*Source, error) {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	s := &Source{Path: path, Size: -1, max: maxLine, hasher: sha256.New()}
	var in io.Reader
	if path == Stdin {
		in = os.Stdin
		if fi, err := os.Stdin.Stat(); err != nil || !fi.Mode().IsRegular() {
			in = newCancelReader(ctx, os.Stdin)
		}
	} else {
		f, pipe, err := openNamed(ctx, path)
		if err != nil {
			return nil, err
		}
		s.f, in = f, f
		if pipe {
			in = newCancelReader(ctx, f)
		} else if fi, err := f.Stat(); err == nil {
			s.Size = fi.Size()
		}
	}
	s.start(in)
	return s, nil
}

// OpenFS opens the file name of fsys as Open opens a path, for evidence
// that is not on disk (the incidents embedded in the binary): no copy to a
// temporary folder is needed to read them. The source's Path and RunPath
// are name as given. Reads need no context: an fs.FS holds no pipes the
// caller did not put there.
func OpenFS(fsys fs.FS, name string, maxLine int) (*Source, error) {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	s := &Source{Path: name, Size: -1, max: maxLine, hasher: sha256.New(), f: f, inFS: true}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		s.Size = fi.Size()
	}
	s.start(f)
	return s, nil
}

// OpenIn opens name with OpenFS when fsys is set, else the path name with
// Open: for ingesters whose options may name an fs.FS.
func OpenIn(ctx context.Context, fsys fs.FS, name string, maxLine int) (*Source, error) {
	if fsys != nil {
		return OpenFS(fsys, name, maxLine)
	}
	return Open(ctx, name, maxLine)
}

// start reads in: hashed and counted as read, decompressed when its first
// bytes are the magic of gzip or xz.
func (s *Source) start(in io.Reader) {
	s.count = &countingReader{r: io.TeeReader(in, s.hasher)}
	raw := bufio.NewReaderSize(s.count, 1<<20)
	// Peek no further than the magic needs: a pipe may hold one short line
	// for a long while, and plain text must not wait for more bytes.
	magic, _ := raw.Peek(1)
	switch {
	case len(magic) == 1 && magic[0] == 0x1f:
		magic, _ = raw.Peek(2)
	case len(magic) == 1 && magic[0] == xzMagic[0]:
		magic, _ = raw.Peek(len(xzMagic))
	}
	switch {
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		s.format = "gzip"
		gz, err := gzip.NewReader(raw)
		if err != nil {
			// A damaged header is damage like any other: the source reads
			// as empty and then names it, so a walk goes on to the next file.
			s.r = bufio.NewReader(failingReader{err})
			break
		}
		s.gz = gz
		s.r = bufio.NewReaderSize(gz, 1<<20)
	case bytes.Equal(magic, xzMagic):
		s.format = "xz"
		xr, err := xz.NewReader(raw)
		if err != nil {
			s.r = bufio.NewReader(failingReader{err})
			break
		}
		s.r = bufio.NewReaderSize(xr, 1<<20)
	default:
		s.r = raw
	}
}

// isCancel reports a read ended by its context: no damage to the file.
func isCancel(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// failingReader fails every read: a stream that could not even start.
type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

// DamagedError reports a file that could not be read to its end: a
// truncated or corrupt gzip or xz stream (bad checksum, trailing garbage,
// unexpected EOF) or a failing disk. A damaged source first returns every
// line (or byte) that decoded before the fault, then this error once, then
// io.EOF: what was readable is never thrown away with what was not, and the
// caller reports the damage as one bad entry and goes on to its next file.
type DamagedError struct {
	Path   string // as in messages ("<stdin>" for standard input)
	Format string // "gzip", "xz" or "" for a plain file
	Offset int64  // bytes of the file read when the fault surfaced
	Lines  int64  // complete lines returned before it; -1 read by Reader
	Lost   int    // bytes of an incomplete last line dropped
	Err    error
}

func (e *DamagedError) Error() string {
	what := "read"
	if e.Format != "" {
		what = e.Format
	}
	msg := fmt.Sprintf("%s: %v at byte %d of the file", what, e.Err, e.Offset)
	if e.Lines >= 0 {
		msg += fmt.Sprintf("; the %d complete lines before it were kept", e.Lines)
	}
	if e.Lost > 0 {
		msg += fmt.Sprintf(", an incomplete last line of %d bytes was dropped", e.Lost)
	}
	return msg
}

func (e *DamagedError) Unwrap() error { return e.Err }

// damage records the fault err once, after lines lines (-1: not read as
// lines); later reads return io.EOF.
func (s *Source) damage(err error, lines int64, lost int) error {
	if s.damaged {
		return io.EOF
	}
	s.damaged = true
	return &DamagedError{Path: s.Name(), Format: s.format, Offset: s.BytesRead(), Lines: lines, Lost: lost, Err: err}
}

// Close closes the file (not standard input).
func (s *Source) Close() error {
	if s.gz != nil {
		s.gz.Close()
	}
	if s.f != nil {
		return s.f.Close()
	}
	return nil
}

// Reader returns the decompressed content, for readers of whole documents.
// Use either Reader or Line on a source, not both. A fault in the stream
// surfaces as a *DamagedError after every byte decoded before it.
func (s *Source) Reader() io.Reader { return damageReader{s} }

type damageReader struct{ s *Source }

func (d damageReader) Read(p []byte) (int, error) {
	n, err := d.s.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && !isCancel(err) {
		if n > 0 {
			return n, nil // the fault again on the next read, with nothing lost
		}
		return 0, d.s.damage(err, -1, 0)
	}
	return n, err
}

// Buffered is how many decompressed bytes are read and not yet returned:
// at 0 the next Line may wait on the file (a pipe that trickles).
func (s *Source) Buffered() int { return s.r.Buffered() }

// BytesRead is how many bytes of the file (compressed, for gzip) were read.
// It may be called from any goroutine.
func (s *Source) BytesRead() int64 { return s.count.n.Load() }

// SHA256 returns the hash of the bytes read so far: of the whole file once
// it is read to its end.
func (s *Source) SHA256() string { return hex.EncodeToString(s.hasher.Sum(nil)) }

// Drain reads the rest of the underlying file so BytesRead and SHA256 cover
// all of it (a gzip stream may end before the file does).
func (s *Source) Drain() {
	io.Copy(io.Discard, s.count)
}

// ErrLineTooLong reports a line longer than the limit; the line is skipped.
type ErrLineTooLong struct {
	Len, Max int
}

func (e *ErrLineTooLong) Error() string {
	return fmt.Sprintf("line of %d+ bytes exceeds the %d-byte limit (--max-line-size)", e.Len, e.Max)
}

// Line reads the next line without its end-of-line bytes and returns it with
// its 1-based number. The slice is valid until the next call. It returns an
// *ErrLineTooLong for an over-long line (already skipped: call Line again),
// and io.EOF at the end. A UTF-8 byte-order mark at the start is dropped.
func (s *Source) Line() ([]byte, int64, error) {
	var buf []byte
	for {
		chunk, err := s.r.ReadSlice('\n')
		full := errors.Is(err, bufio.ErrBufferFull)
		if isCancel(err) {
			return nil, s.line, err
		}
		if err != nil && !full && !errors.Is(err, io.EOF) {
			// ReadSlice returns complete lines before it reports a fault:
			// what is left here is the incomplete line it cut.
			return nil, s.line, s.damage(err, s.line, len(buf)+len(chunk))
		}
		if len(chunk) == 0 && len(buf) == 0 {
			return nil, s.line, io.EOF
		}
		if n := len(buf) + len(chunk); n > s.max {
			s.line++
			if full {
				return nil, s.line, s.skipLong(n)
			}
			return nil, s.line, &ErrLineTooLong{Len: n, Max: s.max}
		}
		if buf == nil && !full {
			buf = chunk // no copy: valid until the next read
		} else {
			buf = append(buf, chunk...)
		}
		if full {
			continue
		}
		s.line++
		if s.line == 1 {
			buf = bytes.TrimPrefix(buf, []byte("\xef\xbb\xbf"))
		}
		return trimEOL(buf), s.line, nil
	}
}

// skipLong discards the rest of an over-long line.
func (s *Source) skipLong(n int) error {
	for {
		chunk, err := s.r.ReadSlice('\n')
		n += len(chunk)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if isCancel(err) {
			return err
		}
		if err != nil && !errors.Is(err, io.EOF) {
			s.line--
			return s.damage(err, s.line, n)
		}
		return &ErrLineTooLong{Len: n, Max: s.max}
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

type countingReader struct {
	r io.Reader
	n atomic.Int64 // read by progress reports on other goroutines
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
