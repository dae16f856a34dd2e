package main

import (
	"context"
	"fmt"
	"time"
)

// Family registry-outage: the image registry stops answering; nothing in
// the cluster changes. Pods that already run are fine; every pod started
// after it cannot pull its image: a Deployment restarted by automation in
// one namespace, another scaled up in another namespace by someone else.
// A third Deployment, left alone, stays healthy. The cause is outside the
// evidence: the truth has no change, and the right answer names none.

func init() {
	register(&Family{Name: "registry-outage",
		Summary: "the image registry stops answering; pods started afterwards in any namespace cannot pull their images (no change in the cluster)",
		Run:     runRegistryOutage})
}

func runRegistryOutage(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	spaces := []string{"serve", "search", "ml", "payments"}
	perm := c.rng.Perm(len(spaces))
	type app struct{ ns, name, image string }
	apps := []app{{spaces[perm[0]], "frontend", "registry.example/frontend:5.1"}, {spaces[perm[1]], "worker", "registry.example/worker:3.3"},
		{spaces[perm[2]], "cache", "registry.example/cache:7.0"}}
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	for _, a := range apps {
		if err := c.Deployment(ctx, routineActor, a.ns, a.name, c.Between(6, 14), Template{Image: a.image}); err != nil {
			return "", err
		}
	}
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(6*time.Second, 12*time.Second))
	lastGood := Now()
	Sleep(ctx, time.Second)
	// The registry stops answering: nothing in the cluster says so.
	msg := fmt.Sprintf(`rpc error: code = Unknown desc = failed to pull and unpack image: failed to resolve reference: Get "https://registry.example/v2/": dial tcp 10.20.%d.%d:443: i/o timeout`, c.Between(1, 250), c.Between(1, 250))
	var failers []*Crasher
	for _, a := range apps[:2] {
		before, err := c.Pods(ctx, a.ns, "app="+a.name)
		if err != nil {
			return "", err
		}
		failers = append(failers, c.StartPullFailer(ctx, a.ns, "app="+a.name, podNames(before), a.image, msg))
	}
	Sleep(ctx, c.Dur(3*time.Second, 8*time.Second))
	if err := c.RolloutRestart(ctx, routineActor, apps[0].ns, apps[0].name); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(3*time.Second, 8*time.Second))
	if err := c.Scale(ctx, c.DrawActor(), apps[1].ns, apps[1].name, 20); err != nil {
		return "", err
	}
	if err := failers[1].WaitOrStop(ctx, 1, 2*time.Minute); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(20*time.Second, 30*time.Second))
	var firstBad time.Time
	for _, f := range failers {
		_, t, err := f.Stop()
		if err != nil {
			return "", err
		}
		if !t.IsZero() && (firstBad.IsZero() || t.Before(firstBad)) {
			firstBad = t
		}
	}
	e.Boundary = crashBoundary(lastGood, firstBad)
	e.extra("outage", "registry.example")
	return fmt.Sprintf(`New pods cannot start anywhere.

## What on-call saw
%s/%s was restarted and %s/%s scaled up; their new pods sit in ImagePullBackOff.
Pods that were already running are fine, and so is %s/%s.`, apps[0].ns, apps[0].name, apps[1].ns, apps[1].name, apps[2].ns, apps[2].name), nil
}
