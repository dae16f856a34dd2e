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
