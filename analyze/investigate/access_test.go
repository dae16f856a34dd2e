package investigate

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// The quota controller's ServiceAccount lists ConfigMaps until 20 s and is
// denied from 30 s. Of the RBAC writes around it, only an update or a
// delete, in its namespace or of a cluster-wide object, between its last
// allowed list and its first denial can have taken the permission away.
func TestAccessSuspects(t *testing.T) {
	const sa = "system:serviceaccount:ml:quota"
	s := (&timelinetest.Mem{}).Add([]*timeline.Record{
		request(10, sa, "list", "configmaps", "ml", "", 200),
		request(12, "alice", "update", "roles", "ml", "early", 200), // well before the last allowed list
		request(20, sa, "list", "configmaps", "ml", "", 200),
		request(22, "alice", "delete", "rolebindings", "ops", "deployer", 200),   // another namespace
		request(23, "bob", "create", "clusterroles", "", "new-reader", 201),      // creating only grants
		request(24, "bob", "update", "roles", "ml", "refused", 409),              // not done
		request(25, "alice", "update", "roles", "ml", "quota", 200),              // the change
		request(25.1, sa, "list", "configmaps", "ml", "", 200),                   // the authorizer's cache not yet updated
		request(26, "ci", "patch", "clusterroles", "", "aggregate-to-view", 200), // cluster-wide: possible
		request(30, sa, "list", "configmaps", "ml", "", 403),
		request(31, sa, "list", "configmaps", "ml", "", 403),
	}...)
	units := []*outcome.Unit{badUnit("ml", "quota-0", 0, 32), badUnit("ml", "quota-1", 0, 33),
		goodUnit("ml", "web-0", 0, 40), goodUnit("ml", "web-1", 0, 40)}
	ids := []map[string]identity.Dimension{idOf("owner/Deployment", "quota"), idOf("owner/Deployment", "quota"),
		idOf("owner/Deployment", "web"), idOf("owner/Deployment", "web")}
	cons := constraints{units[0]: {"serviceAccount": "quota"}, units[1]: {"serviceAccount": "quota"},
		units[2]: {"serviceAccount": "default"}, units[3]: {"serviceAccount": "default"}}
	got, err := accessSuspects(context.Background(), s, units, ids, cons, map[string]string{"owner/Deployment": "quota"}, at(0), at(40))
	if err != nil {
		t.Fatal(err)
	}
	want := []brief{
		{"Role/ml/quota", "rules", "alice", []string{"Pod/ml/quota-0", "Pod/ml/quota-1"}},
		{"ClusterRole/aggregate-to-view", "rules", "ci", []string{"Pod/ml/quota-0", "Pod/ml/quota-1"}},
	}
	if diff := cmp.Diff(want, briefsOf(got, units)); diff != "" {
		t.Errorf("access suspects (-want +got)\n%s", diff)
	}
	// Both reach the same units: they compete, and neither is confident.
	pop := populationOf(units, "ml")
	sps := scoreSuspects(got, scoring{units: units, ids: ids, pop: pop, firstBad: at(32)})
	if len(sps) != 2 || sps[0].Confidence >= Confident {
		t.Errorf("two RBAC writes reaching the same units: %+v, want two, neither confident", sps)
	}
}

// No denial, no access suspect: a quiet ServiceAccount says nothing.
func TestAccessSuspectsNeedADenial(t *testing.T) {
	s := (&timelinetest.Mem{}).Add([]*timeline.Record{
		request(25, "alice", "update", "roles", "ml", "quota", 200),
		request(30, "system:serviceaccount:ml:quota", "list", "configmaps", "ml", "", 200),
	}...)
	units := []*outcome.Unit{badUnit("ml", "quota-0", 0, 32)}
	ids := []map[string]identity.Dimension{idOf("owner/Deployment", "quota")}
	got, err := accessSuspects(context.Background(), s, units, ids, constraints{units[0]: {"serviceAccount": "quota"}},
		map[string]string{"owner/Deployment": "quota"}, at(0), at(40))
	if err != nil || len(got) != 0 {
		t.Errorf("accessSuspects = %v, %v; want none", got, err)
	}
}

// brief is what a test says of a suspect: what changed, by whom, and the
// units the evidence shows it reached.
type brief struct {
	Ref, Dimension, By string
	Reached            []string
}

func briefsOf(sps []*Suspect, units []*outcome.Unit) []brief {
	var out []brief
	for _, sp := range sps {
		b := brief{Ref: sp.Ref, Dimension: sp.Dimension, By: sp.By}
		for _, u := range units {
			if sp.reached[u] {
				b.Reached = append(b.Reached, u.Ref)
			}
		}
		out = append(out, b)
	}
	return out
}
