package controlplane

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

type fakeStore struct {
	stats    timeline.RequestStats
	slow     []timeline.SlowRequest // what SlowRequests gives, in the window asked
	versions []timeline.ObjectVersion
	first    time.Time
	last     time.Time
}

func (f *fakeStore) RequestSummary(context.Context, time.Time, time.Time) (*timeline.RequestStats, error) {
	return &f.stats, nil
}

func (f *fakeStore) SlowRequests(_ context.Context, since, until time.Time) ([]timeline.SlowRequest, error) {
	var out []timeline.SlowRequest
	for _, r := range f.slow {
		if (since.IsZero() || !r.Received.Before(since)) && (until.IsZero() || r.Received.Before(until)) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (f *fakeStore) Versions(context.Context, timeline.VersionQuery) ([]timeline.ObjectVersion, error) {
	return f.versions, nil
}

func (f *fakeStore) Bounds(context.Context) (time.Time, time.Time, error) {
	return f.first, f.last, nil
}

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

// A steady kubelet class, and 100 trainer workers that each LIST all pods
// at once, 200/s for five seconds, ten minutes in.
func fixture() *fakeStore {
	f := &fakeStore{first: t0, last: t0.Add(15 * time.Minute)}
	f.stats.Classes = []timeline.RequestClass{
		{ID: 1, Verb: "get", Resource: "nodes", Scope: "object", User: "system:node:*", UserAgent: "kubelet"},
		{ID: 2, Verb: "list", Resource: "pods", Scope: "cluster", User: "system:serviceaccount:ml:*", UserAgent: "trainer"},
	}
	for s := int64(0); s < 900; s++ {
		f.stats.Seconds = append(f.stats.Seconds, timeline.RequestSecond{Class: 1, Sec: t0.Unix() + s, Count: 2})
	}
	for m := int64(0); m < 15; m++ {
		f.stats.Stats = append(f.stats.Stats, timeline.RequestStat{Class: 1, Minute: t0.Unix() + 60*m, Code: 200,
			LatencyBucket: timeline.LatencyBucket(5 * time.Millisecond), Count: 120, LatencySumNs: 120 * 5e6, LatencyMaxNs: 6e6})
	}
	burst := t0.Add(10 * time.Minute).Unix()
	for s := int64(0); s < 5; s++ {
		f.stats.Seconds = append(f.stats.Seconds, timeline.RequestSecond{Class: 2, Sec: burst + s, Count: 200})
	}
	f.stats.Stats = append(f.stats.Stats,
		timeline.RequestStat{Class: 2, Minute: burst, Code: 200, LatencyBucket: timeline.LatencyBucket(800 * time.Millisecond),
			Count: 900, EtcdLists: 900, UnpagedLists: 900, LatencySumNs: 900 * 8e8, LatencyMaxNs: 2e9},
		timeline.RequestStat{Class: 2, Minute: burst, Code: 429, LatencyBucket: timeline.LatencyBucket(4 * time.Second),
			Count: 100, EtcdLists: 100, UnpagedLists: 100, LatencySumNs: 100 * 4e9, LatencyMaxNs: 4e9})
	for i := 0; i < 100; i++ {
		f.stats.Clients = append(f.stats.Clients, timeline.RequestClient{Class: 2, Minute: burst,
			User: "system:serviceaccount:ml:worker-" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Count: 10})
	}
	for i := 0; i < 100; i++ {
		f.versions = append(f.versions, timeline.ObjectVersion{
			Object:  timeline.ObjectRef{Resource: "pods", Namespace: "ml", Name: "w", UID: string(rune(i + 100))},
			Time:    t0.Add(9*time.Minute + 58*time.Second),
			Content: json.RawMessage(`{"metadata":{"creationTimestamp":"2026-05-01T10:09:55Z","ownerReferences":[{"kind":"Job","name":"trainer"}]},"spec":{"nodeName":"n"},"status":{"phase":"Running"}}`),
		})
	}
	return f
}

func TestAnalyzeBurst(t *testing.T) {
	rep, err := Analyze(context.Background(), fixture(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Bursts) != 1 {
		t.Fatalf("%d bursts, want 1: %+v", len(rep.Bursts), rep.Bursts)
	}
	b := rep.Bursts[0]
	type summary struct {
		Class, Start, End string
		Peak              float64
		Requests          int64
		Clients           int
		Amplification     float64
		By                string
		Fixes             map[string]float64
		Score             int64
		EtcdReads         int64
		Throttled         int64
	}
	got := summary{Class: b.Class.Key(), Start: b.Start.Format(time.TimeOnly), End: b.End.Format(time.TimeOnly), Peak: b.PeakRps,
		Requests: b.Requests, Clients: b.Clients, Amplification: b.Amplification, By: b.AmplifiedBy, Fixes: map[string]float64{},
		Score: b.Load.Score, EtcdReads: b.Load.EtcdReads, Throttled: b.Load.Throttled}
	for _, f := range b.Fixes {
		got.Fixes[f.Kind] = f.SimulatedPeakRps
	}
	want := summary{Class: "LIST pods (cluster) by trainer [system:serviceaccount:ml:*]", Start: "10:10:00", End: "10:10:05",
		Peak: 200, Requests: 1000, Clients: 100, Amplification: 10, By: "pod",
		// Jitter over 60 s: 1,000 requests over 60 s is 16.67/s at most.
		// Scope: all 100 pods are in ml, so a scoped LIST is no smaller.
		Fixes: map[string]float64{"jitter": 16.67, "watch-cache": 0, "scope": 200, "apf": 200},
		// The 100 LISTs shed with 429 never reached etcd: 1,000 requests
		// + 10 × 900 etcd reads.
		Score: 10000, EtcdReads: 900, Throttled: 100}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("burst (-want +got):\n%s", diff)
	}
	if c := rep.Clients[0]; c.Client != "trainer" || c.EtcdLists != 1000 || c.Throttled != 100 {
		t.Errorf("costliest client = %+v, want trainer with 1000 etcd LISTs and 100 429s", c)
	}
	if p := rep.PodStartup; p == nil || p.Pods != 100 {
		t.Errorf("pod start-up = %+v, want 100 pods", p)
	}
}

func TestWhere(t *testing.T) {
	where, err := CompileWhere(`verb == "list" && scope == "cluster" && codes["429"] > 0`)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Analyze(context.Background(), fixture(), Options{Where: where})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Classes) != 1 || rep.Classes[0].Client != "trainer" {
		t.Errorf("classes = %+v, want the trainer's LIST only", rep.Classes)
	}
	for _, bad := range []string{`verb ==`, `count + 1`} {
		if _, err := CompileWhere(bad); err == nil {
			t.Errorf("CompileWhere(%q) compiled", bad)
		}
	}
}
