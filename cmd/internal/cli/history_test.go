package cli

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseHistoryRef: an empty part is an error naming it, never a
// wildcard ("history pod//" diffed 521 unrelated pods as one object).
func TestParseHistoryRef(t *testing.T) {
	for _, tc := range []struct {
		ref, namespace string
		want           []string // kind, ns, name; nil for a usage error
		wantErr        string
	}{
		{"pod/ml/train-0", "", []string{"pod", "ml", "train-0"}, ""},
		{"pod/train-0", "ml", []string{"pod", "ml", "train-0"}, ""},
		{"node/gpu-1", "", []string{"node", "", "gpu-1"}, ""},
		{"pod//", "", nil, `invalid REF "pod//": empty NAMESPACE`},
		{"pod/ml/", "", nil, `invalid REF "pod/ml/": empty NAME`},
		{"pod/", "ml", nil, `invalid REF "pod/": empty NAME`},
		{"/ml/x", "", nil, `invalid REF "/ml/x": empty KIND`},
		{"pod", "", nil, `invalid REF "pod": want KIND/NAMESPACE/NAME`},
		{"a/b/c/d", "", nil, `invalid REF "a/b/c/d": want KIND/NAMESPACE/NAME`},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			kind, ns, name, err := parseHistoryRef(tc.ref, tc.namespace)
			if tc.want == nil {
				var ue *usageError
				if !errors.As(err, &ue) || ue.msg != tc.wantErr {
					t.Fatalf("err = %v, want usage error %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, []string{kind, ns, name}); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}
