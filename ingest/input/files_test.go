package input

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestWalkFileRule builds a folder holding every kind of entry a walk can
// meet. Regular files and symlinks to regular files inside the folder are
// read (before, an audit walk skipped symlinked files without a word);
// everything else is refused by name, and the walk never leaves the folder
// (before, replay followed evil.log -> /etc/shadow and copied it).
func TestWalkFileRule(t *testing.T) {
	outside := t.TempDir()
	write(t, filepath.Join(outside, "shadow"), []byte("root:SECRET\n"))
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.log"), []byte("a\n"))
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	write(t, filepath.Join(dir, "sub", "b.log"), []byte("b\n"))
	write(t, filepath.Join(dir, ".hidden.log"), []byte("h\n"))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("a.log", filepath.Join(dir, "link-in.log")))
	must(os.Symlink(filepath.Join(outside, "shadow"), filepath.Join(dir, "evil.log")))
	must(os.Symlink("sub/../../"+filepath.Base(outside)+"/shadow", filepath.Join(dir, "evil-relative.log")))
	must(os.Symlink("/dev/zero", filepath.Join(dir, "zero.log")))
	must(os.Symlink("sub", filepath.Join(dir, "dirlink.log")))
	must(os.Symlink("nowhere", filepath.Join(dir, "broken.log")))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo.log"), 0o644))
	l, err := net.Listen("unix", filepath.Join(dir, "sock.log"))
	must(err)
	defer l.Close()

	files, skipped, err := Walk(dir, true, nil)
	must(err)
	p := func(name string) string { return filepath.Join(dir, name) }
	if diff := cmp.Diff([]string{p("a.log"), p("link-in.log"), p("sub/b.log")}, files); diff != "" {
		t.Errorf("files (-want +got)\n%s", diff)
	}
	var got []string
	for _, s := range skipped {
		var se *SpecialFileError
		if !errors.As(s.Err, &se) || se.Path != s.Path {
			t.Errorf("%s: %v is no *SpecialFileError", s.Path, s.Err)
		}
		got = append(got, s.Err.Error())
	}
	want := []string{
		p("broken.log") + ": a broken symlink: not read",
		p("dirlink.log") + ": a symlink to a directory: not read",
		p("evil-relative.log") + ": a symlink leaving " + dir + ": not read",
		p("evil.log") + ": a symlink leaving " + dir + ": not read",
		p("fifo.log") + ": a FIFO: not read",
		p("sock.log") + ": a socket: not read",
		p("zero.log") + ": a symlink leaving " + dir + ": not read",
	}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("refused (-want +got)\n%s", diff)
	}
}

// TestNamedFIFOHonoursCancel: a FIFO named as a file is read like standard
// input, but neither its open (no writer yet) nor a read (a writer that
// never writes) outlives the context. Before, both blocked forever and
// Ctrl-C was ignored. A device named as a file is refused.
func TestNamedFIFOHonoursCancel(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "audit.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	within := func(t *testing.T, d time.Duration, f func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { f(); close(done) }()
		select {
		case <-done:
		case <-time.After(d):
			t.Fatalf("still blocked after %s", d)
		}
	}
	t.Run("open without a writer", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		within(t, 5*time.Second, func() {
			if _, err := Open(ctx, fifo, 0); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Open: %v, want the context's error", err)
			}
		})
	})
	t.Run("a writer that writes a line, then nothing", func(t *testing.T) {
		w := make(chan *os.File, 1)
		go func() {
			f, _ := os.OpenFile(fifo, os.O_WRONLY, 0)
			f.Write([]byte("one\n"))
			w <- f
		}()
		ctx, cancel := context.WithCancel(context.Background())
		within(t, 5*time.Second, func() {
			s, err := Open(ctx, fifo, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if l, _, err := s.Line(); err != nil || string(l) != "one" {
				t.Fatalf("first line %q, %v", l, err)
			}
			time.AfterFunc(100*time.Millisecond, cancel)
			if _, _, err := s.Line(); !errors.Is(err, context.Canceled) {
				t.Errorf("Line: %v, want context.Canceled", err)
			}
		})
		(<-w).Close()
	})
	t.Run("a device is refused", func(t *testing.T) {
		_, err := Open(context.Background(), "/dev/zero", 0)
		var se *SpecialFileError
		if !errors.As(err, &se) || err.Error() != "/dev/zero: a character device: not read" {
			t.Errorf("Open(/dev/zero): %v", err)
		}
	})
}
