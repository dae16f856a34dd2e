package investigate

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/gang"
	"github.com/faultline/faultline/timeline"
)

// nodeFault is a node-log record of reason (and Xid code) on node at sec,
// as ingest/nodelogs stores one.
func nodeFault(sec float64, node, reason string, code int, origin string) *timeline.Record {
	extra := fmt.Sprintf(`{"component":"kernel","origin":%q,"meaning":"m%d","action":"reset the GPU"}`, origin, code)
	return &timeline.Record{ID: int64(sec*1000) + int64(len(node)*7+code), Time: at(sec), Source: timeline.SourceNode,
		Object: timeline.ObjectRef{Kind: "Node", Resource: "nodes", Name: node}, Reason: reason, Code: code, Type: "Warning",
		Message: reason + " on " + node, Extra: []byte(extra)}
}

// gangIncident is a 10-rank job on nodes n0..n9 whose ranks fail one a
// second from 100 s (rank 0 first, on n0), none for a reason of its own,
// and a 6-pod job on e0..e5 that stays good.
func gangIncident() ([]synthObject, []synthPod) {
	var objs []synthObject
	var gangNodes, others []string
	for i := range 10 {
		gangNodes = append(gangNodes, fmt.Sprintf("n%d", i))
		objs = append(objs, poolNode(gangNodes[i], "h100"))
	}
	for i := range 6 {
		others = append(others, fmt.Sprintf("e%d", i))
		objs = append(objs, poolNode(others[i], "h100"))
	}
	ps := pods("ml", "train", 10, nil, gangNodes, 60, 100)
	ps = append(ps, pods("ml", "eval", 6, nil, others, 55, 0)...)
	return objs, ps
}

// A host fault on the first rank's node just before it failed is the
// gang's cause; the NCCL errors the others logged after it are the
// cascade; a fault on a node that ran only good units, one before any
// unit ran, and one the catalog lays at the application's door are not.
func TestHostFaultLeadsAGang(t *testing.T) {
	objs, ps := gangIncident()
	m := synthetic(t, objs, ps)
	m.Add(nodeFault(98, "n0", timeline.NodeXid, 79, "hardware"),
		nodeFault(80, "e1", timeline.NodeXid, 13, "application"), // a good unit ran there
		nodeFault(20, "e2", timeline.NodeXid, 79, "hardware"))    // before anything ran there
	for i := 1; i < 10; i++ {
		m.Add(nodeFault(100.5+float64(i), fmt.Sprintf("n%d", i), timeline.NodeNCCLRemoteError, 0, ""))
	}
	rep, err := Run(context.Background(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Gangs) != 1 {
		t.Fatalf("gangs: got %d, want 1", len(rep.Gangs))
	}
	g := rep.Gangs[0]
	h, ok := g.HostCause()
	if !ok {
		t.Fatalf("no host cause; host errors %+v", g.Host)
	}
	if diff := cmp.Diff(gang.HostError{Node: "n0", Reason: "Xid", Code: 79, Origin: "hardware", Meaning: "m79"},
		gang.HostError{Node: h.Node, Reason: h.Reason, Code: h.Code, Origin: h.Origin, Meaning: h.Meaning}); diff != "" {
		t.Errorf("host cause (-want +got):\n%s", diff)
	}
	if g.First.Node != "n0" || h.Lead.Seconds() != 2 {
		t.Errorf("first rank on %q, lead %s; want n0, 2s", g.First.Node, h.Lead)
	}
	if rep.Verdict != VerdictCause || !strings.HasPrefix(rep.VerdictWhy, "Node/n0 logged Xid 79") {
		t.Errorf("verdict %s: %s", rep.Verdict, rep.VerdictWhy)
	}
	if len(rep.Changes) == 0 || rep.Changes[0].Dimension != "node.xid" || rep.Changes[0].To != "79" || rep.Changes[0].Ref != "Node/n0" {
		t.Fatalf("#1 suspect: %+v", rep.Changes)
	}
	for _, s := range rep.Changes {
		if s.Dimension == "node.ncclremoteerror" || (s.Dimension == "node.xid" && s.To == "13") {
			t.Errorf("a consequence or a good unit's fault is a suspect: %+v", s)
		}
	}
	if b := rep.Boundary; !b.FirstBad.Equal(at(98)) || !b.LastGood.Before(at(98)) || b.Evidence[len(b.Evidence)-1].Side != "bad" {
		t.Errorf("boundary: first bad %s, last good %s; want the fault's instant, %s, and one before it", b.FirstBad, b.LastGood, at(98))
	}
	if rep.Changes[0].Kind != KindFault || Actor(rep.Changes[0]) == "actor unknown (no audit record)" {
		t.Errorf("the fault is told as a change: kind %q, %s", rep.Changes[0].Kind, Actor(rep.Changes[0]))
	}
	if len(rep.Mitigation) == 0 || rep.Mitigation[0].Action != "cordon" || rep.Mitigation[0].Target != "Node/n0" {
		t.Errorf("mitigation: %+v", rep.Mitigation)
	}
}

// Without a fault on its node the gang's first failure explains nothing
// on its own (every rank failed the same way): no cause is named, and a
// fault elsewhere is not made one.
func TestNoHostFaultNoHostCause(t *testing.T) {
	objs, ps := gangIncident()
	m := synthetic(t, objs, ps)
	m.Add(nodeFault(20, "e2", timeline.NodeXid, 79, "hardware"), nodeFault(80, "e1", timeline.NodeXid, 13, "application"))
	rep, err := Run(context.Background(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict == VerdictCause && strings.Contains(rep.VerdictWhy, "Node/") {
		t.Errorf("verdict names a node: %s", rep.VerdictWhy)
	}
	for _, s := range rep.Changes {
		if strings.HasPrefix(s.Dimension, "node.xid") {
			t.Errorf("a fault that reached no bad unit is a suspect: %+v", s)
		}
	}
}

// In a fleet where the same fault is logged everywhere, one landing on
// the first rank's node half a minute before it failed is no evidence: a
// coincidence that likely is not a cause.
func TestCommonHostFaultIsCoincidence(t *testing.T) {
	objs, ps := gangIncident()
	m := synthetic(t, objs, ps)
	m.Add(nodeFault(70, "n0", timeline.NodeXid, 79, "hardware"))
	for i := range 6 {
		for k := range 5 {
			m.Add(nodeFault(10+float64(k*50+i), fmt.Sprintf("e%d", i), timeline.NodeXid, 79, "hardware"))
		}
	}
	rep, err := Run(context.Background(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Gangs) != 1 {
		t.Fatalf("gangs: %d", len(rep.Gangs))
	}
	if h, ok := rep.Gangs[0].HostCause(); ok {
		t.Errorf("a common fault 30 s before is taken for the cause: %+v (all: %+v)", h, rep.Gangs[0].Host)
	}
	if len(rep.Gangs[0].Host) == 0 {
		t.Errorf("the first rank's host fault is not reported at all")
	}
}

// The mitigation of a host fault that explains a gang is said once.
func TestHostFaultAdvisedOnce(t *testing.T) {
	objs, ps := gangIncident()
	m := synthetic(t, objs, ps)
	m.Add(nodeFault(98, "n0", timeline.NodeXid, 79, "hardware"))
	rep, err := Run(context.Background(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range rep.Mitigation {
		got = append(got, a.Action+" "+a.Target)
	}
	want := []string{"cordon Node/n0", "set Pod/ml/train-0", "repair Node/n0"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mitigation (-want +got):\n%s", diff)
	}
}
