package tui_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/faultline/faultline/fixtures"
	"github.com/faultline/faultline/ingest/evidence"
	"github.com/faultline/faultline/timeline/sqlite"
)

// replayed holds, per fixture, a database built once per test binary by
// replaying the fixture's evidence with the loader faultline replay uses.
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
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db := filepath.Join(work, "faultline.db")
	s, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }
	if _, err := (evidence.Loader{Now: now}).Load(ctx, s, fx.FS); err != nil {
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
