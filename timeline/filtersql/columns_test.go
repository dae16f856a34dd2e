package filtersql

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

func TestSelectList(t *testing.T) {
	cols := []Column{{"id", 0, ""}, {"code", timeline.FieldCode, "0"}, {"extra", timeline.FieldExtra, "NULL"}}
	for _, tc := range []struct {
		f    timeline.FieldSet
		want string
	}{
		{0, "id, code, extra"},
		{timeline.AllFields, "id, code, extra"},
		{timeline.FieldCode, "id, code, NULL"},
		{timeline.FieldVerb, "id, 0, NULL"},
	} {
		if diff := cmp.Diff(tc.want, SelectList(cols, tc.f)); diff != "" {
			t.Errorf("fields %b (-want +got)\n%s", tc.f, diff)
		}
	}
}

func TestSelectListWhere(t *testing.T) {
	cols := []Column{{"id", 0, ""}, {"code", timeline.FieldCode, "0"}, {"extra", timeline.FieldExtra, "NULL"}}
	got, n := SelectListWhere(cols, timeline.FieldCode, timeline.FieldExtra|timeline.FieldCode, "code = 403")
	if diff := cmp.Diff("id, code, CASE WHEN code = 403 THEN extra ELSE NULL END", got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if n != 1 {
		t.Errorf("n = %d, want 1", n)
	}
}

func TestSelected(t *testing.T) {
	cols := []Column{{"id", 0, ""}, {"code", timeline.FieldCode, "0"}, {"verb", timeline.FieldVerb, "''"}, {"extra", timeline.FieldExtra, "NULL"}}
	for _, tc := range []struct {
		f, more timeline.FieldSet
		want    string
		scanned []any
	}{
		{0, 0, "id, code, verb, extra", []any{"id", "code", "verb", "extra"}},
		{timeline.AllFields, 0, "id, code, verb, extra", []any{"id", "code", "verb", "extra"}},
		{timeline.FieldCode, 0, "id, code", []any{"id", "code"}},
		{timeline.FieldCode, timeline.FieldExtra, "id, code, CASE WHEN code = 403 THEN extra ELSE NULL END", []any{"id", "code", "extra"}},
		{timeline.FieldVerb, timeline.FieldExtra, "id, verb, CASE WHEN code = 403 THEN extra ELSE NULL END", []any{"id", "verb", "extra"}},
	} {
		if diff := cmp.Diff(tc.want, Selected(cols, tc.f, tc.more, "code = 403")); diff != "" {
			t.Errorf("fields %b, %b: list (-want +got)\n%s", tc.f, tc.more, diff)
		}
		if diff := cmp.Diff(tc.scanned, Scanned(cols, tc.f, tc.more, []any{"id", "code", "verb", "extra"})); diff != "" {
			t.Errorf("fields %b, %b: scanned (-want +got)\n%s", tc.f, tc.more, diff)
		}
	}
}
