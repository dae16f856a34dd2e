package input

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The file rule, one for every ingester and replay:
//
//   - A path named by the user is read if it is a regular file, a symlink to
//     one (wherever it points: the user chose it), standard input, or a FIFO,
//     which is read like standard input: its open and every read return when
//     the context is done, so Ctrl-C works on a pipe nobody writes.
//   - Inside a folder being walked, only regular files and symlinks to
//     regular files that stay inside the folder are read. FIFOs, devices,
//     sockets, symlinks leaving the folder and symlinks to directories are
//     refused with a *SpecialFileError naming the path, and the walk goes
//     on. A folder is never left: a link to /etc/shadow is not copied or
//     echoed, a link to /dev/zero is not read into memory, a FIFO does not
//     hang the walk.
//
// Devices and sockets are refused even when named: they are never evidence,
// and /dev/zero would be read forever.

// SpecialFileError is a path the file rule refuses.
type SpecialFileError struct {
	Path string
	Why  string
}

func (e *SpecialFileError) Error() string { return e.Path + ": " + e.Why + ": not read" }

// SkippedError names the files of a walked folder that were not ingested,
// each with its reason: refused by the file rule, or holding no record the
// ingester recognises. It is returned after the other files were ingested,
// so the exit status says something was left out without losing the rest.
type SkippedError struct {
	Files []Skipped
}

func (e *SkippedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "skipped %d file(s) (the others were ingested):", len(e.Files))
	for _, f := range e.Files {
		if se := (*SpecialFileError)(nil); errors.As(f.Err, &se) && se.Path == f.Path {
			fmt.Fprintf(&b, "\n  %v", f.Err) // it names the path
			continue
		}
		fmt.Fprintf(&b, "\n  %s: %v", f.Path, f.Err)
	}
	return b.String()
}

// kind names a file type that is not regular, for messages.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "a special file"
}

// CheckInFolder applies the walk's half of the rule to path, found in the
// folder root: nil for a regular file, or a symlink to one inside root.
func CheckInFolder(root, path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return &SpecialFileError{path, "a broken symlink"}
		}
		realRoot, err := filepath.EvalSymlinks(root)
		if err != nil {
			return err
		}
		if rel, err := filepath.Rel(realRoot, target); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return &SpecialFileError{path, "a symlink leaving " + root}
		}
		if fi, err = os.Stat(target); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return &SpecialFileError{path, "a symlink to " + kind(fi.Mode())}
		}
		return nil
	}
	if !fi.Mode().IsRegular() {
		return &SpecialFileError{path, kind(fi.Mode())}
	}
	return nil
}

// Walk lists the files below root whose path want accepts (want may be nil),
// in lexical order, descending into subfolders when recurse (hidden ones
// and symlinked ones are not entered). Files the rule refuses are returned
// as skipped; hidden files are left out.
func Walk(root string, recurse bool, want func(path string) bool) (files []string, skipped []Skipped, err error) {
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == root {
			return nil
		}
		hidden := strings.HasPrefix(d.Name(), ".")
		if d.IsDir() {
			if hidden || !recurse {
				return filepath.SkipDir
			}
			return nil
		}
		if hidden || (want != nil && !want(path)) {
			return nil
		}
		if err := CheckInFolder(root, path); err != nil {
			skipped = append(skipped, Skipped{path, err})
			return nil
		}
		files = append(files, path)
		return nil
	})
	sort.Strings(files)
	return files, skipped, err
}

// openNamed opens a path the user named, by the rule above.
func openNamed(ctx context.Context, path string) (f *os.File, pipe bool, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, false, err
	}
	switch m := fi.Mode(); {
	case m.IsRegular():
		f, err = os.Open(path)
		return f, false, err
	case m&fs.ModeNamedPipe != 0:
		// open(2) of a FIFO blocks until a writer comes: wait for it in a
		// goroutine that a done context abandons (closing what it opens).
		type opened struct {
			f   *os.File
			err error
		}
		ch := make(chan opened, 1)
		go func() {
			f, err := os.Open(path)
			ch <- opened{f, err}
		}()
		select {
		case o := <-ch:
			return o.f, true, o.err
		case <-ctx.Done():
			go func() {
				if o := <-ch; o.f != nil {
					o.f.Close()
				}
			}()
			return nil, false, ctx.Err()
		}
	default:
		return nil, false, &SpecialFileError{path, kind(m)}
	}
}

// cancelReader reads r (a pipe, a terminal) in a goroutine so that a read
// blocked on input that never comes returns ctx.Err() once ctx is done. The
// goroutine may stay blocked in its read until the process exits; it then
// holds one buffer and nothing else.
type cancelReader struct {
	ctx  context.Context
	ch   chan readResult
	rest []byte
	err  error
}

type readResult struct {
	b   []byte
	err error
}

func newCancelReader(ctx context.Context, r io.Reader) *cancelReader {
	c := &cancelReader{ctx: ctx, ch: make(chan readResult)}
	go func() {
		for {
			buf := make([]byte, 64<<10)
			n, err := r.Read(buf)
			select {
			case c.ch <- readResult{buf[:n], err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return c
}

func (c *cancelReader) Read(p []byte) (int, error) {
	for len(c.rest) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		select {
		case r := <-c.ch:
			c.rest, c.err = r.b, r.err
		case <-c.ctx.Done():
			return 0, c.ctx.Err()
		}
	}
	n := copy(p, c.rest)
	c.rest = c.rest[n:]
	return n, nil
}
