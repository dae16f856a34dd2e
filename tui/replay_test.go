package tui_test

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline/faultline/fixtures"
	"github.com/faultline/faultline/ingest/audit"
	"github.com/faultline/faultline/ingest/kube"
	"github.com/faultline/faultline/timeline/sqlite"
)

// replayed holds, per fixture, a database built once per test binary by
// replaying the fixture's evidence, as faultline replay does.
var replayed = struct {
	sync.Mutex
	dbs map[string]string
	dir string
}{dbs: map[string]string{}}

// replayDB returns a private copy of the fixture's replayed timeline, so a
// test may add bisect marks to it.
func replayDB(t testing.TB, name string) *sqlite.Store {
	t.Helper()
	src := replayOnce(t, name)
	dst := filepath.Join(t.TempDir(), "test.db")
	copyFile(t, src, dst)
	s, err := sqlite.Open(context.Background(), dst, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func replayOnce(t testing.TB, name string) string {
	replayed.Lock()
	defer replayed.Unlock()
	if db, ok := replayed.dbs[name]; ok {
		return db
	}
	if replayed.dir == "" {
		dir, err := os.MkdirTemp("", "faultline-tui-test-")
		if err != nil {
			t.Fatal(err)
		}
		replayed.dir = dir
	}
	fx, err := fixtures.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(replayed.dir, name)
	var audits, objects []string
	err = fs.WalkDir(fx.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		base := strings.TrimSuffix(path.Base(p), ".gz")
		var into *[]string
		switch {
		case strings.HasPrefix(p, "objects/"):
			into = &objects
		case strings.HasSuffix(base, ".log"):
			into = &audits
		default:
			return nil
		}
		b, err := fs.ReadFile(fx.FS, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		*into = append(*into, dst)
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db := filepath.Join(work, "faultline.db")
	s, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := audit.Ingest(ctx, s, audits, audit.Options{}); err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }
	if _, err := kube.IngestFiles(ctx, s, objects, kube.FileOptions{Now: now}); err != nil {
		t.Fatal(err)
	}
	if err := s.Analyze(ctx); err != nil {
		t.Fatal(err)
	}
	replayed.dbs[name] = db
	return db
}

func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if replayed.dir != "" {
		os.RemoveAll(replayed.dir)
	}
	os.Exit(code)
}
