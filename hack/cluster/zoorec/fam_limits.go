package main

import (
	"context"
	"fmt"
	"time"
)

// Family limits-oom: the actor "right-sizes" a service, lowering its
// container's memory limit below what it uses; its new pods are killed at
// the limit (OOMKilled) as the rollout brings them up. Shortly before, the
// same actor lowered the CPU limit of a neighbour in the same namespace,
// whose new pods run fine.

func init() {
	register(&Family{Name: "limits-oom",
		Summary: "a service's memory limit is lowered below its use; its new pods are OOMKilled as the rollout brings them up",
		Run:     runLimitsOOM})
}

func (c *Cluster) setLimit(ctx context.Context, a Actor, ns, name, resource, value string) error {
	return c.patchContainer(ctx, a, ns, name, resource+" limit", map[string]any{"resources": map[string]any{"limits": map[string]string{resource: value}}})
}

func runLimitsOOM(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	ns := Pick(c, []string{"serve", "search", "ml"})
	apps := []string{"tokenizer", "reranker", "feature-store", "embedder"}
	perm := c.rng.Perm(len(apps))
	name, neighbour := apps[perm[0]], apps[perm[1]]
	from, to := Pick(c, []string{"4Gi", "8Gi"}), Pick(c, []string{"512Mi", "768Mi"})
	image := "registry.example/" + name + ":2.4"
	if _, err := c.serviceAndNeighbour(ctx, fleet, ns, name, Template{Image: image, Memory: from},
		neighbour, Template{Image: "registry.example/" + neighbour + ":1.1", Memory: "2Gi"}); err != nil {
		return "", err
	}
	actor := c.DrawActor()
	decoyAt := Now()
	if err := c.setLimit(ctx, actor, ns, neighbour, "cpu", "2"); err != nil {
		return "", err
	}
	e.Decoys = []Change{{Ref: "Deployment/" + ns + "/" + neighbour, Dimension: "resources/main/limits.cpu", To: "2", At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(5*time.Second, 12*time.Second))
	pods, err := c.Pods(ctx, ns, "app="+name)
	if err != nil {
		return "", err
	}
	lastGood := Now()
	Sleep(ctx, time.Second)
	crash := c.StartOOMCrasher(ctx, ns, "app="+name, podNames(pods), image)
	at := Now()
	if err := c.setLimit(ctx, actor, ns, name, "memory", to); err != nil {
		crash.Stop()
		return "", err
	}
	e.Changes = []Change{{Ref: "Deployment/" + ns + "/" + name, Dimension: "resources/main/limits.memory", From: from, To: to, At: at, Actor: &actor}}
	if _, err := c.stalledRollout(ctx, e, crash, lastGood, ns, name); err != nil {
		return "", err
	}
	e.Population = map[string]string{"owner/Deployment": name}
	e.CounterexampleDiffersIn = []string{"owner.podTemplateHash", "resources/main/limits.memory"}
	e.Mitigation = []Action{{Action: "rollback", Target: "Deployment/" + ns + "/" + name}}
	return fmt.Sprintf(`A service's new pods crash-loop as its rollout brings them up.

## What on-call saw
%s/%s's new pods are OOMKilled within seconds of starting; its old pods still run,
and the rollout has stalled. %s/%s, in the same namespace, rolled fine. Resources
were being right-sized today.`, ns, name, ns, neighbour), nil
}
