// Package objdiff computes structured differences between two versions of a
// Kubernetes object, for the users' eyes.
//
// Objects are compared as decoded JSON (map[string]any), after the fields that
// change on every write without saying anything (resourceVersion,
// managedFields, heartbeat timestamps...; see the noise table in noise.go) are
// stripped from copies of both sides. Each difference is one [Change]: a path
// such as spec.template.spec.containers[0].image and the old and new values as
// compact JSON.
//
// The comparison is go-cmp's: a [cmp.Reporter] collects the differing leaves
// and renders their paths. go-cmp's Diff text is never used: it is unstable by
// design.
package objdiff

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// Change is one difference between two objects.
//
// Path is empty only when a whole object is added or removed: Diff(nil, obj)
// gives one Change{Path: "", From: "", To: <obj>}. Every other Change names
// the map key or array index where the two sides part.
type Change struct {
	Path string `json:"path"` // e.g. spec.template.spec.containers[0].image, data.LR, metadata.labels["nvidia.com/cuda.driver.major"]
	From string `json:"from"` // JSON of the old value; "" when added
	To   string `json:"to"`   // JSON of the new value; "" when removed
}

// Options say what counts as noise.
type Options struct {
	// KeepNoise keeps the fields of the noise table. The zero value strips them.
	KeepNoise bool
}

// Diff compares two decoded JSON objects and returns the changes, sorted by
// Path (then From, then To); it returns nil when they are equal.
//
// Values are what encoding/json decodes into an any: map[string]any, []any,
// string, bool, nil, and numbers as float64 or json.Number. Numbers compare by
// value, exactly: 1, 1.0, 1e0, float64(1) and int64(1) are equal, and
// 9007199254740993 differs from 9007199254740992. Go integers and other
// values encoding/json can encode (as in unstructured.Unstructured) are
// accepted too. Inputs must be trees, as decoded JSON is; they are never
// modified.
//
// A nil map means the object does not exist (before its creation, after its
// deletion); an empty map is an object with no fields.
//
// Arrays are compared element by element at the same index: an element
// inserted in the middle shows as a change at every following index and one
// added at the end.
func Diff(from, to map[string]any, opt Options) []Change {
	x, y := normalizeObject(from), normalizeObject(to)
	if !opt.KeepNoise {
		stripNoise(x, y)
	}
	r := &reporter{}
	cmp.Equal(x, y, cmp.Reporter(r), cmp.Comparer(func(a, b number) bool { return a.canon == b.canon }))
	if len(r.changes) == 0 {
		return nil
	}
	slices.SortFunc(r.changes, func(a, b Change) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		if c := strings.Compare(a.From, b.From); c != 0 {
			return c
		}
		return strings.Compare(a.To, b.To)
	})
	return r.changes
}

// DiffJSON decodes two JSON objects (numbers as json.Number) and diffs them
// with [Diff]. Each side must hold one JSON object, or null for an object
// that does not exist. A bad side gives an error naming it ("from" or "to").
func DiffJSON(from, to []byte, opt Options) ([]Change, error) {
	x, err := decodeObject(from)
	if err != nil {
		return nil, fmt.Errorf("objdiff: from: %w", err)
	}
	y, err := decodeObject(to)
	if err != nil {
		return nil, fmt.Errorf("objdiff: to: %w", err)
	}
	return Diff(x, y, opt), nil
}

func decodeObject(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		// Byte numbers count from 1, as json.SyntaxError.Offset does.
		var serr *json.SyntaxError
		switch {
		case errors.Is(err, io.EOF):
			return nil, errors.New("no JSON value")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, fmt.Errorf("byte %d: unexpected end of JSON input", len(data))
		case errors.As(err, &serr):
			return nil, fmt.Errorf("byte %d: %w", serr.Offset, err)
		}
		return nil, err
	}
	end := int(dec.InputOffset())
	if rest := bytes.TrimLeft(data[end:], " \t\r\n"); len(rest) > 0 {
		return nil, fmt.Errorf("byte %d: data after the JSON value", len(data)-len(rest)+1)
	}
	switch v := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return v, nil
	default:
		return nil, fmt.Errorf("want a JSON object, got %s", jsonKind(v))
	}
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	default:
		return "a number"
	}
}

// reporter is the cmp.Reporter that turns unequal leaves into Changes.
//
// cmp calls PushStep/PopStep around every node and Report once per leaf: a
// scalar, a map entry present on one side only, a nil against a non-nil, or
// two values of different dynamic types. Containers that cmp descends into
// are never reported themselves. A PathStep is only valid until it is
// popped, so the path is rendered at Report time.
type reporter struct {
	path    cmp.Path
	changes []Change
}

func (r *reporter) PushStep(ps cmp.PathStep) { r.path = append(r.path, ps) }

func (r *reporter) PopStep() { r.path = r.path[:len(r.path)-1] }

func (r *reporter) Report(res cmp.Result) {
	if res.Equal() {
		return
	}
	vx, vy := r.path.Last().Values()
	root := len(r.path) == 1
	r.changes = append(r.changes, Change{
		Path: renderPath(r.path),
		From: renderValue(vx, root),
		To:   renderValue(vy, root),
	})
}

// renderPath writes a cmp.Path in the Change.Path syntax. The first step is
// the root (no operation); type assertions (stepping through an any) add
// nothing a user can see.
func renderPath(p cmp.Path) string {
	var b strings.Builder
	for _, ps := range p[min(1, len(p)):] {
		switch ps := ps.(type) {
		case cmp.MapIndex:
			k := ps.Key()
			switch k.Kind() {
			case reflect.String:
				writeKey(&b, k.String())
			case reflect.Int: // an array index; see type array
				fmt.Fprintf(&b, "[%d]", k.Int())
			default:
				fmt.Fprintf(&b, "[%v]", k)
			}
		case cmp.SliceIndex: // not produced (arrays are compared as maps), kept for safety
			ix, iy := ps.SplitKeys()
			fmt.Fprintf(&b, "[%d]", max(ix, iy))
		case cmp.TypeAssertion:
		default:
			b.WriteString(ps.String())
		}
	}
	return b.String()
}

// writeKey appends a map key: .key for identifiers, ["key"] otherwise.
func writeKey(b *strings.Builder, key string) {
	if isIdent(key) {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(key)
		return
	}
	b.WriteByte('[')
	b.WriteString(strconv.Quote(key))
	b.WriteByte(']')
}

// isIdent reports whether key matches [A-Za-z_][A-Za-z0-9_-]*.
func isIdent(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case i > 0 && (c >= '0' && c <= '9' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// renderValue renders one side of a change as compact JSON; "" when the side
// is missing (a map key present on the other side only, or, at the root, an
// object that does not exist).
func renderValue(v reflect.Value, root bool) string {
	if !v.IsValid() {
		return ""
	}
	if root && v.Kind() == reflect.Map && v.IsNil() {
		return ""
	}
	return renderJSON(v.Interface())
}

// renderJSON renders a normalized value as compact JSON, map keys sorted and
// <, >, & left as they are.
func renderJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(denormalize(v)); err != nil {
		// Unreachable: normalized values always encode.
		return strconv.Quote(fmt.Sprintf("!(encoding failed: %v)", err))
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// array is a JSON array as Diff compares it: element by index.
//
// go-cmp diffs slices with an edit script that may pair elements at
// different indexes, and whose choice among equally short scripts is
// deliberately randomized per process (internal/diff: randBool), so the same
// input could give different changes from one run to the next. As a map keyed
// by index, elements compare at the same index, in sorted key order, and the
// extra elements of the longer side are map entries missing on the other side.
type array map[int]any

// number is a JSON number: canon is an exact canonical decimal
// (digits "e" exponent, no leading or trailing zeros, "0" for zero) used for
// equality, raw the JSON text to show.
type number struct {
	canon string
	raw   string
}

func normalizeObject(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	n, _ := normalize(m).(map[string]any)
	return n
}

// normalize deep-copies a decoded JSON value into the form Diff compares:
// map[string]any, array, number, string, bool or nil.
func normalize(v any) any {
	switch v := v.(type) {
	case nil:
		return nil
	case map[string]any:
		if v == nil {
			return nil
		}
		return normalizeMap(v)
	case []any:
		if v == nil {
			return nil
		}
		a := make(array, len(v))
		for i, e := range v {
			a[i] = normalize(e)
		}
		return a
	case string:
		return validUTF8(v)
	case bool:
		return v
	case json.Number:
		if canon, ok := canonDecimal(string(v)); ok {
			return number{canon: canon, raw: string(v)}
		}
		return string(v) // not a number: encoding/json would refuse it, show the text
	case float64:
		return floatNumber(v, 64)
	case float32:
		return floatNumber(float64(v), 32)
	case int:
		return intNumber(int64(v))
	case int8:
		return intNumber(int64(v))
	case int16:
		return intNumber(int64(v))
	case int32:
		return intNumber(int64(v))
	case int64:
		return intNumber(v)
	case uint:
		return uintNumber(uint64(v))
	case uint8:
		return uintNumber(uint64(v))
	case uint16:
		return uintNumber(uint64(v))
	case uint32:
		return uintNumber(uint64(v))
	case uint64:
		return uintNumber(v)
	default:
		return normalizeJSON(v)
	}
}

// normalizeMap normalizes a JSON object (not nil).
func normalizeMap(v map[string]any) map[string]any {
	m := make(map[string]any, len(v))
	var invalid []string
	for k, e := range v {
		if !utf8.ValidString(k) {
			invalid = append(invalid, k)
			continue
		}
		m[k] = normalize(e)
	}
	// Keys that are not UTF-8 become what encoding/json makes of them
	// (U+FFFD per bad byte) and may then collide: a valid key wins,
	// then the smallest original, so the result does not depend on
	// map order.
	slices.Sort(invalid)
	for _, k := range invalid {
		if _, dup := m[validUTF8(k)]; !dup {
			m[validUTF8(k)] = normalize(v[k])
		}
	}
	return m
}

// normalizeJSON normalizes other Go values ([]string, map[string]string,
// structs...) through their JSON form.
func normalizeJSON(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("!(%T: %v)", v, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var d any
	if err := dec.Decode(&d); err != nil {
		return fmt.Sprintf("!(%T: %v)", v, err)
	}
	return normalize(d)
}

// validUTF8 replaces each byte of s that is not UTF-8 by U+FFFD, as
// encoding/json does, so that strings that render alike compare alike.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s { // an invalid byte ranges as one utf8.RuneError
		b.WriteRune(r)
	}
	return b.String()
}

func intNumber(i int64) number {
	s := strconv.FormatInt(i, 10)
	canon, _ := canonDecimal(s)
	return number{canon: canon, raw: s}
}

func uintNumber(u uint64) number {
	s := strconv.FormatUint(u, 10)
	canon, _ := canonDecimal(s)
	return number{canon: canon, raw: s}
}

// floatNumber uses the shortest decimal that reads back as the same float, so
// float64(0.1) equals json.Number("0.1").
func floatNumber(f float64, bits int) number {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		s := strconv.FormatFloat(f, 'g', -1, bits)
		return number{canon: s, raw: strconv.Quote(s)} // not JSON numbers
	}
	canon, _ := canonDecimal(strconv.FormatFloat(f, 'e', -1, bits))
	var raw []byte
	if bits == 32 {
		raw, _ = json.Marshal(float32(f))
	} else {
		raw, _ = json.Marshal(f)
	}
	return number{canon: canon, raw: string(raw)}
}

// canonDecimal parses a JSON number and returns it exactly as
// [-]digits"e"exponent with no leading or trailing zeros in digits, or "0".
// It reports false when s is not a JSON number.
func canonDecimal(s string) (string, bool) {
	i := 0
	digitsFrom := func() int {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return start
	}
	neg := i < len(s) && s[i] == '-'
	if neg {
		i++
	}
	var intPart, frac string
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		start := digitsFrom()
		intPart = s[start:i]
	default:
		return "", false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start := digitsFrom()
		if start == i {
			return "", false
		}
		frac = s[start:i]
	}
	exp := new(big.Int)
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		expNeg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			expNeg = s[i] == '-'
			i++
		}
		start := digitsFrom()
		if start == i {
			return "", false
		}
		exp.SetString(s[start:i], 10)
		if expNeg {
			exp.Neg(exp)
		}
	}
	if i != len(s) {
		return "", false
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return "0", true // -0 == 0
	}
	trimmed := strings.TrimRight(digits, "0")
	exp.Add(exp, big.NewInt(int64(len(digits)-len(trimmed)-len(frac))))
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(trimmed)
	b.WriteByte('e')
	b.WriteString(exp.String())
	return b.String(), true
}

// denormalize turns a normalized value back into one encoding/json renders
// as the input's JSON.
func denormalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return nil
		}
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = denormalize(e)
		}
		return m
	case array:
		s := make([]any, len(v))
		for i := range s {
			s[i] = denormalize(v[i])
		}
		return s
	case number:
		return json.RawMessage(v.raw)
	default:
		return v
	}
}
