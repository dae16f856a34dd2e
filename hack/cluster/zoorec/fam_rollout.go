package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Families 12 and 13: a node label or taint a workload depends on changes,
// and its new pods cannot be scheduled; a canary rollout fails on a part
// of the fleet and stalls.

func init() {
	register(&Family{Name: "scheduling-break", Summary: "a node label a workload selects on is changed, or its nodes tainted NoSchedule; new pods stay Pending",
		Run: runSchedulingBreak})
	register(&Family{Name: "canary-partial", Summary: "a rollout's new image fails on all or part of the fleet; the rollout stalls with a few broken pods",
		Run: runCanaryPartial})
}

func runSchedulingBreak(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	s := drawUniformSubset(c, fleet)
	key := Pick(c, []string{"accelerator-class", "node-role.example.com/training", "workload-tier"})
	value := Pick(c, []string{"premium", "dedicated", "gold"})
	how := Pick(c, []string{"relabel", "taint"})
	ns := Pick(c, []string{"ml", "serve", "research"})
	name := Pick(c, []string{"premium-train", "dedicated-serve", "gold-batch"})
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := c.LabelNodes(ctx, routineActor, s.Names(), key, value); err != nil {
		return "", err
	}
	replicas := c.Between(max(4, len(s.Nodes)/4), max(6, len(s.Nodes)/2))
	tmpl := Template{Image: "registry.example/" + name + ":1.7", NodeSelector: map[string]string{key: value}}
	if err := c.Deployment(ctx, routineActor, ns, name, replicas, tmpl); err != nil {
		return "", err
	}
	if err := c.Deployment(ctx, routineActor, ns, "general", c.Between(5, 15), Template{Image: "registry.example/general:1.7"}); err != nil {
		return "", err
	}
	actor, err := c.routineThenActor(ctx, fleet)
	if err != nil {
		return "", err
	}
	decoy, err := c.costCenterDecoy(ctx, actor, s)
	if err != nil {
		return "", err
	}
	e.Decoys = []Change{decoy}
	Sleep(ctx, c.Dur(3*time.Second, 10*time.Second))
	lastGood := Now()
	Sleep(ctx, time.Second)
	ch, err := breakScheduling(ctx, c, &actor, s, how, key, value)
	if err != nil {
		return "", err
	}
	e.Changes = []Change{ch}
	Sleep(ctx, c.Dur(2*time.Second, 8*time.Second))
	// Running pods stay (IgnoredDuringExecution); the next rollout's pods
	// find nowhere to go.
	if err := c.RolloutRestart(ctx, c.DrawActor(), ns, name); err != nil {
		return "", err
	}
	firstBad, err := c.firstFailedScheduling(ctx, ns)
	if err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(6*time.Second, 10*time.Second))
	pending, hash, err := c.unscheduled(ctx, ns, name)
	if err != nil {
		return "", err
	}
	e.Boundary = crashBoundary(lastGood, firstBad)
	e.Slice = map[string]string{"owner/Deployment": name, "owner.podTemplateHash": hash}
	e.SliceEquivalents = []map[string]string{{"owner.podTemplateHash": hash}}
	e.Population = map[string]string{"owner/Deployment": name}
	e.CounterexampleDiffersIn = []string{"owner.podTemplateHash", "node"}
	e.Mitigation = []Action{{Action: "rollback", Target: s.Selector(), Targets: []string{s.Dimension + "=" + s.Value, key + "=" + value}}}
	e.extra("how", how)
	e.extra("pending", refs(pending))
	return fmt.Sprintf(`A restarted Deployment's new pods stay Pending; the old ones still run.

## What on-call saw
%s/%s (%d replicas) was restarted; its new pods sit in Pending with FailedScheduling
("0/%d nodes are available"). The previous pods still run on the nodes they had.
Other workloads schedule fine. Node labels and taints were edited today.`, ns, name, replicas, len(fleet.Nodes)), nil
}

func runCanaryPartial(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	ns := Pick(c, []string{"serve", "inference", "search"})
	names := []string{"api", "ranker", "embedder", "gateway"}
	perm := c.rng.Perm(len(names))
	name, other := names[perm[0]], names[perm[1]]
	v1, v2 := fmt.Sprintf("2.%d.0", c.Intn(9)), fmt.Sprintf("2.%d.1", 9+c.Intn(9))
	image := "registry.example/" + name
	fraction := Pick(c, []string{"all", "pool"})
	pool := Pick(c, fleet.Pools)
	replicas := c.Between(20, 60)
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := c.slowRollout(ctx, ns, name, replicas, Template{Image: image + ":" + v1, Container: "server"}); err != nil {
		return "", err
	}
	otherImage := "registry.example/" + other
	if err := c.Deployment(ctx, routineActor, ns, other, c.Between(4, 10), Template{Image: otherImage + ":1.0.0", Container: "server"}); err != nil {
		return "", err
	}
	actor, err := c.routineThenActor(ctx, fleet)
	if err != nil {
		return "", err
	}
	// The decoy: the same actor rolls the other service first; it is fine.
	decoyAt := Now()
	if err := c.SetImage(ctx, actor, ns, other, "server", otherImage+":1.1.0"); err != nil {
		return "", err
	}
	e.Decoys = []Change{{Ref: "Deployment/" + ns + "/" + other, Dimension: "image.tag/server", From: otherImage + ":1.0.0", To: otherImage + ":1.1.0", At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(5*time.Second, 15*time.Second))
	pods, err := c.Pods(ctx, ns, "app="+name)
	if err != nil {
		return "", err
	}
	lastGood := Now()
	Sleep(ctx, time.Second)
	at := Now()
	only := func(p corev1.Pod) bool { return true }
	msg := "panic - runtime error - invalid memory address or nil pointer dereference"
	if fraction == "pool" {
		only = func(p corev1.Pod) bool { return poolOf(fleet, p.Spec.NodeName) == pool }
		msg = "fatal - no kernel image is available for execution on the device (sm_80)"
	}
	crash := c.StartCrasherOnly(ctx, ns, "app="+name, podNames(pods), image+":"+v2, "", msg, only)
	if err := c.SetImage(ctx, actor, ns, name, "server", image+":"+v2); err != nil {
		return "", err
	}
	e.Changes = []Change{{Ref: "Deployment/" + ns + "/" + name, Dimension: "image.tag/server", From: image + ":" + v1, To: image + ":" + v2, At: at, Actor: &actor}}
	if err := crash.WaitOrStop(ctx, 1, 3*time.Minute); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(20*time.Second, 30*time.Second))
	badPods, firstBad, err := crash.Stop()
	if err != nil {
		return "", err
	}
	e.Boundary = crashBoundary(lastGood, firstBad)
	canarySlice(e, fraction, name, image+":"+v2, pool, badPods)
	e.Population = map[string]string{"owner/Deployment": name}
	e.Mitigation = []Action{{Action: "rollback", Target: "Deployment/" + ns + "/" + name, To: image + ":" + v1}}
	e.extra("fraction", fraction)
	e.extra("crashLooping", len(badPods))
	return fmt.Sprintf(`A rollout of %s/%s is stuck with a few crash-looping pods.

## What on-call saw
The rollout of %s/%s started a while ago and has not progressed much: %d of its new pods
are in CrashLoopBackOff, and the old ReplicaSet still serves. Another rollout in %s went
through fine earlier.`, ns, name, ns, name, len(badPods), ns), nil
}

// breakScheduling has the actor relabel the nodes of s (key=value goes,
// key=value-v2 comes: a new naming scheme) or taint them NoSchedule; it
// returns the change.
func breakScheduling(ctx context.Context, c *Cluster, actor *Actor, s Subset, how, key, value string) (Change, error) {
	at := Now()
	ch := Change{Ref: s.Selector(), Selector: s.Selector(), Objects: s.Refs(), At: at, Actor: actor}
	switch how {
	case "relabel": // a new naming scheme: the old value goes
		newValue := value + "-v2"
		if err := c.LabelNodes(ctx, *actor, s.Names(), key, newValue); err != nil {
			return ch, err
		}
		ch.Dimension, ch.From, ch.To = "node.label/"+key, value, newValue
	default:
		for _, n := range s.Names() {
			taint := map[string]any{"spec": map[string]any{"taints": []map[string]string{{"key": "reserved", "value": "capacity-test", "effect": "NoSchedule"}}}}
			if err := c.PatchAs(ctx, *actor, "nodes", "", n, taint); err != nil {
				return ch, err
			}
		}
		ch.Dimension, ch.To = "node.taints", "reserved=capacity-test:NoSchedule"
	}
	return ch, nil
}

// costCenterDecoy is the decoy of the node families: the same actor adds
// a harmless label (a cost center) to the same nodes.
func (c *Cluster) costCenterDecoy(ctx context.Context, actor Actor, s Subset) (Change, error) {
	at := Now()
	if err := c.LabelNodes(ctx, actor, s.Names(), "cost-center", Pick(c, []string{"cc-1042", "cc-2077"})); err != nil {
		return Change{}, err
	}
	return Change{Ref: s.Selector(), Selector: s.Selector(), Objects: s.Refs(), Dimension: "node.label/cost-center", At: at, Actor: &actor}, nil
}

// firstFailedScheduling waits for a FailedScheduling event in ns and
// returns the earliest one's time.
func (c *Cluster) firstFailedScheduling(ctx context.Context, ns string) (time.Time, error) {
	return c.firstEvent(ctx, ns, "FailedScheduling")
}

// unscheduled returns the Deployment's pods that are Pending on no node,
// and the pod-template-hash of the last of them.
func (c *Cluster) unscheduled(ctx context.Context, ns, name string) ([]corev1.Pod, string, error) {
	pods, err := c.Pods(ctx, ns, "app="+name)
	if err != nil {
		return nil, "", err
	}
	var pending []corev1.Pod
	hash := ""
	for _, p := range pods {
		if p.Status.Phase == corev1.PodPending && p.Spec.NodeName == "" {
			pending = append(pending, p)
			hash = p.Labels["pod-template-hash"]
		}
	}
	return pending, hash, nil
}

// slowRollout deploys a Deployment whose rollouts are slow: one new pod at
// a time, none taken down before it is ready.
func (c *Cluster) slowRollout(ctx context.Context, ns, name string, replicas int, t Template) error {
	if err := c.Deployment(ctx, routineActor, ns, name, replicas, t); err != nil {
		return err
	}
	strategy := `{"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":2,"maxUnavailable":0}}}}`
	_, err := c.Admin.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, []byte(strategy), metav1.PatchOptions{})
	return err
}

// canarySlice sets the slice of a canary that broke (badPods, image bad)
// on all nodes, or on one pool's.
func canarySlice(e *Expected, fraction, name, bad, pool string, badPods []corev1.Pod) {
	hash := ""
	if len(badPods) > 0 {
		hash = badPods[0].Labels["pod-template-hash"]
	}
	if fraction == "all" {
		e.Slice = map[string]string{"image.tag/server": bad}
		e.SliceEquivalents = []map[string]string{{"owner.podTemplateHash": hash}, {"owner/Deployment": name, "owner.podTemplateHash": hash}}
		e.CounterexampleDiffersIn = []string{"image.tag/server", "owner.podTemplateHash"}
	} else {
		e.Slice = map[string]string{"image.tag/server": bad, "node.pool": pool}
		e.SliceEquivalents = []map[string]string{{"owner.podTemplateHash": hash, "node.pool": pool}}
		e.CounterexampleDiffersIn = []string{"image.tag/server", "node.pool", "owner.podTemplateHash"}
	}
}

// SetImage sets a Deployment container's image as the actor (kubectl set image).
func (c *Cluster) SetImage(ctx context.Context, a Actor, ns, name, container, image string) error {
	p := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":%q,"image":%q}]}}}}`, container, image)
	_, err := c.As(a).AppsV1().Deployments(ns).Patch(ctx, name, types.StrategicMergePatchType, []byte(p), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("set image %s/%s: %w", ns, name, err)
	}
	return nil
}

func poolOf(f *Fleet, node string) string {
	for _, n := range f.Nodes {
		if n.Name == node {
			return n.Pool
		}
	}
	return ""
}
