package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Family agent-rollout: each GPU pool runs its own device-plugin
// DaemonSet (a node agent). The actor rolls a new plugin image out to one
// pool's agents; the plugin's allocation is broken, so every GPU pod the
// kubelets of that pool admit afterwards is rejected
// (UnexpectedAdmissionError). Pods already running keep their GPUs. When
// automation restarts a training service spread over the pools, its new
// pods fail on that pool and run on the others. Just before, the same
// actor rolled a patch release of another pool's plugin, which works.

func init() {
	register(&Family{Name: "agent-rollout",
		Summary: "a node agent (one pool's GPU device-plugin DaemonSet) is rolled to a broken image; new GPU pods on that pool are rejected at admission",
		Run:     runAgentRollout})
}

const agentNS = "gpu-operator"

// agentDaemonSet creates the device-plugin DaemonSet of a pool and waits
// until its pods run on every node of the pool.
func (c *Cluster) agentDaemonSet(ctx context.Context, pool, image string, nodes int) error {
	if err := c.Namespace(ctx, agentNS); err != nil {
		return err
	}
	name := "nvidia-device-plugin-" + pool
	labels := map[string]string{"app": name}
	t := Template{Image: image, Container: "plugin", NodeSelector: map[string]string{"pool": pool}}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: agentNS, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &intstr.IntOrString{Type: intstr.String, StrVal: "50%"}}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: t.spec(corev1.RestartPolicyAlways)},
		},
	}
	if _, err := c.As(routineActor).AppsV1().DaemonSets(agentNS).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create daemonset %s/%s: %w", agentNS, name, err)
	}
	return c.WaitRunning(ctx, agentNS, "app="+name, nodes, 5*time.Minute)
}

// setAgentImage rolls a pool's plugin to image as the actor and waits
// until every agent of the pool runs it; it returns when the rollout was
// asked for.
func (c *Cluster) setAgentImage(ctx context.Context, a Actor, pool, image string, nodes int) (time.Time, error) {
	name := "nvidia-device-plugin-" + pool
	at := Now()
	p := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"plugin","image":%q}]}}}}`, image)
	if _, err := c.As(a).AppsV1().DaemonSets(agentNS).Patch(ctx, name, types.StrategicMergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
		return at, fmt.Errorf("set image of daemonset %s/%s: %w", agentNS, name, err)
	}
	err := until(ctx, 3*time.Minute, "agents of "+pool+" at "+image, func() (bool, error) {
		run, err := c.Running(ctx, agentNS, "app="+name)
		if err != nil {
			return false, err
		}
		n := 0
		for _, p := range run {
			if p.Spec.Containers[0].Image == image {
				n++
			}
		}
		return n >= nodes, nil
	})
	return at, err
}

// rejectAtAdmission reports the pods as a kubelet reports a pod its
// device manager could not allocate for: Failed, UnexpectedAdmissionError,
// and the event. It returns when the first was.
func (c *Cluster) rejectAtAdmission(ctx context.Context, pods []corev1.Pod, msg string) (time.Time, error) {
	return c.kubeletFailed(ctx, pods, "UnexpectedAdmissionError", func(corev1.Pod) string { return msg },
		func(corev1.Pod, string, time.Time) ([]map[string]any, []corev1.ContainerStatus) {
			return nil, []corev1.ContainerStatus{}
		}, nil)
}

func runAgentRollout(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	perm := c.rng.Perm(len(fleet.Pools))
	bad, other := fleet.Pools[perm[0]], fleet.Pools[perm[1]]
	poolNodes := func(p string) int { return len(fleet.Filter(func(n Node) bool { return n.Pool == p })) }
	const base = "nvcr.io/nvidia/k8s-device-plugin:v0.16.2"
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	for _, p := range []string{bad, other} {
		if err := c.agentDaemonSet(ctx, p, base, poolNodes(p)); err != nil {
			return "", err
		}
	}
	ns := Pick(c, []string{"ml", "research", "training"})
	name := Pick(c, []string{"reward-model", "vision-train", "embedder"})
	image := "registry.example/" + name + ":3.1"
	replicas := c.Between(len(fleet.Nodes)/10, len(fleet.Nodes)/5)
	if err := c.Deployment(ctx, routineActor, ns, name, replicas, Template{Image: image, GPU: true}); err != nil {
		return "", err
	}
	actor, err := c.routineThenActor(ctx, fleet)
	if err != nil {
		return "", err
	}
	decoyTo := "nvcr.io/nvidia/k8s-device-plugin:v0.16.3"
	decoyAt, err := c.setAgentImage(ctx, actor, other, decoyTo, poolNodes(other))
	if err != nil {
		return "", err
	}
	e.Decoys = []Change{{Ref: "DaemonSet/" + agentNS + "/nvidia-device-plugin-" + other, Dimension: "image.tag/plugin", From: base, To: decoyTo, At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(3*time.Second, 8*time.Second))
	to := "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
	at, err := c.setAgentImage(ctx, actor, bad, to, poolNodes(bad))
	if err != nil {
		return "", err
	}
	e.Changes = []Change{{Ref: "DaemonSet/" + agentNS + "/nvidia-device-plugin-" + bad, Dimension: "image.tag/plugin", From: base, To: to, At: at, Actor: &actor}}
	// Nothing running notices: the GPUs it holds stay allocated.
	Sleep(ctx, c.Dur(8*time.Second, 15*time.Second))
	before, err := c.Pods(ctx, ns, "app="+name)
	if err != nil {
		return "", err
	}
	onBad := nodeSet(fleet.Filter(func(n Node) bool { return n.Pool == bad }))
	msg := "Allocate failed due to rpc error: code = Unknown desc = failed to get preferred allocation: unsupported device topology, which is unexpected"
	lastGood := Now()
	Sleep(ctx, time.Second)
	crash := c.startCrasher(ctx, ns, "app="+name, podNames(before), func(p corev1.Pod) bool { return onBad[p.Spec.NodeName] },
		func(ctx context.Context, pods []corev1.Pod) (time.Time, error) {
			return c.rejectAtAdmission(ctx, pods, msg)
		})
	if err := c.RolloutRestart(ctx, routineActor, ns, name); err != nil {
		crash.Stop()
		return "", err
	}
	if err := crash.WaitOrStop(ctx, 1, 2*time.Minute); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(20*time.Second, 30*time.Second))
	rejected, firstBad, err := crash.Stop()
	if err != nil {
		return "", err
	}
	hash, err := c.newestTemplateHash(ctx, ns, name)
	if err != nil {
		return "", err
	}
	e.Boundary = crashBoundary(lastGood, firstBad)
	agent := "node.agent/" + agentNS + "/nvidia-device-plugin-" + bad + "/plugin"
	e.Slice = map[string]string{"node.pool": bad, "owner.podTemplateHash": hash}
	e.SliceEquivalents = []map[string]string{{"node.pool": bad, "owner/ReplicaSet": name + "-" + hash},
		// The pods of the pool started after the rollout run the new agent.
		{agent: to, "owner.podTemplateHash": hash}, {agent: to, "owner/Deployment": name}}
	// The service's pods on the pool are its new ones when none of its
	// old ones still runs there.
	pods, err := c.Running(ctx, ns, "app="+name)
	if err != nil {
		return "", err
	}
	if !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return onBad[p.Spec.NodeName] && p.Labels["pod-template-hash"] != hash }) {
		e.SliceEquivalents = append(e.SliceEquivalents, map[string]string{"node.pool": bad, "owner/Deployment": name})
	}
	e.Population = map[string]string{"owner/Deployment": name}
	e.CounterexampleDiffersIn = []string{"node.pool", "owner.podTemplateHash"}
	e.Mitigation = []Action{{Action: "rollback", Target: "DaemonSet/" + agentNS + "/nvidia-device-plugin-" + bad}}
	e.extra("rejected", len(rejected))
	e.extra("agentPool", bad)
	return fmt.Sprintf(`A restarted training service cannot start its pods on part of the fleet.

## What on-call saw
%s/%s was restarted; some of its new pods fail at once
(UnexpectedAdmissionError), the rest run. Its old pods ran fine everywhere.
GPU node agents were upgraded today.`, ns, name), nil
}
