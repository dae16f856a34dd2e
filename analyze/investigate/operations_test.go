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

// The writes to a namespace's disruption budgets that can have refused a
// drain's evictions there: made before the first refusal, and after the
// drain's last eviction answered there (less budgetPropagation); a write
// to another namespace's budget, a deletion and a write after the first
// refusal are none. Each reaches the units refused there.
func TestBudgetSuspects(t *testing.T) {
	const drain = "platform-automation"
	op := outcome.Operation{Verb: "create", Subresource: "eviction", User: drain}
	evict := func(sec float64, code int, ns, name string) *timeline.Record {
		return &timeline.Record{Time: at(sec), Source: timeline.SourceAudit, Verb: "create", Code: code, User: drain,
			Object: timeline.ObjectRef{Resource: "pods", Subresource: "eviction", Namespace: ns, Name: name}}
	}
	budget := func(sec float64, verb, ns, name string) *timeline.Record {
		return &timeline.Record{Time: at(sec), Source: timeline.SourceAudit, Verb: verb, Code: 200, User: "alice@example.com",
			Object: timeline.ObjectRef{Group: "policy", Resource: "poddisruptionbudgets", Namespace: ns, Name: name}}
	}
	refused := func(ns, name string) *outcome.Unit {
		return &outcome.Unit{Ref: "Pod/" + ns + "/" + name, Namespace: ns, Name: name, BadAt: at(100), Target: op, Refusals: 3,
			Message: "Cannot evict pod as it would violate the pod's disruption budget."}
	}
	a, b := refused("serve", "a"), refused("batch", "b")
	good := &outcome.Unit{Ref: "Pod/search/c", Namespace: "search", Name: "c", LastGood: at(90), Target: op}
	units := []*outcome.Unit{a, b, good}
	ids := []map[string]identity.Dimension{{}, {}, {}}
	s := (&timelinetest.Mem{}).Add(
		budget(10, "create", "serve", "early"),   // serve: no eviction answered before: a suspect
		budget(20, "create", "search", "other"),  // another namespace
		budget(30, "delete", "serve", "deleted"), // a deletion refuses nothing
		budget(40, "create", "batch", "before"),  // before batch's last answered eviction (60 s), less 5 s
		evict(60, 201, "batch", "x"),
		budget(58, "patch", "batch", "late"), // within budgetPropagation of it: a suspect
		budget(70, "update", "serve", "main"),
		evict(100, 429, "serve", "a"), evict(100, 429, "batch", "b"),
		budget(110, "create", "serve", "after"), // after the first refusal
	)
	sps, err := operationSuspects(context.Background(), s, units, ids, map[string]string{}, at(0), at(200))
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		Ref, Dimension string
		Reached        []string
	}
	var gots []got
	for _, sp := range sps {
		g := got{Ref: sp.Ref, Dimension: sp.Dimension}
		for _, u := range units {
			if sp.reached[u] {
				g.Reached = append(g.Reached, u.Ref)
			}
		}
		if !sp.budget {
			t.Errorf("%s is not marked a budget's write", sp.Ref)
		}
		gots = append(gots, g)
	}
	want := []got{
		{"PodDisruptionBudget/batch/late", "spec", []string{"Pod/batch/b"}},
		{"PodDisruptionBudget/serve/early", "created", []string{"Pod/serve/a"}},
		{"PodDisruptionBudget/serve/main", "spec", []string{"Pod/serve/a"}},
	}
	if diff := cmp.Diff(want, gots); diff != "" {
		t.Errorf("suspects (-want +got):\n%s", diff)
	}
}

// A refused eviction for a budget is no rollback of a workload's arrival:
// the mitigation removes or corrects the budget.
func TestUndoBudget(t *testing.T) {
	a := undoBudget(Suspect{Ref: "PodDisruptionBudget/serve/main", Dimension: "created"})
	if diff := cmp.Diff(Action{Action: "rollback", Target: "PodDisruptionBudget/serve/main",
		Why:     "remove it, or correct it to allow at least one pod down (maxUnavailable: 1), so the refused evictions go through and the drain finishes",
		Command: "kubectl delete poddisruptionbudget/main -n serve", Verify: "kubectl get poddisruptionbudget/main -n serve"}, a); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// When every unit that went bad went bad by a refused operation from
// outside it, the units in scope are those the operations were tried on;
// when some went bad of themselves, the operations' bad targets are left
// out, as before such units existed.
func TestInScopeTargets(t *testing.T) {
	op := outcome.Operation{Verb: "create", Subresource: "eviction", User: "platform-automation"}
	target := &outcome.Unit{Ref: "Pod/ml/t", BadAt: at(50), Target: op}
	evicted := &outcome.Unit{Ref: "Pod/ml/e", LastGood: at(40), Target: op}
	idle := &outcome.Unit{Ref: "Pod/ml/i", LastGood: at(10)}
	crashed := &outcome.Unit{Ref: "Pod/ml/c", BadAt: at(60), LastGood: at(10)}
	noise := &outcome.Unit{Ref: "Pod/ml/n", BadAt: at(1)}
	// Evicted by the operation's answer: bad for its own story.
	answered := &outcome.Unit{Ref: "Pod/ml/a", BadAt: at(45), Reason: "Evicted", LastGood: at(10), Target: op, AnsweredAt: at(44)}
	refs := func(us []*outcome.Unit) []string {
		var out []string
		for _, u := range us {
			out = append(out, u.Ref)
		}
		return out
	}
	tests := []struct {
		name  string
		units []*outcome.Unit
		want  []string
		n     UnitCounts
	}{
		{"only targets went bad", []*outcome.Unit{target, evicted, idle, noise}, []string{"Pod/ml/t", "Pod/ml/e"}, UnitCounts{Bad: 1, Good: 1, Noise: 1}},
		{"a pod failed of itself", []*outcome.Unit{target, evicted, idle, crashed, noise}, []string{"Pod/ml/e", "Pod/ml/i", "Pod/ml/c"},
			UnitCounts{Bad: 1, Good: 2, Noise: 1}},
		{"no target", []*outcome.Unit{idle, crashed}, []string{"Pod/ml/i", "Pod/ml/c"}, UnitCounts{Bad: 1, Good: 1}},
		{"a pod the operation evicted is good for it", []*outcome.Unit{target, answered, idle}, []string{"Pod/ml/t", "Pod/ml/a"}, UnitCounts{Bad: 1, Good: 1}},
		{"and itself when another pod failed of itself", []*outcome.Unit{target, answered, crashed}, []string{"Pod/ml/a", "Pod/ml/c"}, UnitCounts{Bad: 2}},
		{"no refusal in the window: the eviction is the pod's own story", []*outcome.Unit{answered, idle}, []string{"Pod/ml/a", "Pod/ml/i"}, UnitCounts{Bad: 1, Good: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n UnitCounts
			units, _ := inScope(&outcome.Outcomes{Units: tt.units}, at(20), &n)
			if diff := cmp.Diff(tt.want, refs(units)); diff != "" {
				t.Errorf("units in scope (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.n, n); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
			for _, u := range units {
				if u.Ref == "Pod/ml/a" && u.Bad() != (tt.n.Bad == 2 || tt.name[:2] == "no") {
					t.Errorf("the evicted pod in scope: bad %v", u.Bad())
				}
			}
			if !answered.Bad() {
				t.Error("the scope changed the evicted pod's own story")
			}
		})
	}
}

// A change of nodes' state reaches the good units on its nodes seen good
// at or after it, as it reaches the bad ones it found running: a cordon
// that reached every pod of a drain, those evicted without trouble too,
// does not tell them apart.
func TestSupportOfNodeChangeGoodHold(t *testing.T) {
	node := func(n string) map[string]identity.Dimension {
		return map[string]identity.Dimension{"node": {Name: "node", Value: n}}
	}
	bad := &outcome.Unit{Created: at(0), BadAt: at(50)}
	foundRunning := &outcome.Unit{Created: at(0), LastGood: at(45)} // seen good after the cordon
	startedAfter := &outcome.Unit{Created: at(60), LastGood: at(65)}
	before := &outcome.Unit{Created: at(0), LastGood: at(5)} // last seen good before it
	elsewhere := &outcome.Unit{Created: at(0), LastGood: at(45)}
	units := []*outcome.Unit{bad, foundRunning, startedAfter, before, elsewhere}
	ids := []map[string]identity.Dimension{node("n1"), node("n2"), node("n2"), node("n3"), node("n4")}
	sp := &Suspect{Dimension: "node.unschedulable", To: "true", Kind: "change", At: at(40), refs: []string{"Node/n1", "Node/n2", "Node/n3"}}
	p := population{bad: []int{0}, good: []int{1, 2, 3, 4}}
	got := p.supportOfNodeChange(units, ids, sp)
	if diff := cmp.Diff(support{badHold: 1, bad: 1, goodHold: 2, good: 4}, got, cmp.AllowUnexported(support{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// Three pods of one Deployment had every eviction of a drain refused, ten
// times each; the one other pod it tried was evicted at once. Three units
// against one are too few for a slice; the thirty refusals held against
// one answer are not. The slice is sized in units all the same.
func TestSliceWeighsRetries(t *testing.T) {
	op := outcome.Operation{Verb: "create", Subresource: "eviction", User: "platform-automation"}
	id := func(owner, node string) map[string]identity.Dimension {
		return map[string]identity.Dimension{"owner/Deployment": {Name: "owner/Deployment", Value: owner}, "node": {Name: "node", Value: node}}
	}
	run := func(refusals int) *Slice {
		t.Helper()
		var units []*outcome.Unit
		for range 3 {
			units = append(units, &outcome.Unit{BadAt: at(50), Target: op, Refusals: refusals})
		}
		units = append(units, &outcome.Unit{LastGood: at(50), Target: op})
		ids := []map[string]identity.Dimension{id("gateway", "n1"), id("gateway", "n2"), id("gateway", "n3"), id("ranker", "n4")}
		sl, err := findSlice(context.Background(), units, ids)
		if err != nil {
			t.Fatal(err)
		}
		return sl
	}
	if sl := run(1); sl != nil {
		t.Errorf("one refusal each: slice %v, want none (3 units against 1)", sl.Where)
	}
	sl := run(10)
	if sl == nil {
		t.Fatal("ten refusals each: no slice")
	}
	if diff := cmp.Diff(map[string]string{"owner/Deployment": "gateway"}, sl.Where); diff != "" {
		t.Errorf("slice (-want +got):\n%s", diff)
	}
	if sl.Bad != 3 || sl.Total != 3 {
		t.Errorf("slice of %d bad of %d, want 3 of 3 units", sl.Bad, sl.Total)
	}
}

// An eviction refused by a webhook that could not be called: the writes
// to admission configurations before it are suspects, those it names
// alone when it names one; a budget's write refused none of it. An
// eviction refused for a budget was refused by no webhook.
func TestOperationSuspectsAdmission(t *testing.T) {
	const drain = "platform-automation"
	op := outcome.Operation{Verb: "create", Subresource: "eviction", User: drain}
	evict := func(sec float64, code int, ns, name string) *timeline.Record {
		return &timeline.Record{Time: at(sec), Source: timeline.SourceAudit, Verb: "create", Code: code, User: drain,
			Object: timeline.ObjectRef{Resource: "pods", Subresource: "eviction", Namespace: ns, Name: name}}
	}
	write := func(sec float64, group, resource, ns, name string) *timeline.Record {
		return &timeline.Record{Time: at(sec), Source: timeline.SourceAudit, Verb: "create", Code: 201, User: "alice@example.com",
			Object: timeline.ObjectRef{Group: group, Resource: resource, Namespace: ns, Name: name}}
	}
	hooked := &outcome.Unit{Ref: "Pod/serve/a", Namespace: "serve", Name: "a", BadAt: at(100), Target: op, Refusals: 2,
		Message: `Internal error occurred: failed calling webhook "guard.policy.example.com": failed to call webhook: connection refused`}
	budgeted := &outcome.Unit{Ref: "Pod/batch/b", Namespace: "batch", Name: "b", BadAt: at(100), Target: op, Refusals: 2,
		Message: "Cannot evict pod as it would violate the pod's disruption budget."}
	units := []*outcome.Unit{hooked, budgeted}
	ids := []map[string]identity.Dimension{{}, {}}
	s := (&timelinetest.Mem{}).Add(
		write(10, "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", "guard"),
		write(20, "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", "audit"), // named by no refusal
		write(30, "policy", "poddisruptionbudgets", "serve", "a"),                                 // refused nothing there
		write(40, "policy", "poddisruptionbudgets", "batch", "b"),
		evict(100, 500, "serve", "a"), evict(100, 429, "batch", "b"),
	)
	sps, err := operationSuspects(context.Background(), s, units, ids, map[string]string{}, at(0), at(200))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{} // a write that reached no refused unit is no suspect
	for _, sp := range sps {
		got[sp.Ref] = nil
		for _, u := range units {
			if sp.reached[u] {
				got[sp.Ref] = append(got[sp.Ref], u.Ref)
			}
		}
	}
	want := map[string][]string{
		"PodDisruptionBudget/batch/b":          {"Pod/batch/b"},
		"ValidatingWebhookConfiguration/guard": {"Pod/serve/a"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reached (-want +got):\n%s", diff)
	}
	for _, sp := range sps {
		if sp.named != (sp.Ref == "ValidatingWebhookConfiguration/guard") {
			t.Errorf("%s named %v: only the webhook the refusal names is", sp.Ref, sp.named)
		}
		if sp.Ref == "ValidatingWebhookConfiguration/guard" {
			a := undoAdmission(*sp)
			if want := "remove it, or make it fail open (failurePolicy: Ignore) until what it calls answers, so the refused create pods/eviction requests go through"; a.Why != want {
				t.Errorf("mitigation %q, want %q", a.Why, want)
			}
		}
	}
}

// Two pods refused against one evicted: a webhook created before them is
// no surer than the split, unless every refusal names it; then the
// apiserver's attribution stands in for the contrast, and only how few
// bad units show it discounts it.
func TestNamedCreationConfidence(t *testing.T) {
	op := outcome.Operation{Verb: "create", Subresource: "eviction", User: "platform-automation"}
	msg := `Internal error occurred: failed calling webhook "guard.policy.example.com": connection refused`
	a := &outcome.Unit{Ref: "Pod/serve/a", Namespace: "serve", BadAt: at(100), Target: op, Message: msg}
	b := &outcome.Unit{Ref: "Pod/serve/b", Namespace: "serve", BadAt: at(100), Target: op, Message: msg}
	good := &outcome.Unit{Ref: "Pod/search/c", Namespace: "search", LastGood: at(100), Target: op, AnsweredAt: at(100)}
	units := []*outcome.Unit{a, b, good}
	ids := []map[string]identity.Dimension{{}, {}, {}}
	score := func(named bool) float64 {
		t.Helper()
		sp := &Suspect{Ref: "ValidatingWebhookConfiguration/guard", Dimension: "created", To: "created", At: at(50), Kind: "change",
			admits: "guard", named: named, reached: map[*outcome.Unit]bool{a: true, b: true}}
		in := scoring{units: units, ids: ids, pop: populationOf(units, "serve"), firstBad: at(100)}
		out := scoreSuspects([]*Suspect{sp}, in)
		if len(out) != 1 {
			t.Fatalf("%d suspects", len(out))
		}
		return out[0].Confidence
	}
	if got := score(false); got >= Confident {
		t.Errorf("unnamed: confidence %.3f, want below %v", got, Confident)
	}
	if got := score(true); got != round3(2.0/3) {
		t.Errorf("named: confidence %.3f, want %.3f", got, round3(2.0/3))
	}
}

// A write is named when every bad unit it reached was refused in words
// that name its object, and by at least one.
func TestNamedByAll(t *testing.T) {
	naming := &outcome.Unit{BadAt: at(1), Message: `failed calling webhook "guard.policy.example.com"`}
	other := &outcome.Unit{BadAt: at(1), Message: `failed calling webhook "audit.policy.example.com"`}
	good := &outcome.Unit{LastGood: at(1)}
	for _, tt := range []struct {
		name    string
		reached []*outcome.Unit
		want    bool
	}{
		{"every refusal names it", []*outcome.Unit{naming, good}, true},
		{"one refusal names another", []*outcome.Unit{naming, other}, false},
		{"no bad unit", []*outcome.Unit{good}, false},
	} {
		sp := &Suspect{admits: "guard", reached: map[*outcome.Unit]bool{}}
		for _, u := range tt.reached {
			sp.reached[u] = true
		}
		if got := namedByAll(sp); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
