package rollup

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/faultline/faultline/timeline"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 30, 0, time.UTC)

func TestNewRequest(t *testing.T) {
	for _, tc := range []struct {
		name                                     string
		verb, namespace, name0, user, agent, uri string
		want                                     Request
	}{
		{"a kubelet's get", "get", "ml", "p1", "system:node:n1", "kubelet/v1.37.2 (linux/amd64)", "/api/v1/namespaces/ml/pods/p1",
			Request{Class: Class{"get", "", "pods", "", timeline.ScopeObject, "system:node:*", "kubelet"}, User: "system:node:n1"}},
		{"an unpaged cluster list", "list", "", "", "system:serviceaccount:ml:w", "trainer/2.3", "/api/v1/pods",
			Request{Class: Class{"list", "", "pods", "", timeline.ScopeCluster, "system:serviceaccount:ml:*", "trainer"},
				User: "system:serviceaccount:ml:w", Etcd: true, Unpaged: true}},
		{"a paged list from the cache", "list", "ml", "", "alice", "kubectl", "/api/v1/namespaces/ml/pods?resourceVersion=0&limit=5",
			Request{Class: Class{"list", "", "pods", "", timeline.ScopeNamespace, "alice", "kubectl"}, User: "alice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NewRequest(tc.verb, "", "pods", "", tc.namespace, tc.name0, tc.user, tc.agent, tc.uri, 42)
			tc.want.TimeNS = 42
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestRequestOfSkipsWhatIsNotCounted(t *testing.T) {
	pod := timeline.ObjectRef{Resource: "pods", Namespace: "ml", Name: "p1"}
	for _, tc := range []struct {
		name string
		r    timeline.Record
		ok   bool
	}{
		{"an audited request", timeline.Record{Source: timeline.SourceAudit, Object: pod, Time: t0}, true},
		{"a non-resource request", timeline.Record{Source: timeline.SourceAudit, Time: t0}, false},
		{"an Event", timeline.Record{Source: timeline.SourceEvent, Object: pod, Time: t0}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rq, ok := RequestOf(&tc.r)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if ok && rq.TimeNS != t0.UnixNano() {
				t.Errorf("time %d, want %d", rq.TimeNS, t0.UnixNano())
			}
		})
	}
}

// deltaRows is a Delta's rows with classes as their batch index.
type deltaRows struct {
	Seconds []Second
	Clients []Client
	Stats   []Stat
}

func rowsOf(d *Delta) deltaRows {
	ids := make([]int64, len(d.classes))
	for i := range ids {
		ids[i] = int64(i)
	}
	return deltaRows{d.Seconds(ids), d.Clients(ids), d.Stats(ids)}
}

// TestCount walks one request's stages through Count: counted once when
// served, in the stats once when final, moved by a Panic that replaces a
// ResponseComplete.
func TestCount(t *testing.T) {
	rq := NewRequest("update", "", "pods", "", "ml", "p1", "alice", "kubectl", "/x", t0.UnixNano())
	minute := t0.Unix() / 60 * 60
	ok, panicked := Values{Code: 200, Latency: int64(time.Second)}, Values{Code: 500, Latency: int64(2 * time.Second), APF: 7}
	type step struct {
		old, in timeline.Stage
		nv, ov  Values
	}
	stat := func(v Values, n int64, retracted bool, latMax, apfMax int64) Stat {
		return Stat{Minute: minute, Code: v.Code, Bucket: timeline.LatencyBucket(time.Duration(v.Latency)),
			Agg: &Agg{N: n, LatSum: n * v.Latency, LatMax: latMax, APFMax: apfMax, Retracted: retracted}}
	}
	served := []Second{{Sec: t0.Unix(), N: 1}}
	client := []Client{{Minute: minute, User: "alice", N: 1}}
	for _, tc := range []struct {
		name  string
		steps []step
		want  deltaRows
	}{
		{"received only", []step{{0, timeline.StageRequestReceived, Values{}, Values{}}}, deltaRows{}},
		{"received, then complete", []step{
			{0, timeline.StageRequestReceived, Values{}, Values{}},
			{timeline.StageRequestReceived, timeline.StageResponseComplete, ok, Values{}},
		}, deltaRows{served, client, []Stat{stat(ok, 1, false, ok.Latency, 0)}}},
		{"started, then complete", []step{
			{0, timeline.StageResponseStarted, Values{Code: 200}, Values{}},
			{timeline.StageResponseStarted, timeline.StageResponseComplete, ok, Values{Code: 200}},
		}, deltaRows{served, client, []Stat{stat(ok, 1, false, ok.Latency, 0)}}},
		{"complete, then received again", []step{
			{0, timeline.StageResponseComplete, ok, Values{}},
			{timeline.StageResponseComplete, timeline.StageRequestReceived, ok, ok},
		}, deltaRows{served, client, []Stat{stat(ok, 1, false, ok.Latency, 0)}}},
		{"complete, then a panic", []step{
			{0, timeline.StageResponseComplete, ok, Values{}},
			{timeline.StageResponseComplete, timeline.StagePanic, panicked, ok},
		}, deltaRows{served, client, []Stat{
			stat(ok, 0, true, ok.Latency, 0), stat(panicked, 1, false, panicked.Latency, 7),
		}}},
		{"a panic taken back from an earlier batch", []step{
			{timeline.StageResponseComplete, timeline.StagePanic, panicked, ok},
		}, deltaRows{nil, nil, []Stat{
			stat(ok, -1, true, math.MinInt64, math.MinInt64), stat(panicked, 1, false, panicked.Latency, 7),
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d Delta
			for _, s := range tc.steps {
				d.Count(&rq, s.old, s.in, s.nv, s.ov)
			}
			got := rowsOf(&d)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// TestIDsAskInClassOrder: new classes are numbered in Compare order,
// whatever order the batch met them in.
func TestIDsAskInClassOrder(t *testing.T) {
	var d Delta
	for _, u := range []string{"carol", "alice", "bob", "alice"} {
		rq := NewRequest("get", "", "pods", "", "", "", u, "kubectl", "/x", t0.UnixNano())
		d.Count(&rq, 0, timeline.StageResponseComplete, Values{Code: 200}, Values{})
	}
	var asked []string
	next := int64(10)
	ids, err := d.IDs(func(c Class) (int64, error) {
		asked = append(asked, c.User)
		next++
		return next, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"alice", "bob", "carol"}, asked); diff != "" {
		t.Errorf("classes asked for (-want +got)\n%s", diff)
	}
	// The batch met carol, alice, bob: ids by that index.
	if diff := cmp.Diff([]int64{13, 11, 12}, ids); diff != "" {
		t.Errorf("ids by batch index (-want +got)\n%s", diff)
	}
}

func TestWindow(t *testing.T) {
	for _, tc := range []struct {
		name         string
		since, until time.Time
		lo, hi       int64
	}{
		{"unbounded", time.Time{}, time.Time{}, math.MinInt64, math.MaxInt64},
		{"whole seconds", t0, t0.Add(time.Minute), t0.Unix(), t0.Unix() + 60},
		{"inside seconds", t0.Add(300 * time.Millisecond), t0.Add(time.Minute + 700*time.Millisecond), t0.Unix() + 1, t0.Unix() + 61},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := Window(tc.since, tc.until)
			if lo != tc.lo || hi != tc.hi {
				t.Errorf("Window = [%d, %d), want [%d, %d)", lo, hi, tc.lo, tc.hi)
			}
		})
	}
}

func TestSums(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []int64
		want  int64
	}{
		{"small", []int64{5, 7}, 12},
		{"negative parts", []int64{int64(3 * time.Hour), -int64(time.Hour)}, int64(2 * time.Hour)},
		{"past the top", []int64{math.MaxInt64, math.MaxInt64, -5}, math.MaxInt64},
		{"back under the top", []int64{math.MaxInt64, 10, -20}, math.MaxInt64 - 10},
		{"past the bottom", []int64{math.MinInt64, -1}, math.MinInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hi, lo int64
			for _, p := range tc.parts {
				h, l := SplitSum(p)
				hi, lo = hi+h, lo+l
			}
			if got := JoinSum(hi, lo); got != tc.want {
				t.Errorf("JoinSum of %v = %d, want %d", tc.parts, got, tc.want)
			}
		})
	}
	if got := SatAdd(math.MaxInt64, 1); got != math.MaxInt64 {
		t.Errorf("SatAdd(max, 1) = %d", got)
	}
	if got := SatAdd(math.MinInt64, -1); got != math.MinInt64 {
		t.Errorf("SatAdd(min, -1) = %d", got)
	}
}

// FuzzAPFQueueWait: the annotation parser never fails on any extra, and
// reads a duration back as Duration.String wrote it.
func FuzzAPFQueueWait(f *testing.F) {
	for _, s := range []string{"700.192745ms", "15.003456789s", "1m5.25s", "1h", "", "-3s", "x"} {
		f.Add(s, int64(0))
	}
	f.Add("", int64(1500*time.Millisecond))
	f.Fuzz(func(t *testing.T, s string, d int64) {
		extra := []byte(`{"annotations":{"` + apfAnnotation + `":` + quote(s) + `}}`)
		got := APFQueueWait(extra)
		if want, err := time.ParseDuration(s); err == nil && strings.HasSuffix(s, "s") && got != int64(want) {
			t.Errorf("%q: %d, want %d", s, got, int64(want))
		}
		d &= 1<<50 - 1 // a wait of up to 13 days, never negative
		ds := time.Duration(d).String()
		extra = []byte(`{"annotations":{"` + apfAnnotation + `":"` + ds + `"}}`)
		if got := APFQueueWait(extra); got != d {
			t.Errorf("%s: %d, want %d", ds, got, d)
		}
	})
}

// quote writes s as a JSON string, or a bare number when s is empty.
func quote(s string) string {
	if s == "" {
		return "7"
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r < 0x20:
			b.WriteString(" ")
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// FuzzAPFQueueWaitSame holds APFQueueWait's fast path to encoding/json on
// any extra: the same wait, whatever the JSON.
func FuzzAPFQueueWaitSame(f *testing.F) {
	const k = `"` + apfAnnotation + `"`
	for _, s := range []string{
		`{"annotations":{` + k + `:"700.192745ms"}}`,
		`{"annotations":{"a":"b",` + k + `:"1s",` + k + `:"2s"}}`,
		`{"annotations":{` + k + `:"1s"},"annotations":{` + k + `:"2s"}}`,
		`{"annotations":{` + k + `:"1s"},"annotations":{"x":"y"}}`,
		`{"annotations":{` + k + `:"1s"},"Annotations":{"x":"y"}}`,
		`{"annotations":{` + k + `:"1s"},"annotations":null}`,
		`{"ANNOTATIONS":{` + k + `:"1s"}}`,
		`{"annotation\u0073":{` + k + `:"1s"}}`,
		`{"annotations":{` + k + `:"1s","n":1e400}}`,
		`{"annotations":{` + k + `:"1s","n":[1,{"a":null}]}}`,
		`{"annotations":{` + k + `:7}}`,
		`{"annotations":{` + k + `:"1s"},"x":[[[[1]]]]}`,
		`{"annotations":{` + k + `:"1s"}`,
		`{"annotations":{` + k + `:"1s\u0000"}}`,
		`{"annotations":{"apiserver.latency.k8s.io\/apf-queue-wait":"3s"}}`,
		`{"annotations":"` + apfAnnotation + `"}`,
		`[{"annotations":{` + k + `:"1s"}}]`,
		`{"annotations":{` + k + `:"1s"}} x`,
		"{\"annotations\":{" + k + ":\"1\xffs\"}}",
		`{"annotations":{` + k + `:"1s"},"x":"` + strings.Repeat("[", 2000) + `"}`,
		`{"annotations":{` + k + `:"1s"},"x":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`,
	} {
		f.Add([]byte(s))
	}
	// The form the ingesters write takes the fast path.
	if v, ok := apfWaitFast([]byte(`{"annotations":{"a":"b",` + k + `:"1s"},"groups":["g"]}`)); !ok || v != "1s" {
		f.Errorf("the common form: %v, %v; want 1s, true", v, ok)
	}
	f.Fuzz(func(t *testing.T, extra []byte) {
		if got, want := APFQueueWait(extra), apfWaitStd(extra); got != want {
			t.Errorf("%q: %d, encoding/json %d", extra, got, want)
		}
	})
}
