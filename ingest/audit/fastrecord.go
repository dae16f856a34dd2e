package audit

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// parseUTC reads the form the apiserver writes, 2026-05-01T10:00:00.123456Z
// (0 to 9 digits of fraction, UTC), without time.Parse. ok is false for
// anything else, which parseTime hands to time.Parse for its value or its
// error.
func parseUTC(s string) (t time.Time, ok bool) {
	n := len(s)
	if n < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[n-1] != 'Z' {
		return time.Time{}, false
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	hour, ok4 := digits(s[11:13])
	minute, ok5 := digits(s[14:16])
	sec, ok6 := digits(s[17:19])
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 {
		return time.Time{}, false
	}
	nsec := 0
	switch frac := s[19 : n-1]; {
	case frac == "":
	case frac[0] == '.' && len(frac) >= 2 && len(frac) <= 10:
		f, ok := digits(frac[1:])
		if !ok {
			return time.Time{}, false
		}
		for range 10 - len(frac) {
			f *= 10
		}
		nsec = f
	default:
		return time.Time{}, false
	}
	if month < 1 || month > 12 || day < 1 || day > daysIn(time.Month(month), year) ||
		hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

// digits is the value of a run of ASCII digits.
func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(m time.Month, year int) int {
	switch m {
	case time.February:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}

// appendJSON appends x as encoding/json marshals it (fields in order, empty
// ones left out, map keys sorted, HTML-escaped strings), or nothing for an
// empty x, without reflection.
func (x *extra) appendJSON(b []byte) []byte {
	start := len(b)
	if x.Format != "" {
		b = appendName(b, start, "format")
		b = appendString(b, string(x.Format))
	}
	switch {
	case len(x.annots) > 0:
		b = appendName(b, start, "annotations")
		for i, kv := range x.annots {
			b = append(b, mapSep(i))
			b = appendString(b, kv.key)
			b = append(b, ':')
			b = appendString(b, kv.value)
		}
		b = append(b, '}')
	case len(x.Annotations) > 0:
		b = appendName(b, start, "annotations")
		keys := make([]string, 0, len(x.Annotations))
		for k := range x.Annotations {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			b = append(b, mapSep(i))
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, x.Annotations[k])
		}
		b = append(b, '}')
	}
	if len(x.Groups) > 0 {
		b = appendName(b, start, "groups")
		b = appendStrings(b, x.Groups)
	}
	if x.ImpersonatedUser != "" {
		b = appendName(b, start, "impersonatedUser")
		b = appendString(b, x.ImpersonatedUser)
	}
	if len(x.SourceIPs) > 0 {
		b = appendName(b, start, "sourceIPs")
		b = appendStrings(b, x.SourceIPs)
	}
	if x.ResourceVersion != "" {
		b = appendName(b, start, "resourceVersion")
		b = appendString(b, x.ResourceVersion)
	}
	if x.StatusReason != "" {
		b = appendName(b, start, "statusReason")
		b = appendString(b, x.StatusReason)
	}
	if x.GRPCCode != nil {
		b = appendName(b, start, "grpcCode")
		b = strconv.AppendInt(b, int64(*x.GRPCCode), 10)
	}
	if x.Pod != "" {
		b = appendName(b, start, "pod")
		b = appendString(b, x.Pod)
	}
	if len(b) == start {
		return b
	}
	return append(b, '}')
}

// appendName opens the object (if nothing follows start yet) or separates
// its fields, and writes a field's name.
func appendName(b []byte, start int, name string) []byte {
	if len(b) == start {
		b = append(b, '{', '"')
	} else {
		b = append(b, ',', '"')
	}
	b = append(b, name...)
	return append(b, '"', ':')
}

// mapSep opens a map (i == 0) or separates its entries.
func mapSep(i int) byte {
	if i == 0 {
		return '{'
	}
	return ','
}

func appendStrings(b []byte, list []string) []byte {
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

// appendString appends s quoted as encoding/json's Marshal writes it: ", \
// and control characters escaped (\b \f \n \r \t by name), <, > and & as
// \u003c \u003e \u0026, U+2028 and U+2029 escaped, and each byte of invalid
// UTF-8 as \ufffd.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// keep copies s, or shares a copy of a common value.
func keep(s string) string {
	if c := intern(s); c != "" {
		return c
	}
	return strings.Clone(s)
}

// Field names of objHeader, by position in the seen masks.
var (
	headerKeys   = []string{"apiVersion", "kind", "metadata", "items"}
	metadataKeys = []string{"name", "namespace", "uid", "resourceVersion"}
)

// decodeHeader is json.Unmarshal(raw, h) for a body that is valid JSON:
// the fast path reads the header's few fields with gjson and leaves
// anything it cannot read exactly (a type mismatch, a key differing in case,
// a duplicate key) to encoding/json. Items point into raw.
func decodeHeader(raw []byte, h *objHeader) error {
	d := fastDecoder{ok: true}
	if len(raw) > 0 {
		d.header(gjson.Parse(unsafe.String(unsafe.SliceData(raw), len(raw))), h)
	}
	if d.ok {
		// The strings point into raw, which points into the line.
		for _, s := range [...]*string{&h.APIVersion, &h.Kind, &h.Metadata.Name, &h.Metadata.Namespace,
			&h.Metadata.UID, &h.Metadata.ResourceVersion} {
			*s = keep(*s)
		}
		return nil
	}
	*h = objHeader{}
	return json.Unmarshal(raw, h)
}

func (d *fastDecoder) header(v gjson.Result, h *objHeader) {
	if v.Type == gjson.Null {
		return
	}
	d.fields(v, headerKeys, func(bit int, v gjson.Result) {
		switch bit {
		case 0:
			d.str(v, &h.APIVersion)
		case 1:
			d.str(v, &h.Kind)
		case 2:
			d.metadata(v, h)
		case 3:
			switch {
			case v.Type == gjson.Null:
			case v.Type != gjson.JSON || v.Raw[0] != '[':
				d.ok = false
			default:
				h.Items = []json.RawMessage{}
				v.ForEach(func(_, it gjson.Result) bool {
					h.Items = append(h.Items, rawSpan(it))
					return true
				})
			}
		}
	})
}

func (d *fastDecoder) metadata(v gjson.Result, h *objHeader) {
	if v.Type == gjson.Null {
		return
	}
	fields := [...]*string{&h.Metadata.Name, &h.Metadata.Namespace, &h.Metadata.UID, &h.Metadata.ResourceVersion}
	d.fields(v, metadataKeys, func(bit int, v gjson.Result) { d.str(v, fields[bit]) })
}
