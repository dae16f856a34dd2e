package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Family service-break: a namespace runs a backend behind a Service and a
// frontend that calls it by the Service's DNS name. The actor, moving the
// namespace to the recommended labels, patches the Service's selector to
// app.kubernetes.io/name, which the backend's pods do not carry yet: the
// endpoint controller empties the Service's endpoints, and the frontend's
// running pods fail their calls ("connection refused") and crash-loop.
// The backend itself stays healthy, and nothing either ran with changed.
// Just before, the same actor patched another namespace's Service in a
// way that keeps its endpoints (an annotation).

func init() {
	register(&Family{Name: "service-break",
		Summary: "a Service's selector is patched to labels its backend's pods lack; its endpoints empty and the frontend that calls it crash-loops",
		Run:     runServiceBreak})
}

// service is a ClusterIP Service on port 8080 selecting app=name.
func service(ns, name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)}}}}
}

// callChain is a namespace where a frontend calls a backend through its
// Service, beside another namespace's service that nobody calls: the
// setting of the families where callers fail for what happened to what
// they call.
type callChain struct {
	ns, other                   string
	backend, frontend, otherSvc string
	image                       string // the frontend's
	replicas                    int    // the frontend's
}

// newCallChain draws a call chain and runs it, made long ago by the
// platform's automation, with the routine around it.
func (c *Cluster) newCallChain(ctx context.Context, e *Expected) (*callChain, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return nil, err
	}
	spaces := []string{"ml", "serve", "recsys", "search"}
	perm := c.rng.Perm(len(spaces))
	ch := &callChain{ns: spaces[perm[0]], other: spaces[perm[1]]}
	ch.backend = Pick(c, []string{"feature-store", "embedding-cache", "user-profile"})
	ch.frontend = Pick(c, []string{"ranker", "gateway", "scorer"})
	ch.otherSvc = Pick(c, []string{"model-registry", "metrics-api"})
	replicas, backends := c.Between(6, 16), c.Between(3, 6)
	ch.replicas, ch.image = replicas, "registry.example/"+ch.frontend+":"+c.version()
	if err := c.Background(ctx); err != nil {
		return nil, err
	}
	for _, d := range []struct {
		ns, name, image string
		n               int
	}{
		{ch.ns, ch.backend, "registry.example/" + ch.backend + ":" + c.version(), backends},
		{ch.ns, ch.frontend, ch.image, replicas},
		{ch.other, ch.otherSvc, "registry.example/" + ch.otherSvc + ":" + c.version(), c.Between(2, 5)},
	} {
		if err := c.Deployment(ctx, routineActor, d.ns, d.name, d.n, Template{Image: d.image}); err != nil {
			return nil, err
		}
	}
	for _, s := range []*corev1.Service{service(ch.ns, ch.backend), service(ch.other, ch.otherSvc)} {
		if _, err := c.As(routineActor).CoreV1().Services(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create service %s/%s: %w", s.Namespace, s.Name, err)
		}
	}
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return nil, err
	}
	return ch, nil
}

// refused crash-loops the frontend's running pods as their calls to the
// backend's Service are refused, from lastGood on, and fills in the
// truth the call-chain families share.
func (ch *callChain) refused(ctx context.Context, c *Cluster, e *Expected, pods []corev1.Pod, lastGood time.Time) error {
	// The endpoints empty within a second; each frontend pod's next calls
	// are refused, and it gives up after its retries.
	Sleep(ctx, c.Dur(3*time.Second, 6*time.Second))
	msg := fmt.Sprintf(`FATAL: fetch features: Get "http://%s.%s.svc.cluster.local:8080/v1/lookup": dial tcp 10.96.%d.%d:8080: connect: connection refused`,
		ch.backend, ch.ns, c.Between(1, 250), c.Between(1, 250))
	firstBad, err := c.CrashLoop(ctx, ch.ns, pods, ch.image, "", msg)
	if err != nil {
		return err
	}
	Sleep(ctx, c.Dur(20*time.Second, 30*time.Second))
	e.Boundary = crashBoundary(lastGood, firstBad)
	e.Slice = map[string]string{"owner/Deployment": ch.frontend}
	e.SliceEquivalents = []map[string]string{{"image.tag/main": ch.image}}
	e.Population = map[string]string{"namespace": ch.ns}
	e.CounterexampleDiffersIn = []string{"owner/Deployment"}
	return nil
}

func runServiceBreak(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	ch, err := c.newCallChain(ctx, e)
	if err != nil {
		return "", err
	}
	ns, other, backend, frontend, otherSvc, replicas := ch.ns, ch.other, ch.backend, ch.frontend, ch.otherSvc, ch.replicas
	Sleep(ctx, c.Dur(6*time.Second, 12*time.Second))
	actor := c.DrawActor()
	svcs := func(ns string) interface {
		Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*corev1.Service, error)
	} {
		return c.As(actor).CoreV1().Services(ns)
	}
	decoyAt := Now()
	if _, err := svcs(other).Patch(ctx, otherSvc, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"prometheus.io/scrape":"true","prometheus.io/port":"8080"}}}`), metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("patch service %s/%s: %w", other, otherSvc, err)
	}
	e.Decoys = []Change{{Ref: "Service/" + other + "/" + otherSvc, Dimension: "spec", At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(4*time.Second, 10*time.Second))
	pods, err := c.Running(ctx, ns, "app="+frontend)
	if err != nil {
		return "", err
	}
	lastGood := Now()
	Sleep(ctx, time.Second)
	at := Now()
	patch := fmt.Sprintf(`{"spec":{"selector":{"app":null,"app.kubernetes.io/name":%q}}}`, backend)
	if _, err := svcs(ns).Patch(ctx, backend, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("patch service %s/%s: %w", ns, backend, err)
	}
	e.Changes = []Change{{Ref: "Service/" + ns + "/" + backend, Dimension: "spec", At: at, Actor: &actor}}
	if err := ch.refused(ctx, c, e, pods, lastGood); err != nil {
		return "", err
	}
	e.Mitigation = []Action{{Action: "rollback", Target: "Service/" + ns + "/" + backend}}
	return fmt.Sprintf(`A frontend crash-loops: its backend refuses connections.

## What on-call saw
%s/%s (%d replicas) went into CrashLoopBackOff within seconds: "fetch features ...
%s.%s.svc.cluster.local:8080 ... connection refused". Nothing was deployed to it, and
%s/%s itself is Running and Ready. A label clean-up was under way today.`,
		ns, frontend, replicas, backend, ns, ns, backend), nil
}
