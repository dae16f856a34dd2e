package timeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
	"github.com/tidwall/gjson"

	"github.com/faultline/faultline/timeline/internal/extrajson"
)

// Field describes one variable a filter expression can use.
type Field struct {
	Name string
	Type *cel.Type
	Doc  string
}

// Fields lists the variables of a record filter, in documentation order.
// "namespace" is a reserved word in CEL, so the namespace is "ns".
var Fields = []Field{
	{"time", cel.TimestampType, "when it happened (audit: request received)"},
	{"source", cel.StringType, `evidence kind: "audit", "event", ...`},
	{"group", cel.StringType, `API group ("" for core)`},
	{"version", cel.StringType, "API version"},
	{"resource", cel.StringType, `resource, plural ("pods")`},
	{"subresource", cel.StringType, `subresource ("status", "binding", "log")`},
	{"kind", cel.StringType, "object kind, where known"},
	{"ns", cel.StringType, "namespace"},
	{"name", cel.StringType, "object name"},
	{"uid", cel.StringType, "object uid"},
	{"verb", cel.StringType, `API verb ("get", "list", "watch", "create", ...)`},
	{"reason", cel.StringType, `event reason ("BackOff", "FailedScheduling", ...)`},
	{"user", cel.StringType, "authenticated user name"},
	{"userAgent", cel.StringType, "client user agent"},
	{"sourceIP", cel.StringType, "first source IP"},
	{"code", cel.IntType, "HTTP status code (0 if none)"},
	{"type", cel.StringType, `event type ("Normal", "Warning")`},
	{"level", cel.StringType, `audit level ("Metadata", "Request", ...)`},
	{"stage", cel.StringType, "latest audit stage joined into the record"},
	{"latency", cel.DurationType, "request latency (stage timestamp - received)"},
	{"auditID", cel.StringType, "audit ID"},
	{"requestURI", cel.StringType, "request URI with query"},
	{"message", cel.StringType, "event message or status message"},
	{"annotations", cel.MapType(cel.StringType, cel.StringType), "audit annotations"},
	{"run", cel.IntType, "ingest run id"},
	{"line", cel.IntType, "line in the ingested source"},
	{"bad", cel.BoolType, "bad by the outcome classifier (docs/investigate.md#what-counts-as-bad)"},
}

var filterEnv = func() *cel.Env {
	opts := make([]cel.EnvOption, 0, len(Fields))
	for _, f := range Fields {
		opts = append(opts, cel.Variable(f.Name, f.Type))
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		panic(fmt.Sprintf("timeline: building CEL environment: %v", err)) // static declarations: a bug, not input
	}
	return env
}()

// Filter is a compiled, type-checked CEL expression over records.
type Filter struct {
	src  string
	ast  *cel.Ast
	prog cel.Program

	mu       sync.Mutex
	failures int64 // evaluations that failed at run time
	first    error // the first of them
}

// FilterRuntimeError reports the evaluations of a filter that failed at run
// time (1/0, a missing map key): each counted as no match. It is reported
// once, after the matching, so that a filter that silently matches nothing
// for a reason the user can fix says so.
type FilterRuntimeError struct {
	Filter string
	Count  int64 // records the filter failed on
	First  error
}

func (e *FilterRuntimeError) Error() string {
	return fmt.Sprintf("%s failed on %d record(s), which count as no match; the first error: %v", e.Filter, e.Count, e.First)
}

func (e *FilterRuntimeError) Unwrap() error { return e.First }

// RuntimeError returns a *FilterRuntimeError for the evaluations by Match
// that failed at run time so far, or nil.
func (f *Filter) RuntimeError() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failures == 0 {
		return nil
	}
	return &FilterRuntimeError{Filter: f.src, Count: f.failures, First: f.first}
}

// CompileFilter parses and type-checks a CEL boolean expression over the
// record fields (see Fields). The error is CEL's, with the column marked.
func CompileFilter(expr string) (*Filter, error) {
	checked, iss := filterEnv.Compile(expr)
	if iss != nil && iss.Err() != nil {
		msg := iss.Err().Error()
		if strings.Contains(msg, "reserved identifier: namespace") {
			msg += "\nhint: the namespace field is called ns (ns == \"default\")"
		}
		return nil, fmt.Errorf("invalid filter: %s", msg)
	}
	if !checked.OutputType().IsExactType(cel.BoolType) {
		return nil, fmt.Errorf("invalid filter %q: want a bool expression, got %s", expr, checked.OutputType())
	}
	prog, err := filterEnv.Program(checked, cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fmt.Errorf("invalid filter %q: %w", expr, err)
	}
	return &Filter{src: expr, ast: checked, prog: prog}, nil
}

// Uses reports whether the expression reads the record field name (as
// the checker resolved it, so a string "bad" is not the field bad).
func (f *Filter) Uses(name string) bool {
	for _, ref := range f.ast.NativeRep().ReferenceMap() {
		if strings.TrimPrefix(ref.Name, ".") == name {
			return true
		}
	}
	return false
}

// String returns the expression's source.
func (f *Filter) String() string { return f.src }

// Expr returns the checked expression tree, for compilers to other languages.
func (f *Filter) Expr() ast.Expr { return f.ast.NativeRep().Expr() }

// Match evaluates the filter on one record. A runtime error (no such key in
// annotations, say) counts as no match, is returned, and is counted for
// RuntimeError: callers that skip it still leave the user a report.
func (f *Filter) Match(r *Record) (bool, error) {
	out, _, err := f.prog.Eval(recordActivation{r})
	if err != nil {
		f.mu.Lock()
		if f.failures++; f.first == nil {
			f.first = err
		}
		f.mu.Unlock()
		return false, err
	}
	b, ok := out.Value().(bool)
	return ok && b, nil
}

// recordActivation resolves filter variables from a record lazily.
type recordActivation struct{ r *Record }

func (a recordActivation) ResolveName(name string) (any, bool) {
	r := a.r
	switch name {
	case "time":
		return r.Time, true
	case "source":
		return string(r.Source), true
	case "group":
		return r.Object.Group, true
	case "version":
		return r.Object.Version, true
	case "resource":
		return r.Object.Resource, true
	case "subresource":
		return r.Object.Subresource, true
	case "kind":
		return r.Object.Kind, true
	case "ns":
		return r.Object.Namespace, true
	case "name":
		return r.Object.Name, true
	case "uid":
		return r.Object.UID, true
	case "verb":
		return r.Verb, true
	case "reason":
		return r.Reason, true
	case "user":
		return r.User, true
	case "userAgent":
		return r.UserAgent, true
	case "sourceIP":
		return r.SourceIP, true
	case "code":
		return int64(r.Code), true
	case "type":
		return r.Type, true
	case "level":
		return r.Level, true
	case "stage":
		return r.Stage(), true
	case "latency":
		return r.Latency, true
	case "auditID":
		return r.AuditID, true
	case "requestURI":
		return r.URI, true
	case "message":
		return r.Message, true
	case "annotations":
		return r.Annotations(), true
	case "run":
		return r.Evidence.Run, true
	case "line":
		return r.Evidence.Line, true
	case "bad":
		return r.Bad, true
	}
	return nil, false
}

func (a recordActivation) Parent() interpreter.Activation { return nil }

// Annotations returns the audit annotations kept in Extra, or an empty map.
func (r *Record) Annotations() map[string]string {
	var x struct {
		Annotations map[string]string `json:"annotations"`
	}
	if len(r.Extra) > 0 {
		_ = json.Unmarshal(r.Extra, &x) // Extra is written by ingesters as JSON; a bad one reads as empty
	}
	if x.Annotations == nil {
		return map[string]string{}
	}
	return x.Annotations
}

// Pod is "namespace/name" of the pod whose bound ServiceAccount token made
// the request, as the apiserver recorded it; "" when unknown.
func (r *Record) Pod() string {
	if len(r.Extra) == 0 {
		return ""
	}
	if pod, ok := podFast(r.Extra); ok {
		return pod
	}
	return podStd(r.Extra)
}

// podStd is Pod by encoding/json: the last key that folds to "pod" and
// holds a string. Extra is written by ingesters as JSON; a bad one reads
// as empty.
func podStd(extra []byte) string {
	var x struct {
		Pod string `json:"pod"`
	}
	_ = json.Unmarshal(extra, &x)
	return x.Pod
}

// podFast is podStd without decoding the rest of extra (the annotations
// and groups of every refused request), for the forms where the two
// cannot differ: the last key that folds to "pod" holds a string of
// printable ASCII with no escapes (or no key does). ok is false when it
// cannot tell.
func podFast(extra []byte) (pod string, ok bool) {
	if !extrajson.Valid(extra) {
		return "", false
	}
	// The form the audit ingester writes: "pod" the top-level object's
	// last member. In valid JSON that begins with '{' and ends with
	// `,"pod":"V"}`, V holding no quote, the last string is V, its key is
	// "pod", and the final brace closes the top-level object.
	if rest, ok := bytes.CutSuffix(extra, []byte(`"}`)); ok && extra[0] == '{' {
		const key = `"pod":"`
		if i := bytes.LastIndex(rest, []byte(key)); i > 0 && (rest[i-1] == ',' || rest[i-1] == '{') {
			if v := rest[i+len(key):]; plainASCII(v) {
				return string(v), true
			}
		}
	}
	val, n, _, ok := extrajson.Last(extra, "pod")
	switch {
	case !ok || n > 0 && val.Type != gjson.String:
		return "", false
	case n == 0:
		return "", true
	}
	raw := val.Raw[1 : len(val.Raw)-1]
	if !plainASCII(raw) {
		return "", false
	}
	return strings.Clone(raw), true // val points into extra
}

// plainASCII reports whether the bytes of a JSON string's body are
// printable ASCII with no quote or escape: the string is those bytes.
func plainASCII[T string | []byte](b T) bool {
	for i := 0; i < len(b); i++ {
		if c := b[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// FirstSeen is when what the record reports was first seen: an Event
// that counts repeats (one object, its count going up) says when the
// first happened (firstTimestamp), while its record is stamped with the
// latest; any other record, its time.
func (r *Record) FirstSeen() time.Time {
	if r.Source != SourceEvent || len(r.Extra) == 0 {
		return r.Time
	}
	var x struct {
		FirstTimestamp time.Time `json:"firstTimestamp"`
	}
	if json.Unmarshal(r.Extra, &x) != nil || x.FirstTimestamp.IsZero() || !x.FirstTimestamp.Before(r.Time) {
		return r.Time // Extra is written by ingesters as JSON; a bad one says nothing
	}
	return x.FirstTimestamp
}

// Constant folds a call of timestamp() or duration() on a string literal, as
// a filter compiler needs: it returns the value and true, or false.
func Constant(e ast.Expr) (ref.Val, bool) {
	switch e.Kind() {
	case ast.LiteralKind:
		return e.AsLiteral(), true
	case ast.CallKind:
		c := e.AsCall()
		if len(c.Args()) != 1 || c.Args()[0].Kind() != ast.LiteralKind {
			return nil, false
		}
		s, ok := c.Args()[0].AsLiteral().(types.String)
		if !ok {
			return nil, false
		}
		var v ref.Val
		switch c.FunctionName() {
		case "timestamp":
			v = s.ConvertToType(types.TimestampType) // CEL's own parsing, not Go's
		case "duration":
			v = s.ConvertToType(types.DurationType)
		default:
			return nil, false
		}
		if types.IsError(v) {
			return nil, false
		}
		return v, true
	}
	return nil, false
}
