package audit

// The oracle: the decoder and record mapping as they were before the fast
// path (issue 17), on encoding/json throughout, kept to check the fast path
// against (TestDecodeSame, FuzzDecodeSame, BenchmarkDecodeStdlib). Only
// names changed; the shared helpers (prefix, jsonError, gke, version...) are
// the package's own.

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

// oldDecode is decode as it was.
func oldDecode(line []byte) ([]event, error) {
	return oldDecodeDepth(line, 0)
}

func oldDecodeDepth(line []byte, depth int) ([]event, error) {
	if depth > maxDepth {
		return nil, &FieldError{"line", "envelopes nested too deep"}
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, &FieldError{"line", "empty"}
	}
	if i := bytes.IndexByte(line, 0); i >= 0 {
		return nil, &FieldError{"line", fmt.Sprintf("binary data (NUL byte at offset %d)", i)}
	}
	if line[0] != '{' {
		// CloudWatch exports to S3 prefix each event with its timestamp.
		if ts, rest, ok := bytes.Cut(line, []byte(" {")); ok && looksLikeTime(ts) {
			return oldDecodeDepth(append([]byte("{"), rest...), depth+1)
		}
		return nil, &FieldError{"line", fmt.Sprintf("not a JSON object (starts with %q)", firstRune(line))}
	}
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil {
		return nil, jsonError(err)
	}
	if len(env.Timestamp) > 0 && env.Timestamp[0] == '"' {
		if err := json.Unmarshal(env.Timestamp, &env.event.Timestamp); err != nil {
			return nil, &FieldError{"timestamp", err.Error()}
		}
	}
	switch {
	case env.ProtoPayload != nil:
		ev, err := env.gke()
		if err != nil {
			return nil, err
		}
		return []event{ev}, nil
	case env.Properties != nil && len(env.Properties.Log) > 0:
		return oldNested(env.Properties.Log, "properties.log", FormatAKS, env.Time, depth)
	case env.Kind == "EventList" || env.Items != nil:
		var out []event
		for i, it := range env.Items {
			evs, err := oldDecodeDepth(it, depth+1)
			if err != nil {
				return nil, prefix(fmt.Sprintf("items[%d]", i), err)
			}
			for j := range evs {
				evs[j].format = FormatEventList
			}
			out = append(out, evs...)
		}
		return out, nil
	case env.LogEvents != nil || env.Events != nil:
		var out []event
		field, list := "logEvents", env.LogEvents
		if env.Events != nil {
			field, list = "events", env.Events
		}
		for i, m := range list {
			evs, err := oldDecodeDepth([]byte(m.Message), depth+1)
			if err != nil {
				return nil, prefix(fmt.Sprintf("%s[%d].message", field, i), err)
			}
			for j := range evs {
				evs[j].format = FormatCloudWatch
			}
			out = append(out, evs...)
		}
		return out, nil
	case len(env.Message) > 0 && env.Kind == "":
		return oldNested(env.Message, "message", FormatCloudWatch, "", depth)
	}
	ev := env.event
	if ev.Kind != "Event" && ev.Kind != "" {
		return nil, &FieldError{"kind", fmt.Sprintf("%q is not an audit Event", ev.Kind)}
	}
	if ev.Kind == "" && ev.AuditID == "" && ev.Verb == "" {
		return nil, &FieldError{"kind", "missing: not an audit event or a known envelope"}
	}
	ev.format = FormatEvent
	return []event{ev}, nil
}

// nested decodes an event held by an envelope field, as an object or as a
// JSON string.
func oldNested(raw json.RawMessage, field string, f Format, envTime string, depth int) ([]event, error) {
	b := []byte(raw)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, prefix(field, jsonError(err))
		}
		b = []byte(s)
	}
	evs, err := oldDecodeDepth(b, depth+1)
	if err != nil {
		return nil, prefix(field, err)
	}
	for i := range evs {
		evs[i].format, evs[i].envTime = f, envTime
	}
	return evs, nil
}

// parseTime reads an audit timestamp (RFC 3339, any precision).
func oldParseTime(field, s string) (time.Time, error) {
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
func oldToRecord(ev *event, raw []byte) (*timeline.Record, []*timeline.ObjectVersion, error) {
	var (
		received, staged time.Time
		err              error
	)
	switch {
	case ev.RequestReceivedTimestamp != "":
		if received, err = oldParseTime("requestReceivedTimestamp", ev.RequestReceivedTimestamp); err != nil {
			return nil, nil, err
		}
	case ev.Timestamp != "":
		if received, err = oldParseTime("timestamp", ev.Timestamp); err != nil {
			return nil, nil, err
		}
	case ev.StageTimestamp != "":
	case ev.envTime != "":
		if received, err = oldParseTime("time", ev.envTime); err != nil {
			return nil, nil, err
		}
	default:
		return nil, nil, &FieldError{"requestReceivedTimestamp", "missing, and no other timestamp on the line"}
	}
	if ev.StageTimestamp != "" {
		if staged, err = oldParseTime("stageTimestamp", ev.StageTimestamp); err != nil {
			return nil, nil, err
		}
		if received.IsZero() {
			received = staged
		}
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
	x := extra{Annotations: ev.Annotations, Groups: ev.User.Groups, GRPCCode: ev.grpc, Pod: podOf(ev.User)}
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
		r.Code = st.Code
		r.Message = truncate(st.Message, maxMessage)
		x.StatusReason = st.Reason
	}
	if r.Extra, err = json.Marshal(x); err != nil {
		return nil, nil, &FieldError{"annotations", err.Error()}
	}
	if string(r.Extra) == "{}" {
		r.Extra = nil
	}
	versions := oldObjectVersions(ev, staged, received)
	if len(versions) > 0 && r.Object.Kind == "" {
		r.Object.Kind = versions[0].Object.Kind
	}
	return r, versions, nil
}

// objectVersions returns the versions an event's bodies show: the response
// object of a successful request (each item of a list), or else the request
// object of a create or update. Patches, subresources other than status, and
// Status replies are not objects. Contents are redacted by the store.
func oldObjectVersions(ev *event, staged, received time.Time) []*timeline.ObjectVersion {
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
		vs = oldVersionsOf(ev.ResponseObject, ref, at)
	}
	if vs == nil && len(ev.RequestObject) > 0 && ok && (ev.Verb == "create" || ev.Verb == "update") {
		vs = oldVersionsOf(ev.RequestObject, ref, at)
	}
	for _, v := range vs {
		v.Seen = seen
	}
	return vs
}

func oldVersionsOf(raw json.RawMessage, ref *objectRef, at time.Time) []*timeline.ObjectVersion {
	var h objHeader
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || json.Unmarshal(raw, &h) != nil {
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
			if json.Unmarshal(it, &ih) != nil || ih.Metadata.Name == "" {
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
