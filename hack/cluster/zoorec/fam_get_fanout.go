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

func runGetFanout(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	ns, name, version := Pick(c, agentNamespaces), Pick(c, fanoutAgents), c.version()
	workers := c.Between(400, 900)
	k := c.Between(2, 8)
	size := c.Between(8, 32) * 1024 // shard maps, CA bundles
	timeout := c.Dur(3*time.Second, 6*time.Second)
	nb, nbVersion, nbWorkers := pickOther(c, neighbourNames, name), c.version(), c.Between(10, 30)
	nbEvery, nbJitter := c.Dur(4*time.Second, 10*time.Second), c.Dur(2*time.Second, 6*time.Second)
	actor := c.DrawActor()
	c.log.Info("get-fanout", "ns", ns, "job", name, "workers", workers, "k", k, "size", size, "timeout", timeout, "neighbour", nb)

	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := c.Namespace(ctx, ns); err != nil {
		return "", err
	}
	var cms, secrets []string
	for i := range k {
		cm, sec := fmt.Sprintf("%s-shard-%d", name, i), fmt.Sprintf("%s-creds-%d", name, i)
		data := map[string]string{"shard": fmt.Sprint(i), "settings.yaml": padding(cm, size)}
		if err := c.ConfigMap(ctx, ns, cm, data); err != nil {
			return "", err
		}
		if err := c.Secret(ctx, ns, sec, map[string]string{"token": fmt.Sprintf("not-a-real-token-%d", i), "ca.crt": padding(sec, size/2)}); err != nil {
			return "", err
		}
		cms, secrets = append(cms, cm), append(secrets, sec)
	}
	if err := c.ConfigMap(ctx, ns, nb+"-config", map[string]string{"settings.yaml": padding(nb, 2048)}); err != nil {
		return "", err
	}
	if err := c.readers(ctx, ns, "configmaps", "secrets"); err != nil {
		return "", err
	}
	nbOp := apiload.Op{Verb: "get", Resource: "configmaps", Namespace: ns, Names: []string{nb + "-config"}}
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
	// Every worker, at start, no jitter: for each shard, GET its ConfigMap
	// and its Secret; the first failure is fatal.
	var start []apiload.Op
	for i := range k {
		start = append(start, apiload.Op{Verb: "get", Resource: "configmaps", Namespace: ns, Names: cms[i : i+1]},
			apiload.Op{Verb: "get", Resource: "secrets", Namespace: ns, Names: secrets[i : i+1]})
	}
	cr.run(wctx, func(i int, w *apiload.Worker) {
		w.Start, w.Tries = start, 1
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
	// The classes that burst: the workers that gave up early never got to
	// their Secrets (a handful of requests is no burst).
	var classes []map[string]any
	for _, res := range []string{"configmaps", "secrets"} {
		if n := cr.answered("/" + res + "/"); n >= 50 {
			classes = append(classes, map[string]any{"verb": "get", "resource": res, "scope": "object"})
		}
	}
	if err := stormTruth(e, cr, image, lastGood, stormEnd, classes, []string{"jitter", "watch-cache"}); err != nil {
		return "", err
	}
	e.Mitigation = []Action{{Action: "set", Target: created.Ref,
		To:      "read the ConfigMaps and Secrets once, mounted as volumes (the kubelet reads them), with a jittered start",
		Targets: []string{created.Ref + " reads", created.Ref + " start"}}}
	e.extra("failedPods", failed)
	e.extra("objectsPerWorker", 2*k)
	e.extra("secretGets", cr.answered("/secrets/"))

	story := fmt.Sprintf(`A new %d-pod Job in %s fails right at start-up; kubectl is slow for everyone.

## What on-call saw
%s submitted %s/%s, a Job of %d workers (image %s).
Its pods were scheduled and running; seconds later the Job failed: %d of its pods
exited 1, with messages like "%s", and the Job controller deleted the others.
For a moment everybody's kubectl was slow and some requests failed with "the server
has received too many requests". Nothing on the nodes looked wrong. %s, a job in
the same namespace, kept running. Several people and bots changed things in the
last hour.`,
		workers, ns, actor.User, ns, name, workers, image, failed, apiload.GiveUpMessage(cr.firstError()), nb)
	return story, nil
}
