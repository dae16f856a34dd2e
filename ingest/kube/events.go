package kube

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/faultline/faultline/timeline"
)

// restMapper maps kinds to resources through discovery, lazily and cached.
func restMapper(disc discovery.DiscoveryInterface) meta.RESTMapper {
	return restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
}

// eventExtra is what an Event record keeps beyond its columns: the counts
// and times that event exporters lose when they keep only the first sight.
type eventExtra struct {
	Count             int32  `json:"count,omitempty"`
	FirstTimestamp    string `json:"firstTimestamp,omitempty"`
	LastTimestamp     string `json:"lastTimestamp,omitempty"`
	EventName         string `json:"eventName"`
	EventNamespace    string `json:"eventNamespace,omitempty"`
	ResourceVersion   string `json:"resourceVersion,omitempty"`
	ReportingInstance string `json:"reportingInstance,omitempty"`
	Host              string `json:"host,omitempty"`
	Action            string `json:"action,omitempty"`
	Related           string `json:"related,omitempty"`
}

// FieldError is a field of an object that does not decode: Field is its
// JSON path within the object (involvedObject.name, count).
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

// fromUnstructured converts obj to the typed out. The converter's errors
// do not name the field ("unrecognized type: int32" for a count that is a
// string); on failure, decoding obj's JSON again names it.
func fromUnstructured(obj map[string]any, out any) error {
	err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, out)
	if err == nil {
		return nil
	}
	b, jerr := json.Marshal(obj)
	if jerr != nil {
		return err
	}
	var te *json.UnmarshalTypeError
	if jerr := json.Unmarshal(b, out); errors.As(jerr, &te) && te.Field != "" {
		return &FieldError{Field: te.Field, Problem: fmt.Sprintf("want %s, got JSON %s", te.Type, te.Value)}
	}
	return err
}

// eventRecord maps a core/v1 or events.k8s.io/v1 Event to a record. Each
// version of an Event (its count going up) is a record of its own: the key
// is the Event's uid and resourceVersion, so both API groups' views of one
// version are one record.
func eventRecord(u *unstructured.Unstructured, mapper meta.RESTMapper) (*timeline.Record, error) {
	var (
		ev  *eventFields
		err error
	)
	switch u.GetAPIVersion() {
	case "events.k8s.io/v1":
		ev, err = eventsV1Fields(u)
	case "v1", "":
		ev, err = coreV1Fields(u)
	default:
		return nil, errors.New("apiVersion " + u.GetAPIVersion() + " is not an Event")
	}
	if err != nil {
		return nil, err
	}
	if ev.t.IsZero() {
		return nil, errors.New("no timestamp")
	}
	ref := ev.ref
	gv, _ := schema.ParseGroupVersion(ev.apiVersion)
	ref.Group, ref.Version = gv.Group, gv.Version
	ref.Resource = resourceFor(ref.Kind) // kubectl's guess when there is no API to ask
	if mapper != nil && ref.Kind != "" {
		if m, err := mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, gv.Version); err == nil {
			ref.Resource = m.Resource.Resource
		}
	}
	extra, err := json.Marshal(ev.x)
	if err != nil {
		return nil, err
	}
	return &timeline.Record{
		Key:       "event\x00" + string(u.GetUID()) + "\x00" + u.GetResourceVersion(),
		Time:      ev.t.UTC(),
		Source:    timeline.SourceEvent,
		Object:    ref,
		Reason:    ev.reason,
		Type:      ev.typ,
		Message:   ev.msg,
		UserAgent: ev.controller,
		Extra:     extra,
	}, nil
}

// eventFields are what a record keeps of an Event of either API group.
type eventFields struct {
	ref                          timeline.ObjectRef // the object the Event is about, without its group, version and resource
	apiVersion                   string             // of that object
	reason, typ, msg, controller string
	t                            time.Time // the latest of the Event's times
	x                            eventExtra
}

func newEventFields(u *unstructured.Unstructured) *eventFields {
	return &eventFields{x: eventExtra{EventName: u.GetName(), EventNamespace: u.GetNamespace(), ResourceVersion: u.GetResourceVersion()}}
}

// eventsV1Fields reads an events.k8s.io/v1 Event.
func eventsV1Fields(u *unstructured.Unstructured) (*eventFields, error) {
	var e eventsv1.Event
	if err := fromUnstructured(u.Object, &e); err != nil {
		return nil, err
	}
	ev := newEventFields(u)
	ev.ref = objectRef(e.Regarding)
	ev.apiVersion = e.Regarding.APIVersion
	ev.reason, ev.typ, ev.msg, ev.controller = e.Reason, e.Type, e.Note, e.ReportingController
	x := &ev.x
	x.ReportingInstance, x.Action = e.ReportingInstance, e.Action
	x.Count = e.DeprecatedCount
	var t time.Time
	if e.Series != nil {
		x.Count = e.Series.Count
		t = e.Series.LastObservedTime.Time
	}
	x.FirstTimestamp, x.LastTimestamp = rfc(e.DeprecatedFirstTimestamp.Time), rfc(e.DeprecatedLastTimestamp.Time)
	ev.t = latest(t, e.DeprecatedLastTimestamp.Time, e.EventTime.Time, e.DeprecatedFirstTimestamp.Time, e.CreationTimestamp.Time)
	x.Host = e.DeprecatedSource.Host
	if e.Related != nil {
		x.Related = e.Related.Kind + "/" + e.Related.Namespace + "/" + e.Related.Name
	}
	return ev, nil
}

// coreV1Fields reads a core/v1 Event.
func coreV1Fields(u *unstructured.Unstructured) (*eventFields, error) {
	var e corev1.Event
	if err := fromUnstructured(u.Object, &e); err != nil {
		return nil, err
	}
	ev := newEventFields(u)
	ev.ref = objectRef(e.InvolvedObject)
	ev.apiVersion = e.InvolvedObject.APIVersion
	ev.reason, ev.typ, ev.msg = e.Reason, e.Type, e.Message
	ev.controller = e.ReportingController
	if ev.controller == "" {
		ev.controller = e.Source.Component
	}
	x := &ev.x
	x.ReportingInstance, x.Action, x.Host = e.ReportingInstance, e.Action, e.Source.Host
	x.Count = e.Count
	var series time.Time
	if e.Series != nil {
		x.Count = e.Series.Count
		series = e.Series.LastObservedTime.Time
	}
	x.FirstTimestamp, x.LastTimestamp = rfc(e.FirstTimestamp.Time), rfc(e.LastTimestamp.Time)
	ev.t = latest(series, e.LastTimestamp.Time, e.EventTime.Time, e.FirstTimestamp.Time, e.CreationTimestamp.Time)
	if e.Related != nil {
		x.Related = e.Related.Kind + "/" + e.Related.Namespace + "/" + e.Related.Name
	}
	return ev, nil
}

func objectRef(o corev1.ObjectReference) timeline.ObjectRef {
	return timeline.ObjectRef{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, UID: string(o.UID)}
}

func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

func rfc(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
