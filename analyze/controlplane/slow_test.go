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
// (classes 1-3), a fourth surges in minute 3 only (class 4), and a
// cache-served list runs throughout (class 5). In minute 3 (t0+3m) the
// slow rows are those given.
func slowFixture(slow ...timeline.RequestStat) *fakeStore { return slowFixtureAt(1, slow...) }

// slowFixtureAt is slowFixture with the leases renewed rate times a second.
func slowFixtureAt(rate int64, slow ...timeline.RequestStat) *fakeStore {
	f := &fakeStore{first: t0, last: t0.Add(5 * time.Minute)}
	f.stats.Classes = []timeline.RequestClass{
		{ID: 1, Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Scope: "object", User: "kwok", UserAgent: "kwok"},
		{ID: 2, Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Scope: "object", User: "system:kube-scheduler", UserAgent: "kube-scheduler"},
		{ID: 3, Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Scope: "object", User: "system:apiserver", UserAgent: "kube-apiserver"},
		{ID: 4, Verb: "create", Resource: "nodes", Scope: "object", User: "admin", UserAgent: "provisioner"},
		{ID: 5, Verb: "list", Resource: "configmaps", Scope: "namespace", User: "system:serviceaccount:ml:*", UserAgent: "reader"},
		{ID: 6, Verb: "list", Resource: "configmaps", Scope: "namespace", User: "system:serviceaccount:batch:*", UserAgent: "agent"},
	}
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
	f.slow.Classes = f.stats.Classes
	f.slow.Stats = slow
	return f
}

// slowRow is n requests of class c in minute 3, over slowWrite.
func slowRow(c int64, n int64, queue time.Duration) timeline.RequestStat {
	return timeline.RequestStat{Class: c, Minute: t0.Add(3 * time.Minute).Unix(), Code: 200, LatencyBucket: timeline.LatencyBucketAbove(slowWrite),
		Count: n, LatencyMaxNs: int64(1500 * time.Millisecond), APFQueueWaitMaxNs: int64(queue)}
}

// etcdLists is n slow lists from etcd in minute 3 of class c, a steady
// reader of configmaps (added to the fixture by slowFixtureAt).
func etcdLists(c, n int64) timeline.RequestStat {
	r := slowRow(c, n, 0)
	r.EtcdLists = n
	return r
}

// atMinute moves a row to minute m.
func atMinute(m int, r timeline.RequestStat) timeline.RequestStat {
	r.Minute = t0.Add(time.Duration(m) * time.Minute).Unix()
	return r
}

func TestSlowEpisodes(t *testing.T) {
	leases := []timeline.RequestStat{slowRow(1, 10, 0), slowRow(2, 8, 0), slowRow(3, 5, 0)}
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
		rows []timeline.RequestStat
		want []got
	}{
		{"three steady users' writes slow, the cache not: etcd", leases,
			[]got{{"etcd", 3, 23, 60, 0, t0.Add(3 * time.Minute), t0.Add(4 * time.Minute), 3}}},
		{"one user only: its own doing", leases[:1], nil},
		{"a steady reader's lists from etcd count", append(leases[:1:1], etcdLists(6, 12)),
			[]got{{"etcd", 2, 22, 60, 0, t0.Add(3 * time.Minute), t0.Add(4 * time.Minute), 2}}},
		{"a surge's slow writes are its own, not the server's", append(leases[:1:1], slowRow(4, 40, 0)), nil},
		{"as slow as every minute before: the window's normal", append(leases[:3:3],
			atMinute(0, slowRow(1, 10, 0)), atMinute(1, slowRow(2, 10, 0)), atMinute(2, slowRow(3, 10, 0))), nil},
		{"the first minute of the evidence: no normal yet", []timeline.RequestStat{atMinute(0, slowRow(1, 10, 0)), atMinute(0, slowRow(2, 8, 0))}, nil},
		{"waited in the APF queues: the load of the moment", append(leases[:2:2], slowRow(3, 5, 2*time.Second)),
			[]got{{"queue", 3, 23, 60, 0, t0.Add(3 * time.Minute), t0.Add(4 * time.Minute), 3}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := slowFixture(tt.rows...)
			eps, err := slowEpisodes(context.Background(), f, time.Time{}, time.Time{}, fold(&f.stats), nil)
			if err != nil {
				t.Fatal(err)
			}
			var have []got
			for _, e := range eps {
				have = append(have, got{e.Where, e.Clients, e.Requests, e.CacheReads, e.CacheSlow, e.Start, e.End, len(e.Classes)})
			}
			if diff := cmp.Diff(tt.want, have); diff != "" {
				t.Errorf("episodes (-want +got)\n%s", diff)
			}
		})
	}
	// The cache's reads slow too, for three users: the apiserver itself.
	rows := append(leases[:3:3], slowRow(5, 3, 0))
	f := slowFixture(rows...)
	f.slow.Classes = append(f.slow.Classes,
		timeline.RequestClass{ID: 6, Verb: "list", Resource: "pods", Scope: "namespace", User: "u6", UserAgent: "a"},
		timeline.RequestClass{ID: 7, Verb: "list", Resource: "pods", Scope: "namespace", User: "u7", UserAgent: "b"})
	f.slow.Stats = append(f.slow.Stats, slowRow(6, 1, 0), slowRow(7, 1, 0))
	eps, err := slowEpisodes(context.Background(), f, time.Time{}, time.Time{}, fold(&f.stats), nil)
	if err != nil || len(eps) != 1 || eps[0].Where != "apiserver" || eps[0].CacheSlow != 5 {
		t.Errorf("slow cache reads of three users: %+v, %v; want one apiserver episode, 5 slow cache reads", eps, err)
	}
	// Significant, but no order of magnitude over the window's normal: 1 %
	// of 6,000 writes a minute slow in every minute before, 3 % now.
	var usual []timeline.RequestStat
	for m := range 3 {
		usual = append(usual, atMinute(m, slowRow(1, 30, 0)), atMinute(m, slowRow(2, 30, 0)))
	}
	usual = append(usual, slowRow(1, 90, 0), slowRow(2, 90, 0))
	f = slowFixtureAt(100, usual...)
	if eps, err := slowEpisodes(context.Background(), f, time.Time{}, time.Time{}, fold(&f.stats), nil); err != nil || len(eps) != 0 {
		t.Errorf("three times the normal share: %+v, %v; want no episode", eps, err)
	}
	// Too few reads from the cache to tell etcd from the apiserver.
	f = slowFixture(leases...)
	var kept []timeline.RequestSecond
	for _, x := range f.stats.Seconds {
		if x.Class != 5 || x.Sec%10 == 0 {
			kept = append(kept, x)
		}
	}
	f.stats.Seconds = kept
	if eps, err := slowEpisodes(context.Background(), f, time.Time{}, time.Time{}, fold(&f.stats), nil); err != nil || len(eps) != 1 || eps[0].Where != "server" {
		t.Errorf("6 reads from the cache in the minute: %+v, %v; want one episode, where server", eps, err)
	}
	// SlowAt finds the episode under way at a moment, and none outside.
	f = slowFixture(leases...)
	if sl, err := SlowAt(context.Background(), f, t0.Add(3*time.Minute+10*time.Second)); err != nil || sl == nil || sl.Where != "etcd" {
		t.Errorf("SlowAt in the episode = %+v, %v", sl, err)
	}
	if sl, err := SlowAt(context.Background(), f, t0.Add(5*time.Minute)); err != nil || sl != nil {
		t.Errorf("SlowAt after it = %+v, %v; want none", sl, err)
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
