package investigate

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

func TestNamedServices(t *testing.T) {
	for msg, want := range map[string][]string{
		`Get "http://feature-store.ml.svc.cluster.local:8080/v1": dial tcp 10.96.1.2:8080: connect: connection refused`: {"ml/feature-store"},
		`dial tcp: lookup db.payments.svc on 10.96.0.10:53: no such host; retry db.payments.svc`:                        {"payments/db"},
		`redis://cache.ml.svc:6379 and grpc://model.serve.svc.cluster.local`:                                            {"ml/cache", "serve/model"},
		`upstream example.com.svc-like.org`:                                                                             nil,
		`connection refused`:                                                                                            nil,
		`a.b.c.svc.cluster.local`:                                                                                       {"c/b"},
	} {
		if diff := cmp.Diff(want, namedServices(msg)); diff != "" {
			t.Errorf("%q (-want +got)\n%s", msg, diff)
		}
	}
}

// The frontend's pods fail naming the backend's Service from 30 s on.
// Writes to that Service before the first bad are suspects: not its
// status, not a write refused, not another Service's, not one after the
// first bad. A write reaches the bad units naming it that failed after it.
func TestServiceSuspects(t *testing.T) {
	status := request(21, "system:serviceaccount:kube-system:service-controller", "update", "services", "ml", "feature-store", 200)
	status.Object.Subresource = "status"
	s := (&timelinetest.Mem{}).Add([]*timeline.Record{
		request(10, "alice", "patch", "services", "ml", "feature-store", 200),
		status,
		request(22, "bob", "patch", "services", "ml", "feature-store", 409),
		request(24, "alice", "patch", "services", "web", "feature-store", 200), // another namespace's
		request(25, "alice", "patch", "services", "ml", "feature-store", 200),
		request(40, "alice", "delete", "services", "ml", "feature-store", 200), // after the first bad
	}...)
	const msg = `Get "http://feature-store.ml.svc.cluster.local:8080/v1": dial tcp 10.96.1.2:8080: connect: connection refused`
	units := []*outcome.Unit{badUnit("ml", "front-0", 0, 30), badUnit("ml", "front-1", 0, 31), badUnit("ml", "front-2", 0, 32),
		goodUnit("ml", "feature-store-0", 0, 50)}
	for _, u := range units[:2] {
		u.Message = msg
	}
	units[2].Message = "OOMKilled" // fails otherwise: names nothing
	ids := []map[string]identity.Dimension{idOf("owner/Deployment", "front"), idOf("owner/Deployment", "front"),
		idOf("owner/Deployment", "front"), idOf("owner/Deployment", "feature-store")}
	got, err := serviceSuspects(context.Background(), s, units, ids, map[string]string{"owner/Deployment": "front"}, at(0), at(30))
	if err != nil {
		t.Fatal(err)
	}
	reached := []string{"Pod/ml/front-0", "Pod/ml/front-1"}
	want := []brief{{"Service/ml/feature-store", "spec", "alice", reached}, {"Service/ml/feature-store", "spec", "alice", reached}}
	if diff := cmp.Diff(want, briefsOf(got, units)); diff != "" {
		t.Errorf("service suspects (-want +got)\n%s", diff)
	}
	if got[1].At != at(25) || !got[1].service {
		t.Errorf("second suspect %+v, want the write at 25 s, a service's", got[1])
	}
	if a := undoService(*got[1]); a.Action != "rollback" || a.Target != "Service/ml/feature-store" ||
		a.Verify != "kubectl get endpointslices -n ml -l kubernetes.io/service-name=feature-store; kubectl get service/feature-store -n ml" {
		t.Errorf("mitigation %+v", a)
	}
}

// The frontend's pods fail naming the backend's Service, whose selector
// (app=feature-store) matches the backend Deployment's pods and not the
// other Deployment's. The backend scaled to zero before the first bad is
// a suspect; the other's change, and the backend's after the first bad,
// are not.
func TestCalleeSuspects(t *testing.T) {
	deployment := func(sec float64, name, app string, replicas int) timeline.ObjectVersion {
		c, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": replicas,
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": app}}}}})
		return timeline.ObjectVersion{Object: timeline.ObjectRef{Group: "apps", Resource: "deployments", Namespace: "ml", Name: name},
			Time: at(sec), Content: c, Evidence: timeline.Evidence{Run: 1, Line: int64(sec)}}
	}
	svc := timeline.ObjectVersion{Object: timeline.ObjectRef{Resource: "services", Namespace: "ml", Name: "feature-store"},
		Time: at(1), Content: json.RawMessage(`{"spec":{"selector":{"app":"feature-store"}}}`)}
	s := &timelinetest.Mem{Vers: []timeline.ObjectVersion{svc,
		deployment(0, "fs-backend", "feature-store", 5), deployment(25, "fs-backend", "feature-store", 0),
		deployment(40, "fs-backend", "feature-store", 5),
		deployment(0, "other", "other", 2), deployment(26, "other", "other", 0),
	}}
	const msg = `Get "http://feature-store.ml.svc.cluster.local:8080/v1": dial tcp 10.96.1.2:8080: connect: connection refused`
	units := []*outcome.Unit{badUnit("ml", "front-0", 0, 30), badUnit("ml", "front-1", 0, 31)}
	for _, u := range units {
		u.Message = msg
	}
	ids := []map[string]identity.Dimension{idOf("owner/Deployment", "front"), idOf("owner/Deployment", "front")}
	got, err := calleeSuspects(context.Background(), s, units, ids, map[string]string{"owner/Deployment": "front"}, at(0), at(30))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Ref != "Deployment/ml/fs-backend" || got[0].Dimension != "spec.replicas" || got[0].From != "5" || got[0].To != "0" {
		t.Fatalf("got %+v, want the backend's scale to zero", got)
	}
	if diff := cmp.Diff([]brief{{"Deployment/ml/fs-backend", "spec.replicas", "", []string{"Pod/ml/front-0", "Pod/ml/front-1"}}}, briefsOf(got, units)); diff != "" {
		t.Errorf("reached (-want +got)\n%s", diff)
	}
	if a := undoCallee(*got[0]); a.Command != "kubectl scale deployment/fs-backend -n ml --replicas=5" ||
		a.Verify != "kubectl get endpointslices -n ml -l kubernetes.io/service-name=feature-store; kubectl get deployment/fs-backend -n ml" {
		t.Errorf("mitigation %+v", a)
	}
}
