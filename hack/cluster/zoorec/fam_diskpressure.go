package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Family disk-pressure: the nodes of a rack or pool run short of disk (an
// image cache that garbage collection cannot keep up with); their kubelets
// report DiskPressure and evict the pods they run, of every workload. The
// evicted pods' replacements start elsewhere and run. No one changed
// anything: the nodes' own condition is the cause. Shortly before, the
// kubelets of another rack were upgraded, and run fine.

func init() {
	register(&Family{Name: "disk-pressure",
		Summary: "the nodes of a rack or pool report DiskPressure and evict their pods, of every workload (no actor)",
		Run:     runDiskPressure})
}

// diskPressure reports the DiskPressure condition on the nodes, as their
// kubelets do, with the node event the eviction manager writes.
func (c *Cluster) diskPressure(ctx context.Context, nodes []string) (time.Time, error) {
	var first time.Time
	for _, n := range nodes {
		t := Now()
		if first.IsZero() {
			first = t
		}
		b, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []map[string]any{{
			"type": "DiskPressure", "status": "True", "reason": "KubeletHasDiskPressure", "message": "kubelet has disk pressure",
			"lastHeartbeatTime": t.Format(time.RFC3339), "lastTransitionTime": t.Format(time.RFC3339)}}}})
		if _, err := c.Kwok.CoreV1().Nodes().Patch(ctx, n, types.StrategicMergePatchType, b, metav1.PatchOptions{}, "status"); err != nil {
			return first, fmt.Errorf("disk pressure on node %s: %w", n, err)
		}
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{GenerateName: n + ".", Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: n, UID: types.UID(n)},
			Reason:         "EvictionThresholdMet", Message: "Attempting to reclaim ephemeral-storage", Type: "Warning", Count: 1,
			Source:         corev1.EventSource{Component: "kubelet", Host: n},
			FirstTimestamp: metav1.NewTime(t), LastTimestamp: metav1.NewTime(t),
		}
		if _, err := c.Kwok.CoreV1().Events("default").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			c.log.Warn("node event", "node", n, "err", err)
		}
	}
	return first, nil
}

// kubeletEvict reports the pods evicted by their kubelet's eviction
// manager: Failed with reason Evicted, a DisruptionTarget condition, the
// container gone, and the Evicted event, one after another. It returns
// when the first was.
func (c *Cluster) kubeletEvict(ctx context.Context, pods []corev1.Pod, msg func(corev1.Pod) string) (time.Time, error) {
	return c.kubeletFailed(ctx, pods, "Evicted", msg, func(p corev1.Pod, m string, t time.Time) ([]map[string]any, []corev1.ContainerStatus) {
		cs := corev1.ContainerStatus{Name: p.Spec.Containers[0].Name, Image: p.Spec.Containers[0].Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "ContainerStatusUnknown",
				Message: "The container could not be located when the pod was terminated", FinishedAt: metav1.NewTime(t)}}}
		return []map[string]any{{"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet", "message": m,
			"lastTransitionTime": t.Format(time.RFC3339)}}, []corev1.ContainerStatus{cs}
	}, func() { Sleep(ctx, c.Dur(50*time.Millisecond, 400*time.Millisecond)) })
}

func runDiskPressure(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	s := c.DrawSubset(fleet, "rack", "pool")
	for len(s.Nodes) > len(fleet.Nodes)/2 || len(s.Nodes) < 4 {
		s = c.DrawSubset(fleet, "rack", "pool")
	}
	// Pools and racks are each disjoint: the decoy is another of the same.
	kind := "rack"
	if s.Dimension == "node.pool" {
		kind = "pool"
	}
	other := c.DrawSubset(fleet, kind)
	for other.Value == s.Value {
		other = c.DrawSubset(fleet, kind)
	}
	type app struct{ ns, name string }
	spaces := []string{"serve", "inference", "ml", "search"}
	perm := c.rng.Perm(len(spaces))
	apps := []app{{spaces[perm[0]], Pick(c, []string{"api", "retriever"})}, {spaces[perm[1]], Pick(c, []string{"embedder", "ranker"})}}
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	for _, a := range apps {
		replicas := c.Between(len(fleet.Nodes)/8, len(fleet.Nodes)/4)
		if err := c.Deployment(ctx, routineActor, a.ns, a.name, replicas, Template{Image: "registry.example/" + a.name + ":3.2"}); err != nil {
			return "", err
		}
	}
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(6*time.Second, 12*time.Second))
	// The decoy: another rack's kubelets are upgraded and report so.
	decoyAt := Now()
	kubelet := "v1.37.3"
	if err := c.ReportNodeInfo(ctx, other.Names(), "kubeletVersion", kubelet); err != nil {
		return "", err
	}
	e.Decoys = []Change{{Ref: other.Selector(), Selector: other.Selector(), Objects: other.Refs(), Dimension: "node.kubelet", From: baseKubelet, To: kubelet, At: decoyAt}}
	Sleep(ctx, c.Dur(5*time.Second, 12*time.Second))
	var victims []corev1.Pod
	set := nodeSet(s.Nodes)
	for _, a := range apps {
		running, err := c.Running(ctx, a.ns, "app="+a.name)
		if err != nil {
			return "", err
		}
		victims = append(victims, onNodes(running, set)...)
	}
	if len(victims) == 0 {
		return "", fmt.Errorf("no pod runs on the %d nodes of %s: the incident would not happen", len(s.Nodes), s.Selector())
	}
	lastGood := Now()
	Sleep(ctx, time.Second)
	at, err := c.diskPressure(ctx, s.Names())
	if err != nil {
		return "", err
	}
	// The eviction manager ranks pods by their use over their request;
	// the one it evicts first on each node used the most.
	Sleep(ctx, c.Dur(2*time.Second, 5*time.Second))
	avail := fmt.Sprintf("%dMi", c.Between(3000, 9000))
	firstBad, err := c.kubeletEvict(ctx, victims, func(p corev1.Pod) string {
		return fmt.Sprintf("The node was low on resource: ephemeral-storage. Threshold quantity: 10%%, available: %s. Container %s was using %dGi, request is 0, has larger consumption of ephemeral-storage. ",
			avail, p.Spec.Containers[0].Name, 2+fnv64(p.Name)%30)
	})
	if err != nil {
		return "", err
	}
	// The replacements start elsewhere and run.
	for _, a := range apps {
		if err := c.waitReplaced(ctx, a.ns, a.name); err != nil {
			return "", err
		}
	}
	Sleep(ctx, c.Dur(10*time.Second, 20*time.Second))
	e.Boundary = &Boundary{LastGood: lastGood, FirstBad: at, Tolerance: "2s"}
	e.Changes = []Change{{Ref: s.Selector(), Selector: s.Selector(), Objects: s.Refs(), Dimension: "node.condition/DiskPressure", From: "False", To: "True", At: at}}
	e.Slice = map[string]string{s.Dimension: s.Value}
	e.SliceEquivalents = []map[string]string{}
	e.Population = map[string]string{}
	e.CounterexampleDiffersIn = []string{s.Dimension}
	e.Mitigation = []Action{{Action: "cordon", Target: s.Selector(), Targets: []string{s.Dimension + "=" + s.Value}}}
	e.extra("pressuredNodes", len(s.Nodes))
	e.extra("evicted", refs(victims))
	e.extra("firstEviction", firstBad)
	return fmt.Sprintf(`Pods of several services were evicted and replaced.

## What on-call saw
%d pods of %s/%s and %s/%s were evicted within a minute and came back on other nodes.
Some nodes were upgraded today.`, len(victims), apps[0].ns, apps[0].name, apps[1].ns, apps[1].name), nil
}

// waitReplaced waits until the Deployment has as many running pods as it
// wants again.
func (c *Cluster) waitReplaced(ctx context.Context, ns, name string) error {
	return until(ctx, 2*time.Minute, "replacements of "+ns+"/"+name, func() (bool, error) {
		d, err := c.Admin.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		run, err := c.Running(ctx, ns, "app="+name)
		if err != nil {
			return false, err
		}
		return d.Spec.Replicas != nil && len(run) >= int(*d.Spec.Replicas), nil
	})
}
