package outcome

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

// A controller that could not create its pods is one unit per pod it
// lacked, with its template's owner; FailedCreate about a pod, or about a
// kind that creates no pods from a template, is no such unit.
func TestUnbornUnits(t *testing.T) {
	rs := func(name, uid, body string) timeline.ObjectVersion {
		return timeline.ObjectVersion{Object: timeline.ObjectRef{Group: "apps", Resource: "replicasets", Kind: "ReplicaSet",
			Namespace: "ml", Name: name, UID: uid}, Time: t0, Content: json.RawMessage(body)}
	}
	failedCreate := func(secs int, kind, name, uid string) *timeline.Record {
		return &timeline.Record{ID: int64(secs), Time: t0.Add(time.Duration(secs) * time.Second), Source: timeline.SourceEvent, Type: "Warning",
			Reason: "FailedCreate", Message: `Error creating: pods "api-" is forbidden: exceeded quota: team-budget`,
			Object: timeline.ObjectRef{Kind: kind, Namespace: "ml", Name: name, UID: uid}}
	}
	s := &fakeStore{
		versions: []timeline.ObjectVersion{
			pod("a", "ua", 1, `{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}`),
			rs("api-5f6d", "u1", `{"spec":{"replicas":3},"status":{"replicas":0}}`),
			// Another object of the same name, and one that has all it wants.
			rs("api-5f6d", "u0", `{"spec":{"replicas":9},"status":{"replicas":0}}`),
			rs("web-77aa", "u2", `{"spec":{"replicas":2},"status":{"replicas":2}}`),
		},
		records: []*timeline.Record{
			failedCreate(20, "ReplicaSet", "api-5f6d", "u1"),
			failedCreate(21, "ReplicaSet", "web-77aa", "u2"),
			failedCreate(22, "Pod", "a", "ua"),
			failedCreate(23, "Deployment", "api", "u3"),
		},
	}
	out, err := Read(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	type unit struct {
		Ref, Owner, Reason string
		Unborn, Bad        bool
	}
	var got []unit
	for _, u := range out.Units {
		got = append(got, unit{u.Ref, u.Owner, u.Reason, u.Unborn, u.Bad()})
	}
	want := []unit{
		{"Pod/ml/a", "Job/train", "FailedCreate", false, true},
		{"ReplicaSet/ml/api-5f6d/1", "ReplicaSet/api-5f6d", "FailedCreate", true, true},
		{"ReplicaSet/ml/api-5f6d/2", "ReplicaSet/api-5f6d", "FailedCreate", true, true},
		{"ReplicaSet/ml/api-5f6d/3", "ReplicaSet/api-5f6d", "FailedCreate", true, true},
		// It has the pods it wants now: it lacked at least the one it
		// said it could not create.
		{"ReplicaSet/ml/web-77aa/1", "ReplicaSet/web-77aa", "FailedCreate", true, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("units (-want +got):\n%s", diff)
	}
}

func TestWantedAndHave(t *testing.T) {
	tests := []struct {
		kind, body string
		want, have int
	}{
		{"ReplicaSet", `{"spec":{"replicas":7},"status":{"replicas":2}}`, 7, 2},
		{"ReplicaSet", `{"spec":{},"status":{}}`, 1, 0}, // replicas defaults to 1
		{"StatefulSet", `{"spec":{"replicas":3},"status":{"replicas":1}}`, 3, 1},
		{"Job", `{"spec":{"parallelism":8,"completions":10},"status":{"active":1,"succeeded":4}}`, 6, 1},
		{"Job", `{"spec":{},"status":{}}`, 1, 0},
		{"DaemonSet", `{"status":{"desiredNumberScheduled":40,"currentNumberScheduled":38}}`, 40, 38},
		{"ReplicaSet", `not json`, 0, 0},
	}
	for _, tt := range tests {
		if w, h := wanted(tt.kind, []byte(tt.body)), have(tt.kind, []byte(tt.body)); w != tt.want || h != tt.have {
			t.Errorf("%s %s: wanted, have = %d, %d; want %d, %d", tt.kind, tt.body, w, h, tt.want, tt.have)
		}
	}
}

// A pod the scheduler could not place at first, and that then ran,
// waited: it did not go bad then (a pod that never ran did; one that ran
// and then crashed went bad when it crashed).
func TestWaitedToBeScheduled(t *testing.T) {
	unschedulable := `{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/3 nodes"}]}`
	ready := `{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}`
	oom := `{"phase":"Failed","containerStatuses":[{"state":{"terminated":{"exitCode":137,"reason":"OOMKilled"}}}]}`
	s := &fakeStore{versions: []timeline.ObjectVersion{
		pod("waited", "u1", 1, unschedulable), pod("waited", "u1", 5, ready),
		pod("never", "u2", 1, unschedulable),
		pod("crashed", "u3", 1, unschedulable), pod("crashed", "u3", 5, ready), pod("crashed", "u3", 9, oom),
	}}
	out, err := Read(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, u := range out.Units {
		got[u.Ref] = u.Reason
	}
	want := map[string]string{"Pod/ml/waited": "", "Pod/ml/never": "FailedScheduling", "Pod/ml/crashed": "OOMKilled"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("units' reasons (-want +got):\n%s", diff)
	}
	// The waits are no bad observations either: the boundary is found
	// from these, and a burst of pods waiting for their volumes is no
	// incident.
	var bad []string
	for _, o := range out.Bad {
		bad = append(bad, o.Ref()+" "+o.Reason)
	}
	if diff := cmp.Diff([]string{"Pod/ml/never FailedScheduling", "Pod/ml/crashed OOMKilled"}, bad); diff != "" {
		t.Errorf("bad observations (-want +got):\n%s", diff)
	}
}

// A unit first seen bad in an event (stamped to the second) takes its
// reason and message from the state the event reports, seen within that
// second: the container's own last words, not the kubelet's back-off.
func TestStateOverEvent(t *testing.T) {
	crash := `{"phase":"Running","containerStatuses":[{"state":{"waiting":{"reason":"CrashLoopBackOff"}},"lastState":{"terminated":{"exitCode":1,"message":"dial tcp 10.96.0.7:5432: i/o timeout"}}}]}`
	s := &fakeStore{
		versions: []timeline.ObjectVersion{pod("a", "ua", 1, `{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}`),
			{Object: timeline.ObjectRef{Resource: "pods", Namespace: "ml", Name: "a", UID: "ua"}, Time: t0.Add(20*time.Second + 400*time.Millisecond),
				Content: json.RawMessage(`{"metadata":{"creationTimestamp":"2026-05-01T10:00:00Z"},"status":` + crash + `}`)},
			pod("b", "ub", 1, `{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}`),
			{Object: timeline.ObjectRef{Resource: "pods", Namespace: "ml", Name: "b", UID: "ub"}, Time: t0.Add(25 * time.Second),
				Content: json.RawMessage(`{"metadata":{"creationTimestamp":"2026-05-01T10:00:00Z"},"status":` + crash + `}`)},
		},
		records: []*timeline.Record{
			{ID: 1, Time: t0.Add(20 * time.Second), Source: timeline.SourceEvent, Type: "Warning", Reason: "BackOff",
				Message: "Back-off restarting failed container", Object: timeline.ObjectRef{Kind: "Pod", Namespace: "ml", Name: "a"}},
			// b's state comes seconds after its event: another thing.
			{ID: 2, Time: t0.Add(20 * time.Second), Source: timeline.SourceEvent, Type: "Warning", Reason: "BackOff",
				Message: "Back-off restarting failed container", Object: timeline.ObjectRef{Kind: "Pod", Namespace: "ml", Name: "b"}},
		},
	}
	out, err := Read(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	type unit struct {
		Ref, Reason, Message string
		BadAt                time.Duration
	}
	var got []unit
	for _, u := range out.Units {
		got = append(got, unit{u.Ref, u.Reason, u.Message, u.BadAt.Sub(t0)})
	}
	want := []unit{
		{"Pod/ml/a", "CrashLoopBackOff", "dial tcp 10.96.0.7:5432: i/o timeout", 20 * time.Second},
		{"Pod/ml/b", "BackOff", "Back-off restarting failed container", 20 * time.Second},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("units (-want +got):\n%s", diff)
	}
}

// A controller that asks for absurd numbers makes a bounded number of
// units.
func TestUnbornBounded(t *testing.T) {
	s := &fakeStore{
		versions: []timeline.ObjectVersion{{Object: timeline.ObjectRef{Group: "apps", Resource: "replicasets", Kind: "ReplicaSet",
			Namespace: "ml", Name: "api-5f6d", UID: "u1"}, Time: t0, Content: json.RawMessage(`{"spec":{"replicas":1000000000},"status":{"replicas":0}}`)}},
		records: []*timeline.Record{{ID: 1, Time: t0.Add(time.Second), Source: timeline.SourceEvent, Type: "Warning", Reason: "FailedCreate",
			Object: timeline.ObjectRef{Kind: "ReplicaSet", Namespace: "ml", Name: "api-5f6d", UID: "u1"}}},
	}
	out, err := Read(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Units) != maxUnborn {
		t.Errorf("%d units, want %d", len(out.Units), maxUnborn)
	}
}

// Once its FailedCreate events are gone (the apiserver keeps them an
// hour), a ReplicaSet that could not create its pods still says so in its
// status: the ReplicaFailure condition makes the same unborn units, with
// the refusal's words. One without it is no failure.
func TestUnbornFromReplicaFailure(t *testing.T) {
	rs := func(name, uid, body string) timeline.ObjectVersion {
		return timeline.ObjectVersion{Object: timeline.ObjectRef{Group: "apps", Resource: "replicasets", Kind: "ReplicaSet",
			Namespace: "ml", Name: name, UID: uid}, Time: t0.Add(30 * time.Second), Content: json.RawMessage(body)}
	}
	msg := `pods "api-5f6d-" is forbidden: error looking up service account ml/api: serviceaccount "api" not found`
	s := &fakeStore{versions: []timeline.ObjectVersion{
		rs("api-5f6d", "u1", `{"spec":{"replicas":2},"status":{"replicas":0,"conditions":[{"type":"ReplicaFailure","status":"True","reason":"FailedCreate",
			"message":`+jsonString(msg)+`,"lastTransitionTime":"2026-05-01T10:00:20Z"}]}}`),
		rs("web-77aa", "u2", `{"spec":{"replicas":2},"status":{"replicas":2,"conditions":[{"type":"ReplicaFailure","status":"False"}]}}`),
	}}
	out, err := Read(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	type unit struct {
		Ref, Reason, Message string
		BadAt                time.Time
	}
	var got []unit
	for _, u := range out.Units {
		got = append(got, unit{u.Ref, u.Reason, u.Message, u.BadAt})
	}
	want := []unit{
		{"ReplicaSet/ml/api-5f6d/1", "FailedCreate", msg, t0.Add(20 * time.Second)},
		{"ReplicaSet/ml/api-5f6d/2", "FailedCreate", msg, t0.Add(20 * time.Second)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("units (-want +got):\n%s", diff)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A pod whose phase is Failed failed, whatever reason its kubelet gave:
// one rejected at admission (UnexpectedAdmissionError, OutOfcpu) is bad
// from its state alone, its events gone.
func TestFailedPodWhateverItsReason(t *testing.T) {
	s := &fakeStore{versions: []timeline.ObjectVersion{
		pod("r", "ur", 1, `{"phase":"Failed","reason":"UnexpectedAdmissionError","message":"Allocate failed: unsupported device topology"}`),
		pod("ok", "uk", 1, `{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}`),
	}}
	out, err := Read(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, u := range out.Units {
		if u.Bad() {
			got[u.Ref] = u.Reason + ": " + u.Message
		}
	}
	want := map[string]string{"Pod/ml/r": "UnexpectedAdmissionError: Allocate failed: unsupported device topology"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bad units (-want +got):\n%s", diff)
	}
}
