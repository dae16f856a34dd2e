package kube

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEventErrorsNameTheField: a field of the wrong type used to fail with
// the converter's "unrecognized type: int32", naming no field.
func TestEventErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ name, event, want string }{
		{"core count", `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e"},"count":"seven"}`,
			"count: want int32, got JSON string"},
		{"events.k8s.io deprecatedCount", `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e"},"deprecatedCount":"seven"}`,
			"deprecatedCount: want int32, got JSON string"},
		{"nested", `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e"},"involvedObject":{"name":7}}`,
			"involvedObject.name: want string, got JSON number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := eventRecord(obj(t, tc.event), nil)
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a *FieldError", err)
			}
			if diff := cmp.Diff(tc.want, fe.Error()); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}
