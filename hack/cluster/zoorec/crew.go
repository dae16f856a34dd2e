package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/faultline/faultline/hack/cluster/internal/apiload"
)

// The control-plane families (list-storm, watch-restart-storm, get-fanout,
// rbac-break) drive API clients: a crew is one workload's workers, each a
// client of its own (hack/cluster/internal/apiload), playing that
// workload's pods.

// agentNamespaces are where the clients of the control-plane families run
// (never kube-system: a component there is the control plane's own).
var agentNamespaces = []string{"monitoring", "observability", "ml", "research", "platform", "logging"}

// clientAgent is a user agent as client-go builds it.
func clientAgent(name, version string) string {
	return name + "/" + version + " (linux/amd64) client-go/v0.37.2"
}

// crew is a workload's workers and what they got.
type crew struct {
	ns, name  string // the workload
	userAgent string
	configs   []*rest.Config
	sas       []string // the ServiceAccounts
	timeout   time.Duration
	counter   apiload.Counter
	progress  apiload.Progress
	seed      uint64

	mu     sync.Mutex
	gaveUp map[int]time.Time // worker -> when it gave up
	errs   map[int]error
}

// newCrew makes n workers for a workload: ServiceAccounts NAME-NNNN (or
// one shared ServiceAccount, when sa is set), a token each and a
// connection each, counted, with a per-request timeout.
func (c *Cluster) newCrew(ctx context.Context, ns, name, userAgent string, n int, sa string, timeout time.Duration) (*crew, error) {
	if err := c.Namespace(ctx, ns); err != nil {
		return nil, err
	}
	var tokens, sas []string
	if sa == "" {
		t, err := apiload.ServiceAccounts(ctx, c.Admin, ns, name+"-", n, 8)
		if err != nil {
			return nil, err
		}
		tokens = t
		for i := range n {
			sas = append(sas, apiload.WorkerName(name+"-", i))
		}
	} else {
		// One ServiceAccount for every replica, as a controller has.
		t, err := apiload.ServiceAccount(ctx, c.Admin, ns, sa)
		if err != nil {
			return nil, err
		}
		sas = []string{sa}
		for range n {
			tokens = append(tokens, t)
		}
	}
	return c.crewOf(ns, name, userAgent, sas, tokens, timeout)
}

// crewOf is a crew whose worker i uses tokens[i].
func (c *Cluster) crewOf(ns, name, userAgent string, sas, tokens []string, timeout time.Duration) (*crew, error) {
	cr := &crew{ns: ns, name: name, userAgent: userAgent, sas: sas, timeout: timeout, seed: c.rng.Uint64(), gaveUp: map[int]time.Time{}, errs: map[int]error{}}
	for _, tok := range tokens {
		cfg, err := cr.counter.Config(c.cfg, tok, userAgent, timeout)
		if err != nil {
			return nil, err
		}
		cr.configs = append(cr.configs, cfg)
	}
	return cr, nil
}

// podCrew is a crew whose worker i acts as pod pods[i], with a token of
// ServiceAccount sa bound to that pod, as the kubelet mounts one.
func (c *Cluster) podCrew(ctx context.Context, ns, name, userAgent, sa string, pods []string, timeout time.Duration) (*crew, error) {
	tokens := make([]string, len(pods))
	for i, p := range pods {
		pod, err := c.Admin.CoreV1().Pods(ns).Get(ctx, p, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", ns, p, err)
		}
		if tokens[i], err = apiload.PodToken(ctx, c.Admin, ns, sa, pod); err != nil {
			return nil, err
		}
	}
	return c.crewOf(ns, name, userAgent, []string{sa}, tokens, timeout)
}

// user is the crew's user as faultline folds ServiceAccounts: by namespace.
func (cr *crew) user() string { return "system:serviceaccount:" + cr.ns + ":*" }

// run starts the workers mk makes, each in a goroutine, until ctx ends; a
// worker that gives up is recorded and handed to fail (its pod exits). The
// returned func waits for them all.
func (cr *crew) run(ctx context.Context, mk func(i int, w *apiload.Worker), fail func(i int, err error)) (wait func()) {
	var wg sync.WaitGroup
	for i, cfg := range cr.configs {
		w := &apiload.Worker{Config: cfg, ListTimeout: cr.timeout, Seed: cr.seed + uint64(i), Progress: &cr.progress}
		mk(i, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(ctx); err != nil {
				cr.mu.Lock()
				cr.gaveUp[i], cr.errs[i] = Now(), err
				cr.mu.Unlock()
				if fail != nil {
					fail(i, err)
				}
			}
		}()
	}
	return wg.Wait
}

// failures are the workers that gave up, in order, and the first instant.
func (cr *crew) failures() ([]int, time.Time) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	var out []int
	var first time.Time
	for i, t := range cr.gaveUp {
		out = append(out, i)
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	sort.Ints(out)
	return out, first
}

// firstError is one give-up's error, for the log.
func (cr *crew) firstError() error {
	ids, _ := cr.failures()
	if len(ids) == 0 {
		return nil
	}
	cr.mu.Lock()
	defer cr.mu.Unlock()
	return cr.errs[ids[0]]
}

// answered counts the crew's answered requests whose URL path has the part
// (e.g. "/secrets/").
func (cr *crew) answered(part string) int {
	n := 0
	for _, h := range cr.counter.Hits() {
		if h.Code != 0 && strings.Contains(h.Path, part) {
			n++
		}
	}
	return n
}

// exitJobPods returns a fail func that makes a give-up's Job pod (the
// pod of the worker's completion index) exit 1 with the message.
func (c *Cluster) exitJobPods(ctx context.Context, ns, job string, msg func(error) string) (func(int, error), error) {
	podOf, err := apiload.PodsByIndex(ctx, c.Admin, ns, job)
	if err != nil {
		return nil, err
	}
	return func(i int, cause error) {
		if pod := podOf[i]; pod != "" {
			if err := apiload.ExitPod(context.WithoutCancel(ctx), c.Admin, ns, pod, msg(cause)); err != nil {
				c.log.Warn("could not fail pod", "pod", pod, "err", err)
			}
		}
	}, nil
}

// cancelWhenJobFails cancels the workers once the Job has failed: the Job
// controller deletes the pods still running, and their processes die.
func (c *Cluster) cancelWhenJobFails(ctx context.Context, ns, job string, cancel context.CancelFunc) {
	go func() {
		for ctx.Err() == nil {
			j, err := c.Admin.BatchV1().Jobs(ns).Get(ctx, job, metav1.GetOptions{})
			if err == nil && jobFailed(j) {
				c.log.Info("job failed: its remaining workers stop", "job", ns+"/"+job)
				cancel()
				return
			}
			Sleep(ctx, 500*time.Millisecond)
		}
	}()
}

func jobFailed(j *batchv1.Job) bool {
	for _, cond := range j.Status.Conditions {
		if (cond.Type == batchv1.JobFailed || cond.Type == batchv1.JobFailureTarget) && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// failedPods counts the Job's pods that failed, and the earliest finish.
func (c *Cluster) failedPods(ctx context.Context, ns, selector string) (int, time.Time, error) {
	pods, err := c.Pods(ctx, ns, selector)
	if err != nil {
		return 0, time.Time{}, err
	}
	n := 0
	var first time.Time
	for _, p := range pods {
		if p.Status.Phase != corev1.PodFailed {
			continue
		}
		n++
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil && (first.IsZero() || t.FinishedAt.Time.Before(first)) {
				first = t.FinishedAt.Time.UTC()
			}
		}
	}
	return n, first, nil
}

// waitFailedPods waits until n of the selector's pods have failed (kwok
// plays the exits a moment after they are asked for).
func (c *Cluster) waitFailedPods(ctx context.Context, ns, selector string, n int) (int, time.Time, error) {
	var got int
	var first time.Time
	err := until(ctx, 60*time.Second, fmt.Sprintf("%d failed pods %s in %s", n, selector, ns), func() (bool, error) {
		var err error
		got, first, err = c.failedPods(ctx, ns, selector)
		return got >= n, err
	})
	return got, first, err
}

// readers lets a namespace's ServiceAccounts read the resources, in every
// namespace (what the storm families' clients ask for).
func (c *Cluster) readers(ctx context.Context, ns string, resources ...string) error {
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: resources, Verbs: []string{"get", "list", "watch"}}}
	return apiload.ClusterRole(ctx, c.Admin, ns+"-readers", rules, apiload.NamespaceServiceAccounts(ns))
}

// nodeConfigs gives every node a ConfigMap of its own (a fleet's per-node
// settings, as node agents keep them), so that listing ConfigMaps
// cluster-wide costs what it does on a real fleet.
func (c *Cluster) nodeConfigs(ctx context.Context, f *Fleet) error {
	const ns = "node-config"
	if err := c.Namespace(ctx, ns); err != nil {
		return err
	}
	work := make(chan Node)
	errs := make(chan error, len(f.Nodes))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				data := map[string]string{"zone": n.Zone, "pool": n.Pool, "rack": n.Rack, "gpu.product": products[n.Pool],
					"tuning.yaml": fmt.Sprintf("node: %s\nhugepages: 2048\nnccl:\n  ib_hca: mlx5\n  socket_ifname: eth0\n%s", n.Name, padding(n.Name, 3000))}
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Namespace: ns, Labels: map[string]string{"pool": n.Pool}}, Data: data}
				if _, err := c.Admin.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("node config %s: %w", n.Name, err)
				}
			}
		}()
	}
	for _, n := range f.Nodes {
		work <- n
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

// reportImages reports the images each node holds, as kubelets do (a real
// node's status lists dozens), so that listing nodes costs what it does
// on a real fleet.
func (c *Cluster) reportImages(ctx context.Context, f *Fleet) error {
	var images []corev1.ContainerImage
	for i := range 16 {
		repo := fmt.Sprintf("registry.example/%s", Pick(c, []string{"trainer", "frontend", "ops-tools", "eval", "cuda-base", "nccl-tests", "dcgm-exporter", "fluent-bit"}))
		digest := sha(fmt.Sprint(repo, i))
		images = append(images, corev1.ContainerImage{Names: []string{repo + "@" + digest, fmt.Sprintf("%s:%d.%d", repo, i/8, i%8)},
			SizeBytes: int64(200+c.Intn(9000)) << 20})
	}
	b, err := json.Marshal(map[string]any{"status": map[string]any{"images": images}})
	if err != nil {
		return err
	}
	work := make(chan string)
	errs := make(chan error, len(f.Nodes))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				if _, err := c.Kwok.CoreV1().Nodes().Patch(ctx, n, types.StrategicMergePatchType, b, metav1.PatchOptions{}, "status"); err != nil {
					errs <- fmt.Errorf("report images of node %s: %w", n, err)
				}
			}
		}()
	}
	for _, n := range f.Nodes {
		work <- n.Name
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

// fleetObjects gives the fleet's objects of the resource a realistic size
// (pods are the workloads' own).
func (c *Cluster) fleetObjects(ctx context.Context, f *Fleet, resource string) error {
	switch resource {
	case "configmaps":
		return c.nodeConfigs(ctx, f)
	case "nodes":
		return c.reportImages(ctx, f)
	}
	return nil
}

// padding is n bytes of comment lines, so objects have a realistic size.
func padding(seed string, n int) string {
	b := make([]byte, 0, n)
	for len(b) < n {
		b = append(b, "# "+seed+" tuned by node-tuning-operator, do not edit by hand\n"...)
	}
	return string(b[:n])
}

// neighbour starts a well-behaved workload next to the incident's: a Job
// of n pods made by the routine actor, whose workers do what mk says with
// client-go's retries and never give up. stop ends them.
func (c *Cluster) neighbour(ctx context.Context, ns, name, version string, n int, mk func(i int, w *apiload.Worker)) (cr *crew, stop func(), err error) {
	t := Template{Image: "registry.example/" + name + ":" + version, Container: name}
	if err := c.Job(ctx, routineActor, ns, name, n, 0, t); err != nil {
		return nil, nil, err
	}
	if cr, err = c.newCrew(ctx, ns, name, clientAgent(name, version), n, "", 20*time.Second); err != nil {
		return nil, nil, err
	}
	nctx, cancel := context.WithCancel(ctx)
	wait := cr.run(nctx, func(i int, w *apiload.Worker) {
		w.Tries, w.Pause, w.WaitForServer = 0, 2*time.Second, true
		mk(i, w)
	}, nil)
	return cr, func() { cancel(); wait() }, nil
}

// agent is the incident's workload: a Job of n pods (an Indexed Job,
// backoffLimit 0, as training and batch jobs run) created by the actor,
// with a worker per pod, ServiceAccounts made first. It returns the crew
// and the Job's creation as a change.
func (c *Cluster) agent(ctx context.Context, a Actor, ns, name, version string, n int, timeout time.Duration) (*crew, Change, error) {
	cr, err := c.newCrew(ctx, ns, name, clientAgent(name, version), n, "", timeout)
	if err != nil {
		return nil, Change{}, err
	}
	created, err := c.agentJob(ctx, a, ns, name, version, n)
	return cr, created, err
}

func agentImage(name, version string) string { return "registry.example/" + name + ":" + version }

// version draws a release number.
func (c *Cluster) version() string {
	return fmt.Sprintf("%d.%d.%d", c.Between(0, 3), c.Between(1, 19), c.Between(0, 9))
}

// pickOther draws one of xs that is not not.
func pickOther(c *Cluster, xs []string, not string) string {
	for {
		if x := Pick(c, xs); x != not {
			return x
		}
	}
}

// stormTruth fills in what the storm families share: the boundary (the
// storm's start, the first 429 or give-up), the slice (the Job's pods, also
// named by their image), the namespace as the population, and the
// client, burst and request facts of the control-plane analysis.
func stormTruth(e *Expected, cr *crew, image string, lastGood, stormEnd time.Time, classes []map[string]any, fixes []string) error {
	n429 := cr.counter.Count(http.StatusTooManyRequests)
	gave, firstGaveUp := cr.failures()
	if n429 == 0 {
		return fmt.Errorf("no 429 from the apiserver: the incident did not happen (%d requests)", cr.counter.Requests())
	}
	if len(gave) == 0 {
		return fmt.Errorf("no worker gave up: the incident did not happen (%d requests, %d shed)", cr.counter.Requests(), n429)
	}
	// The first bad instant: the first error the apiserver answered (a
	// 429, or a 403 or 5xx of an apiserver coming up), or a give-up.
	firstBad := cr.counter.FirstError(lastGood)
	if firstBad.IsZero() || firstGaveUp.Before(firstBad) {
		firstBad = firstGaveUp
	}
	start, end := cr.counter.Span(lastGood, stormEnd)
	e.Boundary = &Boundary{LastGood: lastGood, FirstBad: firstBad, Tolerance: "2s"}
	e.Slice = map[string]string{"owner/Job": cr.name}
	e.SliceEquivalents = []map[string]string{{"image.tag/" + cr.name: image}}
	e.Population = map[string]string{"namespace": cr.ns}
	e.CounterexampleDiffersIn = []string{"owner/Job"}
	e.extra("client", map[string]string{"userAgent": cr.userAgent, "user": cr.user()})
	e.extra("burst", map[string]time.Time{"start": start, "end": end})
	e.extra("classes", classes)
	e.extra("fixes", fixes)
	e.extra("workers", len(cr.configs))
	e.extra("failedWorkers", len(gave))
	e.extra("requests", cr.counter.Answered())
	e.extra("throttled", n429)
	return nil
}

// stormAgent starts the workload of a storm family: its agent Job, whose
// workers that give up fail their pods, and a context that ends when the
// Job fails (the controller tears its pods down). stop ends it early.
func (c *Cluster) stormAgent(ctx context.Context, a Actor, ns, name, version string, n int, timeout time.Duration) (
	cr *crew, created Change, fail func(int, error), wctx context.Context, stop context.CancelFunc, err error) {
	if cr, created, err = c.agent(ctx, a, ns, name, version, n, timeout); err != nil {
		return nil, Change{}, nil, nil, nil, err
	}
	if fail, err = c.exitJobPods(ctx, ns, name, apiload.GiveUpMessage); err != nil {
		return nil, Change{}, nil, nil, nil, err
	}
	wctx, stop = context.WithCancel(ctx)
	c.cancelWhenJobFails(wctx, ns, name, stop)
	return cr, created, fail, wctx, stop, nil
}

// podAgent is stormAgent's workload as a cluster runs it today: the Job's
// pods run as one ServiceAccount of the agent's own, and worker i is pod
// i, with a token bound to that pod, as the kubelet mounts one (the
// apiserver then names the pod in every request's user.extra). Its crew's
// user is that ServiceAccount.
func (c *Cluster) podAgent(ctx context.Context, a Actor, ns, name, version string, n int, timeout time.Duration) (
	cr *crew, created Change, fail func(int, error), wctx context.Context, stop context.CancelFunc, err error) {
	if err = c.Namespace(ctx, ns); err != nil {
		return nil, Change{}, nil, nil, nil, err
	}
	if _, err = apiload.ServiceAccount(ctx, c.Admin, ns, name); err != nil {
		return nil, Change{}, nil, nil, nil, err
	}
	at := Now()
	if err = c.Job(ctx, a, ns, name, n, 0, Template{Image: agentImage(name, version), Container: name, ServiceAccount: name}); err != nil {
		return nil, Change{}, nil, nil, nil, err
	}
	created = Change{Ref: "Job/" + ns + "/" + name, Dimension: "created", To: fmt.Sprintf("%d pods", n), At: at, Actor: &a}
	podOf, err := apiload.PodsByIndex(ctx, c.Admin, ns, name)
	if err != nil {
		return nil, Change{}, nil, nil, nil, err
	}
	pods := make([]string, n)
	for i := range pods {
		if pods[i] = podOf[i]; pods[i] == "" {
			return nil, Change{}, nil, nil, nil, fmt.Errorf("job %s/%s has no pod of index %d", ns, name, i)
		}
	}
	if cr, err = c.podCrew(ctx, ns, name, clientAgent(name, version), name, pods, timeout); err != nil {
		return nil, Change{}, nil, nil, nil, err
	}
	if fail, err = c.exitJobPods(ctx, ns, name, apiload.GiveUpMessage); err != nil {
		return nil, Change{}, nil, nil, nil, err
	}
	wctx, stop = context.WithCancel(ctx)
	c.cancelWhenJobFails(wctx, ns, name, stop)
	return cr, created, fail, wctx, stop, nil
}

// stormOver ends a storm whose agent's workers are done (or back): it
// notes the storm's end, waits for a first failed pod if a worker gave up,
// lets the cluster settle, calls stops in order, and counts the agent's
// failed pods.
func (c *Cluster) stormOver(ctx context.Context, cr *crew, ns, name string, stops ...func()) (stormEnd time.Time, failed int, err error) {
	stormEnd = Now()
	gave, _ := cr.failures()
	c.log.Info("storm over", "requests", cr.counter.Requests(), "429s", cr.counter.Count(429), "gaveUp", len(gave), "err", cr.firstError())
	if len(gave) > 0 {
		if _, _, err = c.waitFailedPods(ctx, ns, "app="+name, 1); err != nil {
			return stormEnd, 0, err
		}
	}
	Sleep(ctx, c.Dur(10*time.Second, 15*time.Second))
	for _, stop := range stops {
		stop()
	}
	if failed, _, err = c.failedPods(ctx, ns, "app="+name); err != nil {
		return stormEnd, 0, err
	}
	return stormEnd, failed, nil
}
