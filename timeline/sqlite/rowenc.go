package sqlite

import (
	"context"
	"encoding/hex"
	"strings"

	"github.com/faultline/faultline/timeline"
)

// How a record row stores its long strings (migration 0010; SCHEMA.md,
// "Row encoding"). Each encoding is exact: the SQL expressions below give
// back the very string the ingester wrote, byte for byte. The writer stores
// an encoded form only where its markers (\x01, \x02) cannot be confused
// with the input's own bytes, else the string as it is (FuzzRowEncoding
// holds the encoders and the SQL decoding to that). The expressions are
// plain SQL, so every query, the migrations and a sqlite3 shell read the
// same values.
//
//   - audit_id and uid: a canonical UUID (36 characters, lower-case hex) is a
//     16-byte BLOB; any other value is TEXT, as it was.
//   - uri: the path's template, interned (uri_tpl: an id into strs), then
//     the rest as TEXT (uri). In the template the record's own namespace is
//     \x01 and its name \x02, so "/api/v1/namespaces/ns-1/pods/pod-7" and
//     every other pod's URI share "/api/v1/namespaces/\x01/pods/\x02". The
//     query stays in uri: its values (resourceVersion, continue) rarely
//     repeat.
//   - extra: the JSON object in three parts. The middle (extra_dict, an id
//     into strs) runs from the authorization annotations (or the groups)
//     to the end of the groups, the part that repeats per user; the parts
//     before and after it (extra_head, extra_tail) are TEXT with the
//     annotation key prefix "apiserver.latency.k8s.io/ written \x01. A value
//     that does not split so (an Event's extra, or one holding control
//     characters) is kept whole in extra.

// latencyKey is the prefix of the apiserver's latency annotations (1.29+),
// six to ten of which a Metadata audit record carries.
const latencyKey = `"apiserver.latency.k8s.io/`

// idSQL is the SQL text of an audit_id or uid column.
func idSQL(col string) string {
	h := "hex(" + col + ")"
	return "(CASE WHEN typeof(" + col + ") = 'blob' THEN lower(substr(" + h + ", 1, 8) || '-' || substr(" + h +
		", 9, 4) || '-' || substr(" + h + ", 13, 4) || '-' || substr(" + h + ", 17, 4) || '-' || substr(" + h +
		", 21)) ELSE " + col + " END)"
}

// uriSQL is the SQL text of the request URI of record alias r.
func uriSQL(r string) string {
	return "(replace(replace((SELECT s FROM strs WHERE id = " + r + ".uri_tpl), char(1), (SELECT s FROM strs WHERE id = " +
		r + ".namespace)), char(2), (SELECT s FROM strs WHERE id = " + r + ".name)) || " + r + ".uri)"
}

// extraSQL is the SQL text of the extra JSON of record alias r (NULL for
// none).
func extraSQL(r string) string {
	return "COALESCE(" + r + ".extra, NULLIF(replace(" + r + ".extra_head, char(1), '" + latencyKey +
		"') || (SELECT s FROM strs WHERE id = " + r + ".extra_dict) || replace(" + r + ".extra_tail, char(1), '" +
		latencyKey + "'), ''))"
}

// encodeID returns the stored form of an audit ID or uid: 16 bytes for a
// canonical UUID, else the string.
func encodeID(s string) any {
	if !canonicalUUID(s) {
		return s
	}
	b := make([]byte, 0, 16)
	for i := 0; i < len(s); i += 2 {
		if s[i] == '-' {
			i--
			continue
		}
		b = append(b, unhex(s[i])<<4|unhex(s[i+1]))
	}
	return b
}

// unhex is the value of a lower-case hex digit.
func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

// decodeID is idSQL in Go.
func decodeID(v any) string {
	b, ok := v.([]byte)
	if !ok {
		s, _ := v.(string)
		return s
	}
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func canonicalUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// encodeURI splits uri into its path template (to intern) and the rest.
func encodeURI(uri, namespace, name string) (tpl, rest string) {
	path, query := uri, ""
	if i := strings.IndexByte(uri, '?'); i >= 0 {
		path, query = uri[:i], uri[i:]
	}
	// The template reads back (decodeURI) when the path holds neither
	// marker and the namespace not the name's: every \x02 then stands for
	// the name, every \x01 for the namespace (FuzzRowEncoding checks it).
	if path == "" || strings.ContainsAny(path, "\x01\x02") || strings.IndexByte(namespace, 2) >= 0 {
		return "", uri
	}
	t := path // (SQLite's replace() with an empty pattern returns its input; strings.ReplaceAll would not)
	if name != "" {
		t = strings.ReplaceAll(t, name, "\x02")
	}
	if namespace != "" {
		t = strings.ReplaceAll(t, namespace, "\x01")
	}
	return t, query
}

// decodeURI is uriSQL in Go.
func decodeURI(tpl, namespace, name, rest string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tpl, "\x01", namespace), "\x02", name) + rest
}

// extraParts is the stored form of a record's extra JSON.
type extraParts struct {
	whole      any    // the JSON as is, or nil (NULL) when split or absent
	head, tail string // latency annotation keys written \x01
	dict       string // to intern
}

// encodeExtra splits x (see the top of this file).
func encodeExtra(x []byte) extraParts {
	if len(x) == 0 {
		return extraParts{}
	}
	s := string(x)
	i := strings.Index(s, `"authorization.k8s.io/`)
	g := strings.Index(s, `"groups":[`)
	if i < 0 {
		i = g
	}
	// Without \x01 in s, every \x01 of head and tail stands for latencyKey.
	if i < 0 || strings.IndexByte(s, 1) >= 0 {
		return extraParts{whole: s}
	}
	var j int
	if g >= i {
		j = closing(s, g, ']')
	} else {
		j = closing(s, i, '}')
	}
	return extraParts{head: shorten(s[:i]), dict: s[i:j], tail: shorten(s[j:])}
}

// shorten writes latencyKey \x01.
func shorten(s string) string { return strings.ReplaceAll(s, latencyKey, "\x01") }

// closing returns the index after the first c at or after from, or len(s).
func closing(s string, from int, c byte) int {
	if k := strings.IndexByte(s[from:], c); k >= 0 {
		return from + k + 1
	}
	return len(s)
}

// appendDecoded is extraSQL in Go: it appends the extra JSON the parts
// stand for to dst (a reader of many rows decodes each into one buffer).
func (p extraParts) appendDecoded(dst []byte) []byte {
	if w, ok := p.whole.(string); ok {
		return append(dst, w...)
	}
	dst = appendLong(dst, p.head)
	dst = append(dst, p.dict...)
	return appendLong(dst, p.tail)
}

// appendLong appends s with each \x01 written out as latencyKey (shorten's
// inverse).
func appendLong(dst []byte, s string) []byte {
	for {
		i := strings.IndexByte(s, 1)
		if i < 0 {
			return append(dst, s...)
		}
		dst = append(append(dst, s[:i]...), latencyKey...)
		s = s[i+1:]
	}
}

// recordRow is the stored form of a record's long strings.
type recordRow struct {
	auditID, uid         any
	uriTpl               int64
	uri                  string
	extra                any // NULL when split or absent
	extraDict            int64
	extraHead, extraTail string
}

// encodeRecord encodes r's long strings, interning the parts that repeat.
func (b *batch) encodeRecord(ctx context.Context, r *timeline.Record) (recordRow, error) {
	o := &r.Object
	tpl, rest := encodeURI(r.URI, o.Namespace, o.Name)
	x := encodeExtra(r.Extra)
	ids, err := b.internAll(ctx, tpl, x.dict)
	if err != nil {
		return recordRow{}, err
	}
	return recordRow{auditID: encodeID(r.AuditID), uid: encodeID(o.UID), uriTpl: ids[0], uri: rest,
		extra: x.whole, extraDict: ids[1], extraHead: x.head, extraTail: x.tail}, nil
}
