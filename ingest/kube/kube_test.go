package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
	"github.com/faultline/faultline/timeline/sqlite"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

func obj(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func TestEventRecordBothAPIGroupsAgree(t *testing.T) {
	core := obj(t, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"w-0.17a","namespace":"ml","uid":"e1","resourceVersion":"900","creationTimestamp":"2026-05-01T10:00:00Z"},
		"involvedObject":{"kind":"Pod","namespace":"ml","name":"w-0","uid":"p1","apiVersion":"v1"},"reason":"BackOff","message":"Back-off restarting failed container",
		"type":"Warning","count":7,"firstTimestamp":"2026-05-01T10:00:00Z","lastTimestamp":"2026-05-01T10:04:00Z","source":{"component":"kubelet","host":"gpu-1"}}`)
	ev := obj(t, `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"w-0.17a","namespace":"ml","uid":"e1","resourceVersion":"900","creationTimestamp":"2026-05-01T10:00:00Z"},
		"regarding":{"kind":"Pod","namespace":"ml","name":"w-0","uid":"p1","apiVersion":"v1"},"reason":"BackOff","note":"Back-off restarting failed container",
		"type":"Warning","deprecatedCount":7,"deprecatedFirstTimestamp":"2026-05-01T10:00:00Z","deprecatedLastTimestamp":"2026-05-01T10:04:00Z","deprecatedSource":{"component":"kubelet","host":"gpu-1"},"reportingController":"kubelet","eventTime":null}`)
	a, err := eventRecord(core, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := eventRecord(ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &timeline.Record{
		Key: "event\x00e1\x00900", Time: time.Date(2026, 5, 1, 10, 4, 0, 0, time.UTC), Source: timeline.SourceEvent,
		Object: timeline.ObjectRef{Version: "v1", Resource: "pods", Kind: "Pod", Namespace: "ml", Name: "w-0", UID: "p1"},
		Reason: "BackOff", Type: "Warning", Message: "Back-off restarting failed container", UserAgent: "kubelet",
	}
	for _, got := range []*timeline.Record{a, b} {
		extra := got.Extra
		got.Extra = nil
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got)\n%s", diff)
		}
		if !strings.Contains(string(extra), `"count":7`) || !strings.Contains(string(extra), `"lastTimestamp":"2026-05-01T10:04:00Z"`) {
			t.Errorf("extra lost the count or lastTimestamp: %s", extra)
		}
	}
}

func TestVersionTimeIsTheObjectsLatestOwnTime(t *testing.T) {
	u := obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"ml","uid":"u","resourceVersion":"5",
		"creationTimestamp":"2026-05-01T09:00:00Z","managedFields":[{"manager":"kubectl","time":"2026-05-01T09:30:00Z"},{"manager":"kube-controller-manager","time":"2026-05-01T09:45:00Z"}]}}`)
	v, err := version(u, target{gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 5, 1, 9, 45, 0, 0, time.UTC); !v.Time.Equal(want) {
		t.Errorf("time = %v, want %v", v.Time, want)
	}
	wantRef := timeline.ObjectRef{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespace: "ml", Name: "d", UID: "u"}
	if diff := cmp.Diff(wantRef, v.Object); diff != "" || v.ResourceVersion != "5" {
		t.Errorf("ref (-want +got)\n%s", diff)
	}
}

// TestSnapshotSkipsForbiddenResources runs a snapshot against client-go's
// fakes with Secrets forbidden: the rest must still be ingested. (Paging is
// tested against the real apiserver; the fake ignores Limit and Continue.)
func TestSnapshotSkipsForbiddenResources(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	pod := obj(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"w-0","namespace":"ml","uid":"p1","resourceVersion":"3","creationTimestamp":"2026-05-01T10:00:00Z"}}`)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{pods: "PodList", secrets: "SecretList"}, pod)
	dyn.PrependReactor("list", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", nil)
	})
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: metav1.Verbs{"get", "list", "watch"}},
		{Name: "secrets", Kind: "Secret", Namespaced: true, Verbs: metav1.Verbs{"get", "list", "watch"}},
	}}}
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "t.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var warnings []string
	in := New(store, dyn, disc, "fake", Options{
		Resources: []Wanted{{"", "pods", false}, {"", "secrets", false}, {"kubeflow.org", "mpijobs", true}},
		OnSkip:    func(s *input.Skip) { warnings = append(warnings, s.Error()) },
	})
	runs, err := in.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].Versions != 1 || runs[0].Status != timeline.RunDone || runs[1].Status != timeline.RunFailed {
		t.Errorf("runs: %+v", runs)
	}
	want := []string{"secrets: forbidden for these credentials (RBAC): skipped; the rest is ingested"}
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("warnings (-want +got)\n%s", diff)
	}
}

func TestIngestFiles(t *testing.T) {
	dir := t.TempDir()
	podList := `{"apiVersion":"v1","kind":"List","items":[
 {"apiVersion":"v1","kind":"Pod","metadata":{"name":"w-0","namespace":"ml","uid":"p0","resourceVersion":"10","creationTimestamp":"2026-05-01T10:00:00Z"}},
 {"apiVersion":"v1","kind":"Pod","metadata":{"name":"w-1","namespace":"ml","uid":"p1","resourceVersion":"11","creationTimestamp":"2026-05-01T10:00:01Z"}}]}`
	events := `{"apiVersion":"v1","kind":"EventList","items":[{"apiVersion":"v1","kind":"Event","metadata":{"name":"w-0.1","namespace":"ml","uid":"e0","resourceVersion":"12"},
 "involvedObject":{"kind":"Pod","namespace":"ml","name":"w-0","apiVersion":"v1"},"reason":"OOMKilled","type":"Warning","lastTimestamp":"2026-05-01T10:02:00Z"}]}`
	gather := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: trainer-env\n  namespace: ml\n  uid: c0\n  resourceVersion: \"5\"\ndata:\n  LR: \"0.1\"\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  namespace: ml\n  uid: d0\n  resourceVersion: \"6\"\n"
	os.MkdirAll(filepath.Join(dir, "must-gather", "namespaces", "ml"), 0o755)
	os.WriteFile(filepath.Join(dir, "pods.json"), []byte(podList), 0o644)
	os.WriteFile(filepath.Join(dir, "events.json"), []byte(events), 0o644)
	os.WriteFile(filepath.Join(dir, "must-gather", "namespaces", "ml", "core.yaml"), []byte(gather), 0o644)
	os.WriteFile(filepath.Join(dir, "must-gather", "notes.txt"), []byte("not read"), 0o644)
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("kind: [unclosed\n"), 0o644)

	s := sqlitetest.New(t)
	var bad []string
	runs, err := IngestFiles(context.Background(), s, []string{filepath.Join(dir, "pods.json"), filepath.Join(dir, "events.json"),
		filepath.Join(dir, "must-gather"), filepath.Join(dir, "bad.yaml")}, FileOptions{
		OnSkip: func(s *input.Skip) {
			bad = append(bad, fmt.Sprintf("%s doc %d", filepath.Base(s.Path), s.Doc))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		got = append(got, fmt.Sprintf("%s versions=%d records=%d bad=%d", filepath.Base(r.Path), r.Versions, r.Records, r.BadLines))
	}
	want := []string{"pods.json versions=2 records=0 bad=0", "events.json versions=0 records=1 bad=0", "core.yaml versions=2 records=0 bad=0", "bad.yaml versions=0 records=0 bad=1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("runs (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]string{"bad.yaml doc 1"}, bad); diff != "" {
		t.Errorf("bad (-want +got)\n%s", diff)
	}
	var resource string
	for r, err := range s.Records(context.Background(), timeline.Query{Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		resource = r.Object.Resource
	}
	if resource != "pods" {
		t.Errorf("event's object resource = %q, want pods", resource)
	}
}

func TestResourceFor(t *testing.T) {
	for kind, want := range map[string]string{"Pod": "pods", "Ingress": "ingresses", "NetworkPolicy": "networkpolicies",
		"Endpoints": "endpoints", "Gateway": "gateways", "MPIJob": "mpijobs", "PodGroup": "podgroups", "": ""} {
		if got := resourceFor(kind); got != want {
			t.Errorf("resourceFor(%q) = %q, want %q", kind, got, want)
		}
	}
}

// TestSnapshotInfersDeletions lists twice with an object deleted in between:
// the second LIST records the deletion it can only infer, once.
func TestSnapshotInfersDeletions(t *testing.T) {
	ctx := context.Background()
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	mk := func(name, uid string) *unstructured.Unstructured {
		return obj(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"`+name+`","namespace":"ml","uid":"`+uid+`","resourceVersion":"1","creationTimestamp":"2026-05-01T10:00:00Z"}}`)
	}
	dyn := func(t *testing.T) *dynamicfake.FakeDynamicClient {
		return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{pods: "PodList"}, mk("w-0", "p0"), mk("w-1", "p1"))
	}
	for _, tc := range []struct {
		name string
		open func(t *testing.T) timeline.Store
	}{
		{"sqlite", func(t *testing.T) timeline.Store {
			s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "t.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
		{"clickhouse", func(t *testing.T) timeline.Store { return clickhousetest.New(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkSnapshotInfersDeletions(t, tc.open(t), dyn(t))
		})
	}
}

// checkSnapshotInfersDeletions snapshots two pods, deletes one, and
// snapshots twice more: one deletion is inferred, once, and the other pod
// alone is live.
func checkSnapshotInfersDeletions(t *testing.T, store timeline.Store, dyn *dynamicfake.FakeDynamicClient) {
	ctx := context.Background()
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: metav1.Verbs{"list", "watch"}}}}}
	at := time.Date(2026, 5, 1, 11, 0, 0, 0, time.UTC)
	in := New(store, dyn, disc, "fake", Options{Resources: []Wanted{{"", "pods", false}}, Now: func() time.Time { return at }})
	if _, err := in.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if err := dyn.Resource(pods).Namespace("ml").Delete(ctx, "w-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second time, nothing new is inferred
		if _, err := in.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for r, err := range store.Records(ctx, timeline.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %s %s/%s %s %s", r.Time.Format(time.RFC3339), r.Verb, r.Object.Namespace, r.Object.Name, r.Object.UID, r.Message))
	}
	want := []string{"2026-05-01T11:00:00Z deleted ml/w-1 p1 absent when listed again: deleted at or before this time"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records (-want +got)\n%s", diff)
	}
	live, err := store.LiveObjects(ctx, "", "pods", "ml")
	if err != nil || len(live) != 1 || live[0].Name != "w-0" {
		t.Errorf("live objects = %+v, %v; want w-0 alone", live, err)
	}
}

// TestFollowStopsOnAFatalWatchError: a watch the server refuses for good
// (400) ends the follow with that error, instead of leaving it to hang until
// someone presses Ctrl-C.
func TestFollowStopsOnAFatalWatchError(t *testing.T) {
	ctx := context.Background()
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{pods: "PodList", cms: "ConfigMapList"})
	dyn.PrependWatchReactor("pods", func(clienttesting.Action) (bool, watch.Interface, error) {
		return true, nil, apierrors.NewBadRequest("field selector not supported")
	})
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: metav1.Verbs{"list", "watch"}},
		{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: metav1.Verbs{"list", "watch"}}}}}
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "t.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	in := New(store, dyn, disc, "fake", Options{Resources: []Wanted{{"", "pods", false}, {"", "configmaps", false}}})
	done := make(chan error, 1)
	go func() { done <- in.Follow(ctx) }()
	select {
	case err := <-done:
		if !apierrors.IsBadRequest(err) {
			t.Errorf("Follow = %v, want the 400 that stopped it", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Follow kept running after a fatal watch error")
	}
}
