package main

import (
	"container/heap"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
)

// The generator.

type generator struct {
	opts      options
	rng       *rand.Rand
	seedTag   [8]byte
	now       int64 // arrival time of the latest request, Unix ns
	burstLo   int64
	burstHi   int64
	seq       uint64
	rv        uint64            // cluster-wide resourceVersion (etcd revision)
	rv0       uint64            // rv when the log starts
	lastRV    map[string]uint64 // resourceVersion of objects written during the log; bounded by the object pool
	pending   pendingHeap
	podActs   map[string]actor // per pod; bounded by the pod pool
	base      table
	fanout    table
	nodes     []nodeInfo
	podTotal  int   // training pods (launchers and workers)
	trainPods []pod // launchers and workers of trainJobs, in order
	actors    actors
}

type nodeInfo struct {
	name, ip, uid string
	ips           []string
	user          *userInfo
}

// actor is who sends a request.
type actor struct {
	user   *userInfo
	ua     string
	ips    []string
	reason string // authorization.k8s.io/reason when allowed
	token  bool   // authenticated with a service-account token rather than x509
}

type actors struct {
	scheduler, kcm, apiserver, mpiOperator, prometheus, reaper actor
	controllers                                                map[string]actor
	admins                                                     []actor
}

func newGenerator(o options) *generator {
	g := &generator{
		opts:    o,
		rng:     rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15)),
		now:     o.start.UnixNano(),
		lastRV:  make(map[string]uint64),
		podActs: make(map[string]actor),
		base:    newTable(baseActions),
		fanout:  newTable(burstActions),
	}
	binary.LittleEndian.PutUint64(g.seedTag[:], o.seed)
	if o.burst.mult > 0 {
		g.burstLo = g.now + int64(o.burst.offset)
		g.burstHi = g.burstLo + int64(o.burst.length)
	}
	g.rv = 2_100_000_000 + g.rng.Uint64N(100_000_000)
	g.rv0 = g.rv
	for i := range o.nodes {
		name := fmt.Sprintf("node-%04d", i)
		ip := fmt.Sprintf("10.%d.%d.%d", 20+i/60000, i/240%250, 10+i%240)
		g.nodes = append(g.nodes, nodeInfo{
			name: name, ip: ip, ips: []string{ip},
			uid:  g.uid("nodes", "", name),
			user: &userInfo{Username: "system:node:" + name, Groups: []string{"system:nodes", "system:authenticated"}},
		})
	}
	for j := range trainJobs {
		job := &trainJobs[j]
		for i := range 1 + job.workers {
			name := job.name + "-launcher"
			if i > 0 {
				name = fmt.Sprintf("%s-worker-%d", job.name, i-1)
			}
			g.trainPods = append(g.trainPods, pod{ns: job.ns, name: name, node: int(g.hash("placement", job.ns, name) % uint64(len(g.nodes))), job: job, ordinal: i})
		}
	}
	g.podTotal = len(g.trainPods)
	g.actors = g.newActors()
	return g
}

func (g *generator) newActors() actors {
	x509 := func(name, ua, reason string, groups ...string) actor {
		return actor{user: &userInfo{Username: name, Groups: append(groups, "system:authenticated")}, ua: ua, ips: []string{controlPlaneIP}, reason: reason}
	}
	rbacUser := func(name string) string {
		return fmt.Sprintf("RBAC: allowed by ClusterRoleBinding %q of ClusterRole %q to User %q", name, name, name)
	}
	a := actors{
		scheduler: x509("system:kube-scheduler", uaScheduler, rbacUser("system:kube-scheduler")),
		kcm:       x509("system:kube-controller-manager", uaKCM, rbacUser("system:kube-controller-manager")),
		apiserver: actor{
			user: &userInfo{Username: "system:apiserver", UID: g.uid("apiserver", "", apiserverLease), Groups: []string{"system:authenticated", "system:masters"}},
			ua:   uaAPIServer, ips: []string{"::1"},
		},
		controllers: map[string]actor{},
	}
	for _, c := range []string{"job-controller", "replicaset-controller", "deployment-controller", "endpointslice-controller", "generic-garbage-collector", "node-lifecycle-controller", "pod-garbage-collector"} {
		a.controllers[c] = actor{
			user:   g.saUser("kube-system", c, nil),
			ua:     uaKCM + "/system:serviceaccount:kube-system:" + c,
			ips:    []string{controlPlaneIP},
			reason: fmt.Sprintf("RBAC: allowed by ClusterRoleBinding %q of ClusterRole %q to ServiceAccount %q", "system:controller:"+c, "system:controller:"+c, c+"/kube-system"),
			token:  true,
		}
	}
	podActor := func(ns, sa, pod, ua, binding string) actor {
		n := int(g.hash("placement", ns, pod) % uint64(len(g.nodes)))
		return actor{
			user:   g.saUser(ns, sa, &podBinding{pod: pod, node: n}),
			ua:     ua,
			ips:    []string{g.podIP(n, int(g.hash("slot", ns, pod)%200))},
			reason: fmt.Sprintf("RBAC: allowed by ClusterRoleBinding %q of ClusterRole %q to ServiceAccount %q", binding, binding, sa+"/"+ns),
			token:  true,
		}
	}
	a.mpiOperator = podActor("mpi-operator", "mpi-operator", "mpi-operator-6d9f7c8b5-x2x7k", uaMPI, "mpi-operator")
	a.prometheus = podActor("monitoring", "prometheus-k8s", "prometheus-k8s-0", uaProm, "prometheus-k8s")
	a.reaper = podActor("ml-platform", "job-reaper", "job-reaper-29571840-8xq2m", uaReaper, "job-reaper")
	a.admins = []actor{
		{user: &userInfo{Username: "oidc:alice@example.com", Groups: []string{"oidc:ml-platform-admins", "system:authenticated"}}, ua: uaKubectlMa, ips: []string{"203.0.113.45"},
			reason: `RBAC: allowed by ClusterRoleBinding "ml-platform-admins" of ClusterRole "cluster-admin" to Group "oidc:ml-platform-admins"`},
		{user: &userInfo{Username: "oidc:bob@example.com", Groups: []string{"oidc:ml-researchers", "system:authenticated"}}, ua: uaKubectl, ips: []string{"198.51.100.7", "10.0.0.5"},
			reason: `RBAC: allowed by ClusterRoleBinding "ml-researchers" of ClusterRole "ml-researcher" to Group "oidc:ml-researchers"`},
		{user: &userInfo{Username: "kubernetes-admin", Groups: []string{"kubeadm:cluster-admins", "system:authenticated"}}, ua: uaKubectl, ips: []string{"10.0.0.5"},
			reason: `RBAC: allowed by ClusterRoleBinding "kubeadm:cluster-admins" of ClusterRole "cluster-admin" to Group "kubeadm:cluster-admins"`},
	}
	return a
}

type podBinding struct {
	pod  string
	node int
}

// saUser is the user of a service-account token; bound tokens carry the pod
// and node in extra.
func (g *generator) saUser(ns, sa string, b *podBinding) *userInfo {
	u := &userInfo{
		Username: "system:serviceaccount:" + ns + ":" + sa,
		UID:      g.uid("serviceaccounts", ns, sa),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	if b == nil {
		u.Extra = map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=" + g.uid("jti", ns, sa)}}
		return u
	}
	nd := g.nodes[b.node]
	u.Extra = map[string][]string{
		"authentication.kubernetes.io/credential-id": {"JTI=" + g.uid("jti", ns, b.pod)},
		"authentication.kubernetes.io/node-name":     {nd.name},
		"authentication.kubernetes.io/node-uid":      {nd.uid},
		"authentication.kubernetes.io/pod-name":      {b.pod},
		"authentication.kubernetes.io/pod-uid":       {g.uid("pods", ns, b.pod)},
	}
	return u
}

// run writes opts.lines lines to w.
func (g *generator) run(ctx context.Context, w io.Writer) (int, error) {
	written, scheduled := 0, 0
	var buf []byte
	write := func(ev *event) error {
		written++
		buf = appendEvent(buf[:0], ev)
		_, err := w.Write(buf)
		return err
	}
	for i := 0; scheduled < g.opts.lines; i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return written, err
			}
		}
		g.now += g.gap()
		for len(g.pending) > 0 && g.pending[0].at <= g.now {
			if err := write(heap.Pop(&g.pending).(pendingLine).ev); err != nil {
				return written, err
			}
		}
		scheduled += g.request(g.opts.lines - scheduled)
	}
	for len(g.pending) > 0 {
		if written%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return written, err
			}
		}
		if err := write(heap.Pop(&g.pending).(pendingLine).ev); err != nil {
			return written, err
		}
	}
	return written, nil
}

func (g *generator) inBurst(t int64) bool { return t >= g.burstLo && t < g.burstHi }

// gap is the time to the next arrival of a Poisson process.
func (g *generator) gap() int64 {
	rate := g.opts.rate
	if g.inBurst(g.now) {
		rate *= g.opts.burst.mult
	}
	return max(1, int64(g.rng.ExpFloat64()/rate*1e9))
}

// pendingLine is a line waiting for its stageTimestamp; seq breaks ties so
// the order is fully determined.
type pendingLine struct {
	at  int64
	seq uint64
	ev  *event
}

type pendingHeap []pendingLine

func (h pendingHeap) Len() int { return len(h) }
func (h pendingHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}

func (h pendingHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pendingHeap) Push(x any)   { *h = append(*h, x.(pendingLine)) }
func (h *pendingHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = pendingLine{}
	*h = old[:len(old)-1]
	return x
}

func (g *generator) schedule(at int64, ev *event) {
	g.seq++
	heap.Push(&g.pending, pendingLine{at: at, seq: g.seq, ev: ev})
}
