package main

import (
	"context"
	"fmt"
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Family preemption: a rack's GPUs are all taken by a low-priority
// inference Deployment (one 8-GPU pod a node). The actor submits a
// high-priority training Job pinned to that rack; the scheduler preempts
// inference pods to place it, and their replacements find no room and
// stay Pending. Shortly before, the same actor labelled the rack's nodes
// (a cost-center label: harmless). An inference Deployment on another
// rack is untouched.

func init() {
	register(&Family{Name: "preemption",
		Summary: "a high-priority Job lands on a rack full of low-priority pods; the scheduler preempts them and their replacements stay Pending",
		Run:     runPreemption})
}

func (c *Cluster) priorityClass(ctx context.Context, name string, value int32) error {
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	if _, err := c.Admin.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create priority class %s: %w", name, err)
	}
	return nil
}

func runPreemption(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	rack := c.DrawSubset(fleet, "rack")
	other := c.DrawSubset(fleet, "rack")
	for other.Value == rack.Value {
		other = c.DrawSubset(fleet, "rack")
	}
	victim := Pick(c, []string{"batch-embed", "offline-score", "nightly-eval"})
	neighbour := "batch-rerank"
	job := Pick(c, []string{"llm-pretrain", "rl-finetune", "vision-sweep"})
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	for _, pc := range []struct {
		name  string
		value int32
	}{{"batch-low", 100}, {"training-high", 100000}} {
		if err := c.priorityClass(ctx, pc.name, pc.value); err != nil {
			return "", err
		}
	}
	fill := func(name string, s Subset) error {
		return c.Deployment(ctx, routineActor, "inference", name, len(s.Nodes), Template{Image: "registry.example/" + name + ":2.1",
			NodeSelector: map[string]string{s.Label: s.Value}, GPUs: 8, Priority: "batch-low"})
	}
	if err := fill(victim, rack); err != nil {
		return "", err
	}
	if err := fill(neighbour, other); err != nil {
		return "", err
	}
	actor, err := c.routineThenActor(ctx, fleet)
	if err != nil {
		return "", err
	}
	decoy, err := c.costCenterDecoy(ctx, actor, rack)
	if err != nil {
		return "", err
	}
	e.Decoys = []Change{decoy}
	Sleep(ctx, c.Dur(3*time.Second, 10*time.Second))
	lastGood := Now()
	Sleep(ctx, time.Second)
	at := Now()
	workers := c.Between(max(2, len(rack.Nodes)/4), max(3, len(rack.Nodes)/2))
	if err := c.Namespace(ctx, "training"); err != nil {
		return "", err
	}
	go func() {
		// The Job's pods run once their victims are gone; Job waits for that.
		t := Template{Image: "registry.example/" + job + ":0.9", NodeSelector: map[string]string{rack.Label: rack.Value}, GPUs: 8, Priority: "training-high"}
		if err := c.Job(ctx, actor, "training", job, workers, 0, t); err != nil {
			c.log.Warn("preemptor", "err", err)
		}
	}()
	e.Changes = []Change{{Ref: "Job/training/" + job, Dimension: "created", At: at, Actor: &actor}}
	firstBad, err := c.firstEvent(ctx, "inference", "Preempted")
	if err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(20*time.Second, 30*time.Second))
	e.Boundary = crashBoundary(lastGood, firstBad)
	e.Slice = map[string]string{"owner/Deployment": victim}
	e.Population = map[string]string{"namespace": "inference"}
	e.CounterexampleDiffersIn = []string{"owner/Deployment", "node", "nodeSelector/" + rack.Label}
	e.Mitigation = []Action{{Action: "rollback", Target: "Job/training/" + job}}
	e.extra("preemptor", "Job/training/"+job)
	e.extra("workers", workers)
	return fmt.Sprintf(`Inference pods on one rack were killed, and their replacements stay Pending.

## What on-call saw
inference/%s (%d pods, 8 GPUs each, one a node of rack %s) lost %d pods at once;
their replacements sit in Pending ("0/%d nodes are available"). inference/%s on
another rack is fine. Nodes were relabelled today.`, victim, len(rack.Nodes), rack.Value, workers, len(fleet.Nodes), neighbour), nil
}
