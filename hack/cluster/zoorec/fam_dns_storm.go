package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/faultline/faultline/hack/cluster/internal/resolver"
)

// Family dns-storm: a new Job's workers all resolve the Services they
// read from as they start, by short names (NAME.NS), with the pod's
// default ndots:5, so each lookup first walks the search path into
// NXDOMAIN answers; hundreds of workers at once overflow the real
// CoreDNS's socket (hack/coredns) and queries go unanswered. A worker
// whose lookup gets no answer in its attempts fails the way getaddrinfo
// does (EAI_AGAIN) and exits 1. The rest of the fleet resolves names all
// along (the baseline); a neighbour in the same namespace resolves
// fully-qualified names at a steady rate, retries, and stays healthy.
// Nothing about it is in the audit log but the Job and its pods: the
// storm itself is in CoreDNS's metrics, scraped by a real Prometheus.

func init() {
	register(&Family{Name: "dns-storm",
		Summary: "a new Job's workers all resolve short Service names at start (ndots:5); CoreDNS drops queries, workers fail with EAI_AGAIN",
		Needs:   "dns",
		Run:     runDNSStorm})
}

var dnsAgents = []string{"shard-loader", "feature-prefetch", "embedding-sync", "eval-sweep", "tokenizer-warmup", "replay-reader"}

// dnsDeps are Services a job reads from, and their namespaces.
var dnsDeps = [][2]string{{"feature-store", "data"}, {"dataset-index", "data"}, {"blob-gateway", "storage"},
	{"metadata-db", "data"}, {"tokenizer", "serving"}, {"vector-index", "search"}}

// dnsStorm is what a seed draws for the family.
type dnsStorm struct {
	ns, name, version string
	deps              []string // NAME.NS, as the job's code names them
	workers           int
	rate              float64       // lookups a second per worker
	span              time.Duration // how long a worker resolves at start
	opts              resolver.Options
	nb, nbVersion     string // the neighbour
	nbWorkers         int
	actor             Actor
	down              func() []string // the nodes seen NotReady (watchReady)
}

func drawDNSStorm(c *Cluster) *dnsStorm {
	d := &dnsStorm{ns: Pick(c, agentNamespaces), name: Pick(c, dnsAgents), version: c.version()}
	for _, i := range c.rng.Perm(len(dnsDeps))[:c.Between(2, 4)] {
		d.deps = append(d.deps, dnsDeps[i][0]+"."+dnsDeps[i][1])
	}
	d.workers = c.Between(400, 1000)
	d.rate = float64(c.Between(3, 6))
	d.span = c.Dur(20*time.Second, 40*time.Second)
	// The kubelet's resolv.conf: the namespace's search path, ndots:5;
	// timeout and attempts as many clusters set them.
	d.opts = resolver.Options{Search: resolver.SearchPath(d.ns, "cluster.local"), Ndots: 5,
		Timeout: time.Duration(c.Between(1, 3)) * time.Second, Attempts: 2, AAAA: true}
	d.nb, d.nbVersion, d.nbWorkers = pickOther(c, neighbourNames, d.name), c.version(), c.Between(10, 30)
	d.actor = c.DrawActor()
	return d
}

func runDNSStorm(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	addr := os.Getenv("FAULTLINE_COREDNS_ADDR")
	if addr == "" {
		return "", errors.New("dns-storm needs a CoreDNS: FAULTLINE_COREDNS_ADDR is empty (hack/cluster/zoo starts one)")
	}
	e.Nodes = Scale(c, e.Family)
	d := drawDNSStorm(c)
	c.log.Info("dns-storm", "ns", d.ns, "job", d.name, "deps", d.deps, "workers", d.workers, "rate", d.rate, "span", d.span, "timeout", d.opts.Timeout)

	// The fleet's own lookups, all along: the baseline a storm stands out from.
	stopFleet := c.resolveSteadily(ctx, addr, c.Between(20, 40), 0.5, []string{"kubernetes.default.svc.cluster.local."}, resolver.Options{})
	defer stopFleet()
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	d.down = c.watchReady(wctx)
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := c.services(ctx, d.deps); err != nil {
		return "", err
	}
	stopNb, err := d.startNeighbour(ctx, c, addr)
	if err != nil {
		return "", err
	}
	defer stopNb()
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(20*time.Second, 40*time.Second))
	return d.storm(ctx, c, e, addr, stopNb)
}

// storm creates the Job, lets its workers resolve at once, and writes the
// truth.
func (d *dnsStorm) storm(ctx context.Context, c *Cluster, e *Expected, addr string, stopNb func()) (string, error) {
	created, err := c.agentJob(ctx, d.actor, d.ns, d.name, d.version, d.workers)
	if err != nil {
		return "", err
	}
	fail, err := c.exitJobPods(ctx, d.ns, d.name, func(err error) string { return "socket.gaierror: " + err.Error() })
	if err != nil {
		return "", err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	c.cancelWhenJobFails(wctx, d.ns, d.name, stop)
	lastGood := Now()
	res := d.resolveAtStart(wctx, addr, c.rng.Uint64(), fail)
	stormEnd := Now()
	c.log.Info("storm over", "lookups", res.lookups.Load(), "queries", res.queries.Load(), "answered", res.answered.Load(), "gaveUp", res.gaveUp.Load(), "err", res.firstErr())
	if res.gaveUp.Load() == 0 {
		return "", fmt.Errorf("no worker's lookup went unanswered: the incident did not happen (%d queries, %d answered)", res.queries.Load(), res.answered.Load())
	}
	_, firstBad, err := c.waitFailedPods(ctx, d.ns, "app="+d.name, 1)
	if err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(10*time.Second, 15*time.Second))
	stopNb()
	failed, _, err := c.failedPods(ctx, d.ns, "app="+d.name)
	if err != nil {
		return "", err
	}
	if down := d.down(); len(down) > 0 {
		return "", fmt.Errorf("%d nodes went NotReady during the recording (%s ...): the machine was too loaded to play the fleet; record it again on a quieter one", len(down), down[0])
	}
	d.truth(e, created, lastGood, firstBad, stormEnd, failed, res)
	return d.story(failed, res.firstErr()), nil
}

// watchReady polls the fleet's Ready condition every few seconds until
// ctx ends; the returned func lists the nodes it saw not Ready. A DNS
// storm injects no node failure: a node that went NotReady means kwok
// missed its heartbeats on a machine too loaded to play the fleet, and
// the recording holds a failure nobody injected (kwok's status does not
// keep the transition, so it must be watched).
func (c *Cluster) watchReady(ctx context.Context) (down func() []string) {
	var mu sync.Mutex
	seen := map[string]bool{}
	go func() {
		for ctx.Err() == nil {
			nodes, err := c.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			for i := 0; err == nil && i < len(nodes.Items); i++ {
				n := nodes.Items[i]
				for _, cond := range n.Status.Conditions {
					if cond.Type == corev1.NodeReady && cond.Status != corev1.ConditionTrue && !cond.LastHeartbeatTime.IsZero() {
						mu.Lock()
						seen[n.Name] = true
						mu.Unlock()
					}
				}
			}
			Sleep(ctx, 3*time.Second)
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Sorted(maps.Keys(seen))
	}
}

func (d *dnsStorm) truth(e *Expected, created Change, lastGood, firstBad, stormEnd time.Time, failed int, res *lookups) {
	e.Changes = []Change{created}
	e.Boundary = &Boundary{LastGood: lastGood, FirstBad: firstBad, Tolerance: "2s"}
	e.Slice = map[string]string{"owner/Job": d.name}
	e.SliceEquivalents = []map[string]string{{"image.tag/" + d.name: agentImage(d.name, d.version)}}
	e.Population = map[string]string{"namespace": d.ns}
	e.CounterexampleDiffersIn = []string{"owner/Job"}
	e.Mitigation = []Action{{Action: "set", Target: created.Ref + " dnsConfig",
		To: "ndots:1 (or fully qualified names), a node-local DNS cache, a jittered start"}}
	e.extra("dnsBurst", map[string]time.Time{"start": lastGood, "end": stormEnd})
	e.extra("dnsClient", created.Ref)
	e.extra("dnsFixes", []string{"ndots", "nodelocaldns"})
	e.extra("workers", d.workers)
	e.extra("failedPods", failed)
	e.extra("failedWorkers", res.gaveUp.Load())
	e.extra("lookups", res.lookups.Load())
	e.extra("queries", res.queries.Load())
	e.extra("unanswered", res.queries.Load()-res.answered.Load())
}

// agentJob creates the incident's Job as the actor (it waits until its
// pods run) and returns its creation as a change.
func (c *Cluster) agentJob(ctx context.Context, a Actor, ns, name, version string, n int) (Change, error) {
	at := Now()
	if err := c.Job(ctx, a, ns, name, n, 0, Template{Image: agentImage(name, version), Container: name}); err != nil {
		return Change{}, err
	}
	return Change{Ref: "Job/" + ns + "/" + name, Dimension: "created", To: fmt.Sprintf("%d pods", n), At: at, Actor: &a}, nil
}

// lookups counts what a crew of resolvers sent and got.
type lookups struct {
	lookups, queries, answered, gaveUp atomic.Int64
	mu                                 sync.Mutex
	first                              error
}

func (l *lookups) add(r resolver.Result) {
	l.lookups.Add(1)
	l.queries.Add(int64(r.Queries))
	l.answered.Add(int64(r.Answered))
}

func (l *lookups) failed(err error) {
	l.gaveUp.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.first == nil {
		l.first = err
	}
}

func (l *lookups) firstErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first
}

// resolveAtStart runs the Job's workers, all at once: each resolves one of
// the dependencies rate times a second for span; a lookup that goes
// unanswered fails the worker (fail exits its pod). It returns when they
// are all done.
func (d *dnsStorm) resolveAtStart(ctx context.Context, addr string, seed uint64, fail func(int, error)) *lookups {
	res := &lookups{}
	var wg sync.WaitGroup
	for i := range d.workers {
		wg.Go(func() {
			err := resolveLoop(ctx, addr, d.deps, d.opts, d.rate, d.span, seed+uint64(i), res)
			var na *resolver.NoAnswerError
			if errors.As(err, &na) {
				res.failed(err)
				fail(i, err)
			}
		})
	}
	wg.Wait()
	return res
}

// resolveLoop is one resolving process: its own socket, rate lookups a
// second of names picked at random, for span (0: until ctx ends). It
// returns the first error of a lookup.
func resolveLoop(ctx context.Context, addr string, names []string, o resolver.Options, rate float64, span time.Duration, seed uint64, res *lookups) error {
	conn, err := net.Dial("udp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	r := rand.New(rand.NewPCG(seed, 0x64737472))
	ids := func() uint16 { return uint16(r.Uint32()) }
	buf := make([]byte, 1232)
	every := time.Duration(float64(time.Second) / rate)
	end := time.Now().Add(span)
	// Processes of one job do not start in the same microsecond.
	Sleep(ctx, time.Duration(r.Int64N(int64(every))))
	for ctx.Err() == nil && (span == 0 || time.Now().Before(end)) {
		next := time.Now().Add(every)
		got, err := resolver.Lookup(conn, buf, names[r.IntN(len(names))], o, ids)
		res.add(got)
		if err != nil {
			return err
		}
		Sleep(ctx, time.Until(next))
	}
	return nil
}

// resolveSteadily runs n processes that resolve names rate times a second
// until stopped, retrying what goes unanswered: a healthy workload's
// lookups. Options zero: fully-qualified names, 2 s timeout, 3 attempts.
func (c *Cluster) resolveSteadily(ctx context.Context, addr string, n int, rate float64, names []string, o resolver.Options) (stop func()) {
	if o.Timeout == 0 {
		o = resolver.Options{Timeout: 2 * time.Second, Attempts: 3, AAAA: true}
	}
	sctx, cancel := context.WithCancel(ctx)
	res := &lookups{}
	var wg sync.WaitGroup
	seed := c.rng.Uint64()
	for i := range n {
		wg.Go(func() {
			for sctx.Err() == nil {
				if err := resolveLoop(sctx, addr, names, o, rate, 0, seed+uint64(i), res); err != nil {
					res.failed(err)
					Sleep(sctx, time.Second) // it logs, backs off, and goes on
				}
			}
		})
	}
	return sync.OnceFunc(func() {
		cancel()
		wg.Wait()
		c.log.Info("steady resolvers stopped", "names", names, "lookups", res.lookups.Load(), "unanswered", res.gaveUp.Load())
	})
}

// startNeighbour starts the neighbour Job, whose pods resolve the same
// Services by fully-qualified names (the fix), a lookup a second each.
func (d *dnsStorm) startNeighbour(ctx context.Context, c *Cluster, addr string) (stop func(), err error) {
	t := Template{Image: "registry.example/" + d.nb + ":" + d.nbVersion, Container: d.nb}
	if err := c.Job(ctx, routineActor, d.ns, d.nb, d.nbWorkers, 0, t); err != nil {
		return nil, err
	}
	var fqdns []string
	for _, dep := range d.deps {
		fqdns = append(fqdns, dep+".svc.cluster.local.")
	}
	return c.resolveSteadily(ctx, addr, d.nbWorkers, 1, fqdns, resolver.Options{}), nil
}

// services creates the Services the job reads from (NAME.NS), so CoreDNS
// has their addresses.
func (c *Cluster) services(ctx context.Context, deps []string) error {
	for _, dep := range deps {
		name, ns, _ := strings.Cut(dep, ".")
		if err := c.Namespace(ctx, ns); err != nil {
			return err
		}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name}},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
		if _, err := c.Admin.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("service %s: %w", dep, err)
		}
	}
	return nil
}

// story is what on-call saw.
func (d *dnsStorm) story(failed int, firstErr error) string {
	msg := "socket.gaierror"
	if firstErr != nil {
		msg += ": " + firstErr.Error()
	}
	return fmt.Sprintf(`A new %d-pod Job in %s fails within a minute of starting.

## What on-call saw
%s submitted %s/%s, a Job of %d workers (image %s).
Its pods were scheduled and running; then the Job failed: %d of its pods exited 1,
with messages like "%s", and the Job controller deleted the others.
The apiserver was not slow and no node looked wrong. %s, a smaller job in the same
namespace that reads the same Services, kept running. Several people and bots
changed things in the last hour.`,
		d.workers, d.ns, d.actor.User, d.ns, d.name, d.workers, agentImage(d.name, d.version), failed, msg, d.nb)
}
