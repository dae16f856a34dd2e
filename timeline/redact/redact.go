// Package redact removes values that must never reach the timeline from
// Kubernetes objects. Secret values are replaced by a salted per-key HMAC,
// ConfigMap values by a per-key sha256: a diff can still say which key
// changed, and nobody can read the value back.
//
// The rule is deliberately broad: the top-level data, stringData and
// binaryData maps of every kind are hashed (ConfigMaps with plain sha256,
// all other kinds, Secrets included, with the salted HMAC), as is the
// last-applied-configuration annotation of Secrets and ConfigMaps, which
// repeats their values. managedFields are dropped as noise.
package redact

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// LastApplied is the annotation kubectl apply writes with the whole object.
const LastApplied = "kubectl.kubernetes.io/last-applied-configuration"

var valueMaps = []string{"data", "stringData", "binaryData"}

// Object returns the redacted form of a JSON object, re-encoded with sorted
// keys, so equal objects give equal bytes.
func Object(obj []byte, salt []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(obj))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("redact: %w", err)
	}
	if m == nil {
		return nil, errors.New("redact: not a JSON object")
	}
	Map(m, "", salt)
	return json.Marshal(m)
}

// Map redacts a decoded object in place. itemKind is the kind implied by an
// enclosing list ("Secret" for the items of a SecretList), or "".
func Map(m map[string]any, itemKind string, salt []byte) {
	kind, _ := m["kind"].(string)
	if kind == "" {
		kind = itemKind
	}
	if items, ok := m["items"].([]any); ok {
		ik := strings.TrimSuffix(kind, "List")
		for _, it := range items {
			if im, ok := it.(map[string]any); ok {
				Map(im, ik, salt)
			}
		}
	}
	configMap := kind == "ConfigMap"
	for _, field := range valueMaps {
		vals, ok := m[field].(map[string]any)
		if !ok {
			if _, present := m[field]; present && kind == "Secret" {
				m[field] = "redacted"
			}
			continue
		}
		for k, v := range vals {
			vals[k] = hashValue(field, v, configMap, salt)
		}
	}
	md, ok := m["metadata"].(map[string]any)
	if !ok {
		return
	}
	delete(md, "managedFields")
	if ann, ok := md["annotations"].(map[string]any); ok && (kind == "Secret" || kind == "ConfigMap") {
		if v, ok := ann[LastApplied]; ok {
			ann[LastApplied] = hashValue("annotation", v, false, salt)
		}
	}
}

// hashValue hashes one value: the decoded bytes for base64 maps (so data and
// stringData holding the same value hash alike), the string otherwise.
func hashValue(field string, v any, plain bool, salt []byte) string {
	var b []byte
	switch s := v.(type) {
	case string:
		b = []byte(s)
		if field == "data" && !plain || field == "binaryData" {
			if dec, err := base64.StdEncoding.DecodeString(s); err == nil {
				b = dec
			}
		}
	default:
		b, _ = json.Marshal(v) // a decoded JSON value always re-encodes
	}
	if plain {
		sum := sha256.Sum256(b)
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	mac := hmac.New(sha256.New, salt)
	mac.Write(b)
	return "hmac-sha256:" + hex.EncodeToString(mac.Sum(nil))
}
