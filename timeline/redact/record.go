package redact

import (
	"net/url"
	"strings"

	"github.com/faultline/faultline/timeline"
)

// Record redacts the fields of a record that can carry a value: the command
// of an exec or attach in its URI, and the status message of a request that
// sent a Secret or a token, which can echo the body (a webhook's denial, an
// invalid value). Reads and deletes send no body: their messages (a denied
// get) stay, as the analyses read them. Keys and joins are unaffected.
func Record(rec *timeline.Record) {
	rec.URI = URI(rec.URI)
	if rec.Message != "" && sendsSecrets(rec.Verb, rec.Object) {
		rec.Message = Redacted
	}
}

// sendsSecrets says whether a request with verb on ref sends a body that
// can hold secret values.
func sendsSecrets(verb string, ref timeline.ObjectRef) bool {
	switch strings.ToLower(verb) {
	case "get", "list", "watch", "delete", "deletecollection":
		return false
	}
	switch kindOfResource(ref.Resource) {
	case "secret", "tokenreview", "tokenrequest":
		return true
	}
	return strings.EqualFold(ref.Kind, "Secret") || strings.EqualFold(ref.Subresource, "token")
}

// URI returns uri with the values of its command query parameters (pods/exec
// and pods/attach: command=mysql&command=-pPASSWORD) replaced by "redacted".
// The rest of the URI is kept byte for byte.
func URI(uri string) string {
	path, query, ok := strings.Cut(uri, "?")
	if !ok || !containsFold(query, "command") && !containsFold(query, "token") {
		return uri // most URIs: no allocation
	}
	frag := ""
	if i := strings.IndexByte(query, '#'); i >= 0 {
		query, frag = query[:i], query[i:]
	}
	parts := strings.Split(query, "&")
	changed := false
	for i, p := range parts {
		k, _, _ := strings.Cut(p, "=")
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		if strings.EqualFold(name, "command") || strings.EqualFold(name, "token") {
			parts[i] = k + "=" + Redacted
			changed = true
		}
	}
	if !changed {
		return uri
	}
	return path + "?" + strings.Join(parts, "&") + frag
}

// containsFold reports whether sub (ASCII) is in s, ignoring case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}
