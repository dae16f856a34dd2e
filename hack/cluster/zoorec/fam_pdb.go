package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Family pdb-drain-stall: the actor gives a Deployment a
// PodDisruptionBudget that allows no disruption (minAvailable equal to
// its replicas, or maxUnavailable 0). Nothing breaks: a budget acts only
// on evictions. Later, node-upgrade automation drains a batch of nodes as
// `kubectl drain` does: it cordons them, evicts their pods through the
// Eviction API, retries a refused eviction every few seconds and gives up
// at a deadline. Every eviction of that Deployment's pods is refused (429
// "Cannot evict pod as it would violate the pod's disruption budget"),
// which is neither load nor flow control; the other pods of the batch are
// evicted and run again elsewhere. The batch's nodes with such a pod stay
// cordoned, undrained. Just before, the same actor gave another
// namespace's Deployment a budget of one pod down at a time: its pod on
// the batch is evicted. The audit policy logs budgets at Metadata level:
// the evidence says a budget was created, not what it allows.

func init() {
	register(&Family{Name: "pdb-drain-stall",
		Summary: "a PodDisruptionBudget allowing no disruption is given to a Deployment; a later node drain has every eviction of its pods refused (429) and stalls",
		Run:     runPDBDrainStall})
}

// drainer is the node-upgrade automation: a user the zoo's clusters know,
// with a client of its own.
var drainer = Actor{User: "platform-automation", UserAgent: "node-upgrader/0.8.2 (linux/amd64) client-go/v0.37.2"}

// drainSetting draws the fleet and the two services a drain family
// sets up: ns/name, whose evictions will be refused, and its neighbour
// other/neighbour, whose pod on the batch will be evicted.
func drainSetting(ctx context.Context, c *Cluster, e *Expected) (ns, other, name, neighbour string, err error) {
	e.Nodes = Scale(c, e.Family)
	if _, err := c.Nodes(ctx, e.Nodes); err != nil {
		return "", "", "", "", err
	}
	spaces := []string{"serve", "search", "inference", "ml"}
	perm := c.rng.Perm(len(spaces))
	apps := []string{"ranker", "embedder", "tokenizer", "gateway", "feature-store"}
	aperm := c.rng.Perm(len(apps))
	return spaces[perm[0]], spaces[perm[1]], apps[aperm[0]], apps[aperm[1]], nil
}

func runPDBDrainStall(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	ns, other, name, neighbour, err := drainSetting(ctx, c, e)
	if err != nil {
		return "", err
	}
	replicas := c.Between(6, 14)
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := c.Deployment(ctx, routineActor, ns, name, replicas, Template{Image: "registry.example/" + name + ":3.1"}); err != nil {
		return "", err
	}
	if err := c.Deployment(ctx, routineActor, other, neighbour, c.Between(6, 14), Template{Image: "registry.example/" + neighbour + ":1.8"}); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(5*time.Second, 10*time.Second))
	actor := c.DrawActor()
	decoyAt := Now()
	if err := c.budget(ctx, actor, other, neighbour, nil, &intstr.IntOrString{IntVal: 1}); err != nil {
		return "", err
	}
	e.Decoys = []Change{{Ref: "PodDisruptionBudget/" + other + "/" + neighbour, Dimension: "created", At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(3*time.Second, 8*time.Second))
	at := Now()
	how := Pick(c, []string{"minAvailable", "maxUnavailable"})
	if how == "minAvailable" {
		err := c.budget(ctx, actor, ns, name, &intstr.IntOrString{IntVal: int32(replicas)}, nil)
		if err != nil {
			return "", err
		}
	} else if err := c.budget(ctx, actor, ns, name, nil, &intstr.IntOrString{IntVal: 0}); err != nil {
		return "", err
	}
	e.Changes = []Change{{Ref: "PodDisruptionBudget/" + ns + "/" + name, Dimension: "created", At: at, Actor: &actor}}
	if err := c.budgetsObserved(ctx, map[string]string{ns: name, other: neighbour}); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(10*time.Second, 20*time.Second))

	// The batch: two or three nodes running the budgeted pods, one running
	// exactly one of the neighbour's (its budget allows one down at a
	// time) and none of the others', and one or two more of neither.
	batch, d, err := c.drainTruth(ctx, e, ns, name, other, neighbour)
	if err != nil {
		return "", err
	}
	e.Mitigation = []Action{{Action: "rollback", Target: "PodDisruptionBudget/" + ns + "/" + name}}
	e.extra("budget", how)
	return fmt.Sprintf(`A node upgrade stalls.

## What on-call saw
Node-upgrade automation drained a batch of %d nodes (%s). %d of them are
still cordoned with pods on them, and the upgrade's log repeats "429 Too Many
Requests" on evictions until its deadline. The other nodes of the batch were
drained and upgraded. Nobody changed the control plane's flow control.`, len(batch), strings.Join(batch, ", "), len(d.undrained)), nil
}

// budget creates a PodDisruptionBudget over the Deployment's pods
// (app=name) as the actor, with minAvailable or maxUnavailable set.
func (c *Cluster) budget(ctx context.Context, a Actor, ns, name string, minAvailable, maxUnavailable *intstr.IntOrString) error {
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable:   minAvailable,
			MaxUnavailable: maxUnavailable,
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		},
	}
	if _, err := c.As(a).PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create poddisruptionbudget %s/%s: %w", ns, name, err)
	}
	return nil
}

// budgetsObserved waits until the disruption controller has computed the
// status of each budget (namespace: name): before that, the apiserver
// refuses every eviction the budget covers.
func (c *Cluster) budgetsObserved(ctx context.Context, budgets map[string]string) error {
	return until(ctx, time.Minute, "the budgets' status", func() (bool, error) {
		for ns, name := range budgets {
			pdb, err := c.Admin.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if pdb.Status.ObservedGeneration < pdb.Generation || pdb.Status.CurrentHealthy == 0 {
				return false, nil
			}
		}
		return true, nil
	})
}

// drainTruth drains a batch of nodes (drainBatch) as the drainer, from
// just after the last good instant, and writes the truth the drain
// families share: the boundary (the first eviction of ns refused), the
// slice (the pods of ns/name), the dimensions a counterexample differs
// in, and what the drain did. Every eviction of other/neighbour's must
// have gone through, one pod of it evicted: a seed where it did not is
// drawn again.
func (c *Cluster) drainTruth(ctx context.Context, e *Expected, ns, name, other, neighbour string) ([]string, *drained, error) {
	batch, err := c.drainBatch(ctx, ns, name, other, neighbour)
	if err != nil {
		return nil, nil, err
	}
	lastGood := Now()
	Sleep(ctx, time.Second)
	d := c.drain(ctx, batch, c.Dur(45*time.Second, 70*time.Second))
	firstBad := d.firstRefused[ns]
	if firstBad.IsZero() {
		return nil, nil, fmt.Errorf("no eviction of %s/%s was refused", ns, name)
	}
	if !d.firstRefused[other].IsZero() || d.evicted[other] != 1 {
		return nil, nil, fmt.Errorf("%s/%s: %d evicted, first refused at %v: draw another seed", other, neighbour, d.evicted[other], d.firstRefused[other])
	}
	Sleep(ctx, c.Dur(5*time.Second, 10*time.Second))
	e.Boundary = crashBoundary(lastGood, firstBad)
	if err := c.newReplicaSetSlice(ctx, e, ns, name); err != nil {
		return nil, nil, err
	}
	e.CounterexampleDiffersIn = []string{"owner/Deployment", "owner/ReplicaSet", "owner.podTemplateHash", "namespace"}
	e.extra("batch", batch)
	e.extra("undrained", d.undrained)
	e.extra("refused", d.refused)
	e.extra("evicted", d.evicted)
	return batch, d, nil
}

// drained is what a drain did, by namespace: the first refused eviction,
// the refusals and the pods evicted; and the nodes it left undrained.
type drained struct {
	mu           sync.Mutex
	firstRefused map[string]time.Time
	refused      map[string]int
	evicted      map[string]int
	undrained    []string
}

// drain drains the nodes side by side as the drainer: each is cordoned,
// then each of its pods evicted; a refused eviction (refusedEviction) is
// retried every 5 s until the deadline, after which the node is left
// cordoned.
func (c *Cluster) drain(ctx context.Context, nodes []string, deadline time.Duration) *drained {
	d := &drained{firstRefused: map[string]time.Time{}, refused: map[string]int{}, evicted: map[string]int{}}
	cs := c.As(drainer)
	end := time.Now().Add(deadline)
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.PatchAs(ctx, drainer, "nodes", "", n, map[string]any{"spec": map[string]any{"unschedulable": true}}); err != nil {
				c.log.Warn("cordon", "node", n, "err", err)
				return
			}
			pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n})
			if err != nil {
				c.log.Warn("list pods", "node", n, "err", err)
				return
			}
			left := 0
			for _, p := range pods.Items {
				if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
					continue
				}
				if !c.evictUntil(ctx, cs.CoreV1().Pods(p.Namespace), p, end, d) {
					left++
				}
			}
			if left > 0 {
				d.mu.Lock()
				d.undrained = append(d.undrained, n)
				d.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Strings(d.undrained)
	return d
}

// evictUntil evicts the pod, retrying a refusal every 5 s until end; it
// reports whether the pod was evicted.
func (c *Cluster) evictUntil(ctx context.Context, pods interface {
	EvictV1(context.Context, *policyv1.Eviction) error
}, p corev1.Pod, end time.Time, d *drained) bool {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
	for {
		err := pods.EvictV1(ctx, ev)
		// When the drain learned of a refusal: the apiserver received it
		// before, and answered any eviction it received earlier (another
		// node's, side by side) before that too.
		at := Now()
		d.mu.Lock()
		switch {
		case err == nil || apierrors.IsNotFound(err):
			d.evicted[p.Namespace]++
		case refusedEviction(err):
			d.refused[p.Namespace]++
			if first := d.firstRefused[p.Namespace]; first.IsZero() || at.Before(first) {
				d.firstRefused[p.Namespace] = at
			}
		default:
			c.log.Warn("evict", "pod", p.Namespace+"/"+p.Name, "err", err)
		}
		d.mu.Unlock()
		if err == nil || apierrors.IsNotFound(err) {
			return true
		}
		if !refusedEviction(err) || time.Now().Add(5*time.Second).After(end) {
			return false
		}
		Sleep(ctx, 5*time.Second)
	}
}

// refusedEviction says whether the apiserver refused an eviction in a way
// the drain tries again: a budget (429), or a server error (a webhook that
// could not be called, 500).
func refusedEviction(err error) bool {
	return apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}

// countOn counts the pods on each node.
func countOn(pods []corev1.Pod) map[string]int {
	out := map[string]int{}
	for _, p := range pods {
		out[p.Spec.NodeName]++
	}
	return out
}
