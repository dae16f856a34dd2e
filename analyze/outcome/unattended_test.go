package outcome

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

// podAt is a version of pod name at t0+secs, created at t0+created, with
// the spec and status given (JSON objects).
func podAt(name string, created, secs float64, spec, status string) timeline.ObjectVersion {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	return timeline.ObjectVersion{
		Object: timeline.ObjectRef{Resource: "pods", Namespace: "ml", Name: name, UID: "u-" + name},
		Time:   at(secs),
		Content: json.RawMessage(fmt.Sprintf(`{"metadata":{"creationTimestamp":%q},"spec":%s,"status":%s}`,
			at(created).Truncate(time.Second).Format(time.RFC3339), spec, status)),
	}
}

const (
	pending = `{"phase":"Pending"}`
	running = `{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}`
)

// placed is a pod created at created and placed at secs, Running there.
func placed(name string, created, secs float64) []timeline.ObjectVersion {
	return []timeline.ObjectVersion{podAt(name, created, created, `{}`, pending), podAt(name, created, secs, `{"nodeName":"n1"}`, running)}
}

// A pod is NotScheduled when it waited, with no node and no verdict,
// through a span of more than ten seconds in which its scheduler placed
// and judged no pod: from its creation. Queued behind pods the scheduler
// is placing, held back by its gates, judged unschedulable, or waiting
// less than that, it is not.
func TestUnattended(t *testing.T) {
	// The default scheduler works from 0 s to 20 s, then places nothing
	// until 50 s, then again; the evidence ends at 60 s.
	var vs []timeline.ObjectVersion
	for i, s := range []float64{1, 5, 10, 15, 19} {
		vs = append(vs, placed(fmt.Sprintf("early-%d", i), s-0.5, s)...)
	}
	vs = append(vs,
		// Made during the hang, still waiting at the end.
		podAt("hung", 22, 22, `{}`, pending),
		// Made during the hang, placed when the scheduler came back.
		podAt("late", 25, 25, `{}`, pending), podAt("late", 25, 50.2, `{"nodeName":"n1"}`, running),
		// Made after it came back, placed at once.
		podAt("fresh", 51, 51, `{}`, pending), podAt("fresh", 51, 51.1, `{"nodeName":"n2"}`, running),
		// Waits by design.
		podAt("gated", 22, 22, `{"schedulingGates":[{"name":"example.com/quota"}]}`, pending),
		// Judged: the scheduler's verdict (a FailedScheduling, not this).
		podAt("judged", 2, 2, `{}`, pending),
		podAt("judged", 2, 2.1, `{}`, `{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","lastTransitionTime":"2026-05-01T10:00:02Z"}]}`),
		// Made 5 s before the end: too soon to say.
		podAt("recent", 55, 55, `{}`, pending),
		// Deleted 4 s into the hang: too soon to say.
		podAt("gone", 21, 21, `{}`, pending),
		podAt("gone", 21, 25, `{}`, `{"phase":"Pending"}`),
		// A scheduler of another name, which never works: its pod waits
		// while the default one places others.
		podAt("volcano", 3, 3, `{"schedulerName":"volcano"}`, pending),
		// Made with its node named: no scheduler's.
		podAt("static", 30, 30, `{"nodeName":"n3"}`, running),
		// Seen once, placed (a dump): its condition says the scheduler
		// was at work at 35 s, in the hang as the others saw it.
		podAt("dumped", 34, 36, `{"nodeName":"n2"}`, `{"phase":"Running","conditions":[{"type":"PodScheduled","status":"True","lastTransitionTime":"2026-05-01T10:00:35Z"}]}`),
	)
	vs = append(vs, placed("after", 54, 54.5)...)
	// gone's last version is its deletion.
	for i, v := range vs {
		if v.Object.Name == "gone" && v.Time.Equal(t0.Add(25*time.Second)) {
			vs[i].Content = json.RawMessage(`{"metadata":{"creationTimestamp":"2026-05-01T10:00:21Z","deletionTimestamp":"2026-05-01T10:00:25Z"},"spec":{},"status":{"phase":"Pending"}}`)
		}
	}
	vs = append(vs, timeline.ObjectVersion{Object: timeline.ObjectRef{Resource: "nodes", Name: "n1"}, Time: t0.Add(60 * time.Second),
		Content: json.RawMessage(`{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`)})
	got := map[string]string{}
	out, err := Read(t.Context(), &fakeStore{versions: vs}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Bad {
		if o.Reason == NotScheduled {
			got[o.Ref()] = o.Time.Sub(t0).String()
		}
	}
	want := map[string]string{"Pod/ml/hung": "22s", "Pod/ml/late": "25s", "Pod/ml/volcano": "3s"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NotScheduled pods, at (-want +got):\n%s", diff)
	}
	// The spans: the default scheduler's longest pause began with
	// dumped's placement (35 s); hung and late waited through it until
	// late's placement (50.2 s). volcano's never worked.
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	wantIdle := []SchedulerIdle{
		{Scheduler: "volcano", IdleSpan: IdleSpan{From: at(3), Until: at(60), Ongoing: true}, Pods: 1},
		{Scheduler: "default-scheduler", IdleSpan: IdleSpan{LastWork: at(35), From: at(22), Until: at(50.2)}, Pods: 2},
	}
	if diff := cmp.Diff(wantIdle, out.Idle); diff != "" {
		t.Errorf("idle spans (-want +got):\n%s", diff)
	}
}

// The longest span with no work within a wait, and whether it passes the
// scheduler's longest pause.
func TestIdleSpan(t *testing.T) {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	tests := []struct {
		name     string
		work     []float64
		from, to float64
		want     [2]float64
		idle     bool
	}{
		{"no work at all", nil, 0, 30, [2]float64{0, 30}, true},
		{"work every 5 s", []float64{5, 10, 15, 20, 25}, 0, 30, [2]float64{0, 5}, false},
		{"a gap in the middle", []float64{1, 2, 20}, 0, 25, [2]float64{2, 20}, true},
		{"work before and after only", []float64{-5, 40}, 0, 30, [2]float64{0, 30}, true},
		{"exactly the pause", []float64{10}, 0, 10, [2]float64{0, 10}, false},
		{"an empty wait", []float64{1}, 5, 5, [2]float64{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var work []time.Time
			for _, w := range tt.work {
				work = append(work, at(w))
			}
			from, to, idle := idleSpan(work, at(tt.from), at(tt.to))
			got := [2]float64{}
			if !from.IsZero() {
				got = [2]float64{from.Sub(t0).Seconds(), to.Sub(t0).Seconds()}
			}
			if got != tt.want || idle != tt.idle {
				t.Errorf("idleSpan = %v, %v; want %v, %v", got, idle, tt.want, tt.idle)
			}
		})
	}
}

// Where the versions do not show a pod placed (pods logged at Metadata),
// the requests do: its binding, a Scheduled or FailedScheduling event,
// its kubelet's writes. A binding of a pod the versions do not show is
// work of the scheduler whose pods its requester binds.
func TestUnattendedFromRecords(t *testing.T) {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	rec := func(secs float64, src timeline.SourceKind, verb, sub, reason, user, name string) *timeline.Record {
		return &timeline.Record{Time: at(secs), Source: src, Verb: verb, Code: 201, Reason: reason, User: user,
			Object: timeline.ObjectRef{Kind: "Pod", Resource: "pods", Subresource: sub, Namespace: "ml", Name: name}}
	}
	binding := func(secs float64, name string) *timeline.Record {
		return rec(secs, timeline.SourceAudit, "create", "binding", "", "system:kube-scheduler", name)
	}
	again := func(v timeline.ObjectVersion) timeline.ObjectVersion {
		v.Object.UID += "-2"
		return v
	}
	vs := []timeline.ObjectVersion{
		// Seen only as made, each: no version shows them placed.
		podAt("bound", 10, 10, `{}`, pending),
		podAt("evented", 10, 10, `{}`, pending),
		podAt("judged", 10, 10, `{}`, pending),
		podAt("kubelet", 10, 10, `{}`, pending),
		podAt("waits", 40, 40, `{}`, pending),
		// Asks for a scheduler that never works.
		podAt("volcano", 12, 12, `{"schedulerName":"volcano"}`, pending),
		// Placed at 28 s by its versions, after the work its wait held.
		podAt("early", 5, 5, `{}`, pending), podAt("early", 5, 28, `{"nodeName":"n1"}`, running),
		// Made 5 s before the end and bound a second later: too soon to
		// wait, but that binding is work in the others' waits.
		podAt("recent", 55, 55, `{}`, pending),
		// A name whose earlier pod the versions do not show: its binding
		// at 8 s, in the others' waits, is not this one's, made at 14 s.
		podAt("reborn", 14, 14, `{}`, pending),
		// A name made again: the binding at 2 s was the first one's.
		podAt("again", 1, 1, `{}`, pending),
		again(podAt("again", 42, 42, `{}`, pending)),
		{Object: timeline.ObjectRef{Resource: "nodes", Name: "n1"}, Time: at(60), Content: json.RawMessage(`{"status":{}}`)},
	}
	recs := []*timeline.Record{
		binding(2, "again"),
		binding(8, "reborn"),
		binding(10.5, "bound"),
		rec(10.6, timeline.SourceEvent, "", "", "Scheduled", "", "evented"),
		rec(10.7, timeline.SourceEvent, "", "", "FailedScheduling", "", "judged"),
		rec(12, timeline.SourceAudit, "patch", "status", "", "system:node:n1", "kubelet"),
		rec(58, timeline.SourceAudit, "patch", "status", "", "system:node:n1", "kubelet"), // its first says it

		// The scheduler at work on pods the versions do not show, every
		// 5 s until 35 s: its work, so nothing waited on it before then.
		binding(56, "recent"),
		binding(15, "other-1"), binding(20, "other-2"), binding(25, "other-3"), binding(30, "other-4"), binding(35, "other-5"),
	}
	// A store that plans its reads is read a few times for every pod
	// (their own records, then the work in their waits), another once
	// per pod; the answers are the same.
	for _, tt := range []struct {
		name     string
		s        Store
		maxReads int
	}{
		{"indexed", &countingStore{fakeStore: &fakeStore{versions: vs, records: recs}}, 0},
		{"planned", &planningStore{countingStore{fakeStore: &fakeStore{versions: vs, records: recs}}}, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Read(t.Context(), tt.s, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range out.Bad {
				if o.Reason == NotScheduled {
					got = append(got, o.Ref())
				}
			}
			if diff := cmp.Diff([]string{"Pod/ml/volcano", "Pod/ml/reborn", "Pod/ml/waits", "Pod/ml/again"}, got); diff != "" {
				t.Errorf("NotScheduled pods (-want +got):\n%s", diff)
			}
			// The bindings of pods the versions do not show are the default
			// scheduler's, whose pods their requester binds: not volcano's.
			want := []SchedulerIdle{
				{Scheduler: "volcano", IdleSpan: IdleSpan{From: at(12), Until: at(60), Ongoing: true}, Pods: 1},
				{Scheduler: "default-scheduler", IdleSpan: IdleSpan{LastWork: at(35), From: at(14), Until: at(56)}, Pods: 3},
			}
			if diff := cmp.Diff(want, out.Idle); diff != "" {
				t.Errorf("idle spans (-want +got):\n%s", diff)
			}
			// Beside the reads of bad records (two: the default's halves).
			if n := tt.s.(reads).reads() - 2; tt.maxReads > 0 && n > tt.maxReads {
				t.Errorf("%d reads of records for the waits, want at most %d", n, tt.maxReads)
			}
		})
	}
}

type reads interface{ reads() int }

// countingStore counts its reads of records (the bad records are read
// concurrently).
type countingStore struct {
	*fakeStore
	n atomic.Int64
}

func (c *countingStore) Records(ctx context.Context, q timeline.Query) iter.Seq2[*timeline.Record, error] {
	c.n.Add(1)
	return c.fakeStore.Records(ctx, q)
}

func (c *countingStore) reads() int { return int(c.n.Load()) }

// planningStore is a store that plans its reads (ClickHouse).
type planningStore struct{ countingStore }

func (*planningStore) PlansReads() bool { return true }

// The work a read of the pods' own records held is not read again, and
// what it did not hold is: the spans are closed, the read's extent half
// open.
func TestPreReadSplitsSpans(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	ns := time.Nanosecond
	pre := preRead{from: at(10), until: at(20), work: []*timeline.Record{{ID: 1, Time: at(10)}, {ID: 2, Time: at(12)}, {ID: 3, Time: at(15)}, {ID: 4, Time: at(19)}}}
	for _, tt := range []struct {
		name    string
		pre     preRead
		within  [][2]time.Time
		inside  []int64
		outside [][2]time.Time
	}{
		{"none held", preRead{}, [][2]time.Time{{at(1), at(5)}}, nil, [][2]time.Time{{at(1), at(5)}}},
		{"held whole", pre, [][2]time.Time{{at(10), at(12)}, {at(15), at(19)}}, []int64{1, 2, 3, 4}, nil},
		{"before and after", pre, [][2]time.Time{{at(5), at(25)}}, []int64{1, 2, 3, 4}, [][2]time.Time{{at(5), at(10).Add(-ns)}, {at(20), at(25)}}},
		{"ends at its end", pre, [][2]time.Time{{at(16), at(20)}}, []int64{4}, [][2]time.Time{{at(20), at(20)}}},
		{"apart", pre, [][2]time.Time{{at(1), at(2)}, {at(12), at(13)}, {at(30), at(31)}}, []int64{2}, [][2]time.Time{{at(1), at(2)}, {at(30), at(31)}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ids []int64
			for _, r := range tt.pre.inside(tt.within) {
				ids = append(ids, r.ID)
			}
			if diff := cmp.Diff(tt.inside, ids); diff != "" {
				t.Errorf("inside (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.outside, tt.pre.outside(tt.within)); diff != "" {
				t.Errorf("outside (-want +got):\n%s", diff)
			}
		})
	}
}
