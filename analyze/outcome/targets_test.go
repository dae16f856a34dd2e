package outcome

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

// A drain evicts the pods of a node: the evictions a disruption budget
// refuses make their pods units gone bad by the operation; the pods it
// evicted are its good population, deleted or not; a pod refused once,
// then evicted on a retry, was waited for, not failed; another client's
// operation is judged apart, in the same read; the cluster's own
// machinery's refused writes, a read and a pod's own request make no
// target.
func TestReadTargets(t *testing.T) {
	ready := `{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}`
	const drain = "platform-automation"
	evict := func(id int64, secs, code int, user, name string) *timeline.Record {
		return &timeline.Record{ID: id, Time: t0.Add(time.Duration(secs) * time.Second), Source: timeline.SourceAudit, Verb: "create", Code: code, User: user,
			Object:  timeline.ObjectRef{Resource: "pods", Subresource: "eviction", Namespace: "ml", Name: name},
			Message: "Cannot evict pod as it would violate the pod's disruption budget."}
	}
	del := func(id int64, secs, code int, name string) *timeline.Record {
		r := evict(id, secs, code, "bob@example.com", name)
		r.Verb, r.Object.Subresource, r.Message = "delete", "", ""
		return r
	}
	kubelet := evict(20, 40, 500, "system:node:gpu-1", "e")
	kubelet.Verb, kubelet.Object.Subresource = "patch", "status"
	read := evict(21, 41, 429, drain, "f")
	read.Verb, read.Object.Subresource = "get", ""
	own := evict(22, 42, 429, "system:serviceaccount:ml:x", "g")
	own.Extra = []byte(`{"pod":"ml/g"}`)
	// h: the drain evicted it, and the Eviction API marked it so.
	evictedStatus := `{"phase":"Running","conditions":[{"type":"DisruptionTarget","status":"True","reason":"EvictionByEvictionAPI","message":"Eviction API: evicting"}]}`
	deleted := pod("b", "ub", 60, ready)
	deleted.Content = []byte(`{"metadata":{"creationTimestamp":"2026-05-01T10:00:00Z","deletionTimestamp":"2026-05-01T10:01:00Z"},"status":` + ready + `}`)
	s := &fakeStore{
		versions: []timeline.ObjectVersion{pod("a", "ua", 1, ready), pod("b", "ub", 2, ready), deleted, pod("c", "uc", 3, ready),
			pod("d", "ud", 4, ready), pod("e", "ue", 5, ready), pod("f", "uf", 6, ready), pod("g", "ug", 7, ready),
			pod("h", "uh", 8, ready), pod("h", "uh", 31, evictedStatus),
			pod("k", "uk", 9, ready), pod("k", "uk", 31, strings.ReplaceAll(evictedStatus, "EvictionByEvictionAPI", "DeletionByTaintManager"))},
		records: []*timeline.Record{
			evict(10, 30, 429, drain, "a"), evict(11, 35, 429, drain, "a"), evict(12, 40, 429, drain, "a"),
			evict(13, 30, 201, drain, "b"),
			evict(14, 30, 429, drain, "c"), evict(15, 35, 201, drain, "c"),
			kubelet, read, own,
			del(16, 44, 503, "d"), del(17, 45, 200, "f"),
			evict(18, 46, 201, "carol@example.com", "e"), // an operation that went bad nowhere
			evict(19, 30, 201, drain, "h"),
			evict(23, 30, 201, drain, "k"), // answered, but a taint evicted it
			del(24, 36, 503, "c"),          // another client's refusal on c, which the drain waited out: still bad
		},
	}
	out, err := Read(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	type unit struct {
		Target    string
		Bad, Good bool
		Refusals  int
		Answered  time.Duration
	}
	got := map[string]unit{}
	for _, u := range out.Units {
		x := unit{u.Target.String(), u.Bad(), u.Good(), u.Refusals, 0}
		if !u.AnsweredAt.IsZero() {
			x.Answered = u.AnsweredAt.Sub(t0)
		}
		got[u.Ref] = x
	}
	op := "create pods/eviction by " + drain
	want := map[string]unit{
		"Pod/ml/a": {Target: op, Bad: true, Refusals: 3},
		"Pod/ml/b": {Target: op, Good: true, Answered: 30 * time.Second},
		"Pod/ml/c": {Target: op, Good: true, Answered: 35 * time.Second},
		"Pod/ml/d": {Target: "delete pods by bob@example.com", Bad: true, Refusals: 1},
		"Pod/ml/e": {Good: true},
		"Pod/ml/f": {Target: "delete pods by bob@example.com", Good: true, Answered: 45 * time.Second},
		"Pod/ml/h": {Target: op, Bad: true, Answered: 30 * time.Second}, // bad for its own story
		"Pod/ml/k": {Bad: true},
		"Pod/ml/g": {Bad: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("units (-want +got):\n%s", diff)
	}
	// The refusal waited out is no bad observation either; another
	// client's on the same pod still is.
	kept := map[int64]bool{}
	for _, o := range out.Bad {
		kept[o.RecordID] = true
	}
	if kept[14] || !kept[24] {
		t.Errorf("bad observations of c: the drain's waited out kept %v, bob's kept %v; want false, true", kept[14], kept[24])
	}
}

// An operation is spelt "VERB pods[/SUBRESOURCE] by USER" in JSON, and
// left out when there is none.
func TestOperationJSON(t *testing.T) {
	u := Unit{Ref: "Pod/ml/a", Target: Operation{Verb: "create", Subresource: "eviction", User: "ops"}}
	b, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"target":"create pods/eviction by ops"`) {
		t.Errorf("JSON %s: no target spelt as before", b)
	}
	b, err = json.Marshal(Unit{Ref: "Pod/ml/b", Target: Operation{Verb: "delete", User: "bob"}})
	if err != nil || !strings.Contains(string(b), `"target":"delete pods by bob"`) {
		t.Errorf("JSON %s, %v: want delete pods by bob", b, err)
	}
	if b, _ = json.Marshal(Unit{Ref: "Pod/ml/c"}); strings.Contains(string(b), "target") {
		t.Errorf("JSON %s: a unit no operation acted on has a target", b)
	}
}
