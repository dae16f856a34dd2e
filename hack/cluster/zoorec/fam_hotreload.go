package main

import (
	"context"
	"fmt"
	"time"
)

// Family config-hot-reload: 2-4 services in a namespace each read their
// settings from a ConfigMap of their own, mounted as a volume, and reload
// the file when it changes, as many servers do. The kubelet refreshes a
// mounted ConfigMap in place, within its sync period, so a change reaches
// the running pods without any restart: nothing is rolled out and no pod
// starts. The actor sets one service's key to a value it cannot parse; a
// few tens of seconds later that service's running pods reload it, exit,
// and crash-loop, every one of them, though they started long before the
// change. Just before, the same actor changed another service's key to a
// value it takes, and that service reloads and runs on.

func init() {
	register(&Family{Name: "config-hot-reload",
		Summary: "a ConfigMap key that one service reloads from its mounted volume changes; its running pods (started long before) crash-loop with no restart or rollout",
		Run:     runHotReload})
}

func runHotReload(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	k := drawKeyChange(c, "configmaps")
	k.mode, k.trigger = "volume", "none"
	for i := range k.consumers {
		k.consumers[i].obj, k.consumers[i].key = k.consumers[i].name+"-config", "LR"
	}
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := k.setup(ctx, c); err != nil {
		return "", err
	}
	for _, cs := range k.consumers {
		if err := c.WaitRunning(ctx, k.ns, "app="+cs.name, cs.replicas, 2*time.Minute); err != nil {
			return "", err
		}
	}
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(20*time.Second, 40*time.Second))

	actor := c.DrawActor()
	victim := k.consumers[k.victim]
	if err := k.decoyChange(ctx, c, e, actor); err != nil {
		return "", err
	}
	lastGood := Now()
	Sleep(ctx, time.Second)
	bad := fmt.Sprintf("%d.%de-3", 1+c.Intn(9), c.Intn(10)) + Pick(c, []string{",", " ", "O"})
	ch, err := k.change(ctx, c, actor, victim, "0.001", bad)
	if err != nil {
		return "", err
	}
	e.Changes = []Change{ch}
	pods, err := c.Running(ctx, k.ns, "app="+victim.name)
	if err != nil {
		return "", err
	}
	// Each pod's kubelet refreshes the volume on its own sync, 20 to 60 s
	// after the write; the server reloads the file, cannot parse it, and
	// exits; restarted, it reads it again.
	Sleep(ctx, c.Dur(20*time.Second, 35*time.Second))
	msg := fmt.Sprintf("reload /etc/%s/LR: invalid learning rate %q", victim.name, bad)
	var firstBad time.Time
	c.rng.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
	for len(pods) > 0 {
		n := min(len(pods), c.Between(2, 5))
		t, err := c.CrashLoop(ctx, k.ns, pods[:n], "registry.example/trainer:2.3", "", msg)
		if err != nil {
			return "", err
		}
		if firstBad.IsZero() {
			firstBad = t
		}
		pods = pods[n:]
		Sleep(ctx, c.Dur(2*time.Second, 6*time.Second))
	}
	Sleep(ctx, c.Dur(10*time.Second, 20*time.Second))
	e.Boundary = crashBoundary(lastGood, firstBad)
	e.Slice = map[string]string{"owner/Deployment": victim.name}
	e.SliceEquivalents = []map[string]string{{ch.Dimension: ch.To}}
	if running, err := c.Pods(ctx, k.ns, "app="+victim.name); err == nil && len(running) > 0 {
		e.SliceEquivalents = append(e.SliceEquivalents, map[string]string{"owner.podTemplateHash": running[0].Labels["pod-template-hash"]})
	}
	e.CounterexampleDiffersIn = []string{"owner/Deployment", ch.Dimension}
	e.Mitigation = []Action{{Action: "rollback", Target: ch.Ref, To: ch.From}}
	e.extra("mode", k.mode)
	e.extra("badPods", victim.replicas)
	return fmt.Sprintf(`Every pod of one service crash-loops in namespace %s; nothing was deployed.

## What on-call saw
%d services in %s (%s) read their settings from ConfigMaps. A few minutes ago every
pod of one of them went into CrashLoopBackOff ("%s"), though none of them is new:
they had run for a long while, and no rollout, restart or scale-up happened. The
other services keep running. Several people and bots changed things in the last hour.`,
		k.ns, len(k.consumers), k.ns, consumerNames(k.consumers), msg), nil
}
