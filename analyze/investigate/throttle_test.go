package investigate

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// The scorer's ServiceAccount lists ConfigMaps every few seconds, seated
// until 20 s and rejected from 30 s, its load flat. Of the writes to API
// Priority and Fairness around it, any verb can reject, but only those
// done between its last seated list (less apfPropagation) and its first
// rejection can have done it; not a status write (the apiserver's own
// bookkeeping), nor a write refused.
func TestThrottleSuspects(t *testing.T) {
	const sa = "system:serviceaccount:ml:scorer"
	status := request(21, "system:apiserver", "patch", "flowschemas", "", "global-default", 200)
	status.Object.Subresource = "status"
	s := (&timelinetest.Mem{}).Add([]*timeline.Record{
		request(5, sa, "list", "configmaps", "nodes", "", 200),
		request(10, "alice", "create", "flowschemas", "", "other-team", 201), // well before the last seated list
		request(20, sa, "list", "configmaps", "nodes", "", 200),
		status,
		request(24, "bob", "create", "flowschemas", "", "refused", 409),                // not done
		request(25, "alice", "create", "prioritylevelconfigurations", "", "bulk", 201), // the level
		request(25.1, "alice", "create", "flowschemas", "", "bulk-clients", 201),       // and what sends the scorer to it
		request(25.2, sa, "list", "configmaps", "nodes", "", 200),                      // not yet reconfigured
		request(30, sa, "list", "configmaps", "nodes", "", 429),
		request(31, sa, "list", "configmaps", "nodes", "", 429),
		request(35, "alice", "delete", "flowschemas", "", "after", 200), // after the first rejection
	}...)
	var units []*outcome.Unit
	var ids []map[string]identity.Dimension
	var reached []string
	cons := constraints{}
	for i := range 10 {
		bad := badUnit("ml", fmt.Sprintf("scorer-%d", i), 0, 30+float64(i)/10)
		good := goodUnit("ml", fmt.Sprintf("cache-%d", i), 0, 40)
		units, ids = append(units, bad, good), append(ids, idOf("owner/Job", "scorer"), idOf("owner/Deployment", "cache"))
		cons[bad], cons[good] = map[string]string{"serviceAccount": "scorer"}, map[string]string{"serviceAccount": "cache"}
		reached = append(reached, bad.Ref)
	}
	got, err := throttleSuspects(context.Background(), s, units, ids, cons, map[string]string{"owner/Job": "scorer"}, at(0), at(40))
	if err != nil {
		t.Fatal(err)
	}
	want := []brief{
		{"PriorityLevelConfiguration/bulk", "created", "alice", reached},
		{"FlowSchema/bulk-clients", "created", "alice", reached},
	}
	if diff := cmp.Diff(want, briefsOf(got, units)); diff != "" {
		t.Errorf("throttle suspects (-want +got)\n%s", diff)
	}
	// Scored, the FlowSchema (the nearer write) leads; the two writes are
	// one act of one actor (0.1 s apart: no request can tell them apart),
	// so they do not compete, and it is confident. The mitigation removes
	// it.
	in := scoring{units: units, ids: ids, pop: populationOf(units, "ml"), firstBad: at(30)}
	sps := scoreSuspects(got, in)
	if len(sps) != 2 || sps[0].Ref != "FlowSchema/bulk-clients" || sps[0].Confidence < Confident {
		t.Fatalf("scored: %+v, want the FlowSchema first, confident", sps)
	}
	// Another actor's write in the same window competes: neither is then
	// confident.
	bobs := writeSuspect(request(27, "bob", "patch", "prioritylevelconfigurations", "", "workload-low", 200), "PriorityLevelConfiguration/workload-low", "spec")
	bobs.reached, bobs.throttles = got[0].reached, true
	both := append(slices.Clone(got), bobs)
	acts(both, apfPropagation)
	if sps := scoreSuspects(both, in); sps[0].Confidence >= Confident {
		t.Errorf("two actors' writes reaching the same units: %+v, want none confident", sps)
	}
	a := undoFlowControl(sps[0])
	if diff := cmp.Diff(Action{Action: "rollback", Target: "FlowSchema/bulk-clients",
		Why:     "remove it (or correct it), so the rejected clients' requests go back to the priority level that seated them",
		Command: "kubectl delete flowschema/bulk-clients", Verify: "kubectl get flowschema/bulk-clients"}, a); diff != "" {
		t.Errorf("mitigation (-want +got)\n%s", diff)
	}
}

// Rejections alone name no write: with none in the window (the client's
// own storm, say), there is no throttle suspect; nor without a rejection.
func TestThrottleSuspectsNeedBoth(t *testing.T) {
	const sa = "system:serviceaccount:ml:scorer"
	units := []*outcome.Unit{badUnit("ml", "scorer-0", 0, 32)}
	ids := []map[string]identity.Dimension{idOf("owner/Job", "scorer")}
	cons := constraints{units[0]: {"serviceAccount": "scorer"}}
	for name, recs := range map[string][]*timeline.Record{
		"no rejection": {request(25, "alice", "create", "flowschemas", "", "bulk", 201), request(30, sa, "list", "configmaps", "nodes", "", 200)},
		"no write":     {request(25, sa, "list", "configmaps", "nodes", "", 200), request(30, sa, "list", "configmaps", "nodes", "", 429)},
	} {
		got, err := throttleSuspects(context.Background(), (&timelinetest.Mem{}).Add(recs...), units, ids, cons,
			map[string]string{"owner/Job": "scorer"}, at(0), at(40))
		if err != nil || len(got) != 0 {
			t.Errorf("%s: throttleSuspects = %v, %v; want none", name, got, err)
		}
	}
}
