package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/timeline"
)

// maxMessage bounds the status message kept on a record.
const maxMessage = 1024

// extra is what a record keeps of an audit event beyond its columns.
type extra struct {
	Format           Format            `json:"format,omitempty"`
	Annotations      map[string]string `json:"annotations,omitempty"`
	Groups           []string          `json:"groups,omitempty"`
	ImpersonatedUser string            `json:"impersonatedUser,omitempty"`
	SourceIPs        []string          `json:"sourceIPs,omitempty"`
	ResourceVersion  string            `json:"resourceVersion,omitempty"`
	StatusReason     string            `json:"statusReason,omitempty"`
	GRPCCode         *int              `json:"grpcCode,omitempty"`
	// Pod is "namespace/name" of the pod whose bound ServiceAccount token
	// made the request (user.extra authentication.kubernetes.io/pod-name).
	Pod string `json:"pod,omitempty"`

	annots []keyValue // the fast path's Annotations, sorted by key
}

// podOf is "namespace/name" of the pod a bound ServiceAccount token
// belongs to, from the user's extra and the ServiceAccount's namespace.
func podOf(u userInfo) string {
	names := u.Extra[podNameKey]
	if u.Extra == nil {
		names = u.podName
	}
	rest, ok := strings.CutPrefix(u.Username, "system:serviceaccount:")
	ns, _, _ := strings.Cut(rest, ":")
	if len(names) != 1 || !ok || ns == "" || names[0] == "" {
		return ""
	}
	return ns + "/" + names[0]
}

// parseTime reads an audit timestamp (RFC 3339, any precision).
func parseTime(field, s string) (time.Time, error) {
	t, ok := parseUTC(s)
	if ok {
		if err := timeline.CheckTime(t); err != nil {
			return time.Time{}, &FieldError{field, err.Error()}
		}
		return t, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		var pe *time.ParseError
		if errors.As(err, &pe) && pe.Message != "" {
			return time.Time{}, &FieldError{field, fmt.Sprintf("parsing %q%s", s, pe.Message)}
		}
		return time.Time{}, &FieldError{field, fmt.Sprintf("parsing %q: want RFC 3339 (2026-05-01T10:00:00.123456Z)", s)}
	}
	if err := timeline.CheckTime(t); err != nil { // the store would refuse the whole batch
		return time.Time{}, &FieldError{field, err.Error()}
	}
	return t.UTC(), nil
}

// toRecord maps an event onto a timeline record and the object versions its
// request and response bodies show. raw is the line, for events that have no
// audit ID to key on.
func toRecord(ev *event, raw []byte) (*timeline.Record, []*timeline.ObjectVersion, error) {
	received, staged, err := eventTimes(ev)
	if err != nil {
		return nil, nil, err
	}
	stage := timeline.ParseStage(ev.Stage)
	if stage == 0 {
		if ev.Stage != "" {
			return nil, nil, &FieldError{"stage", fmt.Sprintf("unknown stage %q", ev.Stage)}
		}
		stage = timeline.StageResponseComplete
	}
	r := &timeline.Record{
		Time:      received,
		Source:    timeline.SourceAudit,
		Verb:      ev.Verb,
		User:      ev.User.Username,
		UserAgent: ev.UserAgent,
		Level:     ev.Level,
		Stages:    stage,
		AuditID:   ev.AuditID,
		URI:       ev.RequestURI,
	}
	if ev.AuditID != "" {
		r.Key = "audit\x00" + ev.AuditID + "\x00" + strconv.FormatInt(received.UnixNano(), 10)
	} else {
		sum := sha256.Sum256(raw)
		r.Key = "audit-line\x00" + hex.EncodeToString(sum[:16])
		r.Stages = 0 // no way to join stages: identical lines are duplicates
	}
	if !staged.IsZero() && staged.After(received) {
		r.Latency = staged.Sub(received)
	}
	if len(ev.SourceIPs) > 0 {
		r.SourceIP = ev.SourceIPs[0]
	}
	if ref := ev.ObjectRef; ref != nil {
		r.Object = timeline.ObjectRef{Group: ref.APIGroup, Version: ref.APIVersion, Resource: ref.Resource,
			Subresource: ref.Subresource, Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID}
	}
	if st := ev.ResponseStatus; st != nil {
		r.Code = st.Code
		r.Message = truncate(st.Message, maxMessage)
	}
	r.Extra = extraOf(ev)
	versions := objectVersions(ev, staged, received)
	if len(versions) > 0 && r.Object.Kind == "" {
		r.Object.Kind = versions[0].Object.Kind
	}
	return r, versions, nil
}

// eventTimes returns when the request was received (from the first of
// requestReceivedTimestamp, timestamp, stageTimestamp and the envelope's
// time the line has) and when its stage was (zero without stageTimestamp).
func eventTimes(ev *event) (received, staged time.Time, err error) {
	switch {
	case ev.RequestReceivedTimestamp != "":
		if received, err = parseTime("requestReceivedTimestamp", ev.RequestReceivedTimestamp); err != nil {
			return received, staged, err
		}
	case ev.Timestamp != "":
		if received, err = parseTime("timestamp", ev.Timestamp); err != nil {
			return received, staged, err
		}
	case ev.StageTimestamp != "":
	case ev.envTime != "":
		if received, err = parseTime("time", ev.envTime); err != nil {
			return received, staged, err
		}
	default:
		return received, staged, &FieldError{"requestReceivedTimestamp", "missing, and no other timestamp on the line"}
	}
	if ev.StageTimestamp != "" {
		if staged, err = parseTime("stageTimestamp", ev.StageTimestamp); err != nil {
			return received, staged, err
		}
		if received.IsZero() {
			received = staged
		}
	}
	return received, staged, nil
}

// extraOf is the record's Extra: what of the event has no column, as
// JSON; nil for nothing.
func extraOf(ev *event) []byte {
	x := extra{Annotations: ev.Annotations, annots: ev.annots, Groups: ev.User.Groups, GRPCCode: ev.grpc, Pod: podOf(ev.User)}
	if ev.format != FormatEvent {
		x.Format = ev.format
	}
	if ev.ImpersonatedUser != nil {
		x.ImpersonatedUser = ev.ImpersonatedUser.Username
	}
	if len(ev.SourceIPs) > 1 {
		x.SourceIPs = ev.SourceIPs
	}
	if ev.ObjectRef != nil {
		x.ResourceVersion = ev.ObjectRef.ResourceVersion
	}
	if st := ev.ResponseStatus; st != nil {
		x.StatusReason = st.Reason
	}
	var buf [1024]byte
	if b := x.appendJSON(buf[:0]); len(b) > 0 {
		return bytes.Clone(b)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && (s[cut]&0xC0) == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return s[:cut] + "…"
}

// objHeader is the part of an object needed to place it as a version.
type objHeader struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name            string `json:"name"`
		Namespace       string `json:"namespace"`
		UID             string `json:"uid"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// objectVersions returns the versions an event's bodies show: the response
// object of a successful request (each item of a list), or else the request
// object of a create or update. Patches, subresources other than status, and
// Status replies are not objects. Contents are redacted by the store.
func objectVersions(ev *event, staged, received time.Time) []*timeline.ObjectVersion {
	if ev.Level != "Request" && ev.Level != "RequestResponse" {
		return nil
	}
	ref := ev.ObjectRef
	if ref == nil || (ref.Subresource != "" && ref.Subresource != "status") {
		return nil
	}
	at := staged
	if at.IsZero() {
		at = received
	}
	ok := ev.ResponseStatus == nil || ev.ResponseStatus.Code < 300
	// A write's reply is the version it made, at its time; any other reply
	// (get, list, watch, delete) shows a version that existed by then.
	seen := timeline.SeenRead
	if ev.Verb == "create" || ev.Verb == "update" || ev.Verb == "patch" {
		seen = timeline.SeenWritten
	}
	var vs []*timeline.ObjectVersion
	if len(ev.ResponseObject) > 0 && ok {
		vs = versionsOf(ev.ResponseObject, ref, at)
	}
	if vs == nil && len(ev.RequestObject) > 0 && ok && (ev.Verb == "create" || ev.Verb == "update") {
		vs = versionsOf(ev.RequestObject, ref, at)
	}
	for _, v := range vs {
		v.Seen = seen
	}
	return vs
}

func versionsOf(raw json.RawMessage, ref *objectRef, at time.Time) []*timeline.ObjectVersion {
	var h objHeader
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || decodeHeader(raw, &h) != nil {
		return nil
	}
	if h.Kind == "Status" || h.Kind == "" && h.Metadata.Name == "" {
		return nil
	}
	if strings.HasSuffix(h.Kind, "List") && h.Items != nil {
		kind := strings.TrimSuffix(h.Kind, "List")
		var out []*timeline.ObjectVersion
		for _, it := range h.Items {
			var ih objHeader
			if decodeHeader(it, &ih) != nil || ih.Metadata.Name == "" {
				continue
			}
			if ih.Kind == "" {
				ih.Kind, ih.APIVersion = kind, h.APIVersion
				it = withKind(it, ih.APIVersion, kind)
			}
			out = append(out, version(it, &ih, ref, at))
		}
		return out
	}
	if h.Metadata.Name == "" {
		return nil
	}
	return []*timeline.ObjectVersion{version(raw, &h, ref, at)}
}

// withKind adds apiVersion and kind to a list item, which the apiserver
// leaves out, so a stored version says what it is (and is redacted as such).
func withKind(item json.RawMessage, apiVersion, kind string) json.RawMessage {
	head, _ := json.Marshal(map[string]string{"apiVersion": apiVersion, "kind": kind})
	b := bytes.TrimSpace(item)
	if len(b) < 2 {
		return item
	}
	out := append(head[:len(head)-1:len(head)-1], ',')
	if rest := bytes.TrimSpace(b[1:]); len(rest) > 0 && rest[0] == '}' {
		out = out[:len(out)-1]
	}
	return append(out, b[1:]...)
}

func version(raw json.RawMessage, h *objHeader, ref *objectRef, at time.Time) *timeline.ObjectVersion {
	group, version := "", h.APIVersion
	if g, v, ok := strings.Cut(h.APIVersion, "/"); ok {
		group, version = g, v
	}
	ns := h.Metadata.Namespace
	if ns == "" {
		ns = ref.Namespace
	}
	return &timeline.ObjectVersion{
		Object: timeline.ObjectRef{Group: group, Version: version, Resource: ref.Resource, Kind: h.Kind,
			Namespace: ns, Name: h.Metadata.Name, UID: h.Metadata.UID},
		ResourceVersion: h.Metadata.ResourceVersion,
		Time:            at,
		Content:         bytes.Clone(raw), // raw may point into the line
	}
}
