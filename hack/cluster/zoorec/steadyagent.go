package main

import (
	"context"
	"fmt"
	"time"

	"github.com/faultline/faultline/hack/cluster/internal/apiload"
)

// steadyAgents is the setting of the families whose agent's load never
// changes (apf-misconfig, etcd-stall): the fleet, the background, the
// pools' node config, an agent in namespace ns (a podAgent Job of workers,
// each listing one pool's node config from etcd every few seconds, two
// tries, with the deadline given) that has run steadily for 15 to 25 s,
// and a neighbour in namespace other that reads the same from the watch
// cache and never gives up.
type steadyAgents struct {
	cr      *crew
	created Change
	// stop ends the agent's workers (and the context they run in); done
	// closes once they have returned. stopNb ends the neighbour.
	stop   context.CancelFunc
	done   chan struct{}
	stopNb func()
}

// steadyAgents brings the setting up. On an error, nothing is left
// running; otherwise the caller stops the agent (stop, then <-done) and
// the neighbour.
func (c *Cluster) steadyAgents(ctx context.Context, e *Expected, ns, other, name, version, nb, nbVersion string,
	workers int, every, deadline time.Duration) (*steadyAgents, error) {
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return nil, err
	}
	if err := c.Background(ctx); err != nil {
		return nil, err
	}
	if err := c.fleetObjects(ctx, fleet, "configmaps"); err != nil {
		return nil, err
	}
	for _, n := range []string{ns, other} {
		if err := c.Namespace(ctx, n); err != nil {
			return nil, err
		}
		if err := c.readers(ctx, n, "configmaps"); err != nil {
			return nil, err
		}
	}
	cr, created, fail, wctx, stop, err := c.podAgent(ctx, routineActor, ns, name, version, workers, deadline)
	if err != nil {
		return nil, err
	}
	sa := &steadyAgents{cr: cr, created: created, stop: stop, done: make(chan struct{})}
	pool := Pick(c, fleet.Pools)
	// A quorum read (from etcd), as a client that wants fresh data makes.
	op := apiload.Op{Verb: "list", Resource: "configmaps", Namespace: "node-config", Selector: "pool=" + pool}
	go func() {
		defer close(sa.done)
		cr.run(wctx, func(i int, w *apiload.Worker) {
			w.Delay, w.Repeat, w.Every, w.Jitter = c.Dur(0, every), []apiload.Op{op}, every, every/2
			w.Tries, w.Pause = 2, 500*time.Millisecond
		}, fail)()
	}()
	fails := func(err error) (*steadyAgents, error) {
		stop()
		<-sa.done
		if sa.stopNb != nil {
			sa.stopNb()
		}
		return nil, err
	}
	nbOp := apiload.Op{Verb: "list", Resource: "configmaps", Namespace: "node-config", Selector: "pool=" + pool, Cached: true}
	if _, sa.stopNb, err = c.neighbour(ctx, other, nb, nbVersion, c.Between(10, 20), func(i int, w *apiload.Worker) {
		w.Delay, w.Repeat, w.Every, w.Jitter = c.Dur(0, every), []apiload.Op{nbOp}, every, every/2
	}); err != nil {
		return fails(err)
	}
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return fails(err)
	}
	Sleep(ctx, c.Dur(15*time.Second, 25*time.Second))
	if gave, _ := cr.failures(); len(gave) > 0 {
		return fails(fmt.Errorf("%d workers gave up before the incident: the steady load is too much for this machine", len(gave)))
	}
	return sa, nil
}

// end stops the agent and the neighbour once the incident has run, and
// sets the truth the steady-agent families share: the boundary (from
// lastGood to the first error the apiserver answered or the first
// give-up), the slice (the Job, or its image), and the counterexample
// (the agent is its namespace's only workload: the neighbour of another
// namespace, which reads the same and stays good, differs in owner/Job).
// It returns the agent's failed pods and workers that gave up.
func (sa *steadyAgents) end(ctx context.Context, c *Cluster, e *Expected, ns, name, version string, lastGood time.Time) (failed, gave int, err error) {
	sa.stop()
	<-sa.done
	if _, failed, err = c.stormOver(ctx, sa.cr, ns, name, sa.stopNb); err != nil {
		return 0, 0, err
	}
	return failed, agentTruth(e, sa.cr, name, version, lastGood), nil
}

// agentTruth sets the truth of an agent whose own requests were refused
// (end): the boundary, from lastGood to the first error the apiserver
// answered its crew or its first give-up, whichever came first; the slice,
// its Job or image; the counterexample, which differs in owner/Job. It
// returns how many of its workers gave up.
func agentTruth(e *Expected, cr *crew, name, version string, lastGood time.Time) int {
	gaveUp, firstGaveUp := cr.failures()
	firstBad := cr.counter.FirstError(lastGood)
	if firstBad.IsZero() || firstGaveUp.Before(firstBad) {
		firstBad = firstGaveUp
	}
	e.Boundary = &Boundary{LastGood: lastGood, FirstBad: firstBad, Tolerance: "2s"}
	e.Slice = map[string]string{"owner/Job": name}
	e.SliceEquivalents = []map[string]string{{"image.tag/" + name: agentImage(name, version)}}
	e.CounterexampleDiffersIn = []string{"owner/Job"}
	return len(gaveUp)
}

// givenUp waits (two minutes at most) until a worker of the agent gives
// up, then lets the incident run on for 20 to 30 s. On an error it stops
// the neighbour.
func (sa *steadyAgents) givenUp(ctx context.Context, c *Cluster) error {
	if err := until(ctx, 2*time.Minute, "a worker giving up", func() (bool, error) {
		gave, _ := sa.cr.failures()
		return len(gave) > 0, nil
	}); err != nil {
		sa.stopNb()
		return err
	}
	Sleep(ctx, c.Dur(20*time.Second, 30*time.Second))
	return nil
}
