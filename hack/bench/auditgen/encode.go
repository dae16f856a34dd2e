package main

import (
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// Encoding. appendEvent writes exactly what encoding/json writes for an
// event (HTML escaping on, as the apiserver's JSON serializer) plus a
// newline, several times faster; TestAppendEvent holds it to that.

func appendEvent(b []byte, ev *event) []byte {
	b = append(b, `{"kind":`...)
	b = appendString(b, ev.Kind)
	b = append(b, `,"apiVersion":`...)
	b = appendString(b, ev.APIVersion)
	b = append(b, `,"level":`...)
	b = appendString(b, ev.Level)
	b = append(b, `,"auditID":`...)
	b = appendString(b, ev.AuditID)
	b = append(b, `,"stage":`...)
	b = appendString(b, ev.Stage)
	b = append(b, `,"requestURI":`...)
	b = appendString(b, ev.RequestURI)
	b = append(b, `,"verb":`...)
	b = appendString(b, ev.Verb)
	b = append(b, `,"user":`...)
	b = appendUser(b, ev.User)
	if ev.ImpersonatedUser != nil {
		b = append(b, `,"impersonatedUser":`...)
		b = appendUser(b, ev.ImpersonatedUser)
	}
	if len(ev.SourceIPs) > 0 {
		b = append(b, `,"sourceIPs":`...)
		b = appendStrings(b, ev.SourceIPs)
	}
	if ev.UserAgent != "" {
		b = append(b, `,"userAgent":`...)
		b = appendString(b, ev.UserAgent)
	}
	if r := ev.ObjectRef; r != nil {
		b = append(b, `,"objectRef":{`...)
		first := true
		b = appendField(b, &first, "resource", r.Resource)
		b = appendField(b, &first, "namespace", r.Namespace)
		b = appendField(b, &first, "name", r.Name)
		b = appendField(b, &first, "uid", r.UID)
		b = appendField(b, &first, "apiGroup", r.APIGroup)
		b = appendField(b, &first, "apiVersion", r.APIVersion)
		b = appendField(b, &first, "resourceVersion", r.ResourceVersion)
		b = appendField(b, &first, "subresource", r.Subresource)
		b = append(b, '}')
	}
	if ev.ResponseStatus != nil {
		b = append(b, `,"responseStatus":`...)
		b = appendStatus(b, ev.ResponseStatus)
	}
	if len(ev.RequestObject) > 0 { // already compact and HTML-escaped by json.Marshal
		b = append(b, `,"requestObject":`...)
		b = append(b, ev.RequestObject...)
	}
	if len(ev.ResponseObject) > 0 {
		b = append(b, `,"responseObject":`...)
		b = append(b, ev.ResponseObject...)
	}
	b = append(b, `,"requestReceivedTimestamp":`...)
	b = appendMicroTime(b, int64(ev.RequestReceivedTimestamp))
	b = append(b, `,"stageTimestamp":`...)
	b = appendMicroTime(b, int64(ev.StageTimestamp))
	if len(ev.Annotations) > 0 {
		b = append(b, `,"annotations":`...)
		b = appendStringMap(b, ev.Annotations)
	}
	return append(b, '}', '\n')
}

func appendUser(b []byte, u *userInfo) []byte {
	if u == nil {
		return append(b, "null"...)
	}
	b = append(b, '{')
	first := true
	b = appendField(b, &first, "username", u.Username)
	b = appendField(b, &first, "uid", u.UID)
	if len(u.Groups) > 0 {
		b = appendKey(b, &first, "groups")
		b = appendStrings(b, u.Groups)
	}
	if len(u.Extra) > 0 {
		b = appendKey(b, &first, "extra")
		b = append(b, '{')
		var arr [8]string
		for i, k := range sortedKeys(arr[:0], u.Extra) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendStrings(b, u.Extra[k])
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

func appendStatus(b []byte, s *status) []byte {
	b = append(b, '{')
	first := true
	b = appendField(b, &first, "kind", s.Kind)
	b = appendField(b, &first, "apiVersion", s.APIVersion)
	b = appendKey(b, &first, "metadata")
	b = append(b, '{', '}')
	b = appendField(b, &first, "status", s.Status)
	b = appendField(b, &first, "message", s.Message)
	b = appendField(b, &first, "reason", s.Reason)
	if d := s.Details; d != nil {
		b = appendKey(b, &first, "details")
		b = append(b, '{')
		dfirst := true
		b = appendField(b, &dfirst, "name", d.Name)
		b = appendField(b, &dfirst, "group", d.Group)
		b = appendField(b, &dfirst, "kind", d.Kind)
		b = appendField(b, &dfirst, "uid", d.UID)
		if d.RetryAfterSeconds != 0 {
			b = appendKey(b, &dfirst, "retryAfterSeconds")
			b = strconv.AppendInt(b, int64(d.RetryAfterSeconds), 10)
		}
		b = append(b, '}')
	}
	if s.Code != 0 {
		b = appendKey(b, &first, "code")
		b = strconv.AppendInt(b, int64(s.Code), 10)
	}
	return append(b, '}')
}

// appendKey appends a member name, after a comma unless it is the first.
func appendKey(b []byte, first *bool, name string) []byte {
	if !*first {
		b = append(b, ',')
	}
	*first = false
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// appendField appends a string member with omitempty.
func appendField(b []byte, first *bool, name, v string) []byte {
	if v == "" {
		return b
	}
	b = appendKey(b, first, name)
	return appendString(b, v)
}

func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

func appendStringMap(b []byte, m map[string]string) []byte {
	b = append(b, '{')
	var arr [16]string
	for i, k := range sortedKeys(arr[:0], m) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendString(b, m[k])
	}
	return append(b, '}')
}

// sortedKeys appends m's keys to keys, sorted as encoding/json sorts them.
func sortedKeys[V any](keys []string, m map[string]V) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func appendMicroTime(b []byte, ns int64) []byte {
	b = append(b, '"')
	b = time.Unix(0, ns).UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendString quotes s as encoding/json does with HTML escaping: <, > and &
// become \u003c, \u003e and \u0026 (so requestURIs read "...?a=1\u0026b=2"),
// invalid UTF-8 becomes \ufffd, and U+2028 and U+2029 are escaped.
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
