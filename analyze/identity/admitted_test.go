package identity

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMarkAdmitted(t *testing.T) {
	owner := `{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"r/app:1",
		"env":[{"name":"MODE","value":"fast"}],"resources":{"limits":{"cpu":"2"}}}]}}}}`
	for _, tc := range []struct {
		name  string
		owner string
		pod   string
		want  map[string]string // dimension -> Admission, for the marked ones
	}{
		{"as the template gives it", owner,
			`{"spec":{"containers":[{"name":"main","image":"r/app:1","env":[{"name":"MODE","value":"fast"}],"resources":{"limits":{"cpu":"2"},"requests":{"cpu":"2"}}}]}}`,
			map[string]string{}},
		{"a LimitRange's default memory", owner,
			`{"metadata":{"annotations":{"kubernetes.io/limit-ranger":"LimitRanger plugin set: memory request for container main; memory limit for container main"}},
			  "spec":{"containers":[{"name":"main","image":"r/app:1","env":[{"name":"MODE","value":"fast"}],"resources":{"limits":{"cpu":"2","memory":"256Mi"}}}]}}`,
			map[string]string{"resources/main/limits.memory": ByLimitRange}},
		{"the LimitRanger set another container's", owner,
			`{"metadata":{"annotations":{"kubernetes.io/limit-ranger":"LimitRanger plugin set: memory limit for container main2"}},
			  "spec":{"containers":[{"name":"main","image":"r/app:1","env":[{"name":"MODE","value":"fast"}],"resources":{"limits":{"cpu":"2","memory":"256Mi"}}}]}}`,
			map[string]string{"resources/main/limits.memory": ByAdmission}},
		{"a webhook's env and sidecar", owner,
			`{"spec":{"containers":[{"name":"main","image":"r/app:1","env":[{"name":"MODE","value":"slow"}],"resources":{"limits":{"cpu":"2"}}},
			  {"name":"proxy","image":"r/proxy:9"}]}}`,
			map[string]string{"env/main/MODE": ByAdmission, "image.tag/proxy": ByAdmission}},
		{"an owner without a template says nothing", `{"spec":{"replicas":3}}`,
			`{"spec":{"containers":[{"name":"main","image":"r/app:2"}]}}`,
			map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p, o obj
			if err := json.Unmarshal([]byte(tc.pod), &p.m); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.owner), &o.m); err != nil {
				t.Fatal(err)
			}
			var dims dimList
			imageDims(&dims, mapAt(p.m, "spec"), nil, Evidence{})
			markAdmitted(dims, &p, &o)
			got := map[string]string{}
			for _, d := range dims {
				if d.Admission != "" {
					got[d.Name] = d.Admission
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("admitted (-want +got)\n%s", diff)
			}
		})
	}
}
