package main

import (
	"context"
	"fmt"
	"time"
)

// Family scheduler-name: the actor moves a service to a batch scheduler
// by its name (spec.schedulerName), from a manifest written for another
// cluster, where that scheduler runs; none of that name runs here. Its
// new pods wait Pending with no node and no event at all (no scheduler
// judges them), and the rollout stalls with the old pods serving.
// Nothing else in its template changes. Shortly before, the same actor
// set a neighbour's log level in the same namespace, whose new pods are
// placed.

func init() {
	register(&Family{Name: "scheduler-name",
		Summary: "a service's pods are given a schedulerName no scheduler here serves; its new pods wait Pending with no event",
		Run:     runSchedulerName})
}

func runSchedulerName(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	fleet, ns, name, neighbour, err := c.serviceFleet(ctx, e)
	if err != nil {
		return "", err
	}
	scheduler := Pick(c, []string{"volcano", "kube-batch", "yunikorn", "gang-scheduler"})
	if _, err := c.serviceAndNeighbour(ctx, fleet, ns, name, Template{Image: "registry.example/" + name + ":4.0"},
		neighbour, Template{Image: "registry.example/" + neighbour + ":2.1"}); err != nil {
		return "", err
	}
	actor := c.DrawActor()
	decoyAt := Now()
	level := Pick(c, []string{"debug", "warn"})
	if err := c.patchContainer(ctx, actor, ns, neighbour, "LOG_LEVEL", map[string]any{
		"env": []map[string]any{{"name": "LOG_LEVEL", "value": level}}}); err != nil {
		return "", err
	}
	e.Decoys = []Change{{Ref: "Deployment/" + ns + "/" + neighbour, Dimension: "env/main/LOG_LEVEL", To: level, At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(5*time.Second, 12*time.Second))
	lastGood := Now()
	Sleep(ctx, time.Second)
	at := Now()
	if err := c.PatchAs(ctx, actor, "deployments", ns, name, map[string]any{"spec": map[string]any{"template": map[string]any{
		"spec": map[string]any{"schedulerName": scheduler}}}}); err != nil {
		return "", err
	}
	e.Changes = []Change{{Ref: "Deployment/" + ns + "/" + name, Dimension: "schedulerName", From: "default-scheduler", To: scheduler,
		At: at, Actor: &actor}}
	before, err := c.Pods(ctx, ns, "app="+name)
	if err != nil {
		return "", err
	}
	if err := c.waitUnplaced(ctx, ns, "app="+name, podNames(before)); err != nil {
		return "", err
	}
	// No scheduler judges them: no event says when they went bad. They
	// were bad when made.
	firstBad := at
	Sleep(ctx, c.Dur(30*time.Second, 40*time.Second))
	e.Boundary = crashBoundary(lastGood, firstBad)
	if err := c.newReplicaSetSlice(ctx, e, ns, name); err != nil {
		return "", err
	}
	e.Population = map[string]string{"owner/Deployment": name}
	e.CounterexampleDiffersIn = []string{"owner.podTemplateHash", "schedulerName"}
	e.Mitigation = []Action{{Action: "rollback", Target: "Deployment/" + ns + "/" + name}}
	e.extra("scheduler", scheduler)
	return fmt.Sprintf(`A service's rollout stalls: its new pods never start, and say nothing.

## What on-call saw
%s/%s's new pods stay Pending, with no node and no events at all; its old pods
still serve, fewer of them, and the rollout has stalled. Its image did not change.
%s/%s, in the same namespace, rolled fine. The team is moving batch work to a
gang scheduler this week.`, ns, name, ns, neighbour), nil
}
