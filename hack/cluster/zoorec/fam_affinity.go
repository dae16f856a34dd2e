package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Family affinity-break: the actor pins a service to a zone for data
// locality with a required node affinity, copied from another region's
// manifest: no node of this cluster is in that zone. Its new pods stay
// Pending (FailedScheduling: didn't match the pod's node affinity) and
// the rollout stalls with the old pods serving. Nothing else in its
// template changes. Shortly before, the same actor gave a neighbour in
// the same namespace a preferred affinity for a zone the cluster has,
// whose new pods are placed.

func init() {
	register(&Family{Name: "affinity-break",
		Summary: "a service is given a required node affinity for a zone the cluster does not have; its new pods stay Pending",
		Run:     runAffinityBreak})
}

// setAffinity sets the Deployment's pod affinity as the actor.
func (c *Cluster) setAffinity(ctx context.Context, a Actor, ns, name string, aff *corev1.Affinity) error {
	patch := map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"affinity": aff}}}}
	return c.PatchAs(ctx, a, "deployments", ns, name, patch)
}

func zoneTerm(zone string) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
		Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}
}

func runAffinityBreak(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	fleet, ns, name, neighbour, err := c.serviceFleet(ctx, e)
	if err != nil {
		return "", err
	}
	missing := Pick(c, []string{"us-west-2a", "eu-central-1b", "us-east-2c"})
	if _, err := c.serviceAndNeighbour(ctx, fleet, ns, name, Template{Image: "registry.example/" + name + ":4.0"},
		neighbour, Template{Image: "registry.example/" + neighbour + ":2.1"}); err != nil {
		return "", err
	}
	actor := c.DrawActor()
	decoyAt := Now()
	have := Pick(c, fleet.Zones)
	if err := c.setAffinity(ctx, actor, ns, neighbour, &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 50, Preference: zoneTerm(have)}}}}); err != nil {
		return "", err
	}
	e.Decoys = []Change{{Ref: "Deployment/" + ns + "/" + neighbour, Dimension: "spec/affinity", At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(5*time.Second, 12*time.Second))
	lastGood := Now()
	Sleep(ctx, time.Second)
	at := Now()
	if err := c.setAffinity(ctx, actor, ns, name, &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{zoneTerm(missing)}}}}); err != nil {
		return "", err
	}
	e.Changes = []Change{{Ref: "Deployment/" + ns + "/" + name, Dimension: "spec/affinity", At: at, Actor: &actor}}
	firstBad, err := c.firstEventSince(ctx, ns, "FailedScheduling", at)
	if err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(20*time.Second, 30*time.Second))
	e.Boundary = crashBoundary(lastGood, firstBad)
	if err := c.newReplicaSetSlice(ctx, e, ns, name); err != nil {
		return "", err
	}
	e.Population = map[string]string{"owner/Deployment": name}
	e.CounterexampleDiffersIn = []string{"owner.podTemplateHash", "spec/affinity"}
	e.Mitigation = []Action{{Action: "rollback", Target: "Deployment/" + ns + "/" + name}}
	e.extra("zone", missing)
	return fmt.Sprintf(`A service's rollout stalls: its new pods are never scheduled.

## What on-call saw
%s/%s's new pods stay Pending; its old pods still serve, fewer of them, and the
rollout has stalled. Its image did not change. %s/%s, in the same namespace, rolled
fine. Placement was being tuned for data locality today.`, ns, name, ns, neighbour), nil
}
