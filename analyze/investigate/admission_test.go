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

// status is a request on an object's status subresource.
func status(s float64, user, verb, resource, ns, name string, code int) *timeline.Record {
	r := request(s, user, verb, resource, ns, name, code)
	r.Object.Subresource = "status"
	return r
}

// unbornUnit is a pod the ReplicaSet api-5f6d could not create, refused
// at bad with the message.
func unbornUnit(name string, bad float64, msg string) *outcome.Unit {
	return &outcome.Unit{Ref: "ReplicaSet/ml/api-5f6d/" + name, Namespace: "ml", Name: "api-5f6d", Owner: "ReplicaSet/api-5f6d",
		BadAt: at(bad), Reason: "FailedCreate", Message: msg, Unborn: true}
}

// The pods of Deployment ml/api are admitted until 20 s and refused from
// 30 s. Of the writes around it, only a create, update or patch of a
// cluster-wide admission configuration, of a quota or LimitRange of ml, or
// of ml itself, between the last admitted pod of api and the first
// refused, can have made the difference; and the refusals name the webhook
// that refused them, so the other writes reached no refused pod.
func TestAdmissionSuspects(t *testing.T) {
	const rsc = "system:serviceaccount:kube-system:replicaset-controller"
	s := (&timelinetest.Mem{}).Add([]*timeline.Record{
		request(10, rsc, "create", "pods", "ml", "", 201),
		request(12, "alice", "create", "validatingwebhookconfigurations", "", "early", 201), // before the last admitted pod
		request(20, rsc, "create", "pods", "ml", "", 201),
		request(21, "alice", "create", "resourcequotas", "ops", "budget", 201),               // another namespace
		request(22, "alice", "delete", "validatingwebhookconfigurations", "", "old", 200),    // a check taken away
		request(23, "alice", "create", "validatingwebhookconfigurations", "", "labels", 201), // the decoy
		request(24, "bob", "create", "validatingwebhookconfigurations", "", "guard", 201),    // the change
		request(25, "bob", "patch", "namespaces", "", "ml", 200),
		request(26, "bob", "patch", "namespaces", "", "ops", 200), // another namespace
		request(27, "ci", "update", "limitranges", "ml", "defaults", 409),
		status(28, "system:serviceaccount:kube-system:resourcequota-controller", "update", "resourcequotas", "ml", "budget", 200),
		request(30, rsc, "create", "pods", "ml", "", 500),
		request(31, rsc, "create", "pods", "ml", "", 500),
	}...)
	msg := `Error creating: Internal error occurred: failed calling webhook "guard.policy.example.com": failed to call webhook: connection refused`
	units := []*outcome.Unit{unbornUnit("1", 32, msg), unbornUnit("2", 32, msg), goodUnit("ml", "api-0", 10, 40), goodUnit("ml", "api-1", 20, 40)}
	ids := []map[string]identity.Dimension{idOf("owner.podTemplateHash", "5f6d", "owner/Deployment", "api"), idOf("owner.podTemplateHash", "5f6d", "owner/Deployment", "api"),
		idOf("owner.podTemplateHash", "77aa", "owner/Deployment", "api"), idOf("owner.podTemplateHash", "77aa", "owner/Deployment", "api")}
	where := map[string]string{"owner.podTemplateHash": "5f6d"}
	got, err := admissionSuspects(context.Background(), s, units, ids, where, at(0), at(40))
	if err != nil {
		t.Fatal(err)
	}
	want := []brief{
		{"ValidatingWebhookConfiguration/labels", "created", "alice", nil},
		{"ValidatingWebhookConfiguration/guard", "created", "bob", []string{"ReplicaSet/ml/api-5f6d/1", "ReplicaSet/ml/api-5f6d/2"}},
		{"Namespace/ml", "labels", "bob", nil},
	}
	if diff := cmp.Diff(want, briefsOf(got, units)); diff != "" {
		t.Errorf("admission suspects (-want +got)\n%s", diff)
	}
	for _, sp := range got {
		if sp.named != (sp.Ref == "ValidatingWebhookConfiguration/guard") {
			t.Errorf("%s named %v: only the webhook the refusals name is", sp.Ref, sp.named)
		}
	}
	sps := scoreSuspects(got, scoring{units: units, ids: ids, pop: populationOf(units, "ml"), firstBad: at(30)})
	if len(sps) == 0 || sps[0].Ref != "ValidatingWebhookConfiguration/guard" || sps[0].Confidence < Confident {
		t.Errorf("suspects %+v: want the named webhook first, confident", sps)
	}
	if a := undo(&Report{}, sps[0]); len(a) != 1 || a[0].Command != "kubectl delete validatingwebhookconfiguration/guard" {
		t.Errorf("mitigation %+v: want the webhook removed", a)
	}

	// When no refusal names an object written, every write reaches the
	// refused pods: they compete, and none is confident.
	for _, u := range units[:2] {
		u.Message = "Error creating: Internal error occurred: the server could not admit it"
	}
	got, err = admissionSuspects(context.Background(), s, units, ids, where, at(0), at(40))
	if err != nil {
		t.Fatal(err)
	}
	sps = scoreSuspects(got, scoring{units: units, ids: ids, pop: populationOf(units, "ml"), firstBad: at(30)})
	if len(sps) != 3 || sps[0].Confidence >= Confident {
		t.Errorf("three writes reaching the same refused pods: %+v, want three, none confident", sps)
	}
}

// Admission judges each pod by what it is: a namespace labelled to
// enforce a Pod Security profile refuses the pods of the one workload
// that does not comply, and admits its neighbours' after it. Their pods
// admitted after the write neither clear it nor count against it; the
// refused workload's own last pod, admitted before it, bounds the window.
// A quota is the namespace's shared budget: a pod of any workload
// admitted after a write to it was admitted under it. A refusal worded as
// a quota's was not made by the namespace's labels.
func TestAdmissionSuspectsJudgeEachWorkload(t *testing.T) {
	const rsc = "system:serviceaccount:kube-system:replicaset-controller"
	s := (&timelinetest.Mem{}).Add([]*timeline.Record{
		request(2, "alice", "patch", "namespaces", "", "ml", 200), // before api's last admitted pod
		request(10, rsc, "create", "pods", "ml", "", 201),
		request(12, "bob", "patch", "namespaces", "", "ml", 200),                // the change
		request(14, "carol", "update", "resourcequotas", "ml", "pods-cap", 200), // the neighbour's pod was admitted under it since
		request(25, rsc, "create", "pods", "ml", "", 201),                       // the neighbour's, admitted
		request(27, "carol", "update", "resourcequotas", "ml", "pods-cap", 200),
		request(28, rsc, "create", "pods", "ml", "", 201), // admitted under it
		request(30, rsc, "create", "pods", "ml", "", 403),
	}...)
	msg := `Error creating: pods "api-5f6d-x" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true`
	units := []*outcome.Unit{unbornUnit("1", 30, msg), goodUnit("ml", "api-0", 10, 40), goodUnit("ml", "web-0", 25, 40), goodUnit("ml", "web-1", 28, 40)}
	ids := []map[string]identity.Dimension{idOf("owner/Deployment", "api", "owner.podTemplateHash", "5f6d"),
		idOf("owner/Deployment", "api", "owner.podTemplateHash", "77aa"), idOf("owner/Deployment", "web", "owner.podTemplateHash", "9c9c"),
		idOf("owner/Deployment", "web", "owner.podTemplateHash", "9c9c")}
	got, err := admissionSuspects(context.Background(), s, units, ids, map[string]string{"owner.podTemplateHash": "5f6d"}, at(0), at(40))
	if err != nil {
		t.Fatal(err)
	}
	want := []brief{{"Namespace/ml", "labels", "bob", []string{"ReplicaSet/ml/api-5f6d/1"}}, {"ResourceQuota/ml/pods-cap", "spec", "carol", []string{"Pod/ml/web-1"}}}
	if diff := cmp.Diff(want, briefsOf(got, units)); diff != "" {
		t.Errorf("admission suspects (-want +got)\n%s", diff)
	}
	// Its undo stops enforcing the profile the pods were refused by.
	if a := undo(&Report{}, *got[0]); len(a) != 1 || a[0].Command != "kubectl label namespace ml pod-security.kubernetes.io/enforce-" {
		t.Errorf("mitigation %+v: want the namespace's enforce label removed", a)
	}
	units[0].Message = `Error creating: pods "api-5f6d-x" is forbidden: exceeded quota: pods-cap, requested: pods=1, used: pods=20, limited: pods=20`
	got, err = admissionSuspects(context.Background(), s, units, ids, map[string]string{"owner.podTemplateHash": "5f6d"}, at(0), at(40))
	if err != nil {
		t.Fatal(err)
	}
	want = []brief{{"Namespace/ml", "labels", "bob", nil}, {"ResourceQuota/ml/pods-cap", "spec", "carol", []string{"ReplicaSet/ml/api-5f6d/1", "Pod/ml/web-1"}}}
	if diff := cmp.Diff(want, briefsOf(got, units)); diff != "" {
		t.Errorf("a quota's refusal: admission suspects (-want +got)\n%s", diff)
	}
}

func TestRefusedBy(t *testing.T) {
	tests := []struct {
		msg   string
		kinds []string
		known bool
	}{
		{`pods "a" is forbidden: exceeded quota: team, requested: pods=1`, []string{"ResourceQuota"}, true},
		{`Internal error occurred: failed calling webhook "guard.example.com": connection refused`, []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}, true},
		{`admission webhook "deny.example.com" denied the request: no`, []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}, true},
		{`pods "a" is forbidden: ValidatingAdmissionPolicy 'pin' with binding 'pin-b' denied request: failed expression`, []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}, true},
		{`pods "a" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true`, []string{"Namespace"}, true},
		{`pods "a" is forbidden: maximum memory usage per Container is 1Gi, but limit is 2Gi`, []string{"LimitRange"}, true},
		{`pods "a" is forbidden: error looking up service account ml/api: serviceaccount "api" not found`, nil, true},
		{`Error creating: the server could not admit it`, nil, false},
	}
	for _, tt := range tests {
		kinds, known := refusedBy(tt.msg)
		if diff := cmp.Diff(tt.kinds, kinds); diff != "" || known != tt.known {
			t.Errorf("refusedBy(%q) = %v, %v; want %v, %v", tt.msg, kinds, known, tt.kinds, tt.known)
		}
	}
}

// No refused create, no admission suspect: a pod that crashed was admitted.
func TestAdmissionSuspectsNeedARefusal(t *testing.T) {
	s := (&timelinetest.Mem{}).Add([]*timeline.Record{
		request(24, "bob", "create", "validatingwebhookconfigurations", "", "guard", 201),
		request(30, "system:serviceaccount:kube-system:replicaset-controller", "create", "pods", "ml", "", 201),
	}...)
	units := []*outcome.Unit{unbornUnit("1", 32, "quota"), badUnit("ml", "api-0", 30, 35)}
	ids := []map[string]identity.Dimension{idOf("owner/Deployment", "api"), idOf("owner/Deployment", "api")}
	got, err := admissionSuspects(context.Background(), s, units, ids, map[string]string{"owner/Deployment": "api"}, at(0), at(40))
	if err != nil || len(got) != 0 {
		t.Errorf("admissionSuspects = %v, %v; want none", got, err)
	}
}

func TestMentions(t *testing.T) {
	tests := []struct {
		msg, name string
		want      bool
	}{
		{`failed calling webhook "guard.policy.example.com"`, "guard", true},
		{`pods "api-x" is forbidden: exceeded quota: team-budget, requested: pods=1`, "team-budget", true},
		{`failed quota: compute-quota: must specify limits.cpu`, "compute-quota", true},
		{`failed calling webhook "safeguard.example.com"`, "guard", false},
		{`failed calling webhook "guard-v2.example.com"`, "guard", false},
		{`anything`, "", false},
	}
	for _, tt := range tests {
		if got := mentions(tt.msg, tt.name); got != tt.want {
			t.Errorf("mentions(%q, %q) = %v, want %v", tt.msg, tt.name, got, tt.want)
		}
	}
}
