package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Format names the envelope an audit event arrived in.
type Format string

// Envelopes faultline reads.
const (
	FormatEvent      Format = "event"      // audit.k8s.io Event, one per line (--audit-log-format=json)
	FormatEventList  Format = "eventlist"  // audit.k8s.io EventList (webhook batch)
	FormatAKS        Format = "aks"        // Azure diagnostic log: properties.log, object or string
	FormatGKE        Format = "gke"        // Cloud Logging export: protoPayload
	FormatCloudWatch Format = "cloudwatch" // EKS CloudWatch export: the event in a message string
)

// event is an audit.k8s.io/v1 Event: the fields faultline uses. Objects stay
// raw and are decoded only at levels that carry them.
type event struct {
	Kind                     string            `json:"kind"`
	APIVersion               string            `json:"apiVersion"`
	Level                    string            `json:"level"`
	AuditID                  string            `json:"auditID"`
	Stage                    string            `json:"stage"`
	RequestURI               string            `json:"requestURI"`
	Verb                     string            `json:"verb"`
	User                     userInfo          `json:"user"`
	ImpersonatedUser         *userInfo         `json:"impersonatedUser,omitempty"`
	SourceIPs                []string          `json:"sourceIPs"`
	UserAgent                string            `json:"userAgent"`
	ObjectRef                *objectRef        `json:"objectRef"`
	ResponseStatus           *status           `json:"responseStatus"`
	RequestObject            json.RawMessage   `json:"requestObject"`
	ResponseObject           json.RawMessage   `json:"responseObject"`
	RequestReceivedTimestamp string            `json:"requestReceivedTimestamp"`
	StageTimestamp           string            `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations"`
	Timestamp                string            `json:"timestamp"` // audit.k8s.io/v1beta1, and envelopes

	format  Format
	envTime string // the envelope's own time, a last resort
	grpc    *int   // GKE: the gRPC status code the HTTP code was derived from
	// annots are the annotations sorted by key, as the fast path reads
	// them instead of Annotations (which stays nil).
	annots []keyValue
}

type userInfo struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`

	podName []string // the fast path's Extra[podNameKey], Extra staying nil
}

type objectRef struct {
	Resource        string `json:"resource"`
	Namespace       string `json:"namespace"`
	Name            string `json:"name"`
	UID             string `json:"uid"`
	APIGroup        string `json:"apiGroup"`
	APIVersion      string `json:"apiVersion"`
	ResourceVersion string `json:"resourceVersion"`
	Subresource     string `json:"subresource"`
}

type status struct {
	Code    int    `json:"code"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Reason  string `json:"reason"`
}

// envelope is the union of every wrapper's top-level fields, so one decode
// tells which format a line is in.
type envelope struct {
	event
	Items        []json.RawMessage `json:"items"`        // EventList
	Properties   *aksProperties    `json:"properties"`   // AKS
	Time         string            `json:"time"`         // AKS
	ProtoPayload *gkePayload       `json:"protoPayload"` // GKE
	InsertID     string            `json:"insertId"`     // GKE
	Labels       map[string]string `json:"labels"`       // GKE
	Operation    *struct {
		ID string `json:"id"`
	} `json:"operation"` // GKE
	// Timestamp shadows the event's: a string in GKE exports and legacy
	// events, epoch milliseconds in CloudWatch ones.
	Timestamp json.RawMessage `json:"timestamp"`
	Message   json.RawMessage `json:"message"`   // CloudWatch: the event as a string
	LogEvents []cwEvent       `json:"logEvents"` // CloudWatch subscription batch
	Events    []cwEvent       `json:"events"`    // CloudWatch filter-log-events output
}

type aksProperties struct {
	Log json.RawMessage `json:"log"`
}

type cwEvent struct {
	Message string `json:"message"`
}

type gkePayload struct {
	Type               string `json:"@type"`
	AuthenticationInfo struct {
		PrincipalEmail string `json:"principalEmail"`
	} `json:"authenticationInfo"`
	MethodName      string `json:"methodName"`
	ResourceName    string `json:"resourceName"`
	ServiceName     string `json:"serviceName"`
	RequestMetadata struct {
		CallerIP                string `json:"callerIp"`
		CallerSuppliedUserAgent string `json:"callerSuppliedUserAgent"`
	} `json:"requestMetadata"`
	Status *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"status"`
}

// FieldError is a problem with one field of one line.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

// maxDepth bounds envelopes inside envelopes (a string holding a line).
const maxDepth = 4

// decode parses one line into the audit events it holds.
func decode(line []byte) ([]event, error) {
	return decodeDepth(line, 0, fastThenStd)
}

// mode says which decoders decodeDepth may use.
type mode int8

const (
	fastThenStd mode = iota // the fast path, and decodeStd if it declines
	fastOnly                // inside the fast path: a decline goes up whole
	stdOnly                 // inside decodeStd: the old decoder all the way
)

// errDeclined is a nested line the fast path declined: the outer line is
// decoded again by decodeStd, which names any problem.
var errDeclined = &FieldError{"line", "declined by the fast path"}

func decodeDepth(line []byte, depth int, m mode) ([]event, error) {
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
			return decodeDepth(append([]byte("{"), rest...), depth+1, m)
		}
		return nil, &FieldError{"line", fmt.Sprintf("not a JSON object (starts with %q)", firstRune(line))}
	}
	if m != stdOnly {
		if evs, ok := fastDecode(line, depth); ok {
			return evs, nil
		}
		if m == fastOnly {
			return nil, errDeclined
		}
	}
	return decodeStd(line, depth)
}

// decodeStd decodes a line, trimmed and starting with '{', with
// encoding/json into the union of every envelope, and the lines nested in
// it likewise. It is the reference the fast path must match, and the path
// of every line the fast path declines: GKE exports and bad lines, whose
// errors it names.
func decodeStd(line []byte, depth int) ([]event, error) {
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
		return nested(env.Properties.Log, "properties.log", FormatAKS, env.Time, depth, stdOnly)
	case env.Kind == "EventList" || env.Items != nil:
		var out []event
		for i, it := range env.Items {
			evs, err := decodeDepth(it, depth+1, stdOnly)
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
			evs, err := decodeDepth([]byte(m.Message), depth+1, stdOnly)
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
		return nested(env.Message, "message", FormatCloudWatch, "", depth, stdOnly)
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
func nested(raw json.RawMessage, field string, f Format, envTime string, depth int, m mode) ([]event, error) {
	b := []byte(raw)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, prefix(field, jsonError(err))
		}
		b = []byte(s)
	}
	evs, err := decodeDepth(b, depth+1, m)
	if err != nil {
		return nil, prefix(field, err)
	}
	for i := range evs {
		evs[i].format, evs[i].envTime = f, envTime
	}
	return evs, nil
}

func prefix(field string, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		switch fe.Field {
		case "line":
			return &FieldError{field, fe.Problem}
		case "json":
			return &FieldError{field, "json: " + fe.Problem}
		}
		return &FieldError{field + "." + fe.Field, fe.Problem}
	}
	return &FieldError{field, err.Error()}
}

// jsonError turns encoding/json's errors into field errors.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := strings.TrimPrefix(te.Field, "event.")
		if field == "" {
			field = "line"
		}
		return &FieldError{field, fmt.Sprintf("want %s, got JSON %s", goTypeName(te.Type.String()), te.Value)}
	case errors.As(err, &se) && strings.Contains(se.Error(), "unexpected end"):
		return &FieldError{"json", fmt.Sprintf("truncated: input ends at byte %d inside a value", se.Offset)}
	case errors.As(err, &se):
		return &FieldError{"json", fmt.Sprintf("%s (byte %d)", se.Error(), se.Offset)}
	}
	return &FieldError{"json", err.Error()}
}

func goTypeName(t string) string {
	switch {
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"), strings.HasPrefix(t, "float"):
		return "a number"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case strings.HasPrefix(t, "map["), strings.Contains(t, "."):
		return "an object"
	case t == "bool":
		return "a boolean"
	}
	return t
}

func looksLikeTime(b []byte) bool {
	if len(b) < 10 || len(b) > 40 {
		return false
	}
	_, err := time.Parse(time.RFC3339Nano, string(b))
	return err == nil
}

func firstRune(b []byte) string {
	s := string(b)
	for _, r := range s {
		return string(r)
	}
	return ""
}

// gke maps a Cloud Logging AuditLog entry onto an audit event.
func (env *envelope) gke() (event, error) {
	p := env.ProtoPayload
	if p.MethodName == "" {
		return event{}, &FieldError{"protoPayload.methodName", "missing"}
	}
	ev := event{
		Kind:      "Event",
		Level:     "Metadata",
		Stage:     "ResponseComplete",
		UserAgent: p.RequestMetadata.CallerSuppliedUserAgent,
		User:      userInfo{Username: p.AuthenticationInfo.PrincipalEmail},
		Timestamp: env.event.Timestamp,
		format:    FormatGKE,
	}
	ev.Annotations = env.Labels
	ev.AuditID = env.InsertID
	if env.Operation != nil && env.Operation.ID != "" {
		ev.AuditID = env.Operation.ID
	}
	if p.RequestMetadata.CallerIP != "" {
		ev.SourceIPs = []string{p.RequestMetadata.CallerIP}
	}
	ev.Verb = p.MethodName[strings.LastIndexByte(p.MethodName, '.')+1:]
	ref, uri := gkeResource(p.ResourceName)
	ev.ObjectRef, ev.RequestURI = ref, uri
	if p.Status != nil {
		c := p.Status.Code
		ev.grpc = &c
		ev.ResponseStatus = &status{Code: httpFromGRPC(c), Message: p.Status.Message}
	} else {
		ev.ResponseStatus = &status{Code: 200}
	}
	return ev, nil
}

// gkeResource parses a Cloud Logging resourceName such as
// "core/v1/namespaces/default/pods/p/status" or "apps/v1/deployments"; a
// name that is not a resource path ("readyz") is a non-resource URL.
func gkeResource(name string) (*objectRef, string) {
	parts := strings.Split(strings.Trim(name, "/"), "/")
	if len(parts) < 3 || !isAPIVersion(parts[1]) {
		return nil, "/" + strings.Trim(name, "/")
	}
	ref := &objectRef{APIGroup: parts[0], APIVersion: parts[1]}
	if ref.APIGroup == "core" {
		ref.APIGroup = ""
	}
	rest := parts[2:]
	if rest[0] == "namespaces" && len(rest) >= 3 {
		ref.Namespace, rest = rest[1], rest[2:]
	}
	if rest[0] == "" {
		return nil, "/" + strings.Trim(name, "/")
	}
	ref.Resource = rest[0]
	if len(rest) > 1 {
		ref.Name = rest[1]
	}
	if len(rest) > 2 {
		ref.Subresource = strings.Join(rest[2:], "/")
	}
	if ref.Resource == "namespaces" && ref.Name != "" {
		ref.Namespace = ref.Name
	}
	prefix := "/apis/" + ref.APIGroup + "/" + ref.APIVersion
	if ref.APIGroup == "" {
		prefix = "/api/" + ref.APIVersion
	}
	return ref, prefix + "/" + strings.Join(parts[2:], "/")
}

func isAPIVersion(s string) bool {
	if len(s) < 2 || s[0] != 'v' || s[1] < '0' || s[1] > '9' {
		return false
	}
	return true
}

// httpFromGRPC maps a google.rpc.Code to the HTTP status the apiserver
// answered with (the mapping Google documents for its HTTP APIs).
func httpFromGRPC(c int) int {
	switch c {
	case 0:
		return 200
	case 1:
		return 499
	case 3, 9, 11:
		return 400
	case 4:
		return 504
	case 5:
		return 404
	case 6, 10:
		return 409
	case 7:
		return 403
	case 8:
		return 429
	case 12:
		return 501
	case 14:
		return 503
	case 16:
		return 401
	}
	return 500
}
