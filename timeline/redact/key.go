package redact

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// KeyEnv names the environment variable that points at another key file.
const KeyEnv = "FAULTLINE_KEY"

// KeySize is the length of a key in bytes.
const KeySize = 32

// KeyPath returns the key file's path: $FAULTLINE_KEY if set, else
// $XDG_CONFIG_HOME/faultline/key, else ~/.config/faultline/key. getenv
// reads the environment (os.Getenv in a process, a map in tests).
func KeyPath(getenv func(string) string) (string, error) {
	if p := getenv(KeyEnv); p != "" {
		return p, nil
	}
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home := getenv("HOME")
		if home == "" {
			return "", errors.New("redact: no key file: set " + KeyEnv + ", XDG_CONFIG_HOME or HOME")
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "faultline", "key"), nil
}

// LoadKey reads the key at path. With create, a missing key is made: 32
// random bytes, hex-encoded, in a 0600 file whose new directories are 0700.
// An existing file is refused if others can read it.
func LoadKey(path string, create bool) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && create {
		return createKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("key %s: mode %v lets others read it: chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	return parseKey(path, b)
}

func parseKey(path string, b []byte) ([]byte, error) {
	b = trimSpace(b)
	key := make([]byte, hex.DecodedLen(len(b)))
	if _, err := hex.Decode(key, b); err != nil || len(key) < KeySize {
		return nil, fmt.Errorf("key %s: want %d hex-encoded bytes", path, KeySize)
	}
	return key, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

func createKey(path string) ([]byte, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create key: %w", err)
	}
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("create key: %w", err)
	}
	// Written whole to a temporary file, then linked into place: of two
	// processes creating the key at once, one wins and the other reads the
	// winner's complete key.
	f, err := os.CreateTemp(filepath.Dir(path), ".key-*")
	if err != nil {
		return nil, fmt.Errorf("create key: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = f.Write([]byte(hex.EncodeToString(key) + "\n"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(f.Name(), path)
	}
	if errors.Is(err, fs.ErrExist) {
		return LoadKey(path, false)
	}
	if err != nil {
		return nil, fmt.Errorf("create key: %w", err)
	}
	return key, nil
}

// Fingerprint names a key without revealing it, so a database can record
// which key hashed its values.
func Fingerprint(key []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("faultline.key.fingerprint"))
	return hex.EncodeToString(mac.Sum(nil)[:8])
}

// NoKeyWarning is what a store logs, once, when it stores a value as
// NoKey.
const NoKeyWarning = "secret values, env literals and args are stored as \"" + NoKey + "\": changes to them will not show"

// ForStore is the redactor of a store whose values were hashed by the key
// whose fingerprint it recorded (recorded, "" for none yet). It hashes
// with key, unless key is missing or is not the recorded one: then the
// values that need a key become NoKey, and warn is called once, at the
// first, with the reason. all is RedactConfigMaps.
func ForStore(key []byte, recorded string, all bool, warn func(reason string)) Redactor {
	why := ""
	switch {
	case len(key) == 0:
		why = "no key"
	case recorded != "" && recorded != Fingerprint(key):
		why = "the key " + Fingerprint(key) + " is not the key " + recorded + " that hashed the values held"
		key = nil
	}
	var once sync.Once
	return Redactor{Key: key, RedactConfigMaps: all, OnNoKey: func() { once.Do(func() { warn(why) }) }}
}
