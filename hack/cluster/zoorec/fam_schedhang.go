package main

import (
	"context"
	"fmt"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Family scheduler-hang: the scheduler hangs (a deadlock in a plugin, a
// call that never returns): its process lives and its connections stay
// open, but it places no pod. Nothing in the cluster changes and nothing
// reports an error. Pods that already run are fine; every pod created
// afterwards waits Pending, with no node, no event and no verdict. Just
// after it, automation rolls one namespace's Deployment to a new image,
// and someone scales another namespace's Deployment up: their new pods
// wait. A third Deployment, left alone, stays healthy. The cause is
// outside the evidence: the truth names no change (the rollout and the
// scale-up are decoys); extra.stall says when the scheduler stopped. It
// is still hung when the evidence ends (hack/cluster/down kills it).

func init() {
	register(&Family{Name: "scheduler-hang",
		Summary: "the scheduler hangs (alive, connected, placing nothing); pods created afterwards in any namespace wait Pending with no event (no change in the cluster)",
		Run:     runSchedulerHang})
}

func runSchedulerHang(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	// The rollout's new pod waits, unplaced, before the scale-up.
	apps, _, err := c.hang(ctx, e, "kube-scheduler", func(a hungApp, before map[string]bool) error {
		return c.waitUnplaced(ctx, a.ns, "app="+a.name, before)
	})
	if err != nil {
		return "", err
	}
	waiting := 0
	for _, a := range apps {
		pods, err := c.Pods(ctx, a.ns, "app="+a.name)
		if err != nil {
			return "", err
		}
		for _, p := range pods {
			if p.Spec.NodeName == "" {
				waiting++
			}
		}
	}
	e.extra("waiting", waiting)
	return fmt.Sprintf(`New pods do not start anywhere.

## What on-call saw
%s/%s was rolled to a new image and %s/%s scaled up; their new pods sit in Pending,
with no node and no events. Pods that were already running are fine, and so is %s/%s.`,
		apps[0].ns, apps[0].name, apps[1].ns, apps[1].name, apps[2].ns, apps[2].name), nil
}

// hungApp is one of the Deployments of a family whose control-plane
// component hangs.
type hungApp struct {
	ns, name, image string
	replicas        int
}

// hang stages what the families of a hung control-plane component share:
// three Deployments in namespaces of their own and the fleet's routine;
// then the component stops (SIGSTOP: its process lives and its
// connections stay open, but it does nothing), automation rolls the first
// Deployment to a new image (afterRoll runs then, with the pods it had),
// and someone scales the second up. The truth names no change: the
// rollout and the scale-up are decoys; extra.stall says when the
// component stopped. It is still stopped when the evidence ends
// (hack/cluster/down kills it). It returns the Deployments and the
// scale-up's replicas.
func (c *Cluster) hang(ctx context.Context, e *Expected, component string, afterRoll func(a hungApp, before map[string]bool) error) ([]hungApp, int, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return nil, 0, err
	}
	pid, err := componentPID(component)
	if err != nil {
		return nil, 0, err
	}
	spaces := []string{"serve", "search", "ml", "payments"}
	perm := c.rng.Perm(len(spaces))
	apps := []hungApp{{spaces[perm[0]], "frontend", "registry.example/frontend", c.Between(6, 14)},
		{spaces[perm[1]], "worker", "registry.example/worker", c.Between(6, 14)},
		{spaces[perm[2]], "cache", "registry.example/cache", c.Between(6, 14)}}
	if err := c.Background(ctx); err != nil {
		return nil, 0, err
	}
	for _, a := range apps {
		if err := c.Deployment(ctx, routineActor, a.ns, a.name, a.replicas, Template{Image: a.image + ":5.1"}); err != nil {
			return nil, 0, err
		}
	}
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return nil, 0, err
	}
	Sleep(ctx, c.Dur(6*time.Second, 12*time.Second))
	lastGood := Now()
	Sleep(ctx, time.Second)
	// The component hangs: nothing in the cluster says so.
	stallStart := Now()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, 0, fmt.Errorf("stop %s (pid %d): %w", component, pid, err)
	}
	Sleep(ctx, c.Dur(3*time.Second, 8*time.Second))
	roller := routineActor
	before, err := c.Pods(ctx, apps[0].ns, "app="+apps[0].name)
	if err != nil {
		return nil, 0, err
	}
	rollAt := Now()
	if err := c.SetImage(ctx, roller, apps[0].ns, apps[0].name, "main", apps[0].image+":5.2"); err != nil {
		return nil, 0, err
	}
	if err := afterRoll(apps[0], podNames(before)); err != nil {
		return nil, 0, err
	}
	Sleep(ctx, c.Dur(3*time.Second, 8*time.Second))
	scaler, scaleTo := c.DrawActor(), c.Between(18, 24)
	scaleAt := Now()
	if err := c.Scale(ctx, scaler, apps[1].ns, apps[1].name, scaleTo); err != nil {
		return nil, 0, err
	}
	Sleep(ctx, c.Dur(30*time.Second, 45*time.Second))
	e.Boundary = crashBoundary(lastGood, rollAt)
	e.Decoys = []Change{
		{Ref: "Deployment/" + apps[0].ns + "/" + apps[0].name, Dimension: "image.tag/main",
			From: apps[0].image + ":5.1", To: apps[0].image + ":5.2", At: rollAt, Actor: &roller},
		{Ref: "Deployment/" + apps[1].ns + "/" + apps[1].name, Dimension: "spec.replicas",
			From: strconv.Itoa(apps[1].replicas), To: strconv.Itoa(scaleTo), At: scaleAt, Actor: &scaler},
	}
	// The evidence ends with the component still stopped.
	e.extra("stall", map[string]any{"component": component, "start": stallStart, "end": Now()})
	return apps, scaleTo, nil
}

// waitUnplaced waits until a pod of the selector that is not in before
// exists, placed on no node.
func (c *Cluster) waitUnplaced(ctx context.Context, ns, selector string, before map[string]bool) error {
	return until(ctx, time.Minute, "a new pod of "+selector+" in "+ns, func() (bool, error) {
		pods, err := c.Pods(ctx, ns, selector)
		if err != nil {
			return false, err
		}
		for _, p := range pods {
			if !before[p.Name] && p.Spec.NodeName == "" && p.Status.Phase == corev1.PodPending {
				return true, nil
			}
		}
		return false, nil
	})
}
