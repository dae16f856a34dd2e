// Package extrajson reads one top-level member of a record's extra JSON as
// encoding/json would decode it into a struct field, without decoding the
// rest, for the forms where the two cannot differ. The callers fall back
// to encoding/json for every other form.
package extrajson

import (
	"bytes"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Valid reports whether doc is JSON that encoding/json reads as gjson does:
// valid, and nested no deeper than encoding/json allows (counted loosely,
// by its brackets).
func Valid(doc []byte) bool {
	return bytes.Count(doc, []byte{'{'})+bytes.Count(doc, []byte{'['}) <= 1000 && gjson.ValidBytes(doc)
}

// Last returns the value of the last top-level member of the Valid doc
// whose key folds to key (encoding/json matches a field's name so), how
// many keys fold to it, and whether that last one is spelled key exactly.
// ok is false when doc is not an object. The value points into doc (no
// copy of it is made: gjson.ParseBytes would), so doc must not change
// while it is in use.
func Last(doc []byte, key string) (v gjson.Result, n int, exact, ok bool) {
	top := gjson.Parse(unsafe.String(unsafe.SliceData(doc), len(doc)))
	if !top.IsObject() {
		return gjson.Result{}, 0, false, false
	}
	top.ForEach(func(k, val gjson.Result) bool {
		if s := k.String(); strings.EqualFold(s, key) {
			n++
			v, exact = val, s == key
		}
		return true
	})
	return v, n, exact, true
}
