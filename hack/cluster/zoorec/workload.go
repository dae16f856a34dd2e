package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Deployment creates a Deployment as the actor and waits until its pods run.
func (c *Cluster) Deployment(ctx context.Context, a Actor, ns, name string, replicas int, t Template) error {
	if err := c.Namespace(ctx, ns); err != nil {
		return err
	}
	labels := labelsWith(t.Labels, "app", name)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(replicas)),
			// Slow enough a rollout that a broken new pod is seen broken
			// before the next old one is taken down, as with readiness probes.
			MinReadySeconds: 10,
			Selector:        &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template:        corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: t.spec(corev1.RestartPolicyAlways)},
		},
	}
	if _, err := c.As(a).AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create deployment %s/%s: %w", ns, name, err)
	}
	return c.WaitRunning(ctx, ns, "app="+name, replicas, 5*time.Minute)
}

// Scale sets a Deployment's replicas as the actor (an autoscaler or a
// person) and returns at once.
func (c *Cluster) Scale(ctx context.Context, a Actor, ns, name string, replicas int) error {
	p := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	_, err := c.As(a).AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, []byte(p), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("scale %s/%s: %w", ns, name, err)
	}
	return nil
}

// RolloutRestart restarts a Deployment's pods as the actor, as
// `kubectl rollout restart` does (a template annotation).
func (c *Cluster) RolloutRestart(ctx context.Context, a Actor, ns, name string) error {
	p := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, Now().Format(time.RFC3339))
	_, err := c.As(a).AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, []byte(p), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("restart %s/%s: %w", ns, name, err)
	}
	return nil
}

// NewPods watches for running pods of the selector that are not in before,
// handing each batch to f as it appears, until want have been handed over
// or the timeout passes. It returns every pod it handed over.
func (c *Cluster) NewPods(ctx context.Context, ns, selector string, before map[string]bool, want int, timeout time.Duration, f func([]corev1.Pod) error) ([]corev1.Pod, error) {
	seen := map[string]bool{}
	for k := range before {
		seen[k] = true
	}
	var got []corev1.Pod
	err := until(ctx, timeout, fmt.Sprintf("%d new pods %s in %s", want, selector, ns), func() (bool, error) {
		pods, err := c.Running(ctx, ns, selector)
		if err != nil {
			return false, err
		}
		var fresh []corev1.Pod
		for _, p := range pods {
			if !seen[p.Name] {
				seen[p.Name] = true
				fresh = append(fresh, p)
			}
		}
		if len(fresh) > 0 {
			if err := f(fresh); err != nil {
				return false, err
			}
			got = append(got, fresh...)
		}
		return len(got) >= want, nil
	})
	return got, err
}

// podNames returns the names of the pods as a set.
func podNames(pods []corev1.Pod) map[string]bool {
	out := map[string]bool{}
	for _, p := range pods {
		out[p.Name] = true
	}
	return out
}

// Crasher makes every new running pod of a selector fail as soon as it
// appears (the pods a broken config or image starts), until Stop.
type Crasher struct {
	c            *Cluster
	ns, selector string
	seen         map[string]bool
	mu           sync.Mutex
	pods         []corev1.Pod
	first        time.Time
	err          error
	cancel       context.CancelFunc
	done         chan struct{}
	// Only, when set, says which new pods fail (those on changed nodes).
	Only func(corev1.Pod) bool
	// report makes the new pods fail and says when the first did.
	report func(ctx context.Context, pods []corev1.Pod) (time.Time, error)
}

// StartCrasher starts crash-looping the selector's pods that are not in before.
func (c *Cluster) StartCrasher(ctx context.Context, ns, selector string, before map[string]bool, image, digest, msg string) *Crasher {
	return c.StartCrasherOnly(ctx, ns, selector, before, image, digest, msg, nil)
}

// StartCrasherOnly is StartCrasher for the new pods for which only is true;
// the others are left to run.
func (c *Cluster) StartCrasherOnly(ctx context.Context, ns, selector string, before map[string]bool, image, digest, msg string, only func(corev1.Pod) bool) *Crasher {
	return c.startCrasher(ctx, ns, selector, before, only, func(ctx context.Context, pods []corev1.Pod) (time.Time, error) {
		return c.CrashLoop(ctx, ns, pods, image, digest, msg)
	})
}

// StartOOMCrasher makes every new running pod of a selector crash-loop,
// killed at its memory limit (OOMKilled), until Stop.
func (c *Cluster) StartOOMCrasher(ctx context.Context, ns, selector string, before map[string]bool, image string) *Crasher {
	return c.startCrasher(ctx, ns, selector, before, nil, func(ctx context.Context, pods []corev1.Pod) (time.Time, error) {
		return c.crashLoopAs(ctx, ns, pods, image, "", "OOMKilled", 137, "")
	})
}

// StartPullFailer makes every new running pod of a selector fail to pull
// its image, as a kubelet reports it, until Stop.
func (c *Cluster) StartPullFailer(ctx context.Context, ns, selector string, before map[string]bool, image, msg string) *Crasher {
	return c.startCrasher(ctx, ns, selector, before, nil, func(ctx context.Context, pods []corev1.Pod) (time.Time, error) {
		return c.PullFail(ctx, ns, pods, image, msg)
	})
}

func (c *Cluster) startCrasher(ctx context.Context, ns, selector string, before map[string]bool, only func(corev1.Pod) bool,
	report func(context.Context, []corev1.Pod) (time.Time, error)) *Crasher {
	ctx, cancel := context.WithCancel(ctx)
	k := &Crasher{c: c, ns: ns, selector: selector, seen: map[string]bool{}, cancel: cancel, done: make(chan struct{}), Only: only, report: report}
	for n := range before {
		k.seen[n] = true
	}
	go k.loop(ctx)
	return k
}

func (k *Crasher) loop(ctx context.Context) {
	defer close(k.done)
	for ctx.Err() == nil {
		pods, err := k.c.Running(ctx, k.ns, k.selector)
		if err == nil {
			var fresh []corev1.Pod
			for _, p := range pods {
				if !k.seen[p.Name] {
					k.seen[p.Name] = true
					if k.Only == nil || k.Only(p) {
						fresh = append(fresh, p)
					}
				}
			}
			if len(fresh) > 0 {
				t, err := k.report(ctx, fresh)
				k.mu.Lock()
				if k.first.IsZero() {
					k.first = t
				}
				k.pods = append(k.pods, fresh...)
				if err != nil && ctx.Err() == nil {
					k.err = err
				}
				k.mu.Unlock()
			}
		}
		Sleep(ctx, 250*time.Millisecond)
	}
}

// Count is how many pods it crashed so far.
func (k *Crasher) Count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.pods)
}

// WaitFor waits until n pods crashed or the timeout passes.
func (k *Crasher) WaitFor(ctx context.Context, n int, timeout time.Duration) error {
	return until(ctx, timeout, fmt.Sprintf("%d pods crash-looping %s in %s", n, k.selector, k.ns), func() (bool, error) {
		return k.Count() >= n, nil
	})
}

// WaitOrStop waits as WaitFor does, and stops the crasher when the pods
// do not crash in time.
func (k *Crasher) WaitOrStop(ctx context.Context, n int, timeout time.Duration) error {
	err := k.WaitFor(ctx, n, timeout)
	if err != nil {
		k.Stop()
	}
	return err
}

// Stop stops it and returns the pods it crashed and the first instant.
func (k *Crasher) Stop() ([]corev1.Pod, time.Time, error) {
	k.cancel()
	<-k.done
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.pods, k.first, k.err
}

// stalledRollout waits until the crasher failed a first new pod of the
// Deployment, lets the rollout stall a while, stops the crasher and sets
// the truth the families of a broken rollout share: the boundary and the
// slice, the new ReplicaSet's pods. It returns the pods it failed.
func (c *Cluster) stalledRollout(ctx context.Context, e *Expected, crash *Crasher, lastGood time.Time, ns, name string) ([]corev1.Pod, error) {
	if err := crash.WaitOrStop(ctx, 1, 2*time.Minute); err != nil {
		return nil, err
	}
	Sleep(ctx, c.Dur(20*time.Second, 30*time.Second))
	failed, firstBad, err := crash.Stop()
	if err != nil {
		return nil, err
	}
	e.Boundary = crashBoundary(lastGood, firstBad)
	return failed, c.newReplicaSetSlice(ctx, e, ns, name)
}

// newReplicaSetSlice sets the slice to the pods of the Deployment's newest
// ReplicaSet, and its exact equivalents.
func (c *Cluster) newReplicaSetSlice(ctx context.Context, e *Expected, ns, name string) error {
	hash, err := c.newestTemplateHash(ctx, ns, name)
	if err != nil {
		return err
	}
	e.Slice = map[string]string{"owner/Deployment": name, "owner.podTemplateHash": hash}
	e.SliceEquivalents = []map[string]string{{"owner.podTemplateHash": hash}, {"owner/ReplicaSet": name + "-" + hash}}
	return nil
}

// refusedRollout waits for the FailedCreate of a Deployment whose new
// pods the apiserver refuses, lets the rollout stall a while and sets the
// truth the families of a refused rollout share: the boundary and the
// slice, the new ReplicaSet's pods, never created.
func (c *Cluster) refusedRollout(ctx context.Context, e *Expected, lastGood time.Time, ns, name string) error {
	firstBad, err := c.firstEvent(ctx, ns, "FailedCreate")
	if err != nil {
		return err
	}
	Sleep(ctx, c.Dur(20*time.Second, 30*time.Second))
	e.Boundary = crashBoundary(lastGood, firstBad)
	return c.newReplicaSetSlice(ctx, e, ns, name)
}

// patchContainer patches the Deployment's container "main" as the actor,
// as kubectl set resources, set env or an edit of its probe does; what
// names the change in an error.
func (c *Cluster) patchContainer(ctx context.Context, a Actor, ns, name, what string, fields map[string]any) error {
	ctr := map[string]any{"name": "main"}
	for k, v := range fields {
		ctr[k] = v
	}
	patch := map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []map[string]any{ctr}}}}}
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if _, err := c.As(a).AppsV1().Deployments(ns).Patch(ctx, name, types.StrategicMergePatchType, b, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("set %s of %s/%s: %w", what, ns, name, err)
	}
	return nil
}

// serviceAndNeighbour lays out what the families of a broken rollout
// start from: the background, a service and its neighbour in one
// namespace (6 to 14 replicas each, healthy), routine changes, and a
// pause. It returns the service's replicas.
func (c *Cluster) serviceAndNeighbour(ctx context.Context, fleet *Fleet, ns, name string, t Template, neighbour string, nt Template) (int, error) {
	if err := c.Background(ctx); err != nil {
		return 0, err
	}
	replicas := c.Between(6, 14)
	if err := c.Deployment(ctx, routineActor, ns, name, replicas, t); err != nil {
		return 0, err
	}
	if err := c.Deployment(ctx, routineActor, ns, neighbour, c.Between(6, 14), nt); err != nil {
		return 0, err
	}
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return 0, err
	}
	Sleep(ctx, c.Dur(6*time.Second, 12*time.Second))
	return replicas, nil
}

// teamSetting is where the families of one namespace's broken service
// happen: the fleet, the incident's namespace and another, the
// namespace's 2-4 services with the one that breaks, and the service
// names left over (in draw order) for the other namespace.
type teamSetting struct {
	fleet     *Fleet
	ns, other string
	services  []string
	victim    string
	spare     []string
}

// serviceFleet brings the fleet up and draws a team namespace and two of
// its services: the one the incident breaks and its neighbour, the
// prelude of the families of one broken rollout.
func (c *Cluster) serviceFleet(ctx context.Context, e *Expected) (fleet *Fleet, ns, name, neighbour string, err error) {
	e.Nodes = Scale(c, e.Family)
	if fleet, err = c.Nodes(ctx, e.Nodes); err != nil {
		return nil, "", "", "", err
	}
	ns = Pick(c, teamNamespaces)
	perm := c.rng.Perm(len(serviceNames))
	return fleet, ns, serviceNames[perm[0]], serviceNames[perm[1]], nil
}

// teamSetting draws a teamSetting and brings its fleet up.
func (c *Cluster) teamSetting(ctx context.Context, e *Expected) (teamSetting, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return teamSetting{}, err
	}
	perm := c.rng.Perm(len(teamNamespaces))
	t := teamSetting{fleet: fleet, ns: teamNamespaces[perm[0]], other: teamNamespaces[perm[1]]}
	sperm := c.rng.Perm(len(serviceNames))
	t.services = make([]string, c.Between(2, 4))
	for i := range t.services {
		t.services[i] = serviceNames[sperm[i]]
	}
	t.victim = t.services[c.Intn(len(t.services))]
	for _, i := range sperm[len(t.services):] {
		t.spare = append(t.spare, serviceNames[i])
	}
	return t, nil
}

// restartAll restarts Deployments of one namespace as automation does,
// one after the other.
func (c *Cluster) restartAll(ctx context.Context, a Actor, ns string, names []string) error {
	for _, s := range names {
		if err := c.RolloutRestart(ctx, a, ns, s); err != nil {
			return err
		}
	}
	return nil
}

// routineThenActor makes the routine changes of a family's background
// (one to three), lets the cluster settle 6 to 12 s, and draws the actor
// of the incident: the prelude of most families, in that draw order.
func (c *Cluster) routineThenActor(ctx context.Context, fleet *Fleet) (Actor, error) {
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return Actor{}, err
	}
	Sleep(ctx, c.Dur(6*time.Second, 12*time.Second))
	return c.DrawActor(), nil
}
