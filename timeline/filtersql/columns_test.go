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
