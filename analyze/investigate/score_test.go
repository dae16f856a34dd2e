package investigate

import (
	"math/big"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
)

// Helpers shared by the rule tests of this package: units and identities
// built by hand, no fixture, no store.

// badUnit went bad at bad seconds, having started at created.
func badUnit(ns, name string, created, bad float64) *outcome.Unit {
	return &outcome.Unit{Ref: "Pod/" + ns + "/" + name, Namespace: ns, Name: name, Created: at(created), BadAt: at(bad)}
}

// goodUnit was last seen good at lastGood, having started at created.
func goodUnit(ns, name string, created, lastGood float64) *outcome.Unit {
	return &outcome.Unit{Ref: "Pod/" + ns + "/" + name, Namespace: ns, Name: name, Created: at(created), LastGood: at(lastGood)}
}

// idOf is an identity from name, value pairs.
func idOf(kv ...string) map[string]identity.Dimension {
	id := map[string]identity.Dimension{}
	for i := 0; i+1 < len(kv); i += 2 {
		id[kv[i]] = identity.Dimension{Name: kv[i], Value: kv[i+1]}
	}
	return id
}

// hyperTail is the one-sided Fisher exact test computed apart from
// pValue: exact rationals over binomial coefficients, P(X >= badHold) for
// X hypergeometric (bad+good units, badHold+goodHold holders, bad drawn).
func hyperTail(bad, badHold, good, goodHold int) float64 {
	n, k := int64(bad+good), int64(badHold+goodHold)
	sum := new(big.Int)
	for a := int64(badHold); a <= min(k, int64(bad)); a++ {
		if k-a > int64(good) {
			continue
		}
		term := new(big.Int).Binomial(int64(bad), a)
		term.Mul(term, new(big.Int).Binomial(int64(good), k-a))
		sum.Add(sum, term)
	}
	f, _ := new(big.Rat).SetFrac(sum, new(big.Int).Binomial(n, k)).Float64()
	return f
}

func TestScorePValue(t *testing.T) {
	tests := []struct {
		name string
		s    support
		want float64
	}{
		// By hand: 6 units, 2 hold the value, both bad: C(3,2)C(3,0)/C(6,2) = 3/15.
		{"2 of 3 bad, 0 of 3 good", support{badHold: 2, bad: 3, goodHold: 0, good: 3}, 3.0 / 15},
		// By hand: C(4,3)C(4,1)/C(8,4) + C(4,4)C(4,0)/C(8,4) = 16/70 + 1/70.
		{"3 of 4 bad, 1 of 4 good", support{badHold: 3, bad: 4, goodHold: 1, good: 4}, 17.0 / 70},
		// Every split at least as extreme as none at all: certain.
		{"0 of 2 bad, 2 of 2 good", support{badHold: 0, bad: 2, goodHold: 2, good: 2}, 1},
		{"10 of 10 bad, 0 of 30 good", support{badHold: 10, bad: 10, goodHold: 0, good: 30}, hyperTail(10, 10, 30, 0)},
		{"5 of 10 bad, 15 of 30 good", support{badHold: 5, bad: 10, goodHold: 15, good: 30}, hyperTail(10, 5, 30, 15)},
		{"7 of 12 bad, 3 of 25 good", support{badHold: 7, bad: 12, goodHold: 3, good: 25}, hyperTail(12, 7, 25, 3)},
		{"1 of 1 bad, 0 of 30 good", support{badHold: 1, bad: 1, goodHold: 0, good: 30}, 1.0 / 31},
		// Without a good unit there is no table: no evidence against chance.
		{"no good unit", support{badHold: 10, bad: 10}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.s.pValue(), cmpopts.EquateApprox(1e-9, 1e-15)); diff != "" {
				t.Errorf("pValue (-want +got)\n%s", diff)
			}
		})
	}
	// The hand values agree with the independent computation too.
	if diff := cmp.Diff(17.0/70, hyperTail(4, 3, 4, 1), cmpopts.EquateApprox(1e-12, 0)); diff != "" {
		t.Errorf("hyperTail (-want +got)\n%s", diff)
	}
}

func TestScoreConfidence(t *testing.T) {
	type result struct{ Strength, Confidence float64 }
	clean := support{badHold: 10, bad: 10, goodHold: 0, good: 30}
	cleanConf := (1 - hyperTail(10, 10, 30, 0)) * 10 / 11 // ~0.909
	half := support{badHold: 5, bad: 10, goodHold: 15, good: 30}
	tests := []struct {
		name        string
		s           support
		competitors int
		want        result
		confident   bool
	}{
		{"10/10 bad hold, 0/30 good: high", clean, 0, result{1, cleanConf}, true},
		{"the same split with one bad unit: one failure is no pattern",
			support{badHold: 1, bad: 1, goodHold: 0, good: 30}, 0, result{1, (1 - 1.0/31) / 2}, false},
		{"good units hold it as much as bad: nothing",
			support{badHold: 10, bad: 10, goodHold: 30, good: 30}, 0, result{0, 0}, false},
		{"half of each: near nothing", half, 0,
			result{0.25, 0.25 * (1 - hyperTail(10, 5, 30, 15)) * 10 / 11}, false}, // ~0.081
		{"one competitor halves it", clean, 1, result{1, cleanConf / 2}, false},
		{"two competitors: a third", clean, 2, result{1, cleanConf / 3}, false},
		// No comparable good unit: the contrast is unknown, strength 1/2,
		// and with no table to test the split, no confidence at all.
		{"no good unit: strength capped at 1/2", support{badHold: 10, bad: 10}, 0, result{0.5, 0}, false},
		{"no bad unit", support{goodHold: 3, good: 30}, 0, result{0, 0}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := result{tt.s.strength(), tt.s.confidence(tt.competitors)}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(1e-9, 1e-12)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			if c := got.Confidence >= Confident; c != tt.confident {
				t.Errorf("confidence %.3f >= Confident = %v, want %v", got.Confidence, c, tt.confident)
			}
		})
	}
	if c := half.confidence(0); c >= 0.1 {
		t.Errorf("a value held by half of each side has confidence %.3f, want near 0 (< 0.1)", c)
	}
}

func TestScoreReason(t *testing.T) {
	tests := []struct {
		name        string
		s           support
		competitors int
		want        string
	}{
		{"clean", support{badHold: 2, bad: 3, good: 3}, 0,
			"2 of 3 bad units hold it, 0 of 3 comparable good units; p=0.2 by chance"},
		{"one competitor", support{badHold: 2, bad: 3, good: 3}, 1,
			"2 of 3 bad units hold it, 0 of 3 comparable good units; p=0.2 by chance; 1 other change explains the same units"},
		{"two competitors", support{badHold: 2, bad: 3, good: 3}, 2,
			"2 of 3 bad units hold it, 0 of 3 comparable good units; p=0.2 by chance; 2 other changes explain the same units"},
		{"no good unit", support{badHold: 4, bad: 4}, 0,
			"4 of 4 bad units hold it, no comparable good unit to contrast; p=1 by chance"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.s.reason(tt.competitors)); diff != "" {
				t.Errorf("reason (-want +got)\n%s", diff)
			}
		})
	}
}

func TestScorePopulation(t *testing.T) {
	units := []*outcome.Unit{
		badUnit("ml", "train-0", 0, 100),
		badUnit("ml", "train-1", 0, 101),
		goodUnit("ml", "eval-0", 0, 110),
		goodUnit("ml", "eval-1", 0, 110),
		goodUnit("web", "api-0", 0, 110),
		badUnit("web", "api-1", 0, 102),                       // bad elsewhere: still a bad unit in scope
		{Ref: "Pod/ml/ghost", Namespace: "ml", Name: "ghost"}, // no known fate
	}
	tests := []struct {
		ns   string
		want population
	}{
		{"ml", population{bad: []int{0, 1, 5}, good: []int{2, 3}}},
		{"web", population{bad: []int{0, 1, 5}, good: []int{4}}},
		// A namespace with no good unit is compared with every good unit.
		{"batch", population{bad: []int{0, 1, 5}, good: []int{2, 3, 4}}},
	}
	for _, tt := range tests {
		t.Run(tt.ns, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, populationOf(units, tt.ns), cmp.AllowUnexported(population{})); diff != "" {
				t.Errorf("populationOf (-want +got)\n%s", diff)
			}
		})
	}
}

// A ConfigMap (or Secret) changed at 50 s. A bad unit that started before
// it and went bad after it ran with it (mounted config is updated in
// place); a good unit that started before it does not hold it; a node's
// identity is pinned at pod start and has no such exposure.
func TestScoreSupportOf(t *testing.T) {
	change := at(50)
	units := []*outcome.Unit{
		badUnit("ml", "exposed", 10, 100),    // 0: started before, bad after: holds it
		badUnit("ml", "new", 60, 100),        // 1: started after with the new value
		badUnit("ml", "early", 10, 40),       // 2: bad before the change: does not
		badUnit("ml", "unmounted", 10, 100),  // 3: never read the object: does not
		goodUnit("ml", "old", 10, 45),        // 4: started before: does not
		goodUnit("ml", "fresh", 60, 110),     // 5: started after with the new value: holds it
		goodUnit("ml", "old-long", 10, 110),  // 6: started before, still good after: does not
		goodUnit("ml", "other-old", 60, 110), // 7: old value however late it started
	}
	idsFor := func(dim string) []map[string]identity.Dimension {
		return []map[string]identity.Dimension{
			idOf(dim, "a"), idOf(dim, "b"), idOf(dim, "a"), idOf(),
			idOf(dim, "a"), idOf(dim, "b"), idOf(dim, "a"), idOf(dim, "a"),
		}
	}
	pop := populationOf(units, "ml")
	tests := []struct {
		name string
		dim  string
		at   time.Time
		want support
	}{
		{"configmap key: exposure", "configmap/env/LR", change, support{badHold: 2, bad: 4, goodHold: 1, good: 4}},
		{"whole configmap: exposure", "configmap/env", change, support{badHold: 2, bad: 4, goodHold: 1, good: 4}},
		{"secret key: exposure", "secret/creds/token", change, support{badHold: 2, bad: 4, goodHold: 1, good: 4}},
		{"node label: no exposure", "node.label/nvidia.com/cuda.driver.major", change, support{badHold: 1, bad: 4, goodHold: 1, good: 4}},
		{"node kernel: no exposure", "node.kernel", change, support{badHold: 1, bad: 4, goodHold: 1, good: 4}},
		{"a difference (no instant): no exposure", "configmap/env/LR", time.Time{}, support{badHold: 1, bad: 4, goodHold: 1, good: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := pop.supportOf(units, idsFor(tt.dim), tt.dim, "b", tt.at)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(support{})); diff != "" {
				t.Errorf("supportOf (-want +got)\n%s", diff)
			}
		})
	}
}

func TestScoreSupportOfOwner(t *testing.T) {
	units := []*outcome.Unit{
		badUnit("ml", "storm-0", 10, 100), badUnit("ml", "storm-1", 10, 100), badUnit("ml", "other-0", 10, 100),
		goodUnit("ml", "storm-2", 10, 110), goodUnit("ml", "nb-0", 10, 110), goodUnit("ml", "nb-1", 10, 110),
	}
	ids := []map[string]identity.Dimension{
		idOf("owner/Job", "storm"), idOf("owner/Job", "storm"), idOf("owner/Job", "other"),
		idOf("owner/Job", "storm"), idOf("owner/Deployment", "storm"), idOf("owner/Job", "nb"),
	}
	got := populationOf(units, "ml").supportOfOwner(units, ids, "Job", "storm")
	want := support{badHold: 2, bad: 3, goodHold: 1, good: 3} // a Deployment of the same name is not the Job
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(support{})); diff != "" {
		t.Errorf("supportOfOwner (-want +got)\n%s", diff)
	}
}

func TestScoreCarrier(t *testing.T) {
	got := map[string]bool{}
	for _, d := range []string{
		"owner.podTemplateHash", "owner.controllerRevision", "owner/Deployment.generation", "owner/Job", "owner/ReplicaSet",
		"configmap/env/LR", "configmap/env", "secret/creds/token", "image.digest/server", "image.tag/server", "node.kernel", "created",
	} {
		got[d] = carrier(d)
	}
	want := map[string]bool{
		"owner.podTemplateHash": true, "owner.controllerRevision": true, "owner/Deployment.generation": true, "owner/Job": true, "owner/ReplicaSet": true,
		"configmap/env/LR": false, "configmap/env": false, "secret/creds/token": false, "image.digest/server": false, "image.tag/server": false, "node.kernel": false, "created": false,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("carrier (-want +got)\n%s", diff)
	}
}

func TestScoreLoadShaped(t *testing.T) {
	bad := func(reason, msg string) *outcome.Unit {
		u := badUnit("ml", "w", 0, 100)
		u.Reason, u.Message = reason, msg
		return u
	}
	good := func(msg string) *outcome.Unit {
		u := goodUnit("ml", "g", 0, 100)
		u.Message = msg
		return u
	}
	type result struct {
		Shaped bool
		Load   int
	}
	tests := []struct {
		name  string
		units []*outcome.Unit
		want  result
	}{
		{"all throttled", []*outcome.Unit{
			bad("Error", "giving up: the server has received too many requests (429)"),
			bad("Error", "Get https://10.0.0.1/api/v1/pods: context deadline exceeded"),
			bad("Error", "client rate limiter Wait returned an error: Throttled"),
		}, result{true, 3}},
		{"half is enough", []*outcome.Unit{
			bad("Error", "dial tcp 10.0.0.1:443: connect: connection refused"),
			bad("OOMKilled", ""),
		}, result{true, 1}},
		{"the reason counts too", []*outcome.Unit{bad("Timeout", ""), bad("Error", "etcdserver: request timed out")}, result{true, 2}},
		{"a minority is not", []*outcome.Unit{
			bad("Error", "i/o timeout"), bad("OOMKilled", ""), bad("CrashLoopBackOff", "panic: invalid LR"),
		}, result{false, 1}},
		{"crashes are not load", []*outcome.Unit{bad("OOMKilled", ""), bad("Error", "segmentation fault")}, result{false, 0}},
		{"good units are not looked at", []*outcome.Unit{
			bad("OOMKilled", ""), good("429 Too Many Requests"), good("timed out"),
		}, result{false, 0}},
		{"no bad unit", []*outcome.Unit{good("timed out")}, result{false, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got result
			got.Shaped, got.Load = loadShaped(tt.units)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("loadShaped (-want +got)\n%s", diff)
			}
		})
	}
}

// An image pull that times out says the registry is down for everyone;
// only the registry's throttling says it was asked too much.
func TestLoadShapedPulls(t *testing.T) {
	unit := func(reason, msg string) *outcome.Unit {
		u := badUnit("ml", "p", 0, 10)
		u.Reason, u.Message = reason, msg
		return u
	}
	tests := []struct {
		u    *outcome.Unit
		want bool
	}{
		{unit("ImagePullBackOff", `Back-off pulling image "r/x:1": dial tcp 10.0.0.1:443: i/o timeout`), false},
		{unit("ErrImagePull", "toomanyrequests: You have reached your pull rate limit"), true},
		{unit("CrashLoopBackOff", "dial tcp 10.96.0.1:443: i/o timeout"), true},
		{unit("Error", "listing pods: the server has received too many requests (429)"), true},
	}
	for _, tt := range tests {
		if got, _ := loadShaped([]*outcome.Unit{tt.u}); got != tt.want {
			t.Errorf("loadShaped(%s: %s) = %v, want %v", tt.u.Reason, tt.u.Message, got, tt.want)
		}
	}
}
