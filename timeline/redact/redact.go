// Package redact removes values that must never reach the timeline from
// Kubernetes objects and audit records, and keeps the key that hashes them.
//
// What must stay hidden is replaced by a hash, so a diff can still say which
// key changed while nobody can read the value back; what is safe stays in
// clear, so "what changed" and a rollback can show it:
//
//   - a Secret keeps only its apiVersion, kind, metadata, type and immutable;
//     every other field (data, stringData, binaryData, in any JSON shape) is
//     replaced by a keyed HMAC over (namespace, name, key, value), so equal
//     passwords in two Secrets do not share a hash, while one key of one
//     Secret compares equal over time;
//   - a ConfigMap's data and binaryData values are kept in clear, unless a
//     credential rule (Credential) says the value looks like one: then it is
//     hashed like a Secret's, with a keyed HMAC over (namespace, name, key,
//     value). A value map that is not an object of strings, and binaryData
//     that is not text, are hashed too;
//   - the data, stringData and binaryData of every other kind are hashed
//     like a Secret's;
//   - in every containers, initContainers and ephemeralContainers list at any
//     depth (pods, pod templates of Deployments, Jobs, CronJobs, custom
//     resources), env literal values are kept in clear unless a credential
//     rule matches the variable's name or value; such values, and every
//     element of args and command, become a keyed HMAC over (namespace,
//     container, variable or field, value): pods of one workload still
//     compare equal, a change of value is still a change;
//   - with Redactor.RedactConfigMaps, every ConfigMap value and env literal
//     is hashed, whatever the rules say;
//   - every field named token at any depth (TokenReview, TokenRequest) is
//     dropped to "redacted";
//   - the last-applied-configuration annotation, which repeats the object,
//     is redacted by the same rules.
//
// Kinds and field names compare case-insensitively, and an object without a
// kind takes it from its list or from its resource ("secrets" is a Secret).
// Without a key, keyed values become NoKey: a value hashed with another key
// could never be compared, and a plain hash could be guessed.
package redact

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/faultline/faultline/timeline"
)

// LastApplied is the annotation kubectl apply writes with the whole object.
const LastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Replacement values.
const (
	Redacted = "redacted"          // dropped outright (tokens, messages)
	NoKey    = "redacted (no key)" // needed the key, and there was none
	hmacTag  = "hmac-sha256:"
)

// Redactor redacts with one key. The zero value has no key.
type Redactor struct {
	Key []byte // nil: values that need the key become NoKey
	// OnNoKey, if set, is called each time a value became NoKey.
	OnNoKey func()
	// RedactConfigMaps hashes every ConfigMap value and env literal, not
	// only those a credential rule matches.
	RedactConfigMaps bool
}

// Object returns the redacted form of a JSON object, re-encoded with sorted
// keys, so equal objects give equal bytes. ref names the object where its
// body does not (a kind-less request object, a namespace from the URL).
func (r *Redactor) Object(obj []byte, ref timeline.ObjectRef) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(obj))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("redact: %w", err)
	}
	if m == nil {
		return nil, errors.New("redact: not a JSON object")
	}
	hint := ref.Kind
	if hint == "" {
		hint = kindOfResource(ref.Resource)
	}
	r.walk(m, scope{kind: hint, resourceKind: kindOfResource(ref.Resource), ns: ref.Namespace, name: ref.Name})
	return json.Marshal(m)
}

// scope is what an object inherits from where it was found.
type scope struct {
	kind         string // kind implied by a list or the resource, lower case
	resourceKind string // kind of the request's resource, lower case
	ns, name     string
}

// kindOfResource is the kind a resource holds, lower case: "secrets" ->
// "secret". Every kind a rule names has a regular plural.
func kindOfResource(resource string) string {
	return strings.TrimSuffix(strings.ToLower(resource), "s")
}

// fields returns the keys of m equal to name, ignoring case, sorted.
func fields(m map[string]any, name string) []string {
	var out []string
	for k := range m {
		if strings.EqualFold(k, name) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func field(m map[string]any, name string) any {
	for _, k := range fields(m, name) {
		return m[k]
	}
	return nil
}

func strField(m map[string]any, name string) string {
	s, _ := field(m, name).(string)
	return s
}

// walk redacts one object in place.
func (r *Redactor) walk(m map[string]any, sc scope) {
	kind := strings.ToLower(strField(m, "kind"))
	if kind == "" {
		kind = strings.ToLower(sc.kind)
	}
	md, _ := field(m, "metadata").(map[string]any)
	if ns := strField(md, "namespace"); ns != "" {
		sc.ns = ns
	}
	if n := strField(md, "name"); n != "" {
		sc.name = n
	}
	secret := kind == "secret" || sc.resourceKind == "secret"
	for _, k := range fields(m, "items") {
		items, _ := m[k].([]any)
		for _, it := range items {
			if im, ok := it.(map[string]any); ok {
				r.walk(im, scope{kind: strings.TrimSuffix(kind, "list"), resourceKind: sc.resourceKind, ns: sc.ns})
			}
		}
	}
	for k, v := range m {
		switch lk := strings.ToLower(k); {
		case lk == "metadata" || lk == "kind" || lk == "apiversion" || lk == "items":
		case secret && (lk == "type" || lk == "immutable"):
		case secret:
			m[k] = r.valueMap(v, sc, lk)
		case (lk == "data" || lk == "stringdata" || lk == "binarydata") && kind == "configmap":
			m[k] = r.configMap(v, sc, lk)
		case lk == "data" || lk == "stringdata" || lk == "binarydata":
			m[k] = r.valueMap(v, sc, lk)
		default:
			m[k] = r.deep(v, sc)
		}
	}
	if md == nil {
		return
	}
	for _, k := range fields(md, "managedFields") {
		delete(md, k)
	}
	for _, k := range fields(md, "annotations") {
		if ann, ok := md[k].(map[string]any); ok {
			for _, a := range fields(ann, LastApplied) {
				ann[a] = r.lastApplied(ann[a], kind, sc)
			}
		}
	}
}

// deep redacts a value that is not a known value map: container lists and
// token fields at any depth, and objects nested in lists of any field.
func (r *Redactor) deep(v any, sc scope) any {
	switch x := v.(type) {
	case map[string]any:
		for k, vv := range x {
			switch lk := strings.ToLower(k); lk {
			case "token":
				if vv != nil {
					x[k] = Redacted
				}
			case "containers", "initcontainers", "ephemeralcontainers":
				if l, ok := vv.([]any); ok {
					for _, c := range l {
						if cm, ok := c.(map[string]any); ok {
							r.container(cm, sc)
						}
					}
				} else {
					x[k] = r.deep(vv, sc)
				}
			default:
				x[k] = r.deep(vv, sc)
			}
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = r.deep(e, sc)
		}
		return x
	}
	return v
}

// container hashes a container's env literals and its args and command.
func (r *Redactor) container(c map[string]any, sc scope) {
	name := strField(c, "name")
	for k, v := range c {
		switch lk := strings.ToLower(k); lk {
		case "env":
			l, ok := v.([]any)
			if !ok {
				c[k] = r.keyed(v, "env", sc.ns, name, "", "")
				continue
			}
			for _, e := range l {
				em, ok := e.(map[string]any)
				if !ok {
					continue
				}
				env := strField(em, "name")
				for _, vk := range fields(em, "value") {
					if s, ok := em[vk].(string); ok && r.clear(env, s) {
						continue
					}
					em[vk] = r.keyed(em[vk], "env", sc.ns, name, env, "")
				}
				for ek, ev := range em {
					if lek := strings.ToLower(ek); lek != "name" && lek != "value" {
						em[ek] = r.deep(ev, sc)
					}
				}
			}
		case "args", "command":
			l, ok := v.([]any)
			if !ok {
				c[k] = r.keyed(v, lk, sc.ns, name, "", "")
				continue
			}
			for i, e := range l {
				l[i] = r.keyed(e, lk, sc.ns, name, "", "")
			}
		default:
			c[k] = r.deep(v, sc)
		}
	}
}

// valueMap hashes a data-like field: per key when it is an object, whole
// otherwise. field is lower case.
func (r *Redactor) valueMap(v any, sc scope, field string) any {
	vals, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return nil
		}
		return r.keyed(v, "secret", sc.ns, sc.name, "", field)
	}
	for k, x := range vals {
		vals[k] = r.keyed(x, "secret", sc.ns, sc.name, k, field)
	}
	return vals
}

// configMap keeps a ConfigMap's values in clear where clear says they are
// safe and hashes the others like a Secret's. binaryData is judged by its
// decoded bytes; bytes that are not text cannot be judged and are hashed.
// A field that is not an object of strings is hashed whole or per key.
func (r *Redactor) configMap(v any, sc scope, field string) any {
	vals, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return nil
		}
		return r.keyed(v, "configmap", sc.ns, sc.name, "", field)
	}
	for k, x := range vals {
		if s, ok := x.(string); ok {
			text, readable := s, true
			if field == "binarydata" {
				dec, err := base64.StdEncoding.DecodeString(s)
				text, readable = string(dec), err == nil && isText(dec)
			}
			if readable && r.clear(k, text) {
				continue
			}
		}
		vals[k] = r.keyed(x, "configmap", sc.ns, sc.name, k, field)
	}
	return vals
}

// clear says whether the value of key may be stored in clear: no
// credential rule matches it, and RedactConfigMaps is off.
func (r *Redactor) clear(key, value string) bool {
	return !r.RedactConfigMaps && Credential(key, value) == ""
}

// lastApplied redacts the annotation by the rules of the object it repeats;
// one that does not parse is hashed whole.
func (r *Redactor) lastApplied(v any, kind string, sc scope) any {
	s, ok := v.(string)
	if !ok {
		return r.keyed(v, "last-applied", sc.ns, sc.name, "", "")
	}
	var before, m map[string]any
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if d.Decode(&m) != nil || m == nil {
		return r.keyed(v, "last-applied", sc.ns, sc.name, "", "")
	}
	_ = json.Unmarshal([]byte(s), &before)
	r.walk(m, scope{kind: kind, resourceKind: sc.resourceKind, ns: sc.ns, name: sc.name})
	var after map[string]any
	b, _ := json.Marshal(m) // a decoded JSON value always re-encodes
	_ = json.Unmarshal(b, &after)
	if reflect.DeepEqual(before, after) {
		return s // nothing to hide: keep the bytes as they were
	}
	return string(b)
}

// keyed is the HMAC of a value bound to where it was found, or NoKey. The
// value's bytes are the decoded ones for base64 fields (data, binaryData),
// so data and stringData holding one value hash alike.
func (r *Redactor) keyed(v any, class, ns, obj, key, field string) string {
	if len(r.Key) == 0 {
		if r.OnNoKey != nil {
			r.OnNoKey()
		}
		return NoKey
	}
	mac := hmac.New(sha256.New, r.Key)
	for _, part := range []string{"faultline.redact.v2", class, ns, obj, key} {
		writePart(mac, []byte(part))
	}
	writePart(mac, valueBytes(field, v, class == "configmap"))
	return hmacTag + hex.EncodeToString(mac.Sum(nil))
}

// writePart writes a length-prefixed part, so no two tuples share bytes.
func writePart(w interface{ Write([]byte) (int, error) }, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	w.Write(n[:])
	w.Write(b)
}

// valueBytes are the bytes a value hashes as: base64 fields decoded
// (binaryData, and a Secret's data), so data and stringData of one value
// agree; a ConfigMap's data is text.
func valueBytes(field string, v any, configMap bool) []byte {
	s, ok := v.(string)
	if !ok {
		b, _ := json.Marshal(v) // a decoded JSON value always re-encodes
		return b
	}
	if field == "binarydata" || field == "data" && !configMap {
		if dec, err := base64.StdEncoding.DecodeString(s); err == nil {
			return dec
		}
	}
	return []byte(s)
}
