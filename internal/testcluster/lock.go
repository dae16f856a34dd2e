package testcluster

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// The control plane is one for the whole suite, whose packages go test runs
// as parallel processes, and one test (ingest/kube's follow-restart) kills
// and restarts its apiserver. A test that uses the control plane holds a
// shared flock on a file in its state directory until it ends; the
// restarting test holds it alone (Alone), so no other test sees the
// apiserver down. A flock is released by the kernel when its process dies,
// so a killed test binary leaves nothing held.

// alone records, per process, the state directories this process holds
// alone: a test that holds one alone goes on to use it without sharing.
var alone = struct {
	sync.Mutex
	dirs map[string]bool
}{dirs: map[string]bool{}}

// Share holds the control plane of dir shared until t ends: it waits while
// a test elsewhere holds it alone (Alone).
func Share(t testing.TB, dir string) {
	t.Helper()
	alone.Lock()
	held := alone.dirs[dir]
	alone.Unlock()
	if !held {
		hold(t, dir, syscall.LOCK_SH)
	}
}

// Alone waits until no other test uses the control plane of dir (Share) and
// holds it alone until t ends, for a test that stops or restarts a part.
func Alone(t testing.TB, dir string) {
	t.Helper()
	hold(t, dir, syscall.LOCK_EX)
	alone.Lock()
	alone.dirs[dir] = true
	alone.Unlock()
	t.Cleanup(func() {
		alone.Lock()
		delete(alone.dirs, dir)
		alone.Unlock()
	})
}

func hold(t testing.TB, dir string, how int) {
	t.Helper()
	release, err := lock(dir, how)
	if err != nil {
		t.Fatalf("control plane lock: %v", err)
	}
	t.Cleanup(release)
}

// lock takes a flock (syscall.LOCK_SH or LOCK_EX, with LOCK_NB not to wait)
// on dir's test lock file; release closes the file, which releases it.
func lock(dir string, how int) (release func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, "tests.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
	return func() { f.Close() }, nil
}
