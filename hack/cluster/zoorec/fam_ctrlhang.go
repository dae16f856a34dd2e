package main

import (
	"context"
	"fmt"
)

// Family controller-hang: the controller-manager hangs (a deadlock, a
// call that never returns): its process lives and its connections stay
// open, but no controller acts. Nothing in the cluster changes and
// nothing reports an error. Pods that already run are fine. Just after
// it, automation rolls one namespace's Deployment to a new image, and
// someone scales another namespace's Deployment up: neither gets a new
// ReplicaSet or a new pod, and nothing says why. A third Deployment, left
// alone, stays healthy. The cause is outside the evidence: the truth
// names no change (the rollout and the scale-up are decoys); extra.stall
// says when the controller-manager stopped. It is still hung when the
// evidence ends (hack/cluster/down kills it).

func init() {
	register(&Family{Name: "controller-hang",
		Summary: "the controller-manager hangs (alive, connected, acting on nothing); a rollout and a scale-up made afterwards get no new pods and no event (no change in the cluster)",
		Run:     runControllerHang})
}

func runControllerHang(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	apps, scaleTo, err := c.hang(ctx, e, "kube-controller-manager", func(hungApp, map[string]bool) error { return nil })
	if err != nil {
		return "", err
	}
	running := 0
	for _, a := range apps[:2] {
		pods, err := c.Pods(ctx, a.ns, "app="+a.name)
		if err != nil {
			return "", err
		}
		running += len(pods)
	}
	e.extra("pods", running)
	return fmt.Sprintf(`A rollout and a scale-up do nothing.

## What on-call saw
%s/%s was rolled to a new image and %s/%s scaled to %d; neither has a new pod,
and the old pods still run. No event, no error. %s/%s is fine.`,
		apps[0].ns, apps[0].name, apps[1].ns, apps[1].name, scaleTo, apps[2].ns, apps[2].name), nil
}
