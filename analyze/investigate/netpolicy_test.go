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

// The pods of Deployment ledger (namespace payments), running since 0 s,
// fail to connect from 30 s. Of the writes to network policies before,
// those of payments and the cluster-wide ones reach them; a policy of
// another namespace does not, and a pod that died otherwise (OOMKilled)
// was not cut off.
func TestNetPolicySuspects(t *testing.T) {
	s := (&timelinetest.Mem{}).Add([]*timeline.Record{
		request(20, "alice", "create", "networkpolicies", "search", "allow-egress", 201), // another namespace
		request(25, "alice", "create", "networkpolicies", "payments", "deny-egress", 201),
		request(26, "ci", "patch", "ciliumclusterwidenetworkpolicies", "", "baseline", 200),
		request(27, "bob", "update", "networkpolicies", "payments", "refused", 409), // not done
		request(35, "alice", "delete", "networkpolicies", "payments", "late", 200),  // after the first bad
	}...)
	cut := func(name string, bad float64) *outcome.Unit {
		u := badUnit("payments", name, 0, bad)
		u.Message = "FATAL: could not connect to database: dial tcp 10.96.0.7:5432: i/o timeout"
		return u
	}
	oom := badUnit("payments", "ledger-oom", 0, 31)
	oom.Message = "OOMKilled"
	units := []*outcome.Unit{cut("ledger-0", 30), cut("ledger-1", 31), oom, goodUnit("search", "indexer-0", 0, 40)}
	ids := []map[string]identity.Dimension{idOf("owner/Deployment", "ledger"), idOf("owner/Deployment", "ledger"),
		idOf("owner/Deployment", "ledger"), idOf("owner/Deployment", "indexer")}
	got, err := netPolicySuspects(context.Background(), s, units, ids, map[string]string{"owner/Deployment": "ledger"}, at(0), at(30))
	if err != nil {
		t.Fatal(err)
	}
	want := []brief{
		{"NetworkPolicy/payments/deny-egress", "created", "alice", []string{"Pod/payments/ledger-0", "Pod/payments/ledger-1"}},
		{"CiliumClusterwideNetworkPolicy/baseline", "spec", "ci", []string{"Pod/payments/ledger-0", "Pod/payments/ledger-1", "Pod/search/indexer-0"}},
	}
	if diff := cmp.Diff(want, briefsOf(got, units)); diff != "" {
		t.Errorf("network policy suspects (-want +got)\n%s", diff)
	}
	sps := scoreSuspects(got, scoring{units: units, ids: ids, pop: populationOf(units, "payments"), firstBad: at(30)})
	if len(sps) == 0 || sps[0].Ref != "NetworkPolicy/payments/deny-egress" {
		t.Errorf("suspects %+v: want the namespace's policy first", sps)
	}
	if a := undo(&Report{}, sps[0]); len(a) != 1 || a[0].Command != "kubectl delete networkpolicy/deny-egress -n payments" {
		t.Errorf("mitigation %+v: want the policy removed", a)
	}
}

// Pods that did not fail to connect were not cut off: no suspect.
func TestNetPolicySuspectsNeedAConnection(t *testing.T) {
	s := (&timelinetest.Mem{}).Add(request(25, "alice", "create", "networkpolicies", "payments", "deny-egress", 201))
	u := badUnit("payments", "ledger-0", 0, 30)
	u.Message = "panic: nil map"
	got, err := netPolicySuspects(context.Background(), s, []*outcome.Unit{u}, []map[string]identity.Dimension{idOf("owner/Deployment", "ledger")},
		map[string]string{"owner/Deployment": "ledger"}, at(0), at(30))
	if err != nil || len(got) != 0 {
		t.Errorf("netPolicySuspects = %v, %v; want none", got, err)
	}
}
