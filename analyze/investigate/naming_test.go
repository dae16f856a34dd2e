package investigate

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
)

func TestNamingRedundant(t *testing.T) {
	tests := []struct {
		name string
		dims []string
		want []string
	}{
		{"a ConfigMap whose keys are dimensions",
			[]string{"configmap/env", "configmap/env/LR", "configmap/env/BATCH", "owner/Job"},
			[]string{"configmap/env/LR", "configmap/env/BATCH", "owner/Job"}},
		{"a Secret whose keys are dimensions",
			[]string{"secret/creds", "secret/creds/token"},
			[]string{"secret/creds/token"}},
		{"a ConfigMap with no key dimension stays",
			[]string{"configmap/env", "configmap/other/K"},
			[]string{"configmap/env", "configmap/other/K"}},
		{"the ReplicaSet yields to its template hash",
			[]string{"owner/ReplicaSet", "owner.podTemplateHash", "owner/Deployment"},
			[]string{"owner.podTemplateHash", "owner/Deployment"}},
		{"a ReplicaSet alone stays",
			[]string{"owner/ReplicaSet", "owner/Deployment"},
			[]string{"owner/ReplicaSet", "owner/Deployment"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, redundant(tt.dims)); diff != "" {
				t.Errorf("redundant (-want +got)\n%s", diff)
			}
		})
	}
}

func TestNamingInterpretRank(t *testing.T) {
	// From what an operator acts on to what only tells units apart.
	order := []string{
		"namespace", "owner/Job", "node.pool", "node.zone", "node.label/example.com/rack", "node",
		"image.tag/server", "configmap/env/LR", "image.digest/server", "owner.podTemplateHash",
		"configmap/env", "owner/Deployment.generation", "owner/ReplicaSet",
	}
	for i := 1; i < len(order); i++ {
		if a, b := interpretRank(order[i-1]), interpretRank(order[i]); a >= b {
			t.Errorf("interpretRank(%s) = %d, not below interpretRank(%s) = %d", order[i-1], a, order[i], b)
		}
	}
	// A conjunction is harder to read than its worst condition alone.
	if a, b := whereRank(map[string]string{"owner/Job": "x"}), whereRank(map[string]string{"owner/Job": "x", "node.pool": "p"}); a >= b {
		t.Errorf("whereRank: one name %d, not below a conjunction of two %d", a, b)
	}
}

// jobs is a namespace of two Jobs: train's pods went bad, eval's stayed
// good. Several descriptions select exactly train's pods.
func jobs(trainNS, evalNS string, train, eval int) ([]*outcome.Unit, []map[string]identity.Dimension, []string) {
	var units []*outcome.Unit
	var ids []map[string]identity.Dimension
	pool := func(i int) string { // crosses the Jobs
		if i%2 == 0 {
			return "a100"
		}
		return "h100"
	}
	for i := range train {
		units = append(units, badUnit(trainNS, fmt.Sprintf("train-%d", i), 0, 100))
		ids = append(ids, idOf("namespace", trainNS, "owner/Job", "train", "configmap/train-env/LR", "sha256:b",
			"owner.controllerRevision", "rev-2", "node.pool", pool(i), "image.digest/main", "sha256:img",
			"configmap/shared/x", "sha256:x"))
	}
	for i := range eval {
		units = append(units, goodUnit(evalNS, fmt.Sprintf("eval-%d", i), 0, 110))
		ids = append(ids, idOf("namespace", evalNS, "owner/Job", "eval", "configmap/eval-env/LR", "sha256:e",
			"owner.controllerRevision", "rev-1", "node.pool", pool(i), "image.digest/main", "sha256:img",
			"configmap/shared/x", "sha256:x"))
	}
	dims := []string{"configmap/eval-env/LR", "configmap/shared/x", "configmap/train-env/LR", "image.digest/main",
		"namespace", "node.pool", "owner.controllerRevision", "owner/Job"}
	return units, ids, dims
}

func TestNamingNameSlice(t *testing.T) {
	type named struct {
		Where       map[string]string
		Equivalents []map[string]string
	}
	tests := []struct {
		name         string
		trainNS      string
		where        map[string]string
		want         named
		extraDims    []string
		extraUnitIDs map[string]string // added to every unit
	}{
		{"the Job over its config key and revision", "ml", map[string]string{"configmap/train-env/LR": "sha256:b"},
			named{map[string]string{"owner/Job": "train"}, []map[string]string{
				{"configmap/train-env/LR": "sha256:b"}, {"owner.controllerRevision": "rev-2"},
			}}, nil, nil},
		{"the same from the revision", "ml", map[string]string{"owner.controllerRevision": "rev-2"},
			named{map[string]string{"owner/Job": "train"}, []map[string]string{
				{"configmap/train-env/LR": "sha256:b"}, {"owner.controllerRevision": "rev-2"},
			}}, nil, nil},
		{"the namespace when it selects the same units", "train-ns", map[string]string{"configmap/train-env/LR": "sha256:b"},
			named{map[string]string{"namespace": "train-ns"}, []map[string]string{
				{"owner/Job": "train"}, {"configmap/train-env/LR": "sha256:b"}, {"owner.controllerRevision": "rev-2"},
			}}, nil, nil},
		{"nothing better: where stands", "ml", map[string]string{"owner/Job": "train", "node.pool": "a100"},
			named{map[string]string{"owner/Job": "train", "node.pool": "a100"}, nil}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			units, ids, dims := jobs(tt.trainNS, "ml", 3, 3)
			where, eq := nameSlice(units, ids, dims, tt.where)
			got := named{where, eq}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("nameSlice (-want +got)\n%s", diff)
			}
			// Every description offered selects exactly the units where did.
			want := unitSet(units, ids, tt.where)
			for _, w := range append([]map[string]string{where}, eq...) {
				if !sameSet(unitSet(units, ids, w), want) {
					t.Errorf("offered %v selects %v, want exactly %v", w, unitSet(units, ids, w), want)
				}
			}
		})
	}
}

// A description that selects other units is never offered, however
// readable: node.pool=a100 and image.digest/main hold train's first pod
// but not only train's pods; the shared ConfigMap's key holds them all.
func TestNamingNameSliceNeverOffersAnotherSet(t *testing.T) {
	units, ids, dims := jobs("ml", "ml", 3, 3)
	where, eq := nameSlice(units, ids, dims, map[string]string{"owner/Job": "train"})
	for _, w := range append([]map[string]string{where}, eq...) {
		for d := range w {
			switch d {
			case "node.pool", "image.digest/main", "configmap/shared/x", "namespace":
				t.Errorf("offered %v: it selects other units than owner/Job=train", w)
			}
		}
	}
	if len(eq) != 2 {
		t.Errorf("equivalents = %v, want the config key and the revision", eq)
	}
}

// Three nodes of pool h100-b run driver 560; pool h100-a runs 550. A slice
// on the driver is restated as the pool; a driver the pool does not hold
// exactly stays as it is.
func TestNamingPlainer(t *testing.T) {
	type node struct{ pool, driver, zone string }
	build := func(nodes []node) ([]*outcome.Unit, []map[string]identity.Dimension, []string) {
		var units []*outcome.Unit
		var ids []map[string]identity.Dimension
		for i, n := range nodes {
			units = append(units, badUnit("ml", fmt.Sprintf("w-%d", i), 0, 100))
			ids = append(ids, idOf("node.pool", n.pool, "node.label/nvidia.com/cuda.driver.major", n.driver, "node.zone", n.zone))
		}
		return units, ids, []string{"node.label/nvidia.com/cuda.driver.major", "node.pool", "node.zone"}
	}
	tests := []struct {
		name  string
		nodes []node
		where map[string]string
		want  map[string]string
	}{
		{"the driver only that pool has is the pool",
			[]node{{"h100-b", "560", "z1"}, {"h100-b", "560", "z2"}, {"h100-a", "550", "z1"}, {"h100-a", "550", "z2"}},
			map[string]string{"node.label/nvidia.com/cuda.driver.major": "560"},
			map[string]string{"node.pool": "h100-b"}},
		{"a driver on part of a pool stays",
			[]node{{"h100-b", "560", "z1"}, {"h100-b", "550", "z2"}, {"h100-a", "550", "z1"}},
			map[string]string{"node.label/nvidia.com/cuda.driver.major": "560"},
			map[string]string{"node.label/nvidia.com/cuda.driver.major": "560"}},
		{"a driver on a pool and more stays",
			[]node{{"h100-b", "560", "z1"}, {"h100-a", "560", "z2"}, {"h100-a", "550", "z2"}},
			map[string]string{"node.label/nvidia.com/cuda.driver.major": "560"},
			map[string]string{"node.label/nvidia.com/cuda.driver.major": "560"}},
		{"the pool over the zone when both name the units",
			[]node{{"h100-b", "560", "z1"}, {"h100-a", "550", "z2"}},
			map[string]string{"node.zone": "z1"},
			map[string]string{"node.pool": "h100-b"}},
		{"each condition of a conjunction on its own",
			[]node{{"h100-b", "560", "z1"}, {"h100-b", "560", "z2"}, {"h100-a", "550", "z1"}},
			map[string]string{"node.label/nvidia.com/cuda.driver.major": "560", "node.zone": "z1"},
			map[string]string{"node.pool": "h100-b", "node.zone": "z1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			units, ids, dims := build(tt.nodes)
			if diff := cmp.Diff(tt.want, plainer(units, ids, dims, tt.where)); diff != "" {
				t.Errorf("plainer (-want +got)\n%s", diff)
			}
		})
	}
}

// A conjunction whose two conditions select the same units (the driver
// restates the pool) must be named the same way every time: the same
// input gives the same output (STYLE.md, determinism).
func TestNamingPlainerDeterministic(t *testing.T) {
	units := []*outcome.Unit{badUnit("ml", "w-0", 0, 100), badUnit("ml", "w-1", 0, 100), goodUnit("ml", "w-2", 0, 110)}
	ids := []map[string]identity.Dimension{
		idOf("node.pool", "h100-b", "node.label/nvidia.com/cuda.driver.major", "560"),
		idOf("node.pool", "h100-b", "node.label/nvidia.com/cuda.driver.major", "560"),
		idOf("node.pool", "h100-a", "node.label/nvidia.com/cuda.driver.major", "550"),
	}
	dims := []string{"node.label/nvidia.com/cuda.driver.major", "node.pool"}
	where := map[string]string{"node.label/nvidia.com/cuda.driver.major": "560", "node.pool": "h100-b"}
	seen := map[string]bool{}
	for range 200 {
		got := plainer(units, ids, dims, where)
		var parts []string
		for k, v := range got {
			parts = append(parts, k+"="+v)
		}
		sort.Strings(parts)
		seen[strings.Join(parts, "&")] = true
	}
	if len(seen) != 1 {
		var all []string
		for k := range seen {
			all = append(all, k)
		}
		sort.Strings(all)
		t.Errorf("plainer(%v) depends on map order: %d different answers %q", where, len(seen), all)
	}
}

// A ConfigMap every unit mounts with one content hash (a shared CA
// bundle, a cluster-wide config) never names the slice: every unit shares
// its value, so it says nothing about which went bad. The whole-object
// hash of a ConfigMap whose keys are dimensions is dropped too.
func TestNamingFindSliceSharedConfigMap(t *testing.T) {
	units, ids, _ := jobs("ml", "ml", 10, 30)
	for i := range ids {
		ids[i]["configmap/shared"] = identity.Dimension{Name: "configmap/shared", Value: "sha256:all"}
		if i < 10 {
			ids[i]["configmap/train-env"] = identity.Dimension{Name: "configmap/train-env", Value: "sha256:train-whole"}
		} else {
			ids[i]["configmap/eval-env"] = identity.Dimension{Name: "configmap/eval-env", Value: "sha256:eval-whole"}
		}
	}
	sl, err := findSlice(context.Background(), units, ids)
	if err != nil {
		t.Fatal(err)
	}
	if sl == nil {
		t.Fatal("findSlice: no slice, want owner/Job=train")
	}
	got := struct {
		Where       map[string]string
		Equivalents []map[string]string
		Bad, Total  int
	}{sl.Where, sl.Equivalents, sl.Bad, sl.Total}
	want := got
	want.Where = map[string]string{"owner/Job": "train"}
	want.Equivalents = []map[string]string{{"configmap/train-env/LR": "sha256:b"}, {"owner.controllerRevision": "rev-2"}}
	want.Bad, want.Total = 10, 10
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findSlice (-want +got)\n%s", diff)
	}
	for _, w := range append([]map[string]string{sl.Where}, sl.Equivalents...) {
		for d := range w {
			if strings.HasPrefix(d, "configmap/shared") || d == "configmap/train-env" || d == "configmap/eval-env" {
				t.Errorf("slice named by %v", w)
			}
		}
	}
	// Through nameSlice alone, offered as a dimension, the shared
	// ConfigMap still selects every unit, not the slice's.
	_, eq := nameSlice(units, ids, []string{"configmap/shared", "owner/Job"}, map[string]string{"owner/Job": "train"})
	if len(eq) != 0 {
		t.Errorf("nameSlice offered %v for owner/Job=train", eq)
	}
}

// Past the slice search's bound, the dimensions kept are those that tell
// the bad units from the others best, in their own order: "image" (all
// bad on one value, all good on another) before "zone" (half and half on
// both sides) and "pool" (one bad unit apart).
func TestSeparating(t *testing.T) {
	units := []*outcome.Unit{badUnit("ml", "a", 0, 10), badUnit("ml", "b", 0, 10), goodUnit("ml", "c", 0, 10), goodUnit("ml", "d", 0, 10)}
	ids := []map[string]identity.Dimension{
		idOf("zone", "z1", "pool", "p1", "image", "v2"),
		idOf("zone", "z2", "pool", "p2", "image", "v2"),
		idOf("zone", "z1", "pool", "p2", "image", "v1"),
		idOf("zone", "z2", "pool", "p2", "image", "v1"),
	}
	dims := []string{"zone", "pool", "image"}
	for n, want := range map[int][]string{1: {"image"}, 2: {"pool", "image"}, 3: dims} {
		if diff := cmp.Diff(want, separating(dims, units, ids, n)); diff != "" {
			t.Errorf("n=%d (-want +got)\n%s", n, diff)
		}
	}
}
