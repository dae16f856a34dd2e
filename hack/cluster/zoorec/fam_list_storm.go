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

// listStorm is what a seed draws for the family.
type listStorm struct {
	ns, name, version string
	resource          string // what the agent lists
	workers           int
	timeout           time.Duration
	tries             int
	nb, nbVersion     string // the neighbour
	nbWorkers         int
	nbEvery, nbJitter time.Duration
	actor             Actor
}

func drawListStorm(c *Cluster) *listStorm {
	ls := &listStorm{}
	ls.ns, ls.name, ls.version = Pick(c, agentNamespaces), Pick(c, listAgents), c.version()
	ls.resource = Pick(c, []string{"pods", "configmaps", "nodes"})
	ls.workers = c.Between(300, 1000)
	ls.timeout = c.Dur(8*time.Second, 15*time.Second)
	ls.tries = 1
	ls.nb, ls.nbVersion, ls.nbWorkers = pickOther(c, neighbourNames, ls.name), c.version(), c.Between(10, 30)
	ls.nbEvery, ls.nbJitter = c.Dur(3*time.Second, 8*time.Second), c.Dur(2*time.Second, 6*time.Second)
	ls.actor = c.DrawActor()
	return ls
}

func runListStorm(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	ls := drawListStorm(c)
	c.log.Info("list-storm", "ns", ls.ns, "job", ls.name, "resource", ls.resource, "workers", ls.workers, "timeout", ls.timeout, "tries", ls.tries, "neighbour", ls.nb)

	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := c.fleetObjects(ctx, fleet, ls.resource); err != nil {
		return "", err
	}
	if err := c.readers(ctx, ls.ns, ls.resource); err != nil {
		return "", err
	}
	stopNb, err := ls.startNeighbour(ctx, c, fleet)
	if err != nil {
		return "", err
	}
	defer stopNb()
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(10*time.Second, 20*time.Second))

	cr, created, fail, wctx, stop, err := c.stormAgent(ctx, ls.actor, ls.ns, ls.name, ls.version, ls.workers, ls.timeout)
	if err != nil {
		return "", err
	}
	defer stop()
	lastGood := Now()
	// Every worker, at start: LIST the resource cluster-wide, no
	// resourceVersion, no jitter.
	op := apiload.Op{Verb: "list", Resource: ls.resource}
	cr.run(wctx, func(i int, w *apiload.Worker) {
		w.Start, w.Tries, w.Pause = []apiload.Op{op}, ls.tries, time.Second
	}, fail)()
	stormEnd, failed, err := c.stormOver(ctx, cr, ls.ns, ls.name, stopNb)
	if err != nil {
		return "", err
	}

	e.Changes = []Change{created}
	image := agentImage(ls.name, ls.version)
	classes := []map[string]any{{"verb": "list", "resource": ls.resource, "scope": "cluster", "etcd": true}}
	if err := stormTruth(e, cr, image, lastGood, stormEnd, classes, []string{"jitter", "watch-cache", "scope"}); err != nil {
		return "", err
	}
	e.Mitigation = []Action{{Action: "set", Target: created.Ref, To: "list from the watch cache (resourceVersion=0), scoped, with jitter",
		Targets: []string{created.Ref + " reads", created.Ref + " start"}}}
	e.extra("failedPods", failed)
	e.extra("resource", ls.resource)
	return ls.story(failed, cr.firstError()), nil
}

// startNeighbour starts the neighbour, which lists the same resource as
// the fix would: its own objects (its namespace and label, or its pool's
// nodes), from the watch cache, every few seconds with jitter.
func (ls *listStorm) startNeighbour(ctx context.Context, c *Cluster, fleet *Fleet) (stop func(), err error) {
	nbOp := apiload.Op{Verb: "list", Resource: ls.resource, Namespace: ls.ns, Selector: "app=" + ls.nb, Cached: true}
	if ls.resource == "nodes" {
		nbOp = apiload.Op{Verb: "list", Resource: "nodes", Selector: "pool=" + Pick(c, fleet.Pools), Cached: true}
	}
	_, stopNb, err := c.neighbour(ctx, ls.ns, ls.nb, ls.nbVersion, ls.nbWorkers, func(i int, w *apiload.Worker) {
		w.Delay, w.Repeat, w.Every, w.Jitter = c.Dur(0, ls.nbEvery), []apiload.Op{nbOp}, ls.nbEvery, ls.nbJitter
	})
	return stopNb, err
}

// story is what on-call saw: failed of the Job's pods exited with
// firstErr's message.
func (ls *listStorm) story(failed int, firstErr error) string {
	return fmt.Sprintf(`A new %d-pod Job in %s fails within a minute of starting; kubectl is slow for everyone.

## What on-call saw
%s submitted %s/%s, a Job of %d workers (image %s).
Its pods were scheduled and running; then the Job failed: %d of its pods exited 1,
with messages like "%s", and the Job controller deleted the others.
For a while everybody's kubectl was slow and some requests failed with "the server
has received too many requests". Nothing on the nodes looked wrong. %s, a smaller
job in the same namespace, kept running. Several people and bots changed things in
the last hour.`,
		ls.workers, ls.ns, ls.actor.User, ls.ns, ls.name, ls.workers, agentImage(ls.name, ls.version), failed, apiload.GiveUpMessage(firstErr), ls.nb)
}
