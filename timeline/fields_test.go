package timeline

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFilterNeedsNamesEveryVariable: a filter variable added to Fields
// must say which record field it reads, or a read that names its fields
// would leave that field out of the records the filter is matched on.
func TestFilterNeedsNamesEveryVariable(t *testing.T) {
	for _, f := range Fields {
		if _, ok := filterNeeds[f.Name]; !ok {
			t.Errorf("filter variable %q is not in filterNeeds", f.Name)
		}
	}
	if len(filterNeeds) != len(Fields) {
		t.Errorf("filterNeeds has %d variables, Fields %d", len(filterNeeds), len(Fields))
	}
}

func TestFilterNeeds(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want FieldSet
	}{
		{`resource == "pods" && ns == "a"`, 0},
		{`code >= 500 || reason == "BackOff"`, FieldCode | FieldReason},
		{`annotations["x"] == "y" && stage == "ResponseComplete"`, FieldExtra | FieldStages},
		{`latency > duration("1s") && requestURI.contains("watch") && auditID != "" && message != ""`,
			FieldLatency | FieldURI | FieldAuditID | FieldMessage},
		{`user == "u" || userAgent == "a" || sourceIP == "i" || verb == "get" || type == "Warning" || level == "Metadata"`,
			FieldUser | FieldUserAgent | FieldSourceIP | FieldVerb | FieldType | FieldLevel},
	} {
		f, err := CompileFilter(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, f.Needs()); diff != "" {
			t.Errorf("%s (-want +got)\n%s", tc.expr, diff)
		}
	}
}

// TestKeep: Keep clears exactly the fields the set leaves out.
func TestKeep(t *testing.T) {
	full := Record{ID: 1, Verb: "get", Reason: "r", User: "u", UserAgent: "a", SourceIP: "i", Code: 500, Type: "Warning",
		Level: "Metadata", Latency: 7, Stages: 4, AuditID: "x", URI: "/api", Message: "m", Extra: []byte(`{}`)}
	r := full
	FieldSet(0).Keep(&r)
	if diff := cmp.Diff(full, r); diff != "" {
		t.Errorf("the zero set changed the record (-want +got)\n%s", diff)
	}
	r = full
	AllFields.Keep(&r)
	if diff := cmp.Diff(full, r); diff != "" {
		t.Errorf("AllFields changed the record (-want +got)\n%s", diff)
	}
	r = full
	(FieldCode | FieldExtra).Keep(&r)
	want := Record{ID: 1, Code: 500, Extra: []byte(`{}`)}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("code and extra (-want +got)\n%s", diff)
	}
}

// TestKeepPod: a read with FieldPod and without FieldExtra keeps of extra
// the pod alone, as PodExtra spells it, whatever else extra held.
func TestKeepPod(t *testing.T) {
	for _, tc := range []struct {
		f           FieldSet
		extra, want string
	}{
		{FieldCode | FieldPod, `{"annotations":{"a":"b"},"groups":["g"],"pod":"ns/p"}`, `{"pod":"ns/p"}`},
		{FieldCode | FieldPod, `{"pod":"<a&b>","x":1}`, `{"pod":"\u003ca\u0026b\u003e"}`},
		{FieldCode | FieldPod, `{"annotations":{"a":"b"}}`, ``},
		{FieldCode | FieldPod, `{"pod":"ns/p"`, ``},
		{FieldCode, `{"pod":"ns/p"}`, ``},
		{FieldCode | FieldPod | FieldExtra, `{"x":1,"pod":"ns/p"}`, `{"x":1,"pod":"ns/p"}`},
		{FieldPod, `{"pod":"ns/p"}`, `{"pod":"ns/p"}`},
	} {
		r := Record{Code: 500, Extra: []byte(tc.extra)}
		want := r.Pod()
		tc.f.Keep(&r)
		if diff := cmp.Diff(tc.want, string(r.Extra)); diff != "" {
			t.Errorf("%b of %s (-want +got)\n%s", tc.f, tc.extra, diff)
		}
		if tc.f&FieldPod != 0 && r.Pod() != want {
			t.Errorf("%b of %s: Pod() = %q, want %q", tc.f, tc.extra, r.Pod(), want)
		}
		again := r
		again.Extra = slices.Clone(r.Extra)
		tc.f.Keep(&again)
		if !bytes.Equal(again.Extra, r.Extra) {
			t.Errorf("%b of %s: kept twice, %s, once %s", tc.f, tc.extra, again.Extra, r.Extra)
		}
	}
}

// TestPodExtraIsJSON: PodExtra spells every pod as encoding/json does.
func TestPodExtraIsJSON(t *testing.T) {
	for _, pod := range []string{"ns/p", "a b", "<a&b>", `a"b`, `a\b`, "ünï", "\x01", "\u2028", "~!#$%'()*+,-./:;=?@[]^_`{|}", "\xff"} {
		want, err := json.Marshal(struct {
			Pod string `json:"pod"`
		}{pod})
		if err != nil {
			t.Fatal(err)
		}
		if got := PodExtra(pod); !bytes.Equal(got, want) {
			t.Errorf("PodExtra(%q) = %s, want %s", pod, got, want)
		}
	}
}
