package testcluster

import (
	"errors"
	"syscall"
	"testing"
)

// Many tests share the control plane at once; one that restarts it waits
// for them all, and holds it alone. flock's locks belong to open files, so
// two in one process conflict as two processes' do.
func TestLockSharedAndAlone(t *testing.T) {
	dir := t.TempDir()
	r1, err := lock(dir, syscall.LOCK_SH|syscall.LOCK_NB)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := lock(dir, syscall.LOCK_SH|syscall.LOCK_NB)
	if err != nil {
		t.Fatalf("a second sharer: %v", err)
	}
	if _, err := lock(dir, syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("alone while two share: err %v, want EWOULDBLOCK", err)
	}
	r1()
	if _, err := lock(dir, syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("alone while one shares: err %v, want EWOULDBLOCK", err)
	}
	r2()
	r3, err := lock(dir, syscall.LOCK_EX|syscall.LOCK_NB)
	if err != nil {
		t.Fatalf("alone once nobody shares: %v", err)
	}
	if _, err := lock(dir, syscall.LOCK_SH|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("sharing while one is alone: err %v, want EWOULDBLOCK", err)
	}
	r3()
}

// A test that holds the control plane alone goes on to use it through
// ClusterDir, which then does not wait on its own lock.
func TestAloneThenShareInOneTest(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("FAULTLINE_CLUSTER_DIR", dir)
	t.Run("restarting", func(t *testing.T) {
		ClusterDirAlone(t)
		if got := ClusterDir(t); got != dir {
			t.Fatalf("ClusterDir = %q, want %q", got, dir)
		}
	})
	// Released with the subtest.
	r, err := lock(dir, syscall.LOCK_EX|syscall.LOCK_NB)
	if err != nil {
		t.Fatalf("after the test that held it alone: %v", err)
	}
	r()
}
