package outcome

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

// workloadAt is a version of a workload of resource (apps) at t0+secs,
// with its generation and the generation its status says observed (0:
// no status yet).
func workloadAt(resource, name string, secs float64, gen, observed int) timeline.ObjectVersion {
	status := "{}"
	if observed > 0 {
		status = fmt.Sprintf(`{"observedGeneration":%d}`, observed)
	}
	return timeline.ObjectVersion{
		Object: timeline.ObjectRef{Group: "apps", Resource: resource, Namespace: "ml", Name: name, UID: "u-" + name},
		Time:   t0.Add(time.Duration(secs * float64(time.Second))),
		Content: json.RawMessage(fmt.Sprintf(`{"metadata":{"name":%q,"generation":%d},"spec":{},"status":%s}`,
			name, gen, status)),
	}
}

// A workload's change is NotObserved when its generation stayed ahead of
// the one its status says observed through more than ten seconds in
// which its controller (whoever writes its kind's status) made no
// request at all: from the change. Observed soon, left behind by a
// controller at work, or of a kind whose controller the evidence does
// not name, it is not.
func TestUnobserved(t *testing.T) {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	req := func(secs float64, user, verb, resource, sub string) *timeline.Record {
		return &timeline.Record{Time: at(secs), Source: timeline.SourceAudit, Verb: verb, Code: 200, User: user,
			Object: timeline.ObjectRef{Group: "apps", Resource: resource, Subresource: sub, Namespace: "ml", Name: "x"}}
	}
	const deployCtl, stsCtl = "system:serviceaccount:kube-system:deployment-controller", "system:serviceaccount:kube-system:statefulset-controller"
	vs := []timeline.ObjectVersion{
		// Rolled at 20 s, never observed: its controller fell silent at 18 s.
		workloadAt("deployments", "stuck", 5, 1, 1), workloadAt("deployments", "stuck", 20, 2, 1),
		// Made at 40 s, never observed (no status at all).
		workloadAt("deployments", "new", 40, 1, 0),
		// Rolled at 8 s, observed at 9 s, before the silence.
		workloadAt("deployments", "quick", 5, 1, 1), workloadAt("deployments", "quick", 8, 2, 1), workloadAt("deployments", "quick", 9, 2, 2),
		// Never observed, but its controller writes all along: left
		// behind by a controller at work, which is not this.
		workloadAt("statefulsets", "behind", 5, 1, 1), workloadAt("statefulsets", "behind", 20, 2, 1),
		// Never observed, and the evidence names no controller of its kind.
		workloadAt("daemonsets", "unnamed", 5, 1, 1), workloadAt("daemonsets", "unnamed", 20, 2, 1),
		{Object: timeline.ObjectRef{Resource: "nodes", Name: "n1"}, Time: at(60), Content: json.RawMessage(`{"status":{}}`)},
	}
	var recs []*timeline.Record
	for s := 1.0; s < 60; s += 2 {
		if s < 18 {
			recs = append(recs, req(s, deployCtl, "update", "deployments", "status"))
		}
		recs = append(recs, req(s+0.5, stsCtl, "update", "statefulsets", "status"))
	}
	recs = append(recs, req(18, deployCtl, "get", "replicasets", "")) // its last request, a read
	slices.SortStableFunc(recs, func(a, b *timeline.Record) int { return a.Time.Compare(b.Time) })
	out, err := Read(t.Context(), &fakeStore{versions: vs, records: recs}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range out.Bad {
		if o.Reason == NotObserved {
			got = append(got, o.Ref()+"@"+o.Time.Sub(t0).String())
		}
	}
	if diff := cmp.Diff([]string{"Deployment/ml/stuck@20s", "Deployment/ml/new@40s"}, got); diff != "" {
		t.Errorf("NotObserved (-want +got):\n%s", diff)
	}
	want := []ControllerIdle{{Controller: deployCtl, Resource: "deployments.apps", IdleSpan: IdleSpan{LastWork: at(18), From: at(20), Until: at(60), Ongoing: true}, Objects: 2}}
	if diff := cmp.Diff(want, out.Stalled); diff != "" {
		t.Errorf("stalled controllers (-want +got):\n%s", diff)
	}
	// Each is a unit of its own: what it asked for was never begun.
	var units []string
	for _, u := range out.Units {
		if u.Reason == NotObserved {
			units = append(units, u.Ref)
		}
	}
	if diff := cmp.Diff([]string{"Deployment/ml/stuck", "Deployment/ml/new"}, units); diff != "" {
		t.Errorf("units (-want +got):\n%s", diff)
	}
}

// Generations are followed per object: the change not observed is the
// first generation after the one observed, from when it was first seen;
// an observation of it (or the object's deletion) ends it.
func TestChangesFollowGenerations(t *testing.T) {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	deleted := workloadAt("deployments", "gone", 30, 3, 1)
	deleted.Content = json.RawMessage(`{"metadata":{"generation":3,"deletionTimestamp":"2026-05-01T10:00:30Z"},"status":{"observedGeneration":1}}`)
	for _, tt := range []struct {
		name string
		vs   []timeline.ObjectVersion
		want []change
	}{
		{"two changes, the first observed late", []timeline.ObjectVersion{
			workloadAt("deployments", "d", 1, 1, 1), workloadAt("deployments", "d", 10, 2, 1), workloadAt("deployments", "d", 12, 3, 1),
			workloadAt("deployments", "d", 30, 3, 2), workloadAt("deployments", "d", 40, 3, 3),
		}, []change{{gen: 2, since: at(10), observed: at(30)}, {gen: 3, since: at(12), observed: at(40)}}},
		{"made and never observed", []timeline.ObjectVersion{workloadAt("deployments", "d", 5, 1, 0)},
			[]change{{gen: 1, since: at(5)}}},
		{"deleted while waiting", []timeline.ObjectVersion{workloadAt("deployments", "gone", 1, 1, 1), workloadAt("deployments", "gone", 20, 2, 1), deleted},
			[]change{{gen: 2, since: at(20), observed: at(30)}}},
		{"observed at once", []timeline.ObjectVersion{workloadAt("deployments", "d", 1, 1, 1), workloadAt("deployments", "d", 2, 2, 2)}, nil},
		{"no generation", []timeline.ObjectVersion{{Object: timeline.ObjectRef{Group: "apps", Resource: "deployments", Name: "d"}, Time: at(1),
			Content: json.RawMessage(`{"metadata":{},"status":{}}`)}}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cs := newChanges()
			for i := range tt.vs {
				v := &tt.vs[i]
				var g generations
				if err := json.Unmarshal(v.Content, &g); err != nil {
					t.Fatal(err)
				}
				cs.version("apps", "deployments", "Deployment", v.Object.Name, v, g)
			}
			var got []change
			for _, p := range cs.all {
				got = append(got, change{gen: p.gen, since: p.since, observed: p.observed})
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(change{})); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
		})
	}
}

// A busy controller's requests are thinned as they are read: idleSpan
// and around answer on what is kept as on every request, and a busy run
// keeps about two times per schedulerIdle.
func TestThinnedAnswersAsEveryTime(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 500 {
		var all []time.Time
		at := t0
		for range 1 + rng.IntN(400) {
			switch rng.IntN(20) {
			case 0:
				at = at.Add(schedulerIdle + time.Duration(rng.Int64N(int64(time.Minute)))) // idle
			case 1:
				at = at.Add(schedulerIdle) // exactly the bound: not idle
			default:
				at = at.Add(time.Duration(rng.Int64N(int64(3 * time.Second))))
			}
			all = append(all, at)
		}
		var th thinned
		for _, x := range all {
			th.add(x)
		}
		kept := th.times()
		if len(all) > 50 && len(kept) >= len(all) {
			t.Fatalf("trial %d: kept %d of %d", trial, len(kept), len(all))
		}
		span := all[len(all)-1].Sub(t0) + 2*time.Minute
		for range 20 {
			from := t0.Add(-time.Minute + time.Duration(rng.Int64N(int64(span))))
			to := from.Add(time.Duration(rng.Int64N(int64(span))))
			f1, t1, ok1 := idleSpan(all, from, to)
			f2, t2, ok2 := idleSpan(kept, from, to)
			if ok1 != ok2 || ok1 && (!f1.Equal(f2) || !t1.Equal(t2)) {
				t.Fatalf("trial %d [%v, %v]: every time %v %v %v, kept %v %v %v", trial, from.Sub(t0), to.Sub(t0), f1.Sub(t0), t1.Sub(t0), ok1, f2.Sub(t0), t2.Sub(t0), ok2)
			}
			if !ok1 {
				continue
			}
			l1, n1, g1 := around(all, f1, t1)
			l2, n2, g2 := around(kept, f2, t2)
			if !l1.Equal(l2) || !n1.Equal(n2) || g1 != g2 {
				t.Fatalf("trial %d: around every time %v %v %v, kept %v %v %v", trial, l1, n1, g1, l2, n2, g2)
			}
		}
	}
	// A busy hour, a request every 100 ms: about two times per 10 s.
	var th thinned
	for i := range 36000 {
		th.add(t0.Add(time.Duration(i) * 100 * time.Millisecond))
	}
	if n := len(th.times()); n > 2*360+2 {
		t.Errorf("a busy hour kept %d times, want at most %d", n, 2*360+2)
	}
}
