package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/faultline/faultline/hack/cluster/internal/apiload"
)

// Family watch-restart-storm: an agent's watchers (a Job of a drawn size)
// hold WATCHes on a resource cluster-wide. The kube-apiserver is killed
// and restarted; every watch breaks at once, and every watcher relists
// (from etcd) and re-watches as soon as the apiserver is back, with no
// jitter. The apiserver sheds them with 429s; watchers that exhaust their
// retries exit 1. A neighbour that relists from the watch cache after a
// jittered backoff rides it out.

func init() {
	register(&Family{Name: "watch-restart-storm",
		Summary:        "the kube-apiserver restarts; an agent's watchers all relist from etcd and re-watch at once; 429s",
		APIServerFlags: "--max-requests-inflight=30 --max-mutating-requests-inflight=15",
		Run:            runWatchRestartStorm})
}

var watchAgents = []string{"node-labeler", "gpu-health-agent", "netpol-agent", "log-router", "inventory-sync", "cost-exporter"}

// watchStorm is what a seed draws for the family.
type watchStorm struct {
	ns, name, version string
	resource          string // what the agent watches
	workers           int
	timeout           time.Duration
	tries             int
	ramp              time.Duration // over which the agent's pods start
	down              int           // seconds the apiserver is down
	nb, nbVersion     string        // the neighbour
	nbWorkers         int
	nbBackoff         time.Duration
	actor             Actor
}

func drawWatchStorm(c *Cluster) *watchStorm {
	ws := &watchStorm{}
	ws.ns, ws.name, ws.version = Pick(c, agentNamespaces), Pick(c, watchAgents), c.version()
	ws.resource = Pick(c, []string{"pods", "configmaps", "nodes"})
	ws.workers = c.Between(150, 400)
	ws.timeout = c.Dur(8*time.Second, 12*time.Second)
	ws.tries = c.Between(2, 3)
	ws.ramp = c.Dur(15*time.Second, 30*time.Second)
	ws.down = c.Between(2, 6)
	ws.nb, ws.nbVersion, ws.nbWorkers = pickOther(c, neighbourNames, ws.name), c.version(), c.Between(8, 20)
	ws.nbBackoff = c.Dur(5*time.Second, 15*time.Second)
	ws.actor = c.DrawActor()
	return ws
}

func runWatchRestartStorm(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	restart, err := restartScript()
	if err != nil {
		return "", err
	}
	e.Nodes = Scale(c, e.Family)
	ws := drawWatchStorm(c)
	c.log.Info("watch-restart-storm", "ns", ws.ns, "job", ws.name, "resource", ws.resource, "workers", ws.workers, "timeout", ws.timeout,
		"tries", ws.tries, "downFor", ws.down, "neighbour", ws.nb)

	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := c.fleetObjects(ctx, fleet, ws.resource); err != nil {
		return "", err
	}
	if err := c.readers(ctx, ws.ns, ws.resource); err != nil {
		return "", err
	}
	stopNb, err := ws.startNeighbour(ctx, c, fleet)
	if err != nil {
		return "", err
	}
	defer stopNb()

	cr, created, fail, wctx, stop, err := c.stormAgent(ctx, ws.actor, ws.ns, ws.name, ws.version, ws.workers, ws.timeout)
	if err != nil {
		return "", err
	}
	defer stop()
	wait := ws.startWatchers(wctx, c, cr, fail)
	defer wait()
	if err := ws.waitWatching(ctx, cr); err != nil {
		return "", err
	}
	c.log.Info("watchers watching", "watchers", ws.workers)
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(10*time.Second, 20*time.Second))

	lastGood := Now()
	if err := ws.restartAPIServer(ctx, c, restart, lastGood); err != nil {
		return "", err
	}
	// The storm is over when every watcher watches again, or gave up (and
	// with it the Job, whose pods are then deleted).
	_ = until(wctx, 2*time.Minute, "watchers back", func() (bool, error) {
		return cr.progress.Watching.Load()+cr.progress.GaveUp.Load() >= int64(ws.workers), nil
	})
	stormEnd, failed, err := c.stormOver(ctx, cr, ws.ns, ws.name, stop, wait, stopNb)
	if err != nil {
		return "", err
	}

	if err := ws.truth(e, cr, created, lastGood, stormEnd, failed); err != nil {
		return "", err
	}
	return ws.story(failed, cr.firstError()), nil
}

// truth sets the change (the restart, at lastGood), the storm's truth
// (stormTruth) and the mitigation of the agent created.
func (ws *watchStorm) truth(e *Expected, cr *crew, created Change, lastGood, stormEnd time.Time, failed int) error {
	e.Changes = []Change{{Ref: "kube-apiserver", Dimension: "restart", At: lastGood}}
	image := agentImage(ws.name, ws.version)
	classes := []map[string]any{
		{"verb": "watch", "resource": ws.resource, "scope": "cluster"},
		{"verb": "list", "resource": ws.resource, "scope": "cluster", "etcd": true},
	}
	if err := stormTruth(e, cr, image, lastGood, stormEnd, classes, []string{"jitter", "watch-cache"}); err != nil {
		return err
	}
	e.Mitigation = []Action{{Action: "set", Target: created.Ref,
		To:      "relist from the watch cache (resourceVersion=0) after a jittered backoff when a watch breaks",
		Targets: []string{created.Ref + " reads", created.Ref + " start"}}}
	e.extra("failedPods", failed)
	e.extra("resource", ws.resource)
	e.extra("downFor", ws.down)
	e.extra("agentCreated", created)
	return nil
}

// startNeighbour starts the neighbour, which watches its own objects,
// relisting from the watch cache after a jittered backoff when its watch
// breaks.
func (ws *watchStorm) startNeighbour(ctx context.Context, c *Cluster, fleet *Fleet) (stop func(), err error) {
	nbOp := apiload.Op{Verb: "watch", Resource: ws.resource, Namespace: ws.ns, Selector: "app=" + ws.nb, Cached: true}
	if ws.resource == "nodes" {
		nbOp = apiload.Op{Verb: "watch", Resource: "nodes", Selector: "pool=" + Pick(c, fleet.Pools), Cached: true}
	}
	_, stopNb, err := c.neighbour(ctx, ws.ns, ws.nb, ws.nbVersion, ws.nbWorkers, func(i int, w *apiload.Worker) {
		w.Delay, w.Watch, w.Jitter = c.Dur(0, 10*time.Second), []apiload.Op{nbOp}, ws.nbBackoff
	})
	return stopNb, err
}

// startWatchers starts the agent's watchers. Each: LIST the resource
// cluster-wide from etcd, WATCH from there, and when the watch breaks, the
// same again at once; a failed attempt is retried a second later. The pods
// come up over a minute or so, as a rollout does.
func (ws *watchStorm) startWatchers(wctx context.Context, c *Cluster, cr *crew, fail func(int, error)) (wait func()) {
	op := apiload.Op{Verb: "watch", Resource: ws.resource}
	return cr.run(wctx, func(i int, w *apiload.Worker) {
		w.Delay, w.Watch, w.Tries, w.Pause, w.WaitForServer = c.Dur(0, ws.ramp), []apiload.Op{op}, ws.tries, time.Second, true
	}, fail)
}

// waitWatching waits until every watcher of the agent watches; one giving
// up first is an error.
func (ws *watchStorm) waitWatching(ctx context.Context, cr *crew) error {
	return until(ctx, 3*time.Minute, fmt.Sprintf("%d watchers watching", ws.workers), func() (bool, error) {
		if n := cr.progress.GaveUp.Load(); n > 0 {
			return false, fmt.Errorf("%d watchers gave up before the restart: %v", n, cr.firstError())
		}
		return cr.progress.Watching.Load() >= int64(ws.workers), nil
	})
}

// restartAPIServer stops the kube-apiserver for ws.down seconds and starts
// it again (hack/cluster/restart at script).
func (ws *watchStorm) restartAPIServer(ctx context.Context, c *Cluster, script string, lastGood time.Time) error {
	cmd := exec.CommandContext(ctx, "bash", script, "kube-apiserver", "--down-for", strconv.Itoa(ws.down))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("restart kube-apiserver: %w", err)
	}
	c.log.Info("kube-apiserver restarted", "took", time.Since(lastGood).Round(time.Second))
	return nil
}

// story is what on-call saw: failed of the agent's pods exited with
// firstErr's message.
func (ws *watchStorm) story(failed int, firstErr error) string {
	return fmt.Sprintf(`The kube-apiserver went away for a few seconds; afterwards the agent %s/%s failed and kubectl was slow.

## What on-call saw
The kube-apiserver was unreachable for a few seconds (connections refused), then
came back. In the minute after, everybody's kubectl was slow and some requests failed
with "the server has received too many requests". %s/%s, an agent of %d pods that had
been running quietly, failed: %d of its pods exited 1 ("%s") and the Job controller
deleted the others. %s, in the same namespace, kept running. Nothing on the nodes
looked wrong.`,
		ws.ns, ws.name, ws.ns, ws.name, ws.workers, failed, apiload.GiveUpMessage(firstErr), ws.nb)
}

// restartScript finds hack/cluster/restart: beside zoorec's source, found
// from the working directory up (hack/cluster/zoo runs from the repository).
func restartScript() (string, error) {
	if p := os.Getenv("FAULTLINE_CLUSTER_RESTART"); p != "" {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		for _, p := range []string{filepath.Join(dir, "hack", "cluster", "restart"), filepath.Join(dir, "restart")} {
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && filepath.Base(filepath.Dir(p)) == "cluster" {
				return p, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("hack/cluster/restart not found from the working directory up (set FAULTLINE_CLUSTER_RESTART)")
		}
		dir = parent
	}
}
