package investigate

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/gang"
	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
)

func TestVerdictDecide(t *testing.T) {
	boundary := &Boundary{LastGood: at(90), FirstBad: at(100)}
	lr := func(conf float64) Suspect {
		return Suspect{Rank: 1, Ref: "ConfigMap/ml/env", Dimension: "configmap/env/LR", From: "sha256:a", To: "sha256:b",
			Confidence: conf, ConfidenceWhy: "10 of 10 bad units hold it, 0 of 30 comparable good units; p=1.2e-09 by chance"}
	}
	distinct := gang.Finding{Owner: "Job/train", Ranks: 64, Cascade: 40, Distinct: true, Lead: 2 * time.Second,
		First: gang.Rank{Ref: "Pod/ml/train-7", Rank: "7", Reason: "OOMKilled", ExitCode: 137}}
	type verdict struct {
		Verdict string
		Next    bool // what to collect or mark next is said
	}
	tests := []struct {
		name    string
		rep     Report
		want    verdict
		whyHas  []string // VerdictWhy says this
		nextHas []string // Next says this
	}{
		{"no boundary: nothing went bad", Report{},
			verdict{VerdictNoCause, true}, []string{"nothing went bad"}, []string{"--since", "--bad", "faultline sources"}},
		{"a confident leading suspect is the cause", Report{Boundary: boundary, Units: UnitCounts{Bad: 10, Good: 30},
			Changes: []Suspect{lr(0.909)}},
			verdict{VerdictCause, false}, []string{"ConfigMap/ml/env configmap/env/LR changed", "confidence 0.91", "10 of 10 bad units"}, nil},
		{"Confident itself is enough", Report{Boundary: boundary, Units: UnitCounts{Bad: 10, Good: 30},
			Changes: []Suspect{lr(Confident)}},
			verdict{VerdictCause, false}, []string{"confidence 0.50"}, nil},
		{"a workload's arrival is said so", Report{Boundary: boundary, Units: UnitCounts{Bad: 10, Good: 30},
			Changes: []Suspect{{Ref: "Job/ml/storm", Dimension: "created", To: "Job", Confidence: 0.9}}},
			verdict{VerdictCause, false}, []string{"Job/ml/storm arrived"}, nil},
		{"a rule of admission is created, not arrived", Report{Boundary: boundary, Units: UnitCounts{Bad: 10, Good: 30},
			Changes: []Suspect{{Ref: "LimitRange/ml/defaults", Dimension: "created", To: "created", Confidence: 0.9, admits: "defaults", mutates: true}}},
			verdict{VerdictCause, false}, []string{"LimitRange/ml/defaults was created"}, nil},
		{"a disruption budget is created, not arrived", Report{Boundary: boundary, Units: UnitCounts{Bad: 3, Good: 1},
			Changes: []Suspect{{Ref: "PodDisruptionBudget/ml/api", Dimension: "created", To: "created", Confidence: 0.56, budget: true}}},
			verdict{VerdictCause, false}, []string{"PodDisruptionBudget/ml/api was created"}, nil},
		{"admission set a value, and no cause: where to look", Report{Boundary: boundary, Units: UnitCounts{Bad: 2, Good: 1},
			units:          []*outcome.Unit{badUnit("ml", "api-a", 30, 32), badUnit("ml", "api-b", 30, 33), goodUnit("ml", "api-0", 0, 40)},
			ids:            []map[string]identity.Dimension{admittedID("5f6d", "256Mi", identity.ByLimitRange), admittedID("5f6d", "256Mi", identity.ByLimitRange), admittedID("77aa", "", "")},
			Slice:          &Slice{Where: map[string]string{"owner.podTemplateHash": "5f6d"}},
			Counterexample: &Counterexample{Differs: []Differ{{Dimension: "resources/main/limits.memory", Bad: "256Mi"}}}, Changes: []Suspect{}},
			verdict{VerdictNoCause, true}, []string{"2 units went bad"}, []string{"set at admission", "kubectl get limitrange -n ml"}},
		{"below Confident: no confident cause, and why", Report{Boundary: boundary, Units: UnitCounts{Bad: 10, Good: 30},
			Changes: []Suspect{lr(0.455), {Rank: 2, Ref: "ConfigMap/ml/env", Dimension: "configmap/env/BATCH", Confidence: 0.455}}},
			verdict{VerdictNoCause, true}, []string{"the leading suspect, ConfigMap/ml/env configmap/env/LR, has confidence 0.46"},
			[]string{"faultline bisect good|bad", "10:01:30 .. 10:01:40", "faultline controlplane"}},
		{"a single bad unit is no pattern", Report{Boundary: boundary, Units: UnitCounts{Bad: 1, Good: 30},
			Changes: []Suspect{lr(0.484)}},
			verdict{VerdictNoCause, true}, []string{"1 unit went bad", "one failure is no pattern"}, []string{"faultline bisect"}},
		{"bad units but no change before them", Report{Boundary: boundary, Units: UnitCounts{Bad: 5, Good: 30}, Changes: []Suspect{}},
			verdict{VerdictNoCause, true}, []string{"5 units went bad, but no change"}, []string{"faultline controlplane"}},
		{"a gang's distinct first rank with a cascade is the cause", Report{Boundary: boundary, Units: UnitCounts{Bad: 41, Good: 23},
			Gangs: []gang.Finding{distinct}},
			verdict{VerdictCause, false}, []string{"Pod/ml/train-7 failed first (OOMKilled)", "40 ranks of Job/train"}, nil},
		{"a gang whose first rank died like the rest is not", Report{Boundary: boundary, Units: UnitCounts{Bad: 41, Good: 23},
			Gangs: []gang.Finding{{Owner: "Job/train", Cascade: 40, First: distinct.First}}},
			verdict{VerdictNoCause, true}, []string{"41 units went bad"}, []string{"faultline bisect"}},
		{"a distinct first rank alone is no cascade", Report{Boundary: boundary, Units: UnitCounts{Bad: 1, Good: 63},
			Gangs: []gang.Finding{{Owner: "Job/train", Distinct: true, First: distinct.First}}},
			verdict{VerdictNoCause, true}, []string{"one failure is no pattern"}, nil},
		{"a weak suspect does not hide the gang", Report{Boundary: boundary, Units: UnitCounts{Bad: 41, Good: 23},
			Changes: []Suspect{lr(0.2)}, Gangs: []gang.Finding{distinct}},
			verdict{VerdictCause, false}, []string{"Pod/ml/train-7 failed first"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := tt.rep
			decide(&rep)
			got := verdict{rep.Verdict, len(rep.Next) > 0}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decide (-want +got)\n%s", diff)
			}
			if rep.VerdictWhy == "" || strings.Contains(rep.VerdictWhy, "\n") {
				t.Errorf("VerdictWhy = %q, want one line", rep.VerdictWhy)
			}
			for _, s := range tt.whyHas {
				if !strings.Contains(rep.VerdictWhy, s) {
					t.Errorf("VerdictWhy = %q, want it to say %q", rep.VerdictWhy, s)
				}
			}
			next := strings.Join(rep.Next, "\n")
			for _, s := range tt.nextHas {
				if !strings.Contains(next, s) {
					t.Errorf("Next = %q, want it to say %q", rep.Next, s)
				}
			}
		})
	}
}

// advise says that a gang job whose first rank died of its own cause
// explains the avalanche, and that the job's arrival (a "created" suspect)
// then does not: it drops the arrival's mitigation for the first rank's.
// The verdict must name the same cause as the mitigation.
func TestVerdictGangOutranksArrival(t *testing.T) {
	rep := Report{Boundary: &Boundary{LastGood: at(90), FirstBad: at(100)}, Units: UnitCounts{Bad: 41, Good: 23},
		Changes: []Suspect{{Rank: 1, Ref: "Job/ml/train", Dimension: "created", To: "Job", Kind: "change", Confidence: 0.9}},
		Gangs: []gang.Finding{{Owner: "Job/train", Ranks: 64, Cascade: 40, Distinct: true, Lead: 2 * time.Second,
			First: gang.Rank{Ref: "Pod/ml/train-7", Rank: "7", Reason: "OOMKilled", ExitCode: 137}}}}
	decide(&rep)
	mit, _ := advise(&rep)
	if len(mit) == 0 || !strings.Contains(mit[0].Target, "rank 7") {
		t.Fatalf("advise: mitigation %+v, want the first rank's", mit)
	}
	if !strings.Contains(rep.VerdictWhy, "Pod/ml/train-7 failed first") {
		t.Errorf("verdict %q names the job's arrival; the mitigation (%s %s) names the first rank's death", rep.VerdictWhy, mit[0].Action, mit[0].Target)
	}
}

func TestVerdictConfidentChange(t *testing.T) {
	got := map[float64]bool{}
	for _, c := range []float64{0, 0.49, 0.4999, Confident, 0.91, 1} {
		got[c] = confidentChange(Suspect{Confidence: c})
	}
	want := map[float64]bool{0: false, 0.49: false, 0.4999: false, Confident: true, 0.91: true, 1: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("confidentChange (-want +got)\n%s", diff)
	}
}

// With no confident cause, how most bad units failed is the first lead;
// pulls name the registry they did not come from.
func TestSharedFailure(t *testing.T) {
	unit := func(name, reason, msg string) *outcome.Unit {
		u := badUnit("ml", name, 0, 10)
		u.Reason, u.Message = reason, msg
		return u
	}
	pull := func(name, image string) *outcome.Unit {
		return unit(name, "ImagePullBackOff", `Back-off pulling image "`+image+`": dial tcp: i/o timeout`)
	}
	at := func(s int) time.Time { return time.Date(2026, 5, 1, 10, 0, s, 0, time.UTC) }
	hung := []outcome.SchedulerIdle{{Scheduler: "default-scheduler", IdleSpan: outcome.IdleSpan{LastWork: at(5), From: at(20), Until: at(59), Ongoing: true}, Pods: 2}}
	tests := []struct {
		name  string
		units []*outcome.Unit
		idle  []outcome.SchedulerIdle
		want  string
	}{
		{"no scheduler", []*outcome.Unit{unit("a", outcome.NotScheduled, ""), unit("b", outcome.NotScheduled, "")}, hung,
			"2 of 2 bad units failed alike: NotScheduled (as Pod/ml/a), waiting for default-scheduler, which has placed and judged no pod since 10:00:05: look at that scheduler (does it run? its log), which no change here explains"},
		{"a scheduler that came back", []*outcome.Unit{unit("a", outcome.NotScheduled, ""), unit("b", outcome.NotScheduled, "")},
			[]outcome.SchedulerIdle{{Scheduler: "default-scheduler", IdleSpan: outcome.IdleSpan{LastWork: at(5), From: at(20), Until: at(50)}, Pods: 2}},
			"2 of 2 bad units failed alike: NotScheduled (as Pod/ml/a), waiting for default-scheduler, which placed and judged no pod from 10:00:05 until 10:00:50: look at that scheduler (does it run? its log), which no change here explains"},
		{"a scheduler never seen at work", []*outcome.Unit{unit("a", outcome.NotScheduled, ""), unit("b", outcome.NotScheduled, "")},
			[]outcome.SchedulerIdle{{Scheduler: "volcano", IdleSpan: outcome.IdleSpan{From: at(20), Until: at(59), Ongoing: true}, Pods: 2}},
			"2 of 2 bad units failed alike: NotScheduled (as Pod/ml/a), waiting for volcano, which placed and judged no pod in the evidence: look at that scheduler (does it run? its log), which no change here explains"},
		{"crashes while a scheduler idles", []*outcome.Unit{unit("a", "Error", "exit 1"), unit("b", "Error", "exit 1")}, hung,
			"2 of 2 bad units failed alike: Error (as Pod/ml/a)"},
		{"pulls from a registry", []*outcome.Unit{pull("a", "registry.example/api:1"), pull("b", "registry.example/web:2"), unit("c", "OOMKilled", "")},
			nil, "2 of 3 bad units failed alike: ImagePullBackOff (as Pod/ml/a), pulling from registry.example: look at that registry, which no change here explains"},
		{"docker hub", []*outcome.Unit{pull("a", "ubuntu:22.04"), pull("b", "ubuntu:22.04")}, nil,
			"2 of 2 bad units failed alike: ImagePullBackOff (as Pod/ml/a), pulling from docker.io: look at that registry, which no change here explains"},
		{"a local registry", []*outcome.Unit{pull("a", "localhost:5000/x:1"), pull("b", "localhost:5000/x:1")}, nil,
			"2 of 2 bad units failed alike: ImagePullBackOff (as Pod/ml/a), pulling from localhost:5000: look at that registry, which no change here explains"},
		{"crashes", []*outcome.Unit{unit("a", "Error", "exit 1"), unit("b", "Error", "exit 1")}, nil, "2 of 2 bad units failed alike: Error (as Pod/ml/a)"},
		{"no majority", []*outcome.Unit{unit("a", "Error", ""), unit("b", "OOMKilled", "")}, nil, ""},
		{"one failure is no pattern", []*outcome.Unit{unit("a", "Error", "")}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sharedFailure(tt.units, tt.idle, nil); got != tt.want {
				t.Errorf("sharedFailure:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// Changes no controller observed lead to that controller and its last
// request.
func TestSharedFailureController(t *testing.T) {
	unit := func(name string) *outcome.Unit {
		u := badUnit("ml", name, 0, 10)
		u.Reason = outcome.NotObserved
		return u
	}
	at := func(s int) time.Time { return time.Date(2026, 5, 1, 10, 0, s, 0, time.UTC) }
	const ctl = "system:serviceaccount:kube-system:deployment-controller"
	lead := "2 of 2 bad units failed alike: NotObserved (as Pod/ml/a), waiting for " + ctl + ", "
	look := ": look at that controller (does it run? its log), which no change here explains"
	for _, tt := range []struct {
		name string
		sp   outcome.ControllerIdle
		want string
	}{
		{"still silent", outcome.ControllerIdle{Controller: ctl, Resource: "deployments.apps", IdleSpan: outcome.IdleSpan{LastWork: at(5), From: at(20), Until: at(59), Ongoing: true}, Objects: 2},
			lead + "which has made no request since 10:00:05" + look},
		{"came back", outcome.ControllerIdle{Controller: ctl, Resource: "deployments.apps", IdleSpan: outcome.IdleSpan{LastWork: at(5), From: at(20), Until: at(50)}, Objects: 2},
			lead + "which made no request from 10:00:05 until 10:00:50" + look},
		{"never seen at work", outcome.ControllerIdle{Controller: ctl, Resource: "deployments.apps", IdleSpan: outcome.IdleSpan{From: at(20), Until: at(59), Ongoing: true}, Objects: 2},
			lead + "which made no request in the evidence" + look},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := sharedFailure([]*outcome.Unit{unit("a"), unit("b")}, nil, []outcome.ControllerIdle{tt.sp}); got != tt.want {
				t.Errorf("sharedFailure:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
	// Units that failed otherwise are not led to it.
	u := badUnit("ml", "c", 0, 10)
	u.Reason = "Error"
	v := badUnit("ml", "d", 0, 10)
	v.Reason = "Error"
	sp := []outcome.ControllerIdle{{Controller: ctl, Resource: "deployments.apps", IdleSpan: outcome.IdleSpan{LastWork: at(5), From: at(20), Until: at(59), Ongoing: true}}}
	if got, want := sharedFailure([]*outcome.Unit{u, v}, nil, sp), "2 of 2 bad units failed alike: Error (as Pod/ml/c)"; got != want {
		t.Errorf("sharedFailure:\n got %q\nwant %q", got, want)
	}
}
