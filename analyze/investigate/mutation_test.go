package investigate

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// admittedID is an identity whose memory limit was set at admission by.
func admittedID(hash, limit, by string) map[string]identity.Dimension {
	id := idOf("owner.podTemplateHash", hash)
	if limit != "" {
		id["resources/main/limits.memory"] = identity.Dimension{Name: "resources/main/limits.memory", Value: limit, Admission: by}
	}
	return id
}

// The pods of a restart in namespace ml are created at 30 s with a memory
// limit their template does not give, and crash. Of the admission writes
// before, only those governing ml, before the first such pod was created,
// can have set it; when the pods say their LimitRanger set it, only a
// LimitRange's.
func TestMutationSuspects(t *testing.T) {
	s := (&timelinetest.Mem{}).Add([]*timeline.Record{
		request(10, "alice", "create", "mutatingwebhookconfigurations", "", "labels", 201),
		request(12, "alice", "create", "limitranges", "ops", "mem-defaults", 201), // another namespace
		request(14, "bob", "create", "limitranges", "ml", "mem-defaults", 201),    // the change
		request(16, "bob", "patch", "namespaces", "", "ml", 200),
		request(18, "bob", "create", "limitranges", "ml", "refused", 403),
		request(31, "bob", "create", "limitranges", "ml", "late", 201), // after the first pod was created
	}...)
	units := []*outcome.Unit{badUnit("ml", "api-a", 30, 32), badUnit("ml", "api-b", 30, 33),
		goodUnit("ml", "api-0", 0, 40), goodUnit("ml", "web-0", 31, 40), goodUnit("ml", "old-0", 5, 40)}
	where := map[string]string{"owner.podTemplateHash": "5f6d"}
	run := func(by, goodLimit, oldLimit string) ([]*Suspect, []Suspect) {
		t.Helper()
		ids := []map[string]identity.Dimension{admittedID("5f6d", "256Mi", by), admittedID("5f6d", "256Mi", by),
			admittedID("77aa", "", ""), admittedID("9c0e", goodLimit, by), admittedID("1b2c", oldLimit, by)}
		got, err := mutationSuspects(context.Background(), s, units, ids, where, at(0), at(32))
		if err != nil {
			t.Fatal(err)
		}
		return got, scoreSuspects(got, scoring{units: units, ids: ids, pop: populationOf(units, "ml"), firstBad: at(32)})
	}

	got, sps := run(identity.ByLimitRange, "", "")
	want := []brief{{"LimitRange/ml/mem-defaults", "created", "bob", []string{"Pod/ml/api-a", "Pod/ml/api-b"}}}
	if diff := cmp.Diff(want, briefsOf(got, units)); diff != "" {
		t.Errorf("set by the LimitRanger (-want +got)\n%s", diff)
	}
	if len(sps) != 1 || sps[0].Confidence < Confident || !strings.Contains(sps[0].Why, "resources/main/limits.memory = 256Mi") {
		t.Errorf("suspects %+v: want the LimitRange, confident, saying what it set", sps)
	}
	if a := undo(&Report{}, sps[0]); len(a) != 1 || a[0].Command != "kubectl delete limitrange/mem-defaults -n ml" || !strings.Contains(a[0].Why, "restart") {
		t.Errorf("mitigation %+v: want the LimitRange removed and the workload restarted", a)
	}

	// Set by something the pods do not name: every write governing ml
	// competes, and none is confident.
	got, sps = run(identity.ByAdmission, "", "")
	want = []brief{
		{"MutatingWebhookConfiguration/labels", "created", "alice", []string{"Pod/ml/api-a", "Pod/ml/api-b"}},
		{"LimitRange/ml/mem-defaults", "created", "bob", []string{"Pod/ml/api-a", "Pod/ml/api-b"}},
		{"Namespace/ml", "labels", "bob", []string{"Pod/ml/api-a", "Pod/ml/api-b"}},
	}
	if diff := cmp.Diff(want, briefsOf(got, units)); diff != "" {
		t.Errorf("set by an unnamed mutator (-want +got)\n%s", diff)
	}
	if len(sps) != 3 || sps[0].Confidence >= Confident {
		t.Errorf("three writes reaching the same pods: %+v, want three, none confident", sps)
	}

	// A pod created after it, given the same value, that stayed good is
	// evidence against it.
	got, _ = run(identity.ByLimitRange, "256Mi", "")
	want = []brief{{"LimitRange/ml/mem-defaults", "created", "bob", []string{"Pod/ml/api-a", "Pod/ml/api-b", "Pod/ml/web-0"}}}
	if diff := cmp.Diff(want, briefsOf(got, units)); diff != "" {
		t.Errorf("a good pod set alike (-want +got)\n%s", diff)
	}

	// A value a pod created before it already had was not set by it (a
	// sidecar every pod of a mesh has long had): it reaches no one.
	got, _ = run(identity.ByLimitRange, "", "256Mi")
	want = []brief{{"LimitRange/ml/mem-defaults", "created", "bob", nil}}
	if diff := cmp.Diff(want, briefsOf(got, units)); diff != "" {
		t.Errorf("a value had before (-want +got)\n%s", diff)
	}
}

// Nothing set at admission, no mutation suspect: the pods run as their
// template asks.
func TestMutationSuspectsNeedAnAdmittedValue(t *testing.T) {
	s := (&timelinetest.Mem{}).Add(request(14, "bob", "create", "limitranges", "ml", "mem-defaults", 201))
	units := []*outcome.Unit{badUnit("ml", "api-a", 30, 32)}
	ids := []map[string]identity.Dimension{idOf("owner.podTemplateHash", "5f6d", "resources/main/limits.memory", "256Mi")}
	got, err := mutationSuspects(context.Background(), s, units, ids, map[string]string{"owner.podTemplateHash": "5f6d"}, at(0), at(32))
	if err != nil || len(got) != 0 {
		t.Errorf("mutationSuspects = %v, %v; want none", got, err)
	}
}

// With no confident cause, the next steps say what the bad units were
// given at admission and where to look; a value from their template says
// nothing of admission.
func TestAdmittedHint(t *testing.T) {
	units := []*outcome.Unit{badUnit("ml", "api-a", 30, 32), badUnit("ml", "api-b", 30, 33), goodUnit("ml", "api-0", 0, 40)}
	for _, tc := range []struct {
		by, want string
	}{
		{identity.ByLimitRange, "2 bad units were created with resources/main/limits.memory = 256Mi, which their template does not give: set at admission, by a LimitRange's defaults: kubectl get limitrange -n ml"},
		{identity.ByAdmission, "2 bad units were created with resources/main/limits.memory = 256Mi, which their template does not give: set at admission, by a mutating webhook or admission policy: kubectl get mutatingwebhookconfigurations,mutatingadmissionpolicies"},
		{"", ""},
	} {
		rep := &Report{units: units,
			ids:            []map[string]identity.Dimension{admittedID("5f6d", "256Mi", tc.by), admittedID("5f6d", "256Mi", tc.by), admittedID("77aa", "", "")},
			Slice:          &Slice{Where: map[string]string{"owner.podTemplateHash": "5f6d"}},
			Counterexample: &Counterexample{Differs: []Differ{{Dimension: "owner.podTemplateHash", Bad: "5f6d", Good: "77aa"}, {Dimension: "resources/main/limits.memory", Bad: "256Mi"}}}}
		if got := admittedHint(rep); got != tc.want {
			t.Errorf("admission %q: hint %q, want %q", tc.by, got, tc.want)
		}
	}
}

// A value the bad units were given at admission differs from the
// counterexample's, but no write to their workload made it: no candidate
// laid at the workload (mutationSuspects finds the write). One their
// template gives is a candidate.
func TestAdmittedDifferenceIsNoWorkloadChange(t *testing.T) {
	units := []*outcome.Unit{badUnit("ml", "api-a", 30, 32), goodUnit("ml", "api-0", 0, 40)}
	ce := &Counterexample{Differs: []Differ{{Dimension: "resources/main/limits.memory", Bad: "256Mi", Good: "512Mi"}}}
	for _, tc := range []struct {
		by   string
		want int
	}{{identity.ByLimitRange, 0}, {"", 1}} {
		ids := []map[string]identity.Dimension{admittedID("5f6d", "256Mi", tc.by), admittedID("77aa", "512Mi", tc.by)}
		cs := &candidates{byKey: map[candidateKey]*Suspect{}}
		cs.addDifferences(ce, units, ids, "Deployment/ml/api")
		if len(cs.order) != tc.want {
			t.Errorf("admission %q: candidates %v, want %d", tc.by, cs.order, tc.want)
		}
	}
}
