package investigate

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// A batch Job's pods used what a namespace's quota allowed; the service
// restarted next had its new pods refused for that quota. The Job's
// arrival is the suspect, reaching the refused units; the service's own
// Deployment, whose older pods the namespace admitted too, is not a
// suspect of its own refusal, and a workload created before the window
// is no change now.
func TestQuotaSuspects(t *testing.T) {
	create := func(secs float64, resource, group, name string, code int, user string) *timeline.Record {
		return &timeline.Record{Time: at(secs), Source: timeline.SourceAudit, Verb: "create", Code: code, User: user,
			Object: timeline.ObjectRef{Group: group, Resource: resource, Namespace: "ml", Name: name}, Evidence: timeline.Evidence{Run: 1, Line: int64(secs * 10)}}
	}
	s := &timelinetest.Mem{}
	s.Add(create(3.6, "deployments", "apps", "api", 201, "platform"), create(3.8, "pods", "", "api-1-a", 201, "rs-controller"),
		create(5, "jobs", "batch", "sweep", 201, "alice"))
	var units []*outcome.Unit
	var ids []map[string]identity.Dimension
	good := func(name, owner string, created float64, id map[string]identity.Dimension) {
		u := goodUnit("ml", name, created, 40)
		u.Owner = owner
		units, ids = append(units, u), append(ids, id)
	}
	good("api-1-a", "ReplicaSet/api-1", 3.8, idOf("owner/Deployment", "api", "owner.podTemplateHash", "h1"))
	good("old-cron-a", "Job/old-cron", 4, idOf("owner/Job", "old-cron")) // created before the window
	s.Add(create(4, "pods", "", "old-cron-a", 201, "job-controller"))
	for i := range 4 {
		name := fmt.Sprintf("sweep-%d", i)
		s.Add(create(10+float64(i), "pods", "", name, 201, "job-controller"))
		good(name, "Job/sweep", 10+float64(i), idOf("owner/Job", "sweep"))
	}
	for i := range 3 {
		s.Add(create(30, "pods", "", "", 403, "rs-controller"))
		u := badUnit("ml", fmt.Sprintf("api-2/%d", i), 30, 30)
		u.Unborn, u.Owner = true, "ReplicaSet/api-2"
		u.Message = `Error creating: pods "api-2-x" is forbidden: exceeded quota: team-pods, requested: pods=1, used: pods=5, limited: pods=5`
		units, ids = append(units, u), append(ids, idOf("owner/Deployment", "api", "owner.podTemplateHash", "h2"))
	}
	// Refused by a webhook, not the quota: not reached.
	hooked := badUnit("ml", "api-2/9", 30, 30)
	hooked.Unborn, hooked.Owner = true, "ReplicaSet/api-2"
	hooked.Message = `Error creating: Internal error occurred: failed calling webhook "guard.example.com"`
	units, ids = append(units, hooked), append(ids, idOf("owner/Deployment", "api", "owner.podTemplateHash", "h2"))
	// A Job whose pods were admitted after the first refusal used none
	// of the room it was refused.
	s.Add(create(20, "jobs", "batch", "late", 201, "bob"), create(32, "pods", "", "late-0", 201, "job-controller"))
	good("late-0", "Job/late", 32, idOf("owner/Job", "late"))
	sps, err := quotaSuspects(context.Background(), s, units, ids, map[string]string{"owner.podTemplateHash": "h2"}, at(3.5), at(40))
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Ref, By string
		Reached int
		Quota   bool
	}
	var got []row
	for _, sp := range sps {
		got = append(got, row{sp.Ref, sp.By, len(sp.reached), sp.quota})
	}
	if diff := cmp.Diff([]row{{"Job/ml/sweep", "alice", 3, true}}, got); diff != "" {
		t.Errorf("suspects (-want +got)\n%s", diff)
	}
	if a := givesRoomBack(*sps[0]); a.Command != `kubectl patch job/sweep -n ml --type=merge -p '{"spec":{"suspend":true}}'` {
		t.Errorf("mitigation command %q", a.Command)
	}
}

// A generation counts writes to a workload's spec; its template hash says
// whether what the pods run with changed. A generation is never surer
// than the hash: a rollout-strategy write and a restart (a template that
// changed only by kubectl.kubernetes.io/restartedAt) are no cause.
func TestGenerationYieldsToTemplateHash(t *testing.T) {
	units, ids := rollout("FailedCreate", "exceeded quota")
	for i := range ids {
		ids[i]["owner/Deployment.generation"] = identity.Dimension{Name: "owner/Deployment.generation", Value: map[bool]string{true: "2", false: "1"}[units[i].Bad()]}
	}
	gen := func() *Suspect {
		return &Suspect{Ref: "Deployment/ml/api", Dimension: "owner/Deployment.generation", From: "1", To: "2", At: at(10), Kind: "change", Objects: 1}
	}
	hash := &Suspect{Ref: "Deployment/ml/api", Dimension: "owner.podTemplateHash", From: "h1", To: "h2", At: at(12), Kind: "change", Objects: 1, restartOnly: true}
	conf := func(cands []*Suspect) float64 {
		for _, sp := range scoreSuspects(cands, scoring{units: units, ids: ids, pop: populationOf(units, "ml"), firstBad: at(100)}) {
			if sp.Dimension == "owner/Deployment.generation" {
				return sp.Confidence
			}
		}
		return -1
	}
	if c := conf([]*Suspect{gen()}); c < Confident {
		t.Errorf("a generation alone, held by the bad units only: confidence %.2f, want confident (no hash says otherwise)", c)
	}
	if c := conf([]*Suspect{gen(), hash}); c != 0 {
		t.Errorf("a generation whose template changed only to restart: confidence %.2f, want 0", c)
	}
}

// A restart's template hash is no cause, even beside a write that reaches
// the same units less cleanly (a Namespace relabelled, whose refused pods
// the hash's new ReplicaSet holds all of): the restart started the pods,
// the write is what refused them.
func TestRestartOnlyIsNoCause(t *testing.T) {
	units, ids := rollout("FailedCreate", `violates PodSecurity "restricted:latest"`)
	hash := &Suspect{Ref: "Deployment/ml/api", Dimension: "owner.podTemplateHash", From: "h1", To: "h2", At: at(12), Kind: "change", Objects: 1, restartOnly: true}
	write := &Suspect{Ref: "Namespace/ml", Dimension: "labels", At: at(5), Kind: "change", Objects: 1, reached: map[*outcome.Unit]bool{}}
	for i, u := range units {
		if u.Bad() || i%2 == 0 {
			write.reached[u] = true // and half the good units: a weaker split than the hash's
		}
	}
	for _, sp := range scoreSuspects([]*Suspect{hash, write}, scoring{units: units, ids: ids, pop: populationOf(units, "ml"), firstBad: at(100)}) {
		if sp.Dimension == "owner.podTemplateHash" && sp.Confidence != 0 {
			t.Errorf("a restart's template hash beside a write that explains: confidence %.2f, want 0", sp.Confidence)
		}
	}
}
