package timeline

import (
	"encoding/json"
	"strings"
)

// FieldSet is a set of record fields a read fills (Query.Fields). Every
// record read has its ID, Time, Source, Object and Evidence (and Bad, from
// the query); the fields of the set come on top, the others read as their
// zero values. The zero set fills every field.
//
// A read that names the fields its caller uses lets a columnar store leave
// the others unread: on ClickHouse, the failed requests of a 10 M-record
// timeline read in 0.24-0.30 s without extra, uri and the other wide
// columns, against 0.55-0.65 s with every column (docs/scale.md).
type FieldSet uint16

const (
	FieldVerb FieldSet = 1 << iota
	FieldReason
	FieldUser
	FieldUserAgent
	FieldSourceIP
	FieldCode
	FieldType
	FieldLevel
	FieldLatency
	FieldStages
	FieldAuditID
	FieldURI
	FieldMessage
	FieldExtra
	// FieldPod is as much of Extra as Record.Pod reads: a read with it
	// and without FieldExtra yields Extra as PodExtra(r.Pod()) makes it,
	// a columnar store reading little more than the pod's name.
	FieldPod

	// AllFields is every field a read can leave out.
	AllFields = FieldPod<<1 - 1
)

// Has reports whether f fills every field of g: the zero set fills all.
func (f FieldSet) Has(g FieldSet) bool { return f == 0 || f&g == g }

// Keep sets the fields of r that f does not fill to their zero values, as
// a read with f yields r. Stores that read more than f (to evaluate a
// filter, say) call it so that their records do not depend on how they
// were read.
func (f FieldSet) Keep(r *Record) {
	if f == 0 {
		return
	}
	if f&FieldPod != 0 && f&FieldExtra == 0 {
		r.Extra = PodExtra(r.Pod())
		f |= FieldExtra
	}
	for _, c := range clears {
		if f&c.field == 0 {
			c.clear(r)
		}
	}
}

// clears sets each field a read can leave out to its zero value.
var clears = []struct {
	field FieldSet
	clear func(*Record)
}{
	{FieldVerb, func(r *Record) { r.Verb = "" }},
	{FieldReason, func(r *Record) { r.Reason = "" }},
	{FieldUser, func(r *Record) { r.User = "" }},
	{FieldUserAgent, func(r *Record) { r.UserAgent = "" }},
	{FieldSourceIP, func(r *Record) { r.SourceIP = "" }},
	{FieldCode, func(r *Record) { r.Code = 0 }},
	{FieldType, func(r *Record) { r.Type = "" }},
	{FieldLevel, func(r *Record) { r.Level = "" }},
	{FieldLatency, func(r *Record) { r.Latency = 0 }},
	{FieldStages, func(r *Record) { r.Stages = 0 }},
	{FieldAuditID, func(r *Record) { r.AuditID = "" }},
	{FieldURI, func(r *Record) { r.URI = "" }},
	{FieldMessage, func(r *Record) { r.Message = "" }},
	{FieldExtra, func(r *Record) { r.Extra = nil }},
}

// PodExtra is the Extra of a record read with FieldPod and without
// FieldExtra, from Record.Pod of its whole Extra: nil when it names no
// pod, else a JSON object of the pod alone, the same from every store.
func PodExtra(pod string) []byte {
	if pod == "" {
		return nil
	}
	if plainASCII(pod) && !strings.ContainsAny(pod, "<>&") {
		return []byte(`{"pod":"` + pod + `"}`) // as json.Marshal spells it
	}
	b, _ := json.Marshal(struct {
		Pod string `json:"pod"`
	}{pod})
	return b
}

// filterNeeds maps each filter variable (Fields) to the record field it
// reads, when that is one a read can leave out.
var filterNeeds = map[string]FieldSet{
	"time": 0, "source": 0, "group": 0, "version": 0, "resource": 0, "subresource": 0, "kind": 0, "ns": 0,
	"name": 0, "uid": 0, "run": 0, "line": 0, "bad": 0,
	"verb": FieldVerb, "reason": FieldReason, "user": FieldUser, "userAgent": FieldUserAgent,
	"sourceIP": FieldSourceIP, "code": FieldCode, "type": FieldType, "level": FieldLevel, "stage": FieldStages,
	"latency": FieldLatency, "auditID": FieldAuditID, "requestURI": FieldURI, "message": FieldMessage,
	"annotations": FieldExtra,
}

// Needs is the set of fields f reads among those a read can leave out, to
// be added to the fields a caller that matches records with f uses itself.
// It is empty (0) when f reads none of them; note that an empty
// Query.Fields reads every field.
func (f *Filter) Needs() FieldSet {
	var out FieldSet
	for name, field := range filterNeeds {
		if field != 0 && f.Uses(name) {
			out |= field
		}
	}
	return out
}

// FieldsWhere asks a read for more fields on some of its records only:
// those that match Where get Fields too (Query.FieldsWhere).
type FieldsWhere struct {
	Fields FieldSet
	Where  *Filter
}

// Keep sets the fields of r that q does not fill to their zero values (see
// FieldSet.Keep), with q.FieldsWhere's fields kept where its filter
// matches r.
func (q *Query) Keep(r *Record) {
	if q.Fields == 0 {
		return
	}
	f := q.Fields
	if w := q.FieldsWhere; w != nil {
		if ok, _ := w.Where.Match(r); ok {
			f |= w.Fields
		}
	}
	f.Keep(r)
}
