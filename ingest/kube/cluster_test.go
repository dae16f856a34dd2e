package kube

// Tests against the real control plane of hack/cluster. hack/test starts it
// and sets FAULTLINE_CLUSTER_DIR; without it these tests skip (and fail in
// CI, where the control plane must be there).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite"

	"github.com/faultline/faultline/internal/testcluster"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

type cluster struct {
	dir   string
	admin *rest.Config
	kube  *kubernetes.Clientset
}

func realCluster(t *testing.T) *cluster {
	t.Helper()
	dir := testcluster.ClusterDir(t)
	cfg := config(t, dir, "admin")
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{dir: dir, admin: cfg, kube: kc}
}

func config(t *testing.T, dir, identity string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, identity+".kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	return cfg
}

// ingester builds faultline's ingester with its own user agent, so that its
// requests can be found in the audit log.
func (c *cluster) ingester(t *testing.T, identity, agent string, store Store, opt Options) *Ingester {
	t.Helper()
	cfg := rest.CopyConfig(config(t, c.dir, identity))
	cfg.UserAgent = agent
	cfg.QPS, cfg.Burst = 50, 100
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return New(store, dyn, disc, "test", opt)
}

// scenario makes kwok nodes in three zones and two pools, a namespace with a
// Job of `pods` pods, ConfigMaps, Secrets, and waits until the pods run.
func (c *cluster) scenario(t *testing.T, ns string, nodes, pods int) {
	t.Helper()
	ctx := context.Background()
	for i := range nodes {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("kwok-%s-%03d", ns, i),
			Labels: map[string]string{"type": "kwok", "topology.kubernetes.io/zone": []string{"zone-a", "zone-b", "zone-c"}[i%3],
				"pool": []string{"h100-a", "a100-b"}[i%2], "nvidia.com/cuda.driver.major": "550"},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{}}}
		if _, err := c.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, func() bool {
		_, err := c.kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	for i := range 3 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("trainer-env-%d", i)}, Data: map[string]string{"LR": "0.001", "BATCH": "512"}}
		if _, err := c.kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("wandb-%d", i)}, StringData: map[string]string{"token": "SECRETVALUE-live-cluster"}}
		if _, err := c.kube.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "train"},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To(int32(pods)), Completions: ptr.To(int32(pods)), CompletionMode: ptr.To(batchv1.IndexedCompletion),
			BackoffLimit: ptr.To(int32(0)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				NodeSelector:  map[string]string{"type": "kwok"},
				Containers: []corev1.Container{{Name: "trainer", Image: "registry.example/trainer:1.4",
					EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "trainer-env-0"}}}}}},
			}},
		},
	}
	if _, err := c.kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	poll(t, 3*time.Minute, func() bool {
		l, err := c.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Running"})
		return err == nil && len(l.Items) >= pods
	})
}

func poll(t *testing.T, limit time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met in %s", limit)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// heldUIDs reads the uids of the versions the store holds per resource.
func heldUIDs(t *testing.T, s *sqlite.Store, resource, ns string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, v := range heldVersionsOf(t, s, timeline.VersionQuery{Resource: resource, Namespace: ns}) {
		out[v.Object.UID] = true
	}
	return out
}

// heldVersionsOf reads every version q matches, without contents.
func heldVersionsOf(t *testing.T, s *sqlite.Store, q timeline.VersionQuery) []timeline.ObjectVersion {
	t.Helper()
	q.History, q.NoContent = true, true
	vs, err := s.Versions(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// heldRecords reads the records the CEL filter where matches.
func heldRecords(t *testing.T, s *sqlite.Store, where string) []*timeline.Record {
	t.Helper()
	f, err := timeline.CompileFilter(where)
	if err != nil {
		t.Fatal(err)
	}
	var out []*timeline.Record
	for r, err := range s.Records(context.Background(), timeline.Query{Where: f}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// heldEvents reads the namespace and name of the Event behind each event
// record (the record's object is the Event's subject).
func heldEvents(t *testing.T, s *sqlite.Store) []types.NamespacedName {
	t.Helper()
	var out []types.NamespacedName
	for _, r := range heldRecords(t, s, `source == "event"`) {
		var ev struct {
			Namespace string `json:"eventNamespace"`
			Name      string `json:"eventName"`
		}
		json.Unmarshal(r.Extra, &ev)
		out = append(out, types.NamespacedName{Namespace: ev.Namespace, Name: ev.Name})
	}
	return out
}

// auditFootprint reads the audit log for the requests of one user agent:
// verbs seen, and LIST requests per resource.
func auditFootprint(t *testing.T, dir, agent string) (verbs map[string]int, lists map[string]int) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	verbs, lists = map[string]int{}, map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), agent) {
			continue
		}
		var ev struct {
			Verb      string `json:"verb"`
			UserAgent string `json:"userAgent"`
			Stage     string `json:"stage"`
			ObjectRef *struct {
				Resource string `json:"resource"`
				APIGroup string `json:"apiGroup"`
			} `json:"objectRef"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.UserAgent != agent || ev.Stage != "ResponseComplete" {
			continue
		}
		verbs[ev.Verb]++
		if ev.Verb == "list" && ev.ObjectRef != nil {
			lists[groupResource(ev.ObjectRef.APIGroup, ev.ObjectRef.Resource)]++
		}
	}
	return verbs, lists
}

func TestSnapshotAgainstRealAPIServer(t *testing.T) {
	c := realCluster(t)
	ctx := context.Background()
	const ns, pods = "fl-snapshot", 620 // two pages of pods
	c.scenario(t, ns, 60, pods)

	// What the apiserver holds before the snapshot, in this test's own
	// namespace (and nodes, which no test deletes): other tests run in
	// parallel and change their own namespaces meanwhile.
	before, counts := c.objectsBefore(ctx, t, ns)
	events, err := c.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	s := sqlitetest.New(t)
	agent := fmt.Sprintf("faultline/test-%d", time.Now().UnixNano())
	in := c.ingester(t, "admin", agent, s, Options{})
	runs, err := in.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Everything that existed when the snapshot began is in the store.
	checkObjectsHeld(t, s, before)
	if counts["pods"] < pods {
		t.Fatalf("scenario made %d pods, want >= %d", counts["pods"], pods)
	}
	checkSnapshotEventsHeld(t, s, events.Items)

	// The footprint, from the apiserver's own audit log: read-only, and no
	// more LISTs than pages.
	checkFootprint(t, c.dir, agent, runs)
}

// objectsBefore lists the UIDs of the pods, configmaps, secrets and jobs in
// ns and of all nodes, by resource, and how many of each there are.
func (c *cluster) objectsBefore(ctx context.Context, t *testing.T, ns string) (map[string][]string, map[string]int) {
	t.Helper()
	dyn, _ := dynamic.NewForConfig(c.admin)
	before := map[string][]string{}
	counts := map[string]int{}
	for _, gvr := range []schema.GroupVersionResource{
		{Version: "v1", Resource: "pods"}, {Version: "v1", Resource: "nodes"}, {Version: "v1", Resource: "configmaps"},
		{Version: "v1", Resource: "secrets"}, {Group: "batch", Version: "v1", Resource: "jobs"},
	} {
		var l *unstructured.UnstructuredList
		var err error
		if gvr.Resource == "nodes" {
			l, err = dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		} else {
			l, err = dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range l.Items {
			before[gvr.Resource] = append(before[gvr.Resource], string(it.GetUID()))
		}
		counts[gvr.Resource] = len(l.Items)
	}
	return before, counts
}

// checkObjectsHeld checks that the store holds every UID in before, by
// resource.
func checkObjectsHeld(t *testing.T, s *sqlite.Store, before map[string][]string) {
	t.Helper()
	for res, uids := range before {
		held := heldUIDs(t, s, res, "")
		var missing int
		for _, uid := range uids {
			if !held[uid] {
				missing++
			}
		}
		if missing > 0 {
			t.Errorf("%s: %d of %d objects missing from the store", res, missing, len(uids))
		}
	}
}

// checkSnapshotEventsHeld checks that the store holds every one of events,
// and that there was at least one.
func checkSnapshotEventsHeld(t *testing.T, s *sqlite.Store, events []corev1.Event) {
	t.Helper()
	held := map[types.NamespacedName]bool{}
	for _, e := range heldEvents(t, s) {
		held[e] = true
	}
	var missing int
	for _, e := range events {
		if !held[types.NamespacedName{Namespace: e.Namespace, Name: e.Name}] {
			missing++
		}
	}
	if missing > 0 || len(events) == 0 {
		t.Errorf("%d of %d events missing", missing, len(events))
	}
}

// checkFootprint checks, from the apiserver's audit log, that agent only
// read (get, list, watch), that every run finished, and that it sent no more
// LISTs per resource than pages of what it received; it logs the LISTs.
func checkFootprint(t *testing.T, dir, agent string, runs []timeline.IngestRun) {
	t.Helper()
	verbs, lists := auditFootprint(t, dir, agent)
	for v := range verbs {
		if v != "get" && v != "list" && v != "watch" {
			t.Errorf("faultline sent a %q request", v)
		}
	}
	for _, r := range runs {
		if r.Status != timeline.RunDone {
			t.Errorf("run %s: %s %s", r.Path, r.Status, r.Error)
		}
	}
	// Pages from what faultline received: other tests add objects meanwhile.
	pages := func(n int64) int { return max(1, int(math.Ceil(float64(n)/500))) }
	for _, r := range runs {
		for _, res := range []string{"pods", "nodes", "configmaps", "secrets"} {
			if strings.HasSuffix(strings.SplitN(r.Path, "?", 2)[0], "/v1/"+res) && lists[res] > pages(r.Lines) {
				t.Errorf("%s: %d LIST requests for %d objects, want at most %d pages", res, lists[res], r.Lines, pages(r.Lines))
			}
		}
	}
	var summary []string
	for r, n := range lists {
		summary = append(summary, fmt.Sprintf("%s=%d", r, n))
	}
	sort.Strings(summary)
	t.Logf("LIST requests per resource: %s; verbs: %v", strings.Join(summary, " "), verbs)
}

func TestForbiddenResourceIsSkipped(t *testing.T) {
	c := realCluster(t)
	s := sqlitetest.New(t)
	var warnings []string
	in := c.ingester(t, "no-secrets", "faultline/test-no-secrets", s, Options{
		Resources: []Wanted{{"", "configmaps", false}, {"", "secrets", false}, {"", "pods", false}},
		OnSkip:    func(s *input.Skip) { warnings = append(warnings, s.Error()) },
	})
	runs, err := in.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"secrets: forbidden for these credentials (RBAC): skipped; the rest is ingested"}
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("warnings (-want +got)\n%s", diff)
	}
	done := 0
	for _, r := range runs {
		if r.Status == timeline.RunDone {
			done++
		}
	}
	if done != 2 {
		t.Errorf("%d resources ingested, want configmaps and pods: %+v", done, runs)
	}
}

// TestFollowSurvivesAnAPIServerRestart follows one namespace while objects
// change, kills the apiserver with SIGKILL and starts it again mid-way, and
// checks that the store ends with exactly the apiserver's final state: every
// object version and Event version that exists at the end is held, and
// every deletion is recorded.
func TestFollowSurvivesAnAPIServerRestart(t *testing.T) {
	// Tests of other packages use the same apiserver: they wait out the
	// restart (testcluster.Share).
	testcluster.ClusterDirAlone(t)
	c := realCluster(t)
	ns := fmt.Sprintf("fl-follow-%d", time.Now().UnixNano()%1e6) // rerunnable on a live cluster
	ctx := context.Background()
	if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	s := sqlitetest.New(t)
	in := c.ingester(t, "admin", "faultline/test-follow", s, Options{
		Namespace: ns,
		Resources: []Wanted{{"", "configmaps", false}, {"", "events", false}},
		OnSkip:    func(s *input.Skip) { t.Log(s) },
	})
	f := startFollow(ctx, in)
	// Change nothing before the follow holds a position: an object created
	// and deleted before faultline first lists is invisible to anyone.
	awaitFollowCursors(ctx, t, s, ns)

	c.churn(ctx, t, ns, 0, 40)
	// (deletions are every fifth ConfigMap: cm-000, cm-005, ...)
	if missing := c.awaitFinal(ctx, t, s, ns, deletedBefore(40)); len(missing) > 0 {
		t.Fatalf("before the restart, after a minute the store still lacks: %v", missing)
	}
	c.restartAPIServer(ctx, t, ns)
	// Deleted while the follow is reconnecting: seen by its watch if it
	// resumes, or inferred from the LIST if the resume expired (410 Gone,
	// the usual case after a restart: the new watch cache starts later).
	gap := []string{"cm-001", "cm-002"}
	for _, name := range gap {
		if err := c.kube.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// An object created and deleted before the follow holds a position
	// again is seen by no one (the relist cannot show it), so the churn
	// waits for the follow to be back, as it did at the start.
	c.awaitFollowing(ctx, t, s, ns)
	c.churn(ctx, t, ns, 40, 80)

	// Wait until the store holds the final resourceVersion of every
	// ConfigMap and the deletion of every deleted one, then stop following.
	// A change that never arrives fails here, naming what is missing.
	missing := c.awaitFinal(ctx, t, s, ns, append(deletedBefore(80), gap...))
	if err := f.stop(); err != nil {
		t.Fatalf("follow: %v", err)
	}
	if len(missing) > 0 {
		t.Errorf("after a minute the store still lacks: %v", missing)
	}

	// faultline itself restarts: changes made while nobody followed arrive
	// when it follows again, from the position it had committed, without a
	// new LIST.
	listsBefore := countLists(t, s)
	c.churn(ctx, t, ns, 80, 90)
	f = startFollow(ctx, in)
	poll(t, time.Minute, func() bool {
		gone := deletionsHeld(t, s, ns)
		return gone["cm-080"] && gone["cm-085"]
	})
	if err := f.stop(); err != nil {
		t.Fatalf("second follow: %v", err)
	}
	if n := countLists(t, s) - listsBefore; n != 0 {
		t.Errorf("the resumed follow listed configmaps %d times; it should watch from its cursor", n)
	}
	c.checkEventsHeld(ctx, t, s, ns)
}

// following is one Follow running in the background until stop.
type following struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	err    error
}

// startFollow runs in.Follow in the background.
func startFollow(ctx context.Context, in *Ingester) *following {
	fctx, cancel := context.WithCancel(ctx)
	f := &following{cancel: cancel}
	f.wg.Add(1)
	go func() { defer f.wg.Done(); f.err = in.Follow(fctx) }()
	return f
}

// stop cancels the follow, waits for it to return and gives its error.
func (f *following) stop() error {
	f.cancel()
	f.wg.Wait()
	return f.err
}

// awaitFollowCursors waits until the follow holds a position (a cursor) for
// both configmaps and events of ns.
func awaitFollowCursors(ctx context.Context, t *testing.T, s *sqlite.Store, ns string) {
	t.Helper()
	for _, res := range []string{"configmaps", "events"} {
		name := target{gvr: schema.GroupVersionResource{Version: "v1", Resource: res}}.cursorName(ns)
		poll(t, time.Minute, func() bool {
			rv, err := s.Cursor(ctx, name)
			return err == nil && rv != ""
		})
	}
}

// churn creates ConfigMaps cm-<from> to cm-<to-1> in ns, updates each once,
// deletes every fifth, and creates one Event for each.
func (c *cluster) churn(ctx context.Context, t *testing.T, ns string, from, to int) {
	t.Helper()
	cms := c.kube.CoreV1().ConfigMaps(ns)
	for i := from; i < to; i++ {
		name := fmt.Sprintf("cm-%03d", i)
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["v"] = "2"
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if i%5 == 0 {
			if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%d", name, i)},
			InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: name, APIVersion: "v1"},
			Reason:         "Changed", Message: "test", Type: "Normal", Count: 1,
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Source: corev1.EventSource{Component: "test"}}
		if _, err := c.kube.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// restartAPIServer kills the apiserver with SIGKILL, keeps it down for two
// seconds, starts it again and waits until it answers for ns.
func (c *cluster) restartAPIServer(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	restart := exec.Command("bash", "../../hack/cluster/restart", "kube-apiserver", "--down-for", "2")
	restart.Env = append(os.Environ(), "FAULTLINE_CLUSTER_DIR="+c.dir)
	out, err := restart.CombinedOutput()
	if err != nil {
		t.Fatalf("restart: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	poll(t, time.Minute, func() bool {
		_, err := c.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err == nil
	})
}

// awaitFollowing creates a sentinel ConfigMap in ns and waits, up to a
// minute, until the store holds it: the follow is watching again.
func (c *cluster) awaitFollowing(ctx context.Context, t *testing.T, s *sqlite.Store, ns string) {
	t.Helper()
	name := fmt.Sprintf("sentinel-%d", time.Now().UnixNano())
	cm, err := c.kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	poll(t, time.Minute, func() bool {
		return heldVersions(t, s, "configmaps")[string(cm.UID)+"/"+cm.ResourceVersion]
	})
}

// awaitFinal lists the ConfigMaps of ns now and waits until the store holds
// their versions and the deletions named (awaitFinalConfigMaps).
func (c *cluster) awaitFinal(ctx context.Context, t *testing.T, s *sqlite.Store, ns string, deleted []string) []string {
	t.Helper()
	final, err := c.kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return awaitFinalConfigMaps(t, s, ns, final.Items, deleted)
}

// deletedBefore names the ConfigMaps churn deleted among cm-000 to cm-<n-1>.
func deletedBefore(n int) []string {
	var deleted []string
	for i := 0; i < n; i += 5 {
		deleted = append(deleted, fmt.Sprintf("cm-%03d", i))
	}
	return deleted
}

// awaitFinalConfigMaps waits, up to a minute, until the store holds the
// version of every ConfigMap in final and the deletion of every one named in
// deleted; it returns what is still missing then (nothing when all arrived).
func awaitFinalConfigMaps(t *testing.T, s *sqlite.Store, ns string, final []corev1.ConfigMap, deleted []string) []string {
	t.Helper()
	var missing []string
	deadline := time.Now().Add(time.Minute)
	for {
		missing = missing[:0]
		held := heldVersions(t, s, "configmaps")
		for _, cm := range final {
			if !held[string(cm.UID)+"/"+cm.ResourceVersion] {
				missing = append(missing, "version "+cm.Name+"@"+cm.ResourceVersion)
			}
		}
		gone := deletionsHeld(t, s, ns)
		for _, name := range deleted {
			if !gone[name] {
				missing = append(missing, "deletion of "+name)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			return missing
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// checkEventsHeld checks that the store holds one record for each Event the
// apiserver has in ns, and no other.
func (c *cluster) checkEventsHeld(ctx context.Context, t *testing.T, s *sqlite.Store, ns string) {
	t.Helper()
	events, err := c.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var held, want []string
	for _, e := range heldEvents(t, s) {
		if e.Namespace == ns {
			held = append(held, e.Name)
		}
	}
	for _, e := range events.Items {
		want = append(want, e.Name)
	}
	sort.Strings(held)
	sort.Strings(want)
	if diff := cmp.Diff(want, held); diff != "" {
		t.Errorf("event records of %s against the apiserver's events, each created once (-apiserver +store)\n%s", ns, diff)
	}
}

// countLists counts the ingest runs that listed configmaps.
func countLists(t *testing.T, s *sqlite.Store) int {
	t.Helper()
	runs, err := s.Runs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range runs {
		if strings.Contains(r.Path, "/v1/configmaps?") {
			n++
		}
	}
	return n
}

// deletionsHeld returns the names of the objects of ns whose deletion the
// store has recorded.
func deletionsHeld(t *testing.T, s *sqlite.Store, ns string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, r := range heldRecords(t, s, `verb == "deleted" && ns == `+strconv.Quote(ns)) {
		out[r.Object.Name] = true
	}
	return out
}

func heldVersions(t *testing.T, s *sqlite.Store, resource string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, v := range heldVersionsOf(t, s, timeline.VersionQuery{Resource: resource}) {
		out[v.Object.UID+"/"+v.ResourceVersion] = true
	}
	return out
}

func TestRejectedCredentialsAreNamed(t *testing.T) {
	c := realCluster(t)
	cfg := rest.CopyConfig(c.admin)
	cfg.BearerToken = "expired-or-revoked"
	dyn, _ := dynamic.NewForConfig(cfg)
	disc, _ := discovery.NewDiscoveryClientForConfig(cfg)
	in := New(sqlitetest.New(t), dyn, disc, "test", Options{})
	_, err := in.Snapshot(context.Background())
	if !apierrors.IsUnauthorized(err) {
		t.Errorf("err = %v, want 401 Unauthorized", err)
	}
}

// TestGangJobCRDsAreFoundThroughDiscovery installs an MPIJob CRD, creates a
// 256-rank MPIJob, and checks the snapshot finds it through discovery and
// the dynamic client, as it would Kubeflow's.
func TestGangJobCRDsAreFoundThroughDiscovery(t *testing.T) {
	c := realCluster(t)
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(c.admin)
	if err != nil {
		t.Fatal(err)
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crd := obj(t, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"mpijobs.kubeflow.org"},
		"spec":{"group":"kubeflow.org","scope":"Namespaced","names":{"plural":"mpijobs","singular":"mpijob","kind":"MPIJob","listKind":"MPIJobList"},
		"versions":[{"name":"v2beta1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`)
	if _, err := dyn.Resource(crds).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	mpijobs := schema.GroupVersionResource{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}
	const ns = "fl-gang"
	if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	job := obj(t, `{"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"llm-pretrain"},
		"spec":{"slotsPerWorker":8,"mpiReplicaSpecs":{"Launcher":{"replicas":1},"Worker":{"replicas":256}}}}`)
	poll(t, 30*time.Second, func() bool { // the CRD is served once established
		_, err := dyn.Resource(mpijobs).Namespace(ns).Create(ctx, job, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err)
	})
	s := sqlitetest.New(t)
	in := c.ingester(t, "admin", "faultline/test-gang", s, Options{Namespace: ns,
		Resources: []Wanted{{"kubeflow.org", "mpijobs", true}, {"jobset.x-k8s.io", "jobsets", true}}})
	runs, err := in.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Versions != 1 || !strings.Contains(runs[0].Path, "kubeflow.org/v2beta1/mpijobs") {
		t.Fatalf("runs: %+v", runs)
	}
	var kind string
	if vs := heldVersionsOf(t, s, timeline.VersionQuery{}); len(vs) > 0 {
		kind = vs[0].Object.Kind
	}
	if kind != "MPIJob" {
		t.Errorf("stored kind %q, want MPIJob", kind)
	}
}
