package main

import (
	"context"
	"fmt"
	"time"

	"github.com/faultline/faultline/hack/cluster/internal/apiload"
)

// Family get-fanout: a newly submitted Job's workers each GET K ConfigMaps
// and K Secrets as they start, all at once (settings, credentials, shard
// maps read through the API rather than mounted); the apiserver sheds
// them with APF 429s and workers that give up exit 1. A neighbour that
// re-reads its one ConfigMap every few seconds, jittered, stays healthy.

func init() {
	register(&Family{Name: "get-fanout",
		Summary:        "a new Job's workers each GET several ConfigMaps and Secrets at start, all at once; 429s, workers give up",
		APIServerFlags: "--max-requests-inflight=20 --max-mutating-requests-inflight=10",
		Run:            runGetFanout})
}

var fanoutAgents = []string{"feature-pipeline", "batch-scorer", "shard-indexer", "embedding-backfill", "eval-sweep", "etl-loader"}

// getFanout is what a seed draws for the family.
type getFanout struct {
	ns, name, version string
	workers           int
	k                 int // ConfigMaps and Secrets each worker reads
	size              int // bytes of each ConfigMap
	timeout           time.Duration
	nb, nbVersion     string // the neighbour
	nbWorkers         int
	nbEvery, nbJitter time.Duration
	actor             Actor
}

func drawGetFanout(c *Cluster) *getFanout {
	g := &getFanout{}
	g.ns, g.name, g.version = Pick(c, agentNamespaces), Pick(c, fanoutAgents), c.version()
	g.workers = c.Between(400, 900)
	g.k = c.Between(2, 8)
	g.size = c.Between(8, 32) * 1024 // shard maps, CA bundles
	g.timeout = c.Dur(3*time.Second, 6*time.Second)
	g.nb, g.nbVersion, g.nbWorkers = pickOther(c, neighbourNames, g.name), c.version(), c.Between(10, 30)
	g.nbEvery, g.nbJitter = c.Dur(4*time.Second, 10*time.Second), c.Dur(2*time.Second, 6*time.Second)
	g.actor = c.DrawActor()
	return g
}

func runGetFanout(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	g := drawGetFanout(c)
	c.log.Info("get-fanout", "ns", g.ns, "job", g.name, "workers", g.workers, "k", g.k, "size", g.size, "timeout", g.timeout, "neighbour", g.nb)

	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	cms, secrets, err := g.setUp(ctx, c)
	if err != nil {
		return "", err
	}
	stopNb, err := g.startNeighbour(ctx, c)
	if err != nil {
		return "", err
	}
	defer stopNb()
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(10*time.Second, 20*time.Second))

	cr, created, fail, wctx, stop, err := c.stormAgent(ctx, g.actor, g.ns, g.name, g.version, g.workers, g.timeout)
	if err != nil {
		return "", err
	}
	defer stop()
	lastGood := Now()
	g.storm(wctx, cr, fail, cms, secrets)
	stormEnd, failed, err := c.stormOver(ctx, cr, g.ns, g.name, stopNb)
	if err != nil {
		return "", err
	}

	if err := g.truth(e, cr, created, lastGood, stormEnd, failed); err != nil {
		return "", err
	}
	return g.story(failed, cr.firstError()), nil
}

// setUp makes the namespace, the K ConfigMaps and Secrets every worker
// reads (returned in shard order), the neighbour's ConfigMap, and the
// readers' RBAC.
func (g *getFanout) setUp(ctx context.Context, c *Cluster) (cms, secrets []string, err error) {
	if err := c.Namespace(ctx, g.ns); err != nil {
		return nil, nil, err
	}
	for i := range g.k {
		cm, sec := fmt.Sprintf("%s-shard-%d", g.name, i), fmt.Sprintf("%s-creds-%d", g.name, i)
		data := map[string]string{"shard": fmt.Sprint(i), "settings.yaml": padding(cm, g.size)}
		if err := c.ConfigMap(ctx, g.ns, cm, data); err != nil {
			return nil, nil, err
		}
		if err := c.Secret(ctx, g.ns, sec, map[string]string{"token": fmt.Sprintf("not-a-real-token-%d", i), "ca.crt": padding(sec, g.size/2)}); err != nil {
			return nil, nil, err
		}
		cms, secrets = append(cms, cm), append(secrets, sec)
	}
	if err := c.ConfigMap(ctx, g.ns, g.nb+"-config", map[string]string{"settings.yaml": padding(g.nb, 2048)}); err != nil {
		return nil, nil, err
	}
	return cms, secrets, c.readers(ctx, g.ns, "configmaps", "secrets")
}

// startNeighbour starts the neighbour, which re-reads its one ConfigMap
// every few seconds, jittered.
func (g *getFanout) startNeighbour(ctx context.Context, c *Cluster) (stop func(), err error) {
	nbOp := apiload.Op{Verb: "get", Resource: "configmaps", Namespace: g.ns, Names: []string{g.nb + "-config"}}
	_, stopNb, err := c.neighbour(ctx, g.ns, g.nb, g.nbVersion, g.nbWorkers, func(i int, w *apiload.Worker) {
		w.Delay, w.Repeat, w.Every, w.Jitter = c.Dur(0, g.nbEvery), []apiload.Op{nbOp}, g.nbEvery, g.nbJitter
	})
	return stopNb, err
}

// storm runs the workers, each at start, no jitter: for each shard, GET
// its ConfigMap and its Secret; the first failure is fatal. It returns
// when they are done.
func (g *getFanout) storm(wctx context.Context, cr *crew, fail func(int, error), cms, secrets []string) {
	var start []apiload.Op
	for i := range g.k {
		start = append(start, apiload.Op{Verb: "get", Resource: "configmaps", Namespace: g.ns, Names: cms[i : i+1]},
			apiload.Op{Verb: "get", Resource: "secrets", Namespace: g.ns, Names: secrets[i : i+1]})
	}
	cr.run(wctx, func(i int, w *apiload.Worker) {
		w.Start, w.Tries = start, 1
	}, fail)()
}

// truth sets the change (the Job created), the storm's truth and the
// mitigation.
func (g *getFanout) truth(e *Expected, cr *crew, created Change, lastGood, stormEnd time.Time, failed int) error {
	e.Changes = []Change{created}
	image := agentImage(g.name, g.version)
	// The classes that burst: the workers that gave up early never got to
	// their Secrets (a handful of requests is no burst).
	var classes []map[string]any
	for _, res := range []string{"configmaps", "secrets"} {
		if n := cr.answered("/" + res + "/"); n >= 50 {
			classes = append(classes, map[string]any{"verb": "get", "resource": res, "scope": "object"})
		}
	}
	if err := stormTruth(e, cr, image, lastGood, stormEnd, classes, []string{"jitter", "watch-cache"}); err != nil {
		return err
	}
	e.Mitigation = []Action{{Action: "set", Target: created.Ref,
		To:      "read the ConfigMaps and Secrets once, mounted as volumes (the kubelet reads them), with a jittered start",
		Targets: []string{created.Ref + " reads", created.Ref + " start"}}}
	e.extra("failedPods", failed)
	e.extra("objectsPerWorker", 2*g.k)
	e.extra("secretGets", cr.answered("/secrets/"))
	return nil
}

// story is what on-call saw: failed of the Job's pods exited with
// firstErr's message.
func (g *getFanout) story(failed int, firstErr error) string {
	return fmt.Sprintf(`A new %d-pod Job in %s fails right at start-up; kubectl is slow for everyone.

## What on-call saw
%s submitted %s/%s, a Job of %d workers (image %s).
Its pods were scheduled and running; seconds later the Job failed: %d of its pods
exited 1, with messages like "%s", and the Job controller deleted the others.
For a moment everybody's kubectl was slow and some requests failed with "the server
has received too many requests". Nothing on the nodes looked wrong. %s, a job in
the same namespace, kept running. Several people and bots changed things in the
last hour.`,
		g.workers, g.ns, g.actor.User, g.ns, g.name, g.workers, agentImage(g.name, g.version), failed, apiload.GiveUpMessage(firstErr), g.nb)
}
