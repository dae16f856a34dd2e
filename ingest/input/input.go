// Package input opens the files an ingester reads: plain, gzip- or
// xz-compressed files, directories of rotated logs, and standard input, as streams of lines
// of any length up to a limit. It hashes and counts the bytes it reads, so an
// ingest run can say exactly which evidence it rests on.
package input

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/ulikunitz/xz"

	"github.com/faultline/faultline/timeline"
)

// Stdin is the path that names standard input.
const Stdin = "-"

// DefaultMaxLine is the longest line read whole; longer lines are reported
// and skipped. Audit lines of several MiB are real (RequestResponse LISTs).
const DefaultMaxLine = 32 << 20

// Expand turns the paths a user gave into the files to read. A directory
// contributes the regular files (hidden ones skipped) for which firstTime
// finds a first record, ordered by that time, then by name; the others are
// returned as skipped. Files named explicitly are always read.
func Expand(paths []string, firstTime func(path string) (int64, bool)) (files, skipped []string, err error) {
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
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, nil, err
		}
		type file struct {
			path string
			t    int64
		}
		var found []file
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
				continue
			}
			path := filepath.Join(p, e.Name())
			t, ok := firstTime(path)
			if !ok {
				skipped = append(skipped, path)
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

	f      *os.File
	hasher hash.Hash
	count  *countingReader
	gz     io.Closer // the decompressor, when there is one to close
	r      *bufio.Reader
	max    int
	line   int64
}

// Name returns the path for messages: "<stdin>" for standard input.
func (s *Source) Name() string {
	if s.Path == Stdin {
		return "<stdin>"
	}
	return s.Path
}

// RunPath is the path an ingest run records: absolute for files, "-" for
// standard input, so a run says which evidence it read wherever it ran.
func (s *Source) RunPath() string {
	if s.Path == Stdin {
		return Stdin
	}
	if abs, err := filepath.Abs(s.Path); err == nil {
		return abs
	}
	return s.Path
}

// xzMagic opens an xz stream.
var xzMagic = []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}

// Open opens path (or standard input for "-"), decompressing gzip or xz
// found by its magic bytes. maxLine <= 0 means DefaultMaxLine.
func Open(path string, maxLine int) (*Source, error) {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	s := &Source{Path: path, Size: -1, max: maxLine, hasher: sha256.New()}
	if path == Stdin {
		s.f = os.Stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		if fi, err := f.Stat(); err == nil {
			s.Size = fi.Size()
		}
		s.f = f
	}
	s.count = &countingReader{r: io.TeeReader(s.f, s.hasher)}
	raw := bufio.NewReaderSize(s.count, 1<<20)
	magic, _ := raw.Peek(6)
	switch {
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		gz, err := gzip.NewReader(raw)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("%s: gzip: %w", s.Name(), err)
		}
		s.gz = gz
		s.r = bufio.NewReaderSize(gz, 1<<20)
	case bytes.Equal(magic, xzMagic):
		xr, err := xz.NewReader(raw)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("%s: xz: %w", s.Name(), err)
		}
		s.r = bufio.NewReaderSize(xr, 1<<20)
	default:
		s.r = raw
	}
	return s, nil
}

// Close closes the file (not standard input).
func (s *Source) Close() error {
	if s.gz != nil {
		s.gz.Close()
	}
	if s.f != nil && s.f != os.Stdin {
		return s.f.Close()
	}
	return nil
}

// Reader returns the decompressed content, for readers of whole documents.
// Use either Reader or Line on a source, not both.
func (s *Source) Reader() io.Reader { return s.r }

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
		if err != nil && !full && !errors.Is(err, io.EOF) {
			return nil, s.line, fmt.Errorf("%s: %w", s.Name(), err)
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
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: %w", s.Name(), err)
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
