package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Families 4, 5 and 6: something happens to a subset of the fleet (a pool,
// a zone or a rack): its nodes change (driver, kernel, runtime, kubelet),
// are tainted or drained, or stop reporting.

func init() {
	register(&Family{Name: "node-change", Summary: "nodes of a pool, zone or rack get a new driver, kernel, runtime or kubelet; pods started there fail",
		Run: runNodeChange})
	register(&Family{Name: "taint-evict", Summary: "a pool, zone or rack is tainted NoExecute or drained; its pods are evicted",
		Run: runTaintEvict})
	register(&Family{Name: "node-failure", Summary: "the nodes of a rack or zone stop reporting (NotReady), some of them running no pods",
		Run: runNodeFailure})
}

// nodeAttr is one attribute of a node's identity that an upgrade changes.
type nodeAttr struct {
	dim, label, info string // identity dimension; the label or nodeInfo field that carries it
	from, to         string
}

func drawNodeAttr(c *Cluster, s Subset) nodeAttr {
	switch c.Intn(4) {
	case 0:
		from := drivers[s.Nodes[0].Pool]
		return nodeAttr{dim: "node.label/nvidia.com/cuda.driver.major", label: "nvidia.com/cuda.driver.major", from: from, to: Pick(c, []string{"565", "570", "575"})}
	case 1:
		return nodeAttr{dim: "node.kernel", info: "kernelVersion", from: baseKernel, to: Pick(c, []string{"6.8.0-1021-aws", "6.11.0-1009-aws"})}
	case 2:
		return nodeAttr{dim: "node.containerRuntime", info: "containerRuntimeVersion", from: baseRuntime, to: Pick(c, []string{"containerd://2.2.0", "containerd://2.1.5-rc.1"})}
	default:
		return nodeAttr{dim: "node.kubelet", info: "kubeletVersion", from: baseKubelet, to: "v1.37.3"}
	}
}

// apply makes the change on the nodes: a label by the actor, or nodeInfo as
// the upgraded kubelets report it.
func (a nodeAttr) apply(ctx context.Context, c *Cluster, actor Actor, nodes []string) error {
	if a.label != "" {
		return c.LabelNodes(ctx, actor, nodes, a.label, a.to)
	}
	return c.ReportNodeInfo(ctx, nodes, a.info, a.to)
}

// drawUniformSubset draws a subset of at least 8 nodes and at most half
// the fleet.
func drawUniformSubset(c *Cluster, f *Fleet) Subset {
	for {
		s := c.DrawSubset(f)
		if len(s.Nodes) >= 8 && len(s.Nodes) <= len(f.Nodes)/2 {
			return s
		}
	}
}

func runNodeChange(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	s := drawUniformSubset(c, fleet)
	attr := drawNodeAttr(c, s)
	if attr.label != "" { // a driver lives per pool: change it on one pool
		s = c.DrawSubset(fleet, "pool")
		attr.from = drivers[s.Value]
	}
	ns := Pick(c, []string{"ml", "batch", "inference"})
	name := Pick(c, []string{"batch-workers", "inference-gpu", "trainer-elastic"})
	replicas := c.Between(len(fleet.Nodes)/6, len(fleet.Nodes)/3)
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	tmpl := Template{Image: "registry.example/" + name + ":3.1", GPU: true}
	if err := c.Deployment(ctx, routineActor, ns, name, replicas, tmpl); err != nil {
		return "", err
	}
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(6*time.Second, 12*time.Second))

	// The actor upgrades the subset; a decoy: the same actor first changes
	// something harmless on other nodes (or the kubelets of other nodes
	// report a new OS image).
	actor := c.DrawActor()
	decoy, err := c.nodeDecoy(ctx, &actor, attr, pickDecoyNodes(c, fleet, s, 6, 5))
	if err != nil {
		return "", err
	}
	e.Decoys = []Change{decoy}
	Sleep(ctx, c.Dur(3*time.Second, 10*time.Second))
	pods, err := c.Pods(ctx, ns, "app="+name)
	if err != nil {
		return "", err
	}
	lastGood := Now()
	Sleep(ctx, time.Second)
	ch, err := attr.change(ctx, c, &actor, s)
	if err != nil {
		return "", err
	}
	e.Changes = []Change{ch}
	Sleep(ctx, c.Dur(2*time.Second, 8*time.Second))
	// Pods that start on the changed nodes from now on fail.
	changed := nodeSet(s.Nodes)
	crash := c.StartCrasherOnly(ctx, ns, "app="+name, podNames(pods), tmpl.Image, "",
		"CUDA error - system not yet initialized (driver/library version mismatch)", func(p corev1.Pod) bool { return changed[p.Spec.NodeName] })
	if err := c.RolloutRestart(ctx, routineActor, ns, name); err != nil {
		return "", err
	}
	if err := crash.WaitOrStop(ctx, 3, 2*time.Minute); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(6*time.Second, 10*time.Second))
	badPods, firstBad, err := crash.Stop()
	if err != nil {
		return "", err
	}
	e.Boundary = crashBoundary(lastGood, firstBad)
	c.nodeChangeTruth(ctx, e, ns, name, s, attr, badPods)
	return fmt.Sprintf(`Pods of %s/%s crash at start on some nodes and run fine on others.

## What on-call saw
%s/%s (%d replicas over %d GPU nodes) was restarted for a routine config refresh. A
part of the new pods exit at once with "CUDA error - system not yet initialized"; the
rest start normally. The platform team and the node automation both changed things
in the last hour.`, ns, name, ns, name, replicas, len(fleet.Nodes)), nil
}

// nodeChangeTruth sets the slice (the attribute's new value; the subset
// too when no good pod runs on it), the population, the counterexample and
// the mitigation of a node change whose pods crashed (badPods).
func (c *Cluster) nodeChangeTruth(ctx context.Context, e *Expected, ns, name string, s Subset, attr nodeAttr, badPods []corev1.Pod) {
	e.Slice = map[string]string{attr.dim: attr.to}
	e.SliceEquivalents = []map[string]string{}
	if still, err := c.goodOn(ctx, ns, "app="+name, nodeSet(s.Nodes), badPods); err == nil && still == 0 {
		e.SliceEquivalents = append(e.SliceEquivalents, map[string]string{s.Dimension: s.Value})
	}
	e.Population = map[string]string{"owner/Deployment": name}
	e.CounterexampleDiffersIn = []string{attr.dim, s.Dimension}
	e.Mitigation = []Action{{Action: "cordon", Target: s.Selector(), Targets: []string{s.Dimension + "=" + s.Value}}}
	e.extra("subset", map[string]any{"selector": s.Selector(), "nodes": len(s.Nodes)})
	e.extra("badPods", len(badPods))
}

// goodOn counts the selector's pods on the nodes that run and are not
// among the crashed ones: zero means the subset names the bad units exactly.
func (c *Cluster) goodOn(ctx context.Context, ns, selector string, nodes map[string]bool, crashed []corev1.Pod) (int, error) {
	pods, err := c.Running(ctx, ns, selector)
	if err != nil {
		return 0, err
	}
	bad := podNames(crashed)
	n := 0
	for _, p := range onNodes(pods, nodes) {
		if !bad[p.Name] {
			n++
		}
	}
	return n, nil
}

func prefixed(prefix string, xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = prefix + x
	}
	return out
}

func runTaintEvict(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	s := drawUniformSubset(c, fleet)
	how := Pick(c, []string{"taint", "drain"})
	ns := Pick(c, []string{"ml", "research", "training"})
	name := Pick(c, []string{"llm-finetune", "vision-train", "speech-train"})
	pods := c.Between(len(fleet.Nodes)/5, len(fleet.Nodes)/2)
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	tmpl := Template{Image: "registry.example/trainer:2.4", Container: "trainer", GPU: true}
	if err := c.Job(ctx, routineActor, ns, name, pods, pods, tmpl); err != nil {
		return "", err
	}
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(6*time.Second, 12*time.Second))
	running, err := c.Running(ctx, ns, "app="+name)
	if err != nil {
		return "", err
	}
	victims := onNodes(running, nodeSet(s.Nodes))
	if len(victims) == 0 {
		return "", fmt.Errorf("no pod of %s runs on %s: draw another seed", name, s.Selector())
	}
	actor := c.DrawActor()
	// A decoy: the same actor cordons a few other nodes first (nothing is
	// evicted by a cordon).
	decoyNodes := pickDecoyNodes(c, fleet, s, 4, 7)
	decoyAt := Now()
	for _, n := range decoyNodes {
		if err := c.PatchAs(ctx, actor, "nodes", "", n, map[string]any{"spec": map[string]any{"unschedulable": true}}); err != nil {
			return "", err
		}
	}
	e.Decoys = []Change{{Ref: "Node/" + decoyNodes[0], Objects: prefixed("Node/", decoyNodes), Dimension: "node.unschedulable", To: "true", At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(3*time.Second, 10*time.Second))
	lastGood := Now()
	Sleep(ctx, time.Second)
	ch, err := c.evict(ctx, &actor, s, how)
	if err != nil {
		return "", err
	}
	e.Changes = []Change{ch}
	firstBad, err := c.Gone(ctx, ns, victims, 2*time.Minute)
	if err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(6*time.Second, 12*time.Second))
	e.Boundary = crashBoundary(lastGood, firstBad)
	e.Slice = map[string]string{s.Dimension: s.Value}
	e.SliceEquivalents = []map[string]string{{s.Dimension: s.Value, "owner/Job": name}}
	e.Population = map[string]string{"owner/Job": name}
	e.CounterexampleDiffersIn = []string{s.Dimension}
	e.Mitigation = []Action{{Action: "rollback", Target: s.Selector(), Targets: []string{s.Dimension + "=" + s.Value}}}
	e.extra("how", how)
	e.extra("evicted", refs(victims))
	return fmt.Sprintf(`A training job lost a share of its workers at once.

## What on-call saw
%s/%s (%d workers) lost %d workers within seconds: they were terminated and the Job
controller is replacing them elsewhere. The rest kept running. Several people were
doing node maintenance today.`, ns, name, pods, len(victims)), nil
}

// change applies the attribute's change to the nodes of s, by the actor
// when it is a label (else the nodes' kubelets report what they run), and
// returns it.
func (a nodeAttr) change(ctx context.Context, c *Cluster, actor *Actor, s Subset) (Change, error) {
	at := Now()
	if err := a.apply(ctx, c, *actor, s.Names()); err != nil {
		return Change{}, err
	}
	ch := Change{Ref: s.Selector(), Selector: s.Selector(), Objects: s.Refs(), Dimension: a.dim, From: a.from, To: a.to, At: at}
	if a.label != "" {
		ch.Actor = actor
	} else {
		ch.Actor = &Actor{User: "kwok"} // the nodes' kubelets report what they run
	}
	return ch, nil
}

// pickDecoyNodes picks up to n nodes outside s, walking the fleet in
// random steps of 1 to step nodes.
func pickDecoyNodes(c *Cluster, fleet *Fleet, s Subset, n, step int) []string {
	others := fleet.Filter(func(x Node) bool { return !nodeSet(s.Nodes)[x.Name] })
	var nodes []string
	for i := 0; i < len(others) && len(nodes) < n; i += 1 + c.Intn(step) {
		nodes = append(nodes, others[i].Name)
	}
	return nodes
}

// nodeDecoy is the decoy of a node change, on other nodes: the actor
// changes a harmless label when the change is a driver's (a label), or
// else the kubelets of other nodes report a new OS image.
func (c *Cluster) nodeDecoy(ctx context.Context, actor *Actor, attr nodeAttr, nodes []string) (Change, error) {
	at := Now()
	var decoy Change
	if attr.label != "" {
		if err := c.LabelNodes(ctx, *actor, nodes, "nvidia.com/mig.config", "all-disabled"); err != nil {
			return decoy, err
		}
		decoy = Change{Ref: "Node/" + nodes[0], Dimension: "node.label/nvidia.com/mig.config", To: "all-disabled", At: at, Actor: actor}
	} else {
		if err := c.ReportNodeInfo(ctx, nodes, "osImage", "Ubuntu 24.04.2 LTS"); err != nil {
			return decoy, err
		}
		decoy = Change{Ref: "Node/" + nodes[0], Dimension: "node.osImage", From: "Ubuntu 24.04.1 LTS", To: "Ubuntu 24.04.2 LTS", At: at}
	}
	decoy.Objects = prefixed("Node/", nodes)
	return decoy, nil
}

// evict has the actor taint the nodes of s NoExecute, or drain them; it
// returns the change.
func (c *Cluster) evict(ctx context.Context, actor *Actor, s Subset, how string) (Change, error) {
	at := Now()
	ch := Change{Ref: s.Selector(), Selector: s.Selector(), Objects: s.Refs(), At: at, Actor: actor}
	switch how {
	case "taint":
		ch.Dimension, ch.To = "node.taints", "maintenance=planned:NoExecute"
		for _, n := range s.Names() {
			taint := map[string]any{"spec": map[string]any{"taints": []map[string]string{{"key": "maintenance", "value": "planned", "effect": "NoExecute"}}}}
			if err := c.PatchAs(ctx, *actor, "nodes", "", n, taint); err != nil {
				return ch, err
			}
		}
	default:
		ch.Dimension, ch.To = "node.unschedulable", "true"
		if err := c.Drain(ctx, *actor, s.Names()); err != nil {
			return ch, err
		}
	}
	return ch, nil
}

// Drain cordons the nodes and evicts their pods through the Eviction API,
// as `kubectl drain` does.
func (c *Cluster) Drain(ctx context.Context, a Actor, nodes []string) error {
	cs := c.As(a)
	for _, n := range nodes {
		if err := c.PatchAs(ctx, a, "nodes", "", n, map[string]any{"spec": map[string]any{"unschedulable": true}}); err != nil {
			return err
		}
	}
	for _, n := range nodes {
		pods, err := c.Admin.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
			if err := cs.CoreV1().Pods(p.Namespace).EvictV1(ctx, ev); err != nil {
				c.log.Warn("evict", "pod", p.Name, "err", err)
			}
		}
	}
	return nil
}

// Gone waits until the first of the pods is terminating or gone and
// returns when that was seen.
func (c *Cluster) Gone(ctx context.Context, ns string, pods []corev1.Pod, timeout time.Duration) (time.Time, error) {
	var at time.Time
	err := until(ctx, timeout, "an evicted pod", func() (bool, error) {
		for _, p := range pods {
			cur, err := c.Admin.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil || cur.UID != p.UID || cur.DeletionTimestamp != nil || cur.Status.Phase == corev1.PodFailed {
				at = Now()
				if err == nil && cur.DeletionTimestamp != nil {
					at = cur.DeletionTimestamp.Time.UTC().Add(-time.Duration(ptr.Deref(cur.DeletionGracePeriodSeconds, 0)) * time.Second)
				}
				return true, nil
			}
		}
		return false, nil
	})
	return at, err
}

func runNodeFailure(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	s := c.DrawSubset(fleet, "rack", "zone")
	for len(s.Nodes) > len(fleet.Nodes)/2 || len(s.Nodes) < 4 {
		s = c.DrawSubset(fleet, "rack", "zone")
	}
	ns := Pick(c, []string{"serve", "inference", "ml"})
	name := Pick(c, []string{"api", "retriever", "trainer-elastic"})
	// Fewer replicas than nodes: some failed nodes run nothing.
	replicas := c.Between(len(fleet.Nodes)/8, len(fleet.Nodes)/4)
	grace := int64(c.Between(10, 30))
	tmpl := Template{Image: "registry.example/" + name + ":5.0", Tolerations: []corev1.Toleration{
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &grace},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &grace}}}
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := c.Deployment(ctx, routineActor, ns, name, replicas, tmpl); err != nil {
		return "", err
	}
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(6*time.Second, 12*time.Second))
	running, err := c.Running(ctx, ns, "app="+name)
	if err != nil {
		return "", err
	}
	victims := onNodes(running, nodeSet(s.Nodes))
	lastGood := Now()
	Sleep(ctx, time.Second)
	at, err := c.NotReady(ctx, s.Names())
	if err != nil {
		return "", err
	}
	firstBad, err := c.NodeReadyFalseAt(ctx, s.Names())
	if err != nil {
		return "", err
	}
	// The pods on them are evicted once their toleration runs out.
	Sleep(ctx, time.Duration(grace)*time.Second+c.Dur(6*time.Second, 12*time.Second))
	e.Boundary = &Boundary{LastGood: lastGood, FirstBad: firstBad, Tolerance: "2s"}
	e.Changes = []Change{{Ref: s.Selector(), Selector: s.Selector(), Objects: s.Refs(), Dimension: "node.ready", From: "True", To: "False", At: at}}
	e.Slice = map[string]string{s.Dimension: s.Value}
	e.SliceEquivalents = []map[string]string{}
	e.Population = map[string]string{}
	e.CounterexampleDiffersIn = []string{s.Dimension}
	e.Mitigation = []Action{{Action: "cordon", Target: s.Selector(), Targets: []string{s.Dimension + "=" + s.Value}}}
	empty := len(s.Nodes) - len(nodeSet(nodesOf(victims)))
	e.extra("failedNodes", len(s.Nodes))
	e.extra("failedNodesWithoutPods", empty)
	e.extra("podsOnFailedNodes", refs(victims))
	return fmt.Sprintf(`Some replicas of %s/%s were replaced, and the node dashboard shows gaps.

## What on-call saw
%s/%s lost %d of its %d replicas to evictions and rescheduled them. %d nodes
stopped reporting at about the same time; %d of them ran none of our pods.`,
		ns, name, ns, name, len(victims), replicas, len(s.Nodes), empty), nil
}

func nodesOf(pods []corev1.Pod) []Node {
	var out []Node
	for _, p := range pods {
		out = append(out, Node{Name: p.Spec.NodeName})
	}
	return out
}
