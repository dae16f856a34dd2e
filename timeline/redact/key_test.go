package redact

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestKeyPath(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{KeyEnv: "/k", "XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/k"},
		{map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/x/faultline/key"},
		{map[string]string{"XDG_CONFIG_HOME": "relative", "HOME": "/h"}, "/h/.config/faultline/key"},
		{map[string]string{"HOME": "/h"}, "/h/.config/faultline/key"},
	} {
		got, err := KeyPath(env(tt.env))
		if err != nil || got != tt.want {
			t.Errorf("KeyPath(%v) = %q, %v; want %q", tt.env, got, err, tt.want)
		}
	}
	if _, err := KeyPath(env(nil)); err == nil {
		t.Errorf("KeyPath with no HOME: want error")
	}
}

func TestLoadKeyCreatesPrivateFiles(t *testing.T) {
	cfg := t.TempDir()
	path, err := KeyPath(env(map[string]string{"XDG_CONFIG_HOME": cfg}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKey(path, false); err == nil {
		t.Fatal("a missing key without create: want error")
	}
	key, err := LoadKey(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(key) != KeySize {
		t.Errorf("key of %d bytes", len(key))
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700 | os.ModeDir} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
		}
	}
	again, err := LoadKey(path, true)
	if err != nil || !bytes.Equal(again, key) {
		t.Errorf("second load = %x, %v; want the first key", again, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("key folder holds %d files, want 1 (no temporary left)", len(entries))
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKey(path, true); err == nil {
		t.Errorf("a key others can read: want error")
	}
}

func TestFingerprint(t *testing.T) {
	a, b := Fingerprint(testKey), Fingerprint([]byte("another key"))
	if a == b || len(a) != 16 || bytes.Contains([]byte(a), []byte(string(testKey))) {
		t.Errorf("fingerprints %q, %q", a, b)
	}
}
