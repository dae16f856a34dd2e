package controlplane

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

// slowFixture: three users renew leases every second for five minutes
// (classes 1-3), a fourth surges in minute 3 only (class 4), a
// cache-served list (class 5) and a reader whose every list reads etcd
// (class 6) run throughout. The slow requests are those given.
func slowFixture(slow ...timeline.SlowRequest) *fakeStore { return slowFixtureAt(1, slow...) }

// The fixture's classes, by id.
var slowClasses = []timeline.RequestClass{
	{ID: 1, Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Scope: "object", User: "kwok", UserAgent: "kwok"},
	{ID: 2, Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Scope: "object", User: "system:kube-scheduler", UserAgent: "kube-scheduler"},
	{ID: 3, Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Scope: "object", User: "system:apiserver", UserAgent: "kube-apiserver"},
	{ID: 4, Verb: "create", Resource: "nodes", Scope: "object", User: "admin", UserAgent: "provisioner"},
	{ID: 5, Verb: "list", Resource: "configmaps", Scope: "namespace", User: "system:serviceaccount:ml:*", UserAgent: "reader"},
	{ID: 6, Verb: "list", Resource: "configmaps", Scope: "namespace", User: "system:serviceaccount:batch:*", UserAgent: "agent"},
}

// slowFixtureAt is slowFixture with the leases renewed rate times a second.
func slowFixtureAt(rate int64, slow ...timeline.SlowRequest) *fakeStore {
	f := &fakeStore{first: t0, last: t0.Add(5 * time.Minute), slow: slow}
	f.stats.Classes = slowClasses
	for s := int64(0); s < 300; s++ {
		for _, c := range []int64{1, 2, 3} {
			f.stats.Seconds = append(f.stats.Seconds, timeline.RequestSecond{Class: c, Sec: t0.Unix() + s, Count: rate})
		}
		f.stats.Seconds = append(f.stats.Seconds, timeline.RequestSecond{Class: 5, Sec: t0.Unix() + s, Count: 1},
			timeline.RequestSecond{Class: 6, Sec: t0.Unix() + s, Count: 1})
		if s >= 180 && s < 240 {
			f.stats.Seconds = append(f.stats.Seconds, timeline.RequestSecond{Class: 4, Sec: t0.Unix() + s, Count: 50})
		}
	}
	// Every list of the agent (class 6) reads etcd.
	f.stats.Stats = []timeline.RequestStat{{Class: 6, Code: 200, LatencyBucket: timeline.LatencyBucket(5 * time.Millisecond), Count: 300, EtcdLists: 300}}
	return f
}

// slowReqs are slow requests of class c (an id of slowClasses), one every
// `every` seconds from second from (of the fixture) to before to, each
// 1.5 s, with an APF queue wait of queue.
func slowReqs(c int, from, to, every int64, queue time.Duration) []timeline.SlowRequest {
	rc := slowClasses[c-1]
	rc.ID = 0
	var out []timeline.SlowRequest
	for s := from; s < to; s += every {
		out = append(out, timeline.SlowRequest{Class: rc, Received: t0.Add(time.Duration(s) * time.Second), Latency: 1500 * time.Millisecond,
			APFWait: queue, Code: 200, Etcd: c == 6})
	}
	return out
}

// quick gives slow requests 400ms: slow, but under the apiserver's
// threshold for its latency breakdown.
func quick(reqs []timeline.SlowRequest) []timeline.SlowRequest {
	for i := range reqs {
		reqs[i].Latency = 400 * time.Millisecond
	}
	return reqs
}

func TestSlowEpisodes(t *testing.T) {
	// A stall of 20 s from 3m10s: each lease renewer's requests in flight
	// wait, one every other second.
	stall := func(classes ...int) []timeline.SlowRequest {
		var out []timeline.SlowRequest
		for _, c := range classes {
			out = append(out, slowReqs(c, 190, 210, 2, 0)...)
		}
		return out
	}
	at := func(s int64) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	type got struct {
		Where           string
		Clients         int
		Requests        int64
		CacheReads      int64
		CacheSlow       int64
		Start, End      time.Time
		ClassesIncluded int
	}
	for _, tt := range []struct {
		name string
		reqs []timeline.SlowRequest
		want []got
	}{
		{"three steady users' writes slow, the cache not: etcd", stall(1, 2, 3),
			[]got{{"etcd", 3, 30, 60, 0, at(190), at(209), 3}}},
		{"one user only: its own doing", stall(1), nil},
		{"a steady reader's lists from etcd count", stall(1, 6),
			[]got{{"etcd", 2, 20, 60, 0, at(190), at(209), 2}}},
		{"a surge's slow writes are its own, not the server's", append(stall(1), slowReqs(4, 190, 210, 1, 0)...), nil},
		{"as slow as every minute before: the normal", append(stall(1, 2, 3), append(slowReqs(1, 0, 190, 2, 0),
			slowReqs(2, 0, 190, 2, 0)...)...), nil},
		{"the first minute of the evidence: no normal yet", append(slowReqs(1, 10, 30, 2, 0), slowReqs(2, 10, 30, 2, 0)...), nil},
		{"waited in the APF queues: the load of the moment", append(stall(1, 2), slowReqs(3, 190, 210, 2, 2*time.Second)...),
			[]got{{"queue", 3, 30, 60, 0, at(190), at(209), 3}}},
		{"gaps of up to five seconds are bridged", append(stall(1, 2, 3), append(slowReqs(1, 213, 220, 2, 0), slowReqs(2, 213, 220, 2, 0)...)...),
			[]got{{"etcd", 3, 38, 60, 0, at(190), at(220), 3}}},
		{"a longer gap ends the episode", append(stall(1, 2, 3), append(slowReqs(1, 230, 240, 1, 0), slowReqs(2, 230, 240, 1, 0)...)...),
			[]got{{"etcd", 3, 30, 60, 0, at(190), at(209), 3}, {"etcd", 2, 20, 60, 0, at(230), at(240), 2}}},
		{"the cache's reads slow too: the apiserver", append(stall(1, 2, 3), slowReqs(5, 190, 210, 4, 0)...),
			[]got{{"apiserver", 3, 30, 60, 5, at(190), at(209), 3}}},
		{"the cache's reads waited in the APF queues, not in the apiserver", append(stall(1, 2, 3), slowReqs(5, 190, 210, 4, 1400*time.Millisecond)...),
			[]got{{"etcd", 3, 30, 60, 0, at(190), at(209), 3}}},
		{"the cache's reads of under 500ms tell no queue wait: not slow in the apiserver", append(stall(1, 2, 3), quick(slowReqs(5, 190, 210, 4, 0))...),
			[]got{{"etcd", 3, 30, 60, 0, at(190), at(209), 3}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := slowFixture(tt.reqs...)
			eps := slowEpisodes(f.slow, fold(&f.stats), nil)
			var have []got
			for _, e := range eps {
				have = append(have, got{e.Where, e.Clients, e.Requests, e.CacheReads, e.CacheSlow, e.Start, e.End, len(e.Classes)})
			}
			if diff := cmp.Diff(tt.want, have); diff != "" {
				t.Errorf("episodes (-want +got)\n%s", diff)
			}
		})
	}
	// Significant, but no order of magnitude over the normal: one lease
	// renewal in a hundred slow in every minute before, three now.
	usual := append(slowReqs(1, 0, 300, 1, 0), slowReqs(2, 0, 300, 1, 0)...)
	usual = append(usual, slowReqs(1, 190, 210, 1, 0)...)
	usual = append(usual, slowReqs(2, 190, 210, 1, 0)...)
	usual = append(usual, slowReqs(3, 190, 210, 1, 0)...)
	f := slowFixtureAt(100, usual...)
	if eps := slowEpisodes(f.slow, fold(&f.stats), nil); len(eps) != 0 {
		t.Errorf("a few times the normal share: %+v; want no episode", eps)
	}
	// Too few reads from the cache to tell etcd from the apiserver.
	f = slowFixture(stall(1, 2, 3)...)
	var kept []timeline.RequestSecond
	for _, x := range f.stats.Seconds {
		if x.Class != 5 || x.Sec%10 == 0 {
			kept = append(kept, x)
		}
	}
	f.stats.Seconds = kept
	if eps := slowEpisodes(f.slow, fold(&f.stats), nil); len(eps) != 1 || eps[0].Where != "server" {
		t.Errorf("6 reads from the cache in the minute: %+v; want one episode, where server", eps)
	}
	// SlowAt finds the episode under way at a moment (from five seconds
	// before its first second to a minute after its last), and none
	// earlier or later.
	f = slowFixture(stall(1, 2, 3)...)
	for _, tt := range []struct {
		at   time.Time
		want bool
	}{{at(195), true}, {at(260), true}, {at(185), true}, {at(184), false}, {at(270), false}} {
		sl, err := SlowAt(context.Background(), f, tt.at)
		if err != nil || (sl != nil) != tt.want || sl != nil && sl.Where != "etcd" {
			t.Errorf("SlowAt(%s) = %+v, %v; want found %v", tt.at.Format(time.TimeOnly), sl, err, tt.want)
		}
	}
}

func TestRises(t *testing.T) {
	for _, tt := range []struct {
		n        int64
		expected float64
		want     bool
	}{
		{30, 1, true},
		{4, 0.01, false}, // fewer than burst.MinRate
		{40, 5, false},   // no order of magnitude
		{6, 0.5, false},  // an order of magnitude, but p = 1.7e-4
		{10, math.Inf(1), false},
	} {
		if got := rises(tt.n, tt.expected); got != tt.want {
			t.Errorf("rises(%d, %g) = %v, want %v", tt.n, tt.expected, got, tt.want)
		}
	}
}

// A class is steady at the rate it had over the seconds it was active in
// the minute before: one that started late in it, at the rate it keeps,
// is; one that surged from nothing, or rose past twice its rate, is not.
func TestMinutesSteady(t *testing.T) {
	series := func(from, to, n int64) []SecondCount {
		var out []SecondCount
		for s := from; s < to; s++ {
			out = append(out, SecondCount{Sec: s, Count: n})
		}
		return out
	}
	every10 := func(from, to int64) []SecondCount {
		var out []SecondCount
		for s := from; s < to; s += 10 {
			out = append(out, SecondCount{Sec: s, Count: 1})
		}
		return out
	}
	for _, tt := range []struct {
		name   string
		series []SecondCount
		want   bool
	}{
		{"the same rate", series(0, 120, 3), true},
		{"started late in the minute before, at the rate it keeps", series(50, 120, 30), true},
		{"surged from nothing", series(60, 120, 30), false},
		{"rose past twice its rate", append(series(0, 60, 1), series(60, 120, 5)...), false},
		{"a lease renewed every ten seconds", every10(0, 90), true},
	} {
		if got := perMinute(&Class{series: tt.series}).steady(60); got != tt.want {
			t.Errorf("%s: steady = %v, want %v", tt.name, got, tt.want)
		}
	}
}
