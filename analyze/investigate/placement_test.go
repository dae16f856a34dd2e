package investigate

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// nodeVersion is node name at s seconds with labels and taints (JSON).
func nodeVersion(s float64, name, labels, taints string) timeline.ObjectVersion {
	return timeline.ObjectVersion{Time: at(s), Object: timeline.ObjectRef{Resource: "nodes", Kind: "Node", Name: name},
		Content: []byte(fmt.Sprintf(`{"metadata":{"labels":%s},"spec":{"taints":%s}}`, labels, taints))}
}

// Pods that select role=dedicated and tolerate gpu taints stay pending
// after a change at 50 s; which node changes turned them away?
func TestPlacementSuspects(t *testing.T) {
	const dedicated = `{"role":"dedicated","zone":"a"}`
	tests := []struct {
		name  string
		after timeline.ObjectVersion // gpu-1 at 50 s
		want  [][3]string            // dimension, from, to
	}{
		{"the selected label renamed", nodeVersion(50, "gpu-1", `{"role":"dedicated-v2","zone":"a"}`, `[]`),
			[][3]string{{"node.label/role", "dedicated", "dedicated-v2"}}},
		{"an untolerated NoSchedule taint", nodeVersion(50, "gpu-1", dedicated, `[{"key":"reserved","value":"test","effect":"NoSchedule"}]`),
			[][3]string{{"node.taints", "", "reserved=test:NoSchedule"}}},
		{"a tolerated taint turns nobody away", nodeVersion(50, "gpu-1", dedicated, `[{"key":"gpu","value":"maint","effect":"NoSchedule"}]`), nil},
		{"PreferNoSchedule does not keep pods off", nodeVersion(50, "gpu-1", dedicated, `[{"key":"reserved","effect":"PreferNoSchedule"}]`), nil},
		{"a label the pods do not select", nodeVersion(50, "gpu-1", `{"role":"dedicated","zone":"b"}`, `[]`), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &timelinetest.Mem{Vers: []timeline.ObjectVersion{nodeVersion(0, "gpu-1", dedicated, `[]`), tt.after}}
			units := []*outcome.Unit{badUnit("ml", "serve-0", 55, 56), badUnit("ml", "serve-1", 55, 56), goodUnit("ml", "old-0", 1, 60)}
			ids := []map[string]identity.Dimension{idOf("owner/ReplicaSet", "new"), idOf("owner/ReplicaSet", "new"),
				idOf("owner/ReplicaSet", "old", "node", "gpu-1")}
			want := map[string]string{"nodeSelector/role": "dedicated", "tolerations": "gpu:NoSchedule"}
			cons := constraints{units[0]: want, units[1]: want, units[2]: want}
			got, err := placementSuspects(context.Background(), s, units, ids, cons, map[string]string{"owner/ReplicaSet": "new"}, at(0), at(56))
			if err != nil {
				t.Fatal(err)
			}
			var dims [][3]string
			for _, sp := range got {
				dims = append(dims, [3]string{sp.Dimension, sp.From, sp.To})
				// The pending pods hold it; the pod placed before it does not.
				if !sp.reached[units[0]] || !sp.reached[units[1]] || sp.reached[units[2]] || !sp.unplaced {
					t.Errorf("%s reached %v", sp.Dimension, sp.reached)
				}
			}
			if diff := cmp.Diff(tt.want, dims); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestTolerates(t *testing.T) {
	tests := []struct {
		tol  string
		x    taint
		want bool
	}{
		{"gpu:NoSchedule", taint{"gpu", "broken", "NoSchedule"}, true},
		{"gpu=ok:NoSchedule", taint{"gpu", "broken", "NoSchedule"}, false},
		{"gpu:NoExecute", taint{"gpu", "broken", "NoSchedule"}, false},
		{"gpu:", taint{"gpu", "broken", "NoExecute"}, true},
		{"*", taint{"anything", "", "NoSchedule"}, true},
		{":NoSchedule", taint{"anything", "", "NoSchedule"}, true}, // Exists with no key: every taint of the effect
		{":NoSchedule", taint{"anything", "", "NoExecute"}, false},
	}
	for _, tt := range tests {
		w := wantOf(map[string]string{"tolerations": tt.tol})
		if got := w.tolerations[0].tolerates(tt.x); got != tt.want {
			t.Errorf("%q tolerates %+v = %v, want %v", tt.tol, tt.x, got, tt.want)
		}
	}
}
