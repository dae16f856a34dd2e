package cli

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
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

// TestHistoryOrder: on bad-config-rollout, which holds an audit log and a
// dump of the same objects, every object's history runs in the order its
// versions were made: resourceVersions rise, a dump's snapshot is never
// first when the audit holds earlier versions, and no step diffs
// backwards. Each audited version names who made it; a dump's says so.
func TestHistoryOrder(t *testing.T) {
	fl := fixtureCLI(t, "bad-config-rollout")
	for _, ref := range []string{"node/gpu-0001", "node/gpu-0007", "configmap/ml/trainer-env", "job/ml/vision-train"} {
		t.Run(ref, func(t *testing.T) {
			var steps []historyStep
			if err := json.Unmarshal([]byte(fl("history", ref, "-o", "json")), &steps); err != nil {
				t.Fatal(err)
			}
			if len(steps) < 2 {
				t.Fatalf("%d versions, want the audit's and the dump's", len(steps))
			}
			if steps[0].Seen == "dump" {
				t.Errorf("first version is the dump's snapshot (resourceVersion %s)", steps[0].ResourceVersion)
			}
			var rvs []int
			for _, st := range steps {
				rv, err := strconv.Atoi(st.ResourceVersion)
				if err != nil {
					t.Fatalf("resourceVersion %q: %v", st.ResourceVersion, err)
				}
				rvs = append(rvs, rv)
				if st.Seen == "written" && st.By == "" {
					t.Errorf("resourceVersion %s: written, but no actor", st.ResourceVersion)
				}
				if st.Seen == "dump" && st.By != "" {
					t.Errorf("resourceVersion %s: seen only in a dump, but by %q", st.ResourceVersion, st.By)
				}
			}
			if !slices.IsSorted(rvs) {
				t.Errorf("resourceVersions out of order: %v", rvs)
			}
		})
	}
	text := fl("history", "node/gpu-0001")
	for _, want := range []string{"actor unknown (no audit record)", "by admin (kubectl/"} {
		if !strings.Contains(text, want) {
			t.Errorf("history text lacks %q:\n%s", want, text)
		}
	}
}
