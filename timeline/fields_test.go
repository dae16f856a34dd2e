package timeline

import (
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
