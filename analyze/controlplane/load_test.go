package controlplane

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/faultline/faultline/timeline"
)

// storm is a synthetic class that bursts ten minutes into a quiet quarter
// of an hour: perSec requests a second for secs seconds, each open for
// latency, shed of them answered 429 and the rest 200; etcd marks LISTs
// whose parameters read etcd.
type storm struct {
	verb, resource, client string
	perSec, secs, shed     int64
	latency                time.Duration
	etcd                   bool
	start                  int64 // seconds after the storms' common start
}

// stormStore holds the storms, one class each.
func stormStore(storms ...storm) *fakeStore {
	f := &fakeStore{first: t0, last: t0.Add(15 * time.Minute)}
	at := t0.Add(10 * time.Minute).Unix()
	for i, s := range storms {
		id := int64(i + 1)
		f.stats.Classes = append(f.stats.Classes, timeline.RequestClass{ID: id, Verb: s.verb, Resource: s.resource,
			Scope: timeline.ScopeCluster, User: "system:serviceaccount:ml:*", UserAgent: s.client})
		for k := int64(0); k < s.secs; k++ {
			f.stats.Seconds = append(f.stats.Seconds, timeline.RequestSecond{Class: id, Sec: at + s.start + k, Count: s.perSec})
		}
		n := s.perSec * s.secs
		f.stats.Stats = append(f.stats.Stats, stat(id, 200, n-s.shed, s.latency, s.etcd), stat(id, 429, s.shed, time.Millisecond, s.etcd))
	}
	return f
}

// stat is the store's row for n requests of one code and latency.
func stat(class int64, code int, n int64, latency time.Duration, etcd bool) timeline.RequestStat {
	st := timeline.RequestStat{Class: class, Code: code, LatencyBucket: timeline.LatencyBucket(latency), Count: n,
		LatencySumNs: n * int64(latency), LatencyMaxNs: int64(latency)}
	if etcd {
		st.EtcdLists = n // the rollup marks a LIST by its parameters, whatever its answer
	}
	return st
}

func TestBurstLoadRanking(t *testing.T) {
	type ranked struct {
		Class string
		Load  Load
	}
	key := func(verb, resource, client string) string {
		return (&Class{Verb: verb, Resource: resource, Scope: "cluster", Client: client, User: "system:serviceaccount:ml:*"}).Key()
	}
	tests := []struct {
		name   string
		storms []storm
		want   []ranked
	}{{
		// By apiserver time the watch would lead: 20 × 5 min against
		// 100 × 50 ms.
		name: "a long-open WATCH with few openings ranks below a LIST storm of etcd reads",
		storms: []storm{
			{verb: "watch", resource: "pods", client: "log-router", perSec: 20, secs: 1, latency: 5 * time.Minute},
			{verb: "list", resource: "configmaps", client: "peer-discovery", perSec: 10, secs: 10, latency: 50 * time.Millisecond, etcd: true},
		},
		want: []ranked{
			{key("list", "configmaps", "peer-discovery"), Load{Score: 1100, Requests: 100, EtcdReads: 100}},
			{key("watch", "pods", "log-router"), Load{Score: 20, Requests: 20, LongRunning: true}},
		},
	}, {
		name: "a WATCH storm ranks by its openings, not by how long they stayed open",
		storms: []storm{
			{verb: "watch", resource: "nodes", client: "steady", perSec: 30, secs: 1, latency: time.Hour},
			{verb: "list", resource: "configmaps", client: "peer-discovery", perSec: 10, secs: 10, latency: 50 * time.Millisecond, etcd: true},
			{verb: "watch", resource: "pods", client: "restarting", perSec: 200, secs: 10, latency: time.Second},
		},
		want: []ranked{
			{key("watch", "pods", "restarting"), Load{Score: 2000, Requests: 2000, LongRunning: true}},
			{key("list", "configmaps", "peer-discovery"), Load{Score: 1100, Requests: 100, EtcdReads: 100}},
			{key("watch", "nodes", "steady"), Load{Score: 30, Requests: 30, LongRunning: true}},
		},
	}, {
		name: "429s count as requests, never as etcd reads",
		storms: []storm{
			{verb: "get", resource: "configmaps", client: "reader", perSec: 30, secs: 10, latency: 10 * time.Millisecond},
			{verb: "list", resource: "pods", client: "shed", perSec: 50, secs: 10, shed: 500, latency: time.Second, etcd: true},
			{verb: "list", resource: "nodes", client: "half", perSec: 20, secs: 10, shed: 100, latency: time.Second, etcd: true},
		},
		want: []ranked{
			{key("list", "nodes", "half"), Load{Score: 1200, Requests: 200, EtcdReads: 100, Throttled: 100}},
			{key("list", "pods", "shed"), Load{Score: 500, Requests: 500, Throttled: 500}},
			{key("get", "configmaps", "reader"), Load{Score: 300, Requests: 300}},
		},
	}, {
		// get-fanout: the workers' GETs are shed from their start, the Job
		// controller's deletes of the pods that failed arrive into the
		// full level (heavier, and shed too), the kubelets' status
		// patches before them were served in full.
		name: "of the bursts shed one after another, the first leads",
		storms: []storm{
			{verb: "patch", resource: "pods", client: "kwok", perSec: 40, secs: 20, start: -20, latency: 20 * time.Millisecond},
			{verb: "get", resource: "configmaps", client: "workers", perSec: 50, secs: 10, shed: 300, latency: 10 * time.Millisecond},
			{verb: "delete", resource: "pods", client: "controller", perSec: 80, secs: 10, shed: 400, start: 8, latency: 10 * time.Millisecond},
		},
		want: []ranked{
			{key("get", "configmaps", "workers"), Load{Score: 500, Requests: 500, Throttled: 300}},
			{key("delete", "pods", "controller"), Load{Score: 800, Requests: 800, Throttled: 400}},
			{key("patch", "pods", "kwok"), Load{Score: 800, Requests: 800}},
		},
	}, {
		// thousand-workers: the workers GET their ConfigMaps, then LIST
		// every pod from etcd, then the Job controller deletes them.
		name: "a client's own bursts in an episode rank by load, before the clients that came after",
		storms: []storm{
			{verb: "get", resource: "configmaps", client: "workers", perSec: 50, secs: 10, shed: 50, latency: 10 * time.Millisecond},
			{verb: "list", resource: "pods", client: "workers", perSec: 50, secs: 5, shed: 100, start: 4, latency: time.Second, etcd: true},
			{verb: "delete", resource: "pods", client: "controller", perSec: 300, secs: 10, shed: 2000, start: 8, latency: 10 * time.Millisecond},
		},
		want: []ranked{
			{key("list", "pods", "workers"), Load{Score: 1750, Requests: 250, EtcdReads: 150, Throttled: 100}},
			{key("get", "configmaps", "workers"), Load{Score: 500, Requests: 500, Throttled: 50}},
			{key("delete", "pods", "controller"), Load{Score: 3000, Requests: 3000, Throttled: 2000}},
		},
	}, {
		name: "episodes of shedding apart: the heavier first, each from its first burst",
		storms: []storm{
			{verb: "list", resource: "nodes", client: "early", perSec: 100, secs: 5, shed: 200, latency: 10 * time.Millisecond},
			{verb: "get", resource: "secrets", client: "first", perSec: 30, secs: 10, shed: 100, start: 120, latency: 10 * time.Millisecond},
			{verb: "delete", resource: "pods", client: "then", perSec: 100, secs: 10, shed: 500, start: 125, latency: 10 * time.Millisecond},
		},
		want: []ranked{
			{key("get", "secrets", "first"), Load{Score: 300, Requests: 300, Throttled: 100}},
			{key("delete", "pods", "then"), Load{Score: 1000, Requests: 1000, Throttled: 500}},
			{key("list", "nodes", "early"), Load{Score: 500, Requests: 500, Throttled: 200}},
		},
	}, {
		name: "a burst served in full that outweighs an episode of shedding leads it",
		storms: []storm{
			{verb: "patch", resource: "pods", client: "kwok", perSec: 300, secs: 10, start: -20, latency: 20 * time.Millisecond},
			{verb: "get", resource: "configmaps", client: "workers", perSec: 50, secs: 10, shed: 300, latency: 10 * time.Millisecond},
			{verb: "delete", resource: "pods", client: "controller", perSec: 80, secs: 10, shed: 400, start: 8, latency: 10 * time.Millisecond},
		},
		want: []ranked{
			{key("patch", "pods", "kwok"), Load{Score: 3000, Requests: 3000}},
			{key("get", "configmaps", "workers"), Load{Score: 500, Requests: 500, Throttled: 300}},
			{key("delete", "pods", "controller"), Load{Score: 800, Requests: 800, Throttled: 400}},
		},
	}, {
		name: "latency breaks ties and no more",
		storms: []storm{
			{verb: "get", resource: "configmaps", client: "fast", perSec: 10, secs: 10, latency: 5 * time.Millisecond},
			{verb: "get", resource: "secrets", client: "slow", perSec: 10, secs: 10, latency: 2 * time.Second},
			{verb: "get", resource: "nodes", client: "more", perSec: 11, secs: 10, latency: 5 * time.Millisecond},
		},
		want: []ranked{
			{key("get", "nodes", "more"), Load{Score: 110, Requests: 110}},
			{key("get", "secrets", "slow"), Load{Score: 100, Requests: 100}},
			{key("get", "configmaps", "fast"), Load{Score: 100, Requests: 100}},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Analyze(context.Background(), stormStore(tt.storms...), Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []ranked
			for _, b := range rep.Bursts {
				got = append(got, ranked{b.Class.Key(), b.Load})
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(Load{}, "ApiserverSeconds")); diff != "" {
				t.Errorf("bursts by load (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadString(t *testing.T) {
	tests := []struct {
		load Load
		want string
	}{
		{Load{Score: 1200, Requests: 200, EtcdReads: 100, Throttled: 100}, "load 1200 = 200 requests + 10 × 100 etcd reads; 100 shed (429)"},
		{Load{Score: 30, Requests: 30, LongRunning: true}, "load 30 = 30 openings; how long they stayed open is not load"},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tt.load.String()); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", tt.load, diff)
		}
	}
}

func TestLongRunning(t *testing.T) {
	tests := []struct {
		verb, subresource string
		want              bool
	}{{"watch", "", true}, {"get", "log", true}, {"create", "exec", true}, {"list", "", false}, {"get", "status", false}}
	for _, tt := range tests {
		if got := longRunning(&Class{Verb: tt.verb, Subresource: tt.subresource}); got != tt.want {
			t.Errorf("longRunning(%s %s) = %v, want %v", tt.verb, tt.subresource, got, tt.want)
		}
	}
}

// TestShedAfter: a burst of another client that arrived into an episode
// of shedding names the episode's first burst; the first, a client's own
// later bursts and the bursts served in full name none.
func TestShedAfter(t *testing.T) {
	rep, err := Analyze(context.Background(), stormStore(
		storm{verb: "patch", resource: "pods", client: "kwok", perSec: 40, secs: 20, start: -20, latency: 20 * time.Millisecond},
		storm{verb: "list", resource: "pods", client: "workers", perSec: 50, secs: 5, shed: 100, start: 4, latency: time.Second, etcd: true},
		storm{verb: "get", resource: "configmaps", client: "workers", perSec: 50, secs: 10, shed: 50, latency: 10 * time.Millisecond},
		storm{verb: "delete", resource: "pods", client: "controller", perSec: 300, secs: 10, shed: 2000, start: 8, latency: 10 * time.Millisecond},
	), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, b := range rep.Bursts {
		got[b.Class.Client+" "+b.Class.Verb] = b.ShedAfter
	}
	want := map[string]int{"workers list": 0, "workers get": 0, "controller delete": 1, "kwok patch": 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ShedAfter by burst (-want +got):\n%s", diff)
	}
}
