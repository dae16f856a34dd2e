package timelinetest

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/redact"
)

// KeyedStore is what the key checks need of a store: it writes and says
// which key hashed its values.
type KeyedStore interface {
	timeline.Appender
	KeyFingerprint(ctx context.Context) (string, error)
	Close() error
}

// OpenKeyed opens one store (the same file or database at every call)
// with key (nil: none), logging to log, and with RedactConfigMaps all.
type OpenKeyed func(t *testing.T, key []byte, all bool, log *slog.Logger) KeyedStore

// addVersion stores one version of obj with body and returns the body as
// stored (redacted).
func addVersion(t *testing.T, s timeline.Appender, obj timeline.ObjectRef, rv, body string) string {
	t.Helper()
	v := timeline.ObjectVersion{Object: obj, ResourceVersion: rv, Time: time.Unix(5, 0), Content: []byte(body)}
	inBatch(t, s, &timeline.IngestRun{Source: timeline.SourceObject, Path: "x"}, func(ctx context.Context, b timeline.Batch) {
		if _, err := b.AddVersion(ctx, &v); err != nil {
			t.Fatal(err)
		}
	})
	return string(v.Content)
}

// addSecret stores a version rv of Secret ns/s holding value under key p
// and returns the body as stored.
func addSecret(t *testing.T, s timeline.Appender, rv, value string) string {
	t.Helper()
	return addVersion(t, s, timeline.ObjectRef{Resource: "secrets", Kind: "Secret", Namespace: "ns", Name: "s", UID: "u1"}, rv,
		`{"kind":"Secret","metadata":{"name":"s","namespace":"ns"},"stringData":{"p":"`+value+`"}}`)
}

// addConfigMap stores a version rv of ConfigMap ns/c holding value under
// key LR and returns the body as stored.
func addConfigMap(t *testing.T, s timeline.Appender, rv, value string) string {
	t.Helper()
	return addVersion(t, s, timeline.ObjectRef{Resource: "configmaps", Kind: "ConfigMap", Namespace: "ns", Name: "c", UID: "u2"}, rv,
		`{"kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"},"data":{"LR":"`+value+`"}}`)
}

// CheckKeyMissingOrForeign guards the rule that one store's values are
// hashed with one key: reopened without it, or with another, the store
// still opens, new values are stored as NoKey, one warning says so, and
// the first key's fingerprint stays.
func CheckKeyMissingOrForeign(t *testing.T, open OpenKeyed) {
	ctx := context.Background()
	key := bytes.Repeat([]byte{2}, redact.KeySize)
	s := open(t, key, false, slog.New(slog.DiscardHandler))
	first := addSecret(t, s, "1", "hunter2")
	s.Close()
	if !strings.Contains(first, "hmac-sha256:") {
		t.Fatalf("with the key: %s", first)
	}
	for _, tt := range []struct {
		name string
		key  []byte
	}{{"no key", nil}, {"another key", bytes.Repeat([]byte{3}, redact.KeySize)}} {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			s := open(t, tt.key, false, slog.New(slog.NewTextHandler(&log, nil)))
			defer s.Close()
			for i, v := range []string{"hunter3", "hunter4"} {
				got := addSecret(t, s, tt.name+string(rune('a'+i)), v)
				if !strings.Contains(got, redact.NoKey) || strings.Contains(got, "hmac-sha256:") {
					t.Errorf("stored %s", got)
				}
			}
			if n := strings.Count(log.String(), "level=WARN"); n != 1 {
				t.Errorf("%d warnings, want 1:\n%s", n, log.String())
			}
			if fp, _ := s.KeyFingerprint(ctx); fp != redact.Fingerprint(key) {
				t.Errorf("fingerprint = %q, want the first key's %q", fp, redact.Fingerprint(key))
			}
		})
	}
}

// CheckRedactConfigMapsIsKept: once a writer hashed every ConfigMap value,
// a later writer without the option hashes them too, so no value flips
// between clear and hash; a store never written with it keeps them in
// clear. fresh gives a new, empty store location each call.
func CheckRedactConfigMapsIsKept(t *testing.T, fresh func(t *testing.T) OpenKeyed) {
	key := bytes.Repeat([]byte{2}, redact.KeySize)
	quiet := slog.New(slog.DiscardHandler)
	for _, tt := range []struct {
		name        string
		first, then bool   // the option at the first and the second write
		want        string // the LR value stored by the second, "" for a hash
	}{
		{"never", false, false, "0.002"},
		{"first", true, false, ""},
		{"later", false, true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			open := fresh(t)
			s := open(t, key, tt.first, quiet)
			first := addConfigMap(t, s, "1", "0.001")
			s.Close()
			if hashed := !strings.Contains(first, `"LR":"0.001"`); hashed != tt.first {
				t.Errorf("first write, the option %v: %s", tt.first, first)
			}
			s = open(t, key, tt.then, quiet)
			defer s.Close()
			got := addConfigMap(t, s, "2", "0.002")
			switch {
			case tt.want == "" && !strings.Contains(got, `"LR":"hmac-sha256:`):
				t.Errorf("second write: %s; want LR hashed", got)
			case tt.want != "" && !strings.Contains(got, `"LR":"`+tt.want+`"`):
				t.Errorf("second write: %s; want LR %s in clear", got, tt.want)
			}
		})
	}
}
