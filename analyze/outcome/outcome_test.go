package outcome

import (
	"context"
	"encoding/json"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

func TestStateOf(t *testing.T) {
	tests := []struct {
		name, kind, obj string
		want            state
	}{
		{"pending pod says nothing", "Pod", `{"status":{"phase":"Pending"}}`, state{}},
		{"running, not ready", "Pod", `{"status":{"phase":"Running"}}`, state{reason: "Running"}},
		{"ready", "Pod", `{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`, state{reason: "Ready"}},
		{"succeeded", "Pod", `{"status":{"phase":"Succeeded"}}`, state{reason: "Succeeded"}},
		{"OOMKilled", "Pod", `{"status":{"phase":"Failed","containerStatuses":[{"state":{"terminated":{"exitCode":137,"reason":"OOMKilled","finishedAt":"2026-05-01T10:00:00Z"}}}]}}`,
			state{reason: "OOMKilled", exitCode: 137, failed: true, at: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)}},
		{"exit 1 with a message", "Pod", `{"status":{"phase":"Failed","containerStatuses":[{"state":{"terminated":{"exitCode":1,"reason":"Error","message":"NCCL error"}}}]}}`,
			state{reason: "Error", exitCode: 1, message: "NCCL error", failed: true}},
		{"evicted", "Pod", `{"status":{"phase":"Failed","reason":"Evicted","message":"low on memory"}}`, state{reason: "Evicted", message: "low on memory", failed: true}},
		// Failed, whatever the reason its kubelet gave.
		{"rejected at admission", "Pod", `{"status":{"phase":"Failed","reason":"UnexpectedAdmissionError","message":"Allocate failed"}}`,
			state{reason: "UnexpectedAdmissionError", message: "Allocate failed", failed: true}},
		// Drained, evicted by a NoExecute taint, preempted: the control plane
		// marks the pod before it deletes it.
		{"drained", "Pod", `{"status":{"phase":"Running","conditions":[{"type":"DisruptionTarget","status":"True","reason":"EvictionByEvictionAPI","message":"Eviction API: evicting","lastTransitionTime":"2026-05-01T10:00:00Z"}]}}`,
			state{reason: "Evicted", message: "EvictionByEvictionAPI Eviction API: evicting", at: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)}},
		{"preempted", "Pod", `{"status":{"phase":"Running","conditions":[{"type":"DisruptionTarget","status":"True","reason":"PreemptionByScheduler"}]}}`,
			state{reason: "Preempted", message: "PreemptionByScheduler"}},
		{"a disruption that did not happen", "Pod", `{"status":{"phase":"Running","conditions":[{"type":"DisruptionTarget","status":"False"},{"type":"Ready","status":"True"}]}}`,
			state{reason: "Ready"}},
		{"crash loop", "Pod", `{"status":{"phase":"Running","containerStatuses":[{"state":{"waiting":{"reason":"CrashLoopBackOff"}},"lastState":{"terminated":{"exitCode":1,"message":"bad schema"}}}]}}`,
			state{reason: "CrashLoopBackOff", exitCode: 1, message: "bad schema"}},
		{"image pull", "Pod", `{"status":{"phase":"Pending","containerStatuses":[{"state":{"waiting":{"reason":"ImagePullBackOff","message":"not found"}}}]}}`,
			state{reason: "ImagePullBackOff", message: "not found"}},
		// Just exited with an error, not yet started again: an init
		// container included (kubectl's Init:Error); a clean exit is none.
		{"init container exited", "Pod", `{"status":{"phase":"Pending","initContainerStatuses":[{"name":"migrate","state":{"terminated":{"exitCode":1,"reason":"Error","message":"dirty database version 42"}}}],
			"containerStatuses":[{"name":"main","state":{"waiting":{"reason":"PodInitializing"}}}]}}`,
			state{reason: "Error", exitCode: 1, message: "dirty database version 42"}},
		{"exited with a runtime's own word", "Pod", `{"status":{"phase":"Running","containerStatuses":[{"state":{"terminated":{"exitCode":2,"reason":"Completed"}}}]}}`,
			state{reason: "Error", exitCode: 2}},
		{"an init container done", "Pod", `{"status":{"phase":"Running","initContainerStatuses":[{"state":{"terminated":{"exitCode":0,"reason":"Completed"}}}],
			"containerStatuses":[{"state":{"running":{}},"ready":true}],"conditions":[{"type":"Ready","status":"True"}]}}`,
			state{reason: "Ready"}},
		{"restarted after an OOM", "Pod", `{"status":{"phase":"Running","containerStatuses":[{"state":{"running":{}},"lastState":{"terminated":{"exitCode":137,"reason":"OOMKilled"}}}]}}`,
			state{reason: "OOMKilled", exitCode: 137}},
		{"unschedulable", "Pod", `{"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/3 nodes"}]}}`,
			state{reason: "FailedScheduling", message: "0/3 nodes"}},
		{"node ready", "Node", `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`, state{reason: "Ready"}},
		{"node not ready", "Node", `{"status":{"conditions":[{"type":"Ready","status":"Unknown","message":"kubelet stopped posting"}]}}`,
			state{reason: "NodeNotReady", message: "kubelet stopped posting"}},
		// Any other condition reports a problem when True (the kubelet's
		// pressures, node-problem-detector's), since it began; NotReady
		// comes first.
		{"disk pressure", "Node", `{"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"MemoryPressure","status":"False"},{"type":"DiskPressure","status":"True","message":"kubelet has disk pressure","lastTransitionTime":"2026-05-01T10:00:00Z"}]}}`,
			state{reason: "DiskPressure", message: "kubelet has disk pressure", at: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)}},
		{"a problem detected", "Node", `{"status":{"conditions":[{"type":"KernelDeadlock","status":"True","message":"task hung"},{"type":"Ready","status":"True"}]}}`,
			state{reason: "KernelDeadlock", message: "task hung"}},
		{"not ready over pressure", "Node", `{"status":{"conditions":[{"type":"DiskPressure","status":"True"},{"type":"Ready","status":"False","message":"PLEG"}]}}`,
			state{reason: "NodeNotReady", message: "PLEG"}},
		{"a problem without Ready says nothing", "Node", `{"status":{"conditions":[{"type":"DiskPressure","status":"True"}]}}`, state{}},
		{"job failed", "Job", `{"status":{"conditions":[{"type":"Failed","status":"True","reason":"BackoffLimitExceeded"}]}}`, state{reason: "BackoffLimitExceeded"}},
		{"job complete", "Job", `{"status":{"conditions":[{"type":"Complete","status":"True"}]}}`, state{reason: "Complete"}},
		{"wrong types say nothing", "Pod", `{"status":{"phase":7,"containerStatuses":"x"}}`, state{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal([]byte(tt.obj), &m); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, stateOf(tt.kind, m), cmp.AllowUnexported(state{})); diff != "" {
				t.Errorf("stateOf (-want +got):\n%s", diff)
			}
		})
	}
}

type fakeStore struct {
	versions []timeline.ObjectVersion
	records  []*timeline.Record
}

func (f *fakeStore) Versions(_ context.Context, q timeline.VersionQuery) ([]timeline.ObjectVersion, error) {
	var out []timeline.ObjectVersion
	for _, v := range f.versions {
		if v.Object.Resource == q.Resource && v.Object.Group == q.Group {
			out = append(out, v)
		}
	}
	return out, nil
}

func (f *fakeStore) Records(_ context.Context, q timeline.Query) iter.Seq2[*timeline.Record, error] {
	return func(yield func(*timeline.Record, error) bool) {
		n := 0
		recs := f.records
		if q.Desc { // newest first: the records are held oldest first
			recs = slices.Clone(recs)
			slices.Reverse(recs)
		}
		for _, r := range recs {
			if (!q.Since.IsZero() && r.Time.Before(q.Since)) || (!q.Until.IsZero() && !r.Time.Before(q.Until)) || (q.Limit > 0 && n >= q.Limit) {
				continue
			}
			ok, err := q.Where.Match(r)
			if err != nil {
				yield(nil, err)
				return
			}
			if ok {
				n++
				if !yield(r, nil) {
					return
				}
			}
		}
	}
}

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func pod(name, uid string, secs int, status string) timeline.ObjectVersion {
	return timeline.ObjectVersion{
		Object:  timeline.ObjectRef{Resource: "pods", Namespace: "ml", Name: name, UID: uid},
		Time:    t0.Add(time.Duration(secs) * time.Second),
		Content: json.RawMessage(`{"metadata":{"creationTimestamp":"2026-05-01T10:00:00Z","ownerReferences":[{"kind":"Job","name":"train","controller":true}]},"status":` + status + `}`),
	}
}

func TestRead(t *testing.T) {
	ready := `{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}`
	s := &fakeStore{
		versions: []timeline.ObjectVersion{
			pod("a", "ua", 1, ready),
			pod("a", "ua", 50, `{"phase":"Failed","containerStatuses":[{"state":{"terminated":{"exitCode":137,"reason":"OOMKilled"}}}]}`),
			pod("b", "ub", 2, ready),
			pod("c", "uc", 3, ready),
			pod("d", "ud", 4, ready),
		},
		records: []*timeline.Record{
			{ID: 7, Time: t0.Add(60 * time.Second), Source: timeline.SourceEvent, Reason: "BackOff",
				Object: timeline.ObjectRef{Kind: "Pod", Namespace: "ml", Name: "b"}},
			{ID: 8, Time: t0.Add(61 * time.Second), Source: timeline.SourceAudit, Code: 429, Object: timeline.ObjectRef{Resource: "pods"}},
			{ID: 9, Time: t0.Add(62 * time.Second), Source: timeline.SourceAudit, Code: 500, URI: "/readyz"},
			// d's own request, denied: its failure. c's, shed: its work
			// refused, its failure too (it was Ready before).
			{ID: 10, Time: t0.Add(55 * time.Second), Source: timeline.SourceAudit, Code: 403, User: "system:serviceaccount:ml:reader",
				Object: timeline.ObjectRef{Resource: "configmaps", Namespace: "ml"}, Extra: []byte(`{"pod":"ml/d"}`)},
			{ID: 11, Time: t0.Add(56 * time.Second), Source: timeline.SourceAudit, Code: 429, User: "system:serviceaccount:ml:reader",
				Object: timeline.ObjectRef{Resource: "configmaps", Namespace: "ml"}, Extra: []byte(`{"pod":"ml/c"}`)},
		},
	}
	out, err := Read(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	type unit struct {
		Ref, Reason, Owner string
		Bad, Good          bool
		BadAt              time.Duration
	}
	var got []unit
	for _, u := range out.Units {
		x := unit{Ref: u.Ref, Reason: u.Reason, Owner: u.Owner, Bad: u.Bad(), Good: u.Good()}
		if u.Bad() {
			x.BadAt = u.BadAt.Sub(t0)
		}
		got = append(got, x)
	}
	want := []unit{
		{Ref: "Pod/ml/a", Reason: "OOMKilled", Owner: "Job/train", Bad: true, BadAt: 50 * time.Second},
		{Ref: "Pod/ml/b", Reason: "BackOff", Owner: "Job/train", Bad: true, BadAt: 60 * time.Second},
		{Ref: "Pod/ml/c", Reason: "HTTP 429", Owner: "Job/train", Bad: true, BadAt: 56 * time.Second},
		{Ref: "Pod/ml/d", Reason: "HTTP 403", Owner: "Job/train", Bad: true, BadAt: 55 * time.Second},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("units (-want +got):\n%s", diff)
	}
	// The 429s on a resource are bad, and so is a workload denied; the
	// /readyz 500 is a probe, not bad.
	var ids []int64
	for _, o := range out.Bad {
		ids = append(ids, o.RecordID)
	}
	if diff := cmp.Diff([]int64{0, 10, 11, 7, 8}, ids); diff != "" {
		t.Errorf("bad observations' records (-want +got):\n%s", diff)
	}
}

func TestReadBadExpression(t *testing.T) {
	if _, err := Read(context.Background(), &fakeStore{}, Options{Bad: "code >"}); err == nil {
		t.Fatal("a broken --bad compiled")
	}
}

// The default's node faults are timeline.NodeFaults: a reason added there
// and not here would never be bad.
func TestDefaultBadNodeFaults(t *testing.T) {
	in := NodeFaults[strings.Index(NodeFaults, "[")+1 : strings.Index(NodeFaults, "]")]
	var got []string
	for _, r := range strings.Split(in, ",") {
		got = append(got, strings.Trim(strings.TrimSpace(r), `"`))
	}
	if diff := cmp.Diff(timeline.NodeFaults, got); diff != "" {
		t.Errorf("NodeFaults (-timeline +outcome):\n%s", diff)
	}
}

// A Job that fails (its deadline passed) terminates its running pods and
// counts them as failed (status.uncountedTerminatedPods.failed): they are
// bad by its word, with its reason, and Killed; a pod that had already
// failed of itself keeps its own failure.
func TestReadCountedByTheJob(t *testing.T) {
	ready := `{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}`
	deleting := func(v timeline.ObjectVersion) timeline.ObjectVersion {
		v.Content = json.RawMessage(strings.Replace(string(v.Content), `"metadata":{`, `"metadata":{"deletionTimestamp":"2026-05-01T10:01:00Z",`, 1))
		return v
	}
	job := timeline.ObjectVersion{Object: timeline.ObjectRef{Group: "batch", Resource: "jobs", Namespace: "ml", Name: "train"},
		Time: t0.Add(60 * time.Second), Content: json.RawMessage(`{"status":{"conditions":[{"type":"FailureTarget","status":"True",` +
			`"reason":"DeadlineExceeded","message":"Job was active longer than specified deadline"}],"uncountedTerminatedPods":{"failed":["ua","ub","ud"]}}}`)}
	s := &fakeStore{versions: []timeline.ObjectVersion{
		pod("a", "ua", 1, ready), deleting(pod("a", "ua", 61, ready)),
		pod("b", "ub", 2, ready), pod("b", "ub", 50, `{"phase":"Failed","containerStatuses":[{"state":{"terminated":{"exitCode":1,"reason":"Error"}}}]}`),
		pod("c", "uc", 3, ready),
		// d exited of itself; its state was written a moment after its
		// Job listed it.
		pod("d", "ud", 4, ready), pod("d", "ud", 61, `{"phase":"Failed","containerStatuses":[{"state":{"terminated":{"exitCode":1,"reason":"Error"}}}]}`),
		job,
	}}
	out, err := Read(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	type unit struct {
		Ref, Reason string
		Bad, Killed bool
	}
	var got []unit
	for _, u := range out.Units {
		got = append(got, unit{u.Ref, u.Reason, u.Bad(), u.Killed})
	}
	want := []unit{{"Pod/ml/a", "DeadlineExceeded", true, true}, {"Pod/ml/b", "Error", true, false}, {"Pod/ml/c", "", false, false},
		{"Pod/ml/d", "Error", true, false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("units (-want +got)\n%s", diff)
	}
	// Each is a bad observation; for the boundary, the Job's one write
	// that counted them is one.
	count := func(obs []Observation) (n int) {
		for _, o := range obs {
			if o.CountedBy != "" {
				n++
			}
		}
		return n
	}
	if n, one := count(out.Bad), count(OnePerWrite(out.Bad)); n != 3 || one != 1 {
		t.Errorf("%d counted observations among the bad, %d one per write; want 3 and 1", n, one)
	}
}

// A workload's write refused as malformed (400) or invalid (422) is its
// failure, and the pod that made it (a bound token) is the unit, as a
// denial's is: the write did not take place, and the same write is
// refused again. The control plane's own (kube-system) and a person's
// (no ServiceAccount) are not: those are the operators' and the
// controllers' to retry, as their denials are.
func TestReadRefusedWrites(t *testing.T) {
	ready := `{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}`
	write := func(id int64, secs, code int, user, pod string) *timeline.Record {
		return &timeline.Record{ID: id, Time: t0.Add(time.Duration(secs) * time.Second), Source: timeline.SourceAudit, Verb: "create", Code: code, User: user,
			Object: timeline.ObjectRef{Group: "ml.example.com", Resource: "checkpoints", Namespace: "ml"}, Extra: []byte(`{"pod":"` + pod + `"}`)}
	}
	logs := write(15, 45, 400, "system:serviceaccount:ml:trainer", "ml/c")
	logs.Verb, logs.Object = "get", timeline.ObjectRef{Resource: "pods", Subresource: "log", Namespace: "ml", Name: "c"}
	s := &fakeStore{
		versions: []timeline.ObjectVersion{pod("a", "ua", 1, ready), pod("b", "ub", 2, ready), pod("c", "uc", 3, ready)},
		records: []*timeline.Record{
			write(10, 40, 422, "system:serviceaccount:ml:trainer", "ml/a"),
			write(11, 41, 400, "system:serviceaccount:ml:trainer", "ml/b"),
			write(12, 42, 422, "system:serviceaccount:kube-system:job-controller", "ml/c"),
			write(13, 43, 422, "alice@example.com", "ml/c"),
			write(14, 44, 409, "system:serviceaccount:ml:trainer", "ml/c"), // a conflict: no refusal of the write's content
			logs, // a read's 400 passes with a retry
		},
	}
	got := badReasons(t, s)
	if diff := cmp.Diff(map[string]string{"Pod/ml/a": "HTTP 422", "Pod/ml/b": "HTTP 400"}, got); diff != "" {
		t.Errorf("bad units (-want +got):\n%s", diff)
	}
}

// A 404 to a workload's request on a collection (a create, a list) says
// the resource is not served (its CRD deleted) or the namespace is gone:
// its failure. A 404 to a named object's GET only says that object is
// missing, which clients meet all the time.
func TestReadNotServed(t *testing.T) {
	ready := `{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}`
	req := func(id int64, secs int, verb, name, pod string) *timeline.Record {
		return &timeline.Record{ID: id, Time: t0.Add(time.Duration(secs) * time.Second), Source: timeline.SourceAudit, Verb: verb, Code: 404,
			User: "system:serviceaccount:ml:trainer", Extra: []byte(`{"pod":"` + pod + `"}`),
			Object: timeline.ObjectRef{Group: "ml.example.com", Resource: "checkpoints", Namespace: "ml", Name: name}}
	}
	s := &fakeStore{
		versions: []timeline.ObjectVersion{pod("a", "ua", 1, ready), pod("b", "ub", 2, ready), pod("c", "uc", 3, ready)},
		records:  []*timeline.Record{req(10, 40, "create", "", "ml/a"), req(11, 41, "list", "", "ml/b"), req(12, 42, "get", "c-1", "ml/c")},
	}
	got := badReasons(t, s)
	if diff := cmp.Diff(map[string]string{"Pod/ml/a": "HTTP 404", "Pod/ml/b": "HTTP 404"}, got); diff != "" {
		t.Errorf("bad units (-want +got):\n%s", diff)
	}
}

// badReasons reads the store's units and returns the bad ones' reasons.
func badReasons(t *testing.T, s *fakeStore) map[string]string {
	t.Helper()
	out, err := Read(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, u := range out.Units {
		if u.Bad() {
			got[u.Ref] = u.Reason
		}
	}
	return got
}
