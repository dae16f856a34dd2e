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

func TestForStore(t *testing.T) {
	key, other := bytes.Repeat([]byte{1}, KeySize), bytes.Repeat([]byte{2}, KeySize)
	for _, tc := range []struct {
		name     string
		key      []byte
		recorded string
		wantKey  bool
		wantWhy  string
	}{
		{"first key", key, "", true, ""},
		{"its key", key, Fingerprint(key), true, ""},
		{"no key", nil, Fingerprint(key), false, "no key"},
		{"another key", other, Fingerprint(key), false,
			"the key " + Fingerprint(other) + " is not the key " + Fingerprint(key) + " that hashed the values held"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var whys []string
			r := ForStore(tc.key, tc.recorded, true, func(why string) { whys = append(whys, why) })
			if (r.Key != nil) != tc.wantKey || !r.RedactConfigMaps {
				t.Errorf("key set %v, RedactConfigMaps %v; want %v, true", r.Key != nil, r.RedactConfigMaps, tc.wantKey)
			}
			r.OnNoKey()
			r.OnNoKey()
			if want := []string{tc.wantWhy}; len(whys) != 1 || whys[0] != tc.wantWhy {
				t.Errorf("warnings %q, want %q once", whys, want)
			}
		})
	}
}
