package outcome

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// A Warning event about a pod that names no failure (a volume that will
// not mount, a readiness probe that fails) fails the pod unless the pod
// was Ready in the end; a failure named (BackOff) fails it whatever came
// after.
func TestWarningsThatPassed(t *testing.T) {
	ready := `{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}`
	running := `{"phase":"Running","conditions":[{"type":"Ready","status":"False"}]}`
	warn := func(id int64, name, reason string, secs int) *timeline.Record {
		return &timeline.Record{ID: id, Time: t0.Add(time.Duration(secs) * time.Second), Source: timeline.SourceEvent, Type: "Warning",
			Reason: reason, Message: reason + " of " + name, Object: timeline.ObjectRef{Kind: "Pod", Namespace: "ml", Name: name}}
	}
	s := &fakeStore{
		versions: []timeline.ObjectVersion{
			pod("mounted-late", "u1", 1, running), pod("mounted-late", "u1", 9, ready),
			pod("never-mounted", "u2", 1, running),
			pod("probe-fails", "u3", 1, ready), pod("probe-fails", "u3", 4, running),
			pod("crashed-then-ready", "u4", 1, running), pod("crashed-then-ready", "u4", 9, ready),
		},
		records: []*timeline.Record{
			warn(1, "mounted-late", "FailedMount", 3),
			warn(2, "never-mounted", "FailedMount", 3),
			warn(3, "probe-fails", "Unhealthy", 5),
			warn(4, "crashed-then-ready", "BackOff", 5),
			// A Normal event is no warning.
			{ID: 5, Time: t0.Add(2 * time.Second), Source: timeline.SourceEvent, Type: "Normal", Reason: "Pulled",
				Object: timeline.ObjectRef{Kind: "Pod", Namespace: "ml", Name: "mounted-late"}},
		},
	}
	out, err := Read(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, u := range out.Units {
		got[u.Ref] = u.Reason
	}
	want := map[string]string{"Pod/ml/mounted-late": "", "Pod/ml/never-mounted": "FailedMount",
		"Pod/ml/probe-fails": "Unhealthy", "Pod/ml/crashed-then-ready": "BackOff"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("units' reasons (-want +got):\n%s", diff)
	}
}

// The failures fold knows are those DefaultBad names: a reason added to
// one and not the other would be judged a warning that may pass.
func TestFailuresAreDefaultBad(t *testing.T) {
	in := defaultBadStates[strings.Index(defaultBadStates, "[")+1 : strings.Index(defaultBadStates, "]")]
	var got []string
	for _, r := range strings.Split(in, ",") {
		got = append(got, strings.Trim(strings.TrimSpace(r), `"`))
	}
	if diff := cmp.Diff(failures, got); diff != "" {
		t.Errorf("failures (-fold +DefaultBad):\n%s", diff)
	}
}

// A node that reports a problem condition went bad when it did; a node
// Ready throughout did not.
func TestNodeProblemIsBad(t *testing.T) {
	node := func(name string, secs int, conds string) timeline.ObjectVersion {
		return timeline.ObjectVersion{Object: timeline.ObjectRef{Resource: "nodes", Name: name}, Time: t0.Add(time.Duration(secs) * time.Second),
			Content: []byte(`{"status":{"conditions":[{"type":"Ready","status":"True"}` + conds + `]}}`)}
	}
	s := &fakeStore{versions: []timeline.ObjectVersion{
		node("gpu-1", 1, `,{"type":"DiskPressure","status":"False"}`), node("gpu-1", 9, `,{"type":"DiskPressure","status":"True"}`),
		node("gpu-2", 1, `,{"type":"DiskPressure","status":"False"}`), node("gpu-2", 9, `,{"type":"DiskPressure","status":"False","message":"renewed"}`),
	}}
	out, err := Read(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range out.Bad {
		got = append(got, fmt.Sprintf("%s %s at %s", o.Ref(), o.Reason, o.Time.Sub(t0)))
	}
	if diff := cmp.Diff([]string{"Node/gpu-1 DiskPressure at 9s"}, got); diff != "" {
		t.Errorf("bad (-want +got):\n%s", diff)
	}
}

// A pod create the apiserver refused is bad whoever asked (a controller's
// refused creates are its workload's failures); a system component's
// other denials are not, nor a refused create in kube-system. An Event
// that counted repeats is seen from its first.
func TestRefusedCreatesAndRepeatedEvents(t *testing.T) {
	req := func(id int64, verb, ns string, code int) *timeline.Record {
		return &timeline.Record{ID: id, Time: t0.Add(time.Duration(id) * time.Second), Source: timeline.SourceAudit, Verb: verb, Code: code,
			User: "system:serviceaccount:kube-system:replicaset-controller", Object: timeline.ObjectRef{Resource: "pods", Namespace: ns}}
	}
	// A store that keeps only the fields asked for, as the real ones do.
	s := (&timelinetest.Mem{}).Add(
		req(1, "create", "ml", 403), req(2, "list", "ml", 403), req(3, "create", "kube-system", 403), req(4, "create", "ml", 201),
		&timeline.Record{ID: 5, Time: t0.Add(50 * time.Second), Source: timeline.SourceEvent, Type: "Warning", Reason: "FailedCreate",
			Object: timeline.ObjectRef{Kind: "ReplicaSet", Namespace: "ml", Name: "api-1"},
			Extra:  []byte(`{"count":12,"firstTimestamp":"2026-05-01T10:00:20Z","lastTimestamp":"2026-05-01T10:00:50Z"}`)},
	)
	out, err := Read(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range out.Bad {
		got = append(got, fmt.Sprintf("%d at %s", o.RecordID, o.Time.Sub(t0)))
	}
	if diff := cmp.Diff([]string{"1 at 1s", "5 at 20s"}, got); diff != "" {
		t.Errorf("bad (-want +got):\n%s", diff)
	}
}
