package main

import (
	"context"
	"fmt"
	"time"

	"github.com/faultline/faultline/hack/cluster/internal/apiload"
)

// Family list-storm: a newly rolled-out Job's workers each LIST a resource
// cluster-wide without a resourceVersion (a quorum read, served from etcd)
// as they start, all at once; the apiserver, sized for a smaller cluster,
// sheds them with APF 429s, and workers that give up exit 1. A neighbour
// in the same namespace reads the way the fix would (scoped, from the
// watch cache, jittered) and stays healthy.

func init() {
	register(&Family{Name: "list-storm",
		Summary:        "a new Job's workers all LIST a resource cluster-wide from etcd at start; 429s, workers give up",
		APIServerFlags: "--max-requests-inflight=40 --max-mutating-requests-inflight=20",
		Run:            runListStorm})
}

var listAgents = []string{"peer-discovery", "node-inventory", "gpu-health-agent", "topology-mapper", "quota-reporter", "log-shipper"}

var neighbourNames = []string{"metrics-exporter", "eval-harness", "checkpoint-sync", "dataset-cache", "tensorboard-sync"}

func runListStorm(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	ns, name, version := Pick(c, agentNamespaces), Pick(c, listAgents), c.version()
	resource := Pick(c, []string{"pods", "configmaps", "nodes"})
	workers := c.Between(300, 1000)
	timeout := c.Dur(8*time.Second, 15*time.Second)
	tries := 1
	nb, nbVersion, nbWorkers := pickOther(c, neighbourNames, name), c.version(), c.Between(10, 30)
	nbEvery, nbJitter := c.Dur(3*time.Second, 8*time.Second), c.Dur(2*time.Second, 6*time.Second)
	actor := c.DrawActor()
	c.log.Info("list-storm", "ns", ns, "job", name, "resource", resource, "workers", workers, "timeout", timeout, "tries", tries, "neighbour", nb)

	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := c.fleetObjects(ctx, fleet, resource); err != nil {
		return "", err
	}
	if err := c.readers(ctx, ns, resource); err != nil {
		return "", err
	}
	// The neighbour lists the same resource as the fix would: its own
	// objects (its namespace and label, or its pool's nodes), from the
	// watch cache, every few seconds with jitter.
	nbOp := apiload.Op{Verb: "list", Resource: resource, Namespace: ns, Selector: "app=" + nb, Cached: true}
	if resource == "nodes" {
		nbOp = apiload.Op{Verb: "list", Resource: "nodes", Selector: "pool=" + Pick(c, fleet.Pools), Cached: true}
	}
	_, stopNb, err := c.neighbour(ctx, ns, nb, nbVersion, nbWorkers, func(i int, w *apiload.Worker) {
		w.Delay, w.Repeat, w.Every, w.Jitter = c.Dur(0, nbEvery), []apiload.Op{nbOp}, nbEvery, nbJitter
	})
	if err != nil {
		return "", err
	}
	defer stopNb()
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(10*time.Second, 20*time.Second))

	cr, created, fail, wctx, stop, err := c.stormAgent(ctx, actor, ns, name, version, workers, timeout)
	if err != nil {
		return "", err
	}
	defer stop()
	lastGood := Now()
	// Every worker, at start: LIST the resource cluster-wide, no
	// resourceVersion, no jitter.
	op := apiload.Op{Verb: "list", Resource: resource}
	cr.run(wctx, func(i int, w *apiload.Worker) {
		w.Start, w.Tries, w.Pause = []apiload.Op{op}, tries, time.Second
	}, fail)()
	stormEnd := Now()
	gave, _ := cr.failures()
	c.log.Info("storm over", "requests", cr.counter.Requests(), "429s", cr.counter.Count(429), "gaveUp", len(gave), "err", cr.firstError())
	failed := 0
	if len(gave) > 0 {
		if failed, _, err = c.waitFailedPods(ctx, ns, "app="+name, 1); err != nil {
			return "", err
		}
	}
	Sleep(ctx, c.Dur(10*time.Second, 15*time.Second))
	stopNb()
	if failed, _, err = c.failedPods(ctx, ns, "app="+name); err != nil {
		return "", err
	}

	e.Changes = []Change{created}
	image := agentImage(name, version)
	classes := []map[string]any{{"verb": "list", "resource": resource, "scope": "cluster", "etcd": true}}
	if err := stormTruth(e, cr, image, lastGood, stormEnd, classes, []string{"jitter", "watch-cache", "scope"}); err != nil {
		return "", err
	}
	e.Mitigation = []Action{{Action: "set", Target: created.Ref, To: "list from the watch cache (resourceVersion=0), scoped, with jitter",
		Targets: []string{created.Ref + " reads", created.Ref + " start"}}}
	e.extra("failedPods", failed)
	e.extra("resource", resource)

	story := fmt.Sprintf(`A new %d-pod Job in %s fails within a minute of starting; kubectl is slow for everyone.

## What on-call saw
%s submitted %s/%s, a Job of %d workers (image %s).
Its pods were scheduled and running; then the Job failed: %d of its pods exited 1,
with messages like "%s", and the Job controller deleted the others.
For a while everybody's kubectl was slow and some requests failed with "the server
has received too many requests". Nothing on the nodes looked wrong. %s, a smaller
job in the same namespace, kept running. Several people and bots changed things in
the last hour.`,
		workers, ns, actor.User, ns, name, workers, image, failed, apiload.GiveUpMessage(cr.firstError()), nb)
	return story, nil
}
