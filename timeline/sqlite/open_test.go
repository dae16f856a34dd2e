package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/internal/testenv"
)

// TestOpenRefusesPathsThatCannotPersist guards against "ingesting" into a
// database that vanishes on close (--db "$DB" with DB unset).
func TestOpenRefusesPathsThatCannotPersist(t *testing.T) {
	for _, path := range []string{"", "  ", ":memory:", "file::memory:", "file:t.db?mode=memory&cache=shared", "file:t.db"} {
		t.Run(path, func(t *testing.T) {
			s, err := Open(context.Background(), path, Options{})
			if err == nil {
				s.Close()
			}
			var pe *PathError
			if !errors.As(err, &pe) || pe.Path != path {
				t.Fatalf("Open(%q) = %v, want a *PathError naming it", path, err)
			}
			if _, err := Open(context.Background(), path, Options{ReadOnly: true}); !errors.As(err, &pe) {
				t.Errorf("read-only Open(%q) = %v, want a *PathError", path, err)
			}
		})
	}
}

// TestOpenCreatesPrivateFiles: a timeline holds users, addresses and
// secret hashes, so the file, its -wal and its -shm are 0600 whatever the
// umask.
func TestOpenCreatesPrivateFiles(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	file := filepath.Join(t.TempDir(), "t.db")
	s, err := Open(context.Background(), file, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ingestRecords(t, s, rollupRecords(), 1) // the -wal and -shm exist while the store is open
	got := map[string]os.FileMode{}
	for _, f := range []string{file, file + "-wal", file + "-shm"} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		got[filepath.Base(f)] = fi.Mode().Perm()
	}
	want := map[string]os.FileMode{"t.db": 0o600, "t.db-wal": 0o600, "t.db-shm": 0o600}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("modes (-want +got)\n%s", diff)
	}
}

func fileSum(t *testing.T, file string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestOpenLeavesForeignFilesUntouched: Open proves a file is a timeline
// before writing to it, so a refused file is byte-identical (it used to be
// switched to WAL first) and no -wal or -shm is left beside it.
func TestOpenLeavesForeignFilesUntouched(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup string
	}{
		{"other tables", "CREATE TABLE users (id INTEGER); INSERT INTO users VALUES (1)"},
		{"other application_id", "PRAGMA application_id = 42"},
		{"a timeline's id, a newer schema", "PRAGMA application_id = 1181511788; PRAGMA user_version = 9999"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "other.db")
			db, err := sql.Open("sqlite3", file)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(tc.setup); err != nil {
				t.Fatal(err)
			}
			db.Close()
			before := fileSum(t, file)
			for _, ro := range []bool{false, true} {
				if s, err := Open(context.Background(), file, Options{ReadOnly: ro}); err == nil {
					s.Close()
					t.Fatalf("Open(ReadOnly: %v) accepted a foreign file", ro)
				}
			}
			if fileSum(t, file) != before {
				t.Error("a refused file was modified")
			}
			ents, _ := os.ReadDir(dir)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if diff := cmp.Diff([]string{"other.db"}, names); diff != "" {
				t.Errorf("directory (-want +got)\n%s", diff)
			}
		})
	}
}

// makeReadOnly makes path unwritable: by its mode, and for root (whom modes
// do not stop) by the immutable attribute.
func makeReadOnly(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(path, mode|0o700) })
	if os.Geteuid() != 0 {
		return
	}
	if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
		testenv.Missing(t, "running as root, and cannot make %s immutable: chattr: %v %s", path, err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", path).Run() })
}

// TestOpenExplainsUnwritableTimelines: "attempt to write a readonly
// database" becomes a ReadOnlyError naming the file and why.
func TestOpenExplainsUnwritableTimelines(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lock  func(t *testing.T, file string)
		cause string
	}{
		{"read-only file", func(t *testing.T, file string) { makeReadOnly(t, file, 0o400) }, "the file is not writable"},
		{"read-only directory", func(t *testing.T, file string) { makeReadOnly(t, filepath.Dir(file), 0o500) }, "-wal and t.db-shm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "t.db")
			s, err := Open(context.Background(), file, Options{})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			tc.lock(t, file)
			s, err = Open(context.Background(), file, Options{})
			if err == nil {
				s.Close()
			}
			var ro *ReadOnlyError
			if !errors.As(err, &ro) || ro.Path != file || !strings.Contains(ro.Cause, tc.cause) {
				t.Fatalf("Open = %v, want a *ReadOnlyError naming %s and %q", err, file, tc.cause)
			}
		})
	}
}
