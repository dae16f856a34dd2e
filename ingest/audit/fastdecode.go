package audit

import (
	"bytes"
	"encoding/json"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// The fast path reads a plain audit Event (one per line, the apiserver's
// --audit-log-format=json) in two passes of gjson over the line: a
// validation, then one walk of the top-level keys that copies out only the
// fields a record needs and takes requestObject and responseObject as raw
// spans, skipped without being decoded.
//
// It is exact or it declines. Whenever a line is not valid JSON, or holds
// anything on which encoding/json's rules would need more than a plain
// reading (a key differing only in case, a duplicate key, a value of the
// wrong type, a number that is not a plain integer, an envelope), fastEvent
// says so and decode falls back to decodeStd, today's encoding/json decoder,
// which gives the same events and the same errors as before. Bad lines and
// envelopes are rare; they cost what they cost before, plus one validation.

// maxFastBrackets bounds the brackets of a line read by the fast path: it
// keeps gjson's recursive validation shallow, and leaves lines that could
// nest deeper than encoding/json allows (10000) to encoding/json, which
// refuses them with its own error.
const maxFastBrackets = 10000

// fastDecode reads line, already trimmed and starting with '{', as a plain
// audit Event or as an AKS, EventList or CloudWatch envelope, whose nested
// lines are read by the fast path too. ok is false when the line needs
// decodeStd: GKE exports, and every line that is bad somewhere, even deep
// in an envelope, so that decodeStd names the problem as it always did. A
// line is thus decoded at most twice, once by each.
func fastDecode(line []byte, depth int) (evs []event, ok bool) {
	if bytes.Count(line, []byte{'{'})+bytes.Count(line, []byte{'['}) > maxFastBrackets {
		return nil, false
	}
	if !gjson.ValidBytes(line) {
		return nil, false
	}
	// The walk reads the line in place; keep copies out the strings kept,
	// and version the bodies it keeps.
	r := gjson.Parse(unsafe.String(unsafe.SliceData(line), len(line)))
	d := fastDecoder{ok: true}
	var ev event
	d.event(r, &ev)
	if !d.ok {
		return nil, false
	}
	// The envelopes, tried in decodeStd's order.
	env := &d.env
	if p := env.properties; p.Exists() && p.Type != gjson.Null {
		if log, ok := d.propertiesLog(p); !ok {
			return nil, false
		} else if log.Exists() {
			evs, err := nested(rawSpan(log), "properties.log", FormatAKS, env.time, depth, fastOnly)
			return evs, err == nil
		}
	}
	if ev.Kind == "EventList" || env.items.Exists() && env.items.Type != gjson.Null {
		return d.list(env.items, depth)
	}
	if env.logEvents.Exists() && env.logEvents.Type != gjson.Null || env.events.Exists() && env.events.Type != gjson.Null {
		list := env.logEvents
		if env.events.Exists() && env.events.Type != gjson.Null {
			list = env.events
		}
		return d.cloudWatch(list, depth)
	}
	if env.message.Exists() && ev.Kind == "" {
		evs, err := nested(rawSpan(env.message), "message", FormatCloudWatch, "", depth, fastOnly)
		return evs, err == nil
	}
	if ev.Kind != "Event" && ev.Kind != "" || ev.Kind == "" && ev.AuditID == "" && ev.Verb == "" {
		return nil, false // decodeStd names the problem
	}
	ev.format = FormatEvent
	return []event{ev}, true
}

// propertiesLog is AKS's properties.log, or a Result that does not exist.
func (d *fastDecoder) propertiesLog(p gjson.Result) (log gjson.Result, ok bool) {
	if p.Type != gjson.JSON || p.Raw[0] != '{' {
		return gjson.Result{}, false
	}
	d.fields(p, []string{"log"}, func(_ int, v gjson.Result) { log = v })
	return log, d.ok
}

// list reads an EventList's items.
func (d *fastDecoder) list(items gjson.Result, depth int) (out []event, ok bool) {
	switch {
	case !items.Exists() || items.Type == gjson.Null:
		return nil, true
	case items.Type != gjson.JSON || items.Raw[0] != '[':
		return nil, false
	}
	ok = true
	items.ForEach(func(_, it gjson.Result) bool {
		evs, err := decodeDepth(rawSpan(it), depth+1, fastOnly)
		if err != nil {
			ok = false
			return false
		}
		for j := range evs {
			evs[j].format = FormatEventList
		}
		out = append(out, evs...)
		return true
	})
	return out, ok
}

// cloudWatch reads the events of a CloudWatch batch, each a line in its
// message string.
func (d *fastDecoder) cloudWatch(list gjson.Result, depth int) (out []event, ok bool) {
	if list.Type != gjson.JSON || list.Raw[0] != '[' {
		return nil, false
	}
	known := []string{"message"}
	ok = true
	list.ForEach(func(_, e gjson.Result) bool {
		var msg string
		d.fields(e, known, func(_ int, v gjson.Result) { d.str(v, &msg) })
		if !d.ok {
			ok = false
			return false
		}
		evs, err := decodeDepth([]byte(msg), depth+1, fastOnly)
		if err != nil {
			ok = false
			return false
		}
		for j := range evs {
			evs[j].format = FormatCloudWatch
		}
		out = append(out, evs...)
		return true
	})
	return out, ok
}

// fastDecoder walks one line; ok turns false at the first thing it cannot
// read exactly as encoding/json would.
type fastDecoder struct {
	ok    bool
	arena []byte // holds the strings kept, a few allocations a line
	env   struct {
		time                                          string
		items, properties, message, logEvents, events gjson.Result
	}
}

// arenaSize is the block the strings of a line are copied into: a typical
// line keeps a few hundred bytes.
const arenaSize = 512

// keep copies s out of the line into the arena (or shares a common value).
func (d *fastDecoder) keep(s string) string {
	if len(s) == 0 {
		return ""
	}
	if c := intern(s); c != "" {
		return c
	}
	if len(s) > cap(d.arena)-len(d.arena) {
		d.arena = make([]byte, 0, max(len(s), arenaSize))
	}
	start := len(d.arena)
	d.arena = append(d.arena, s...)
	return unsafe.String(&d.arena[start], len(s))
}

// seen records a key of an object, and declines a duplicate: encoding/json
// merges or overwrites, which the fast path does not mimic.
func (d *fastDecoder) seen(mask *uint64, bit uint) {
	if *mask&(1<<bit) != 0 {
		d.ok = false
	}
	*mask |= 1 << bit
}

// unknown checks a key no field takes, and declines the line when
// encoding/json could read the key otherwise (foldsOnto).
func (d *fastDecoder) unknown(key gjson.Result, known []string) {
	if foldsOnto(key, known) {
		d.ok = false
	}
}

// foldsOnto reports whether encoding/json could read key, which is none of
// known, as one of them: it matches keys without regard to case (with
// Unicode folding), so a key that folds onto a known one, or that is
// escaped or not ASCII, is left to it.
func foldsOnto(key gjson.Result, known []string) bool {
	raw := key.Raw
	for i := 1; i < len(raw)-1; i++ {
		if c := raw[i]; c == '\\' || c >= utf8.RuneSelf {
			return true
		}
	}
	for _, k := range known {
		if strings.EqualFold(key.Str, k) {
			return true
		}
	}
	return false
}

// Field names, by position in the seen masks.
var (
	eventKeys = []string{"kind", "apiVersion", "level", "auditID", "stage", "requestURI", "verb", "user",
		"impersonatedUser", "sourceIPs", "userAgent", "objectRef", "responseStatus", "requestObject",
		"responseObject", "requestReceivedTimestamp", "stageTimestamp", "annotations", "timestamp", "time",
		// envelopes: left to decodeStd
		"items", "properties", "protoPayload", "insertId", "labels", "operation", "message", "logEvents", "events"}
	userKeys   = []string{"username", "uid", "groups", "extra"}
	refKeys    = []string{"resource", "namespace", "name", "uid", "apiGroup", "apiVersion", "resourceVersion", "subresource"}
	statusKeys = []string{"code", "status", "message", "reason"}
)

func (d *fastDecoder) event(r gjson.Result, ev *event) {
	var mask uint64
	r.ForEach(func(key, v gjson.Result) bool {
		bit := eventKeyIndex(key)
		if bit < 0 {
			d.unknown(key, eventKeys)
			return d.ok
		}
		d.seen(&mask, uint(bit))
		if bit < firstEnvelopeKey {
			d.eventField(bit, v, ev)
		} else {
			d.envelopeField(bit, v, ev)
		}
		return d.ok
	})
	// encoding/json checks the types of every envelope's fields before one
	// is chosen; the fast path reads lines with one envelope at most.
	const envelopes = 1<<20 | 1<<21 | 1<<26 | 1<<27 | 1<<28
	if bits.OnesCount64(mask&envelopes) > 1 {
		d.ok = false
	}
}

// firstEnvelopeKey is the index in eventKeys of the first key that is not
// the audit event's own but an envelope's (timestamp, time, items...).
const firstEnvelopeKey = 18

// eventField decodes the value v of the audit event's own key eventKeys[bit].
func (d *fastDecoder) eventField(bit int, v gjson.Result, ev *event) {
	switch bit {
	case 0:
		d.str(v, &ev.Kind)
	case 1:
		d.str(v, &ev.APIVersion)
	case 2:
		d.str(v, &ev.Level)
	case 3:
		d.str(v, &ev.AuditID)
	case 4:
		d.str(v, &ev.Stage)
	case 5:
		d.str(v, &ev.RequestURI)
	case 6:
		d.str(v, &ev.Verb)
	case 7:
		if v.Type != gjson.Null {
			d.user(v, &ev.User)
		}
	case 8:
		if v.Type != gjson.Null {
			ev.ImpersonatedUser = new(userInfo)
			d.user(v, ev.ImpersonatedUser)
		}
	case 9:
		ev.SourceIPs = d.strings(v)
	case 10:
		d.str(v, &ev.UserAgent)
	case 11:
		if v.Type != gjson.Null {
			ev.ObjectRef = new(objectRef)
			d.objectRef(v, ev.ObjectRef)
		}
	case 12:
		if v.Type != gjson.Null {
			ev.ResponseStatus = new(status)
			d.status(v, ev.ResponseStatus)
		}
	case 13:
		ev.RequestObject = rawSpan(v)
	case 14:
		ev.ResponseObject = rawSpan(v)
	case 15:
		d.str(v, &ev.RequestReceivedTimestamp)
	case 16:
		d.str(v, &ev.StageTimestamp)
	case 17:
		d.annotations(v, ev)
	}
}

// envelopeField decodes the value v of an envelope's key eventKeys[bit]
// (bit >= firstEnvelopeKey): the envelope is chosen once the line is read.
func (d *fastDecoder) envelopeField(bit int, v gjson.Result, ev *event) {
	switch bit {
	case 18:
		// The envelope's timestamp takes any JSON; only a string is
		// the event's time.
		if v.Type == gjson.String {
			d.str(v, &ev.Timestamp)
		}
	case 19:
		d.str(v, &d.env.time)
	case 20:
		d.env.items = v
	case 21:
		d.env.properties = v
	case 26:
		d.env.message = v
	case 27:
		d.env.logEvents = v
	case 28:
		d.env.events = v
	default: // GKE's fields: left to decodeStd
		d.ok = false
	}
}

// eventKeyIndex is keyIndex(key, eventKeys), by a switch: the top level
// of a line has a score of keys.
func eventKeyIndex(key gjson.Result) int {
	if len(key.Raw) != len(key.Str)+2 {
		return -1
	}
	switch key.Str {
	case "kind":
		return 0
	case "apiVersion":
		return 1
	case "level":
		return 2
	case "auditID":
		return 3
	case "stage":
		return 4
	case "requestURI":
		return 5
	case "verb":
		return 6
	case "user":
		return 7
	case "impersonatedUser":
		return 8
	case "sourceIPs":
		return 9
	case "userAgent":
		return 10
	case "objectRef":
		return 11
	case "responseStatus":
		return 12
	case "requestObject":
		return 13
	case "responseObject":
		return 14
	case "requestReceivedTimestamp":
		return 15
	case "stageTimestamp":
		return 16
	case "annotations":
		return 17
	case "timestamp":
		return 18
	case "time":
		return 19
	}
	return keyIndex(key, eventKeys) // the envelopes' keys, rare
}

// keyIndex is the position of key in known, or -1. An escaped key is never
// matched here (unknown declines it).
func keyIndex(key gjson.Result, known []string) int {
	if len(key.Raw) != len(key.Str)+2 {
		return -1
	}
	for i, k := range known {
		if k == key.Str {
			return i
		}
	}
	return -1
}

// rawSpan is a body as encoding/json's RawMessage holds it (null included),
// still pointing into the line: version copies what it keeps.
func rawSpan(v gjson.Result) json.RawMessage {
	if v.Raw == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(v.Raw), len(v.Raw))
}

func (d *fastDecoder) user(v gjson.Result, u *userInfo) {
	d.fields(v, userKeys, func(bit int, v gjson.Result) {
		switch bit {
		case 0:
			d.str(v, &u.Username)
		case 1:
			d.str(v, &u.UID)
		case 2:
			u.Groups = d.strings(v)
		case 3:
			d.extra(v, u)
		}
	})
}

// podNameKey is the one key of user.extra a record keeps (podOf).
const podNameKey = "authentication.kubernetes.io/pod-name"

// extra checks user.extra (an object of string lists) and keeps only the
// pod name list (in podName, Extra staying nil), where encoding/json would
// build the whole map.
func (d *fastDecoder) extra(v gjson.Result, u *userInfo) {
	switch {
	case v.Type == gjson.Null:
		return
	case v.Type != gjson.JSON || v.Raw[0] != '{':
		d.ok = false
		return
	}
	v.ForEach(func(key, v gjson.Result) bool {
		if strings.IndexByte(key.Raw, '\\') >= 0 {
			d.ok = false
			return false
		}
		if key.Str == podNameKey {
			u.podName = d.strings(v) // a repeated key: the last wins, as in a map
		} else {
			d.checkStrings(v)
		}
		return d.ok
	})
}

func (d *fastDecoder) objectRef(v gjson.Result, ref *objectRef) {
	fields := [...]*string{&ref.Resource, &ref.Namespace, &ref.Name, &ref.UID, &ref.APIGroup,
		&ref.APIVersion, &ref.ResourceVersion, &ref.Subresource}
	d.fields(v, refKeys, func(bit int, v gjson.Result) { d.str(v, fields[bit]) })
}

// fields walks the JSON object v, whose keys are among keys: set hears
// each key's index and value. A v that is not an object, or a key seen
// twice, makes the line decline (d.ok false); a key not among keys is
// unknown's to judge.
func (d *fastDecoder) fields(v gjson.Result, keys []string, set func(i int, v gjson.Result)) {
	if v.Type != gjson.JSON || v.Raw[0] != '{' {
		d.ok = false
		return
	}
	var mask uint64
	v.ForEach(func(key, v gjson.Result) bool {
		i := keyIndex(key, keys)
		if i < 0 {
			d.unknown(key, keys)
			return d.ok
		}
		d.seen(&mask, uint(i))
		set(i, v)
		return d.ok
	})
}

func (d *fastDecoder) status(v gjson.Result, st *status) {
	d.fields(v, statusKeys, func(bit int, v gjson.Result) {
		switch bit {
		case 0:
			switch v.Type {
			case gjson.Null:
			case gjson.Number:
				// encoding/json takes an int only in plain integer form.
				n, err := strconv.ParseInt(v.Raw, 10, strconv.IntSize)
				if err != nil {
					d.ok = false
				}
				st.Code = int(n)
			default:
				d.ok = false
			}
		case 1:
			d.str(v, &st.Status)
		case 2:
			d.str(v, &st.Message)
		case 3:
			d.str(v, &st.Reason)
		}
	})
}

// annotations keeps the annotations as sorted pairs, the order the extra
// JSON writes them in, without building a map.
func (d *fastDecoder) annotations(v gjson.Result, ev *event) {
	switch {
	case v.Type == gjson.Null:
		return
	case v.Type != gjson.JSON || v.Raw[0] != '{':
		d.ok = false
		return
	}
	kvs := []keyValue{}
	v.ForEach(func(key, v gjson.Result) bool {
		var kv keyValue
		kv.key = d.string(key)
		d.str(v, &kv.value)
		kvs = append(kvs, kv)
		return d.ok
	})
	slices.SortFunc(kvs, func(a, b keyValue) int { return strings.Compare(a.key, b.key) })
	for i := 1; i < len(kvs); i++ {
		if kvs[i].key == kvs[i-1].key {
			d.ok = false // a repeated key: the map keeps the last
		}
	}
	ev.annots = kvs
}

// keyValue is one annotation.
type keyValue struct{ key, value string }

// strings reads a list of strings (null items are empty strings, as
// encoding/json leaves them).
func (d *fastDecoder) strings(v gjson.Result) []string {
	switch {
	case v.Type == gjson.Null:
		return nil
	case v.Type != gjson.JSON || v.Raw[0] != '[':
		d.ok = false
		return nil
	}
	out := make([]string, 0, 4)
	v.ForEach(func(_, v gjson.Result) bool {
		var s string
		d.str(v, &s)
		out = append(out, s)
		return d.ok
	})
	return out
}

// checkStrings checks a list of strings that is not kept.
func (d *fastDecoder) checkStrings(v gjson.Result) {
	switch {
	case v.Type == gjson.Null:
		return
	case v.Type != gjson.JSON || v.Raw[0] != '[':
		d.ok = false
		return
	}
	v.ForEach(func(_, v gjson.Result) bool {
		switch v.Type {
		case gjson.Null:
		case gjson.String: // valid, so encoding/json takes it too
		default:
			d.ok = false
		}
		return d.ok
	})
}

// str sets *dst to a string value; null leaves it as it is.
func (d *fastDecoder) str(v gjson.Result, dst *string) {
	switch v.Type {
	case gjson.Null:
	case gjson.String:
		*dst = d.string(v)
	default:
		d.ok = false
	}
}

// string is a JSON string's value, copied out of the line.
func (d *fastDecoder) string(v gjson.Result) string {
	s, fresh := d.text(v)
	if fresh {
		return s
	}
	return d.keep(s)
}

// text is a JSON string's value. Text without escapes is taken in place,
// pointing into the line, if it is valid UTF-8 (encoding/json leaves it as
// it is); ASCII text with short escapes is gjson's unescaped copy; the rest
// (invalid UTF-8, \u escapes, escapes beside non-ASCII text) is unquoted by
// encoding/json, for its exact handling of invalid UTF-8 and surrogates.
// fresh says the value is a copy already.
func (d *fastDecoder) text(v gjson.Result) (s string, fresh bool) {
	raw := v.Raw
	body := raw[1 : len(raw)-1]
	if strings.IndexByte(body, '\\') < 0 {
		if utf8.ValidString(body) {
			return body, false
		}
		return d.unquote(raw), true
	}
	for i := 0; i < len(body); i++ {
		if c := body[i]; c >= utf8.RuneSelf || c == '\\' && body[i+1] == 'u' {
			return d.unquote(raw), true
		} else if c == '\\' {
			i++
		}
	}
	return v.Str, true // gjson unescaped it into a new string
}

func (d *fastDecoder) unquote(raw string) string {
	var s string
	if json.Unmarshal([]byte(raw), &s) != nil {
		d.ok = false
	}
	return s
}

// intern is the shared copy of a value that repeats on most lines, or ""
// for any other.
func intern(s string) string {
	switch s {
	case "Event":
		return "Event"
	case "audit.k8s.io/v1":
		return "audit.k8s.io/v1"
	case "Metadata":
		return "Metadata"
	case "Request":
		return "Request"
	case "RequestResponse":
		return "RequestResponse"
	case "RequestReceived":
		return "RequestReceived"
	case "ResponseStarted":
		return "ResponseStarted"
	case "ResponseComplete":
		return "ResponseComplete"
	case "get":
		return "get"
	case "list":
		return "list"
	case "watch":
		return "watch"
	case "create":
		return "create"
	case "update":
		return "update"
	case "patch":
		return "patch"
	case "delete":
		return "delete"
	case "v1":
		return "v1"
	case "Success":
		return "Success"
	case "Failure":
		return "Failure"
	}
	return ""
}
