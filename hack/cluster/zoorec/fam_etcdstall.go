package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/faultline/faultline/hack/cluster/internal/apiload"
)

// Family etcd-stall: etcd's disk stalls (a neighbour on the node's disk,
// fsyncs that take a second and more): etcd stops answering for a second
// or two at a time, again and again. Nothing in the cluster changes and
// no client's load rises. What the apiserver must ask etcd waits: writes,
// and reads that want fresh data (a list without a resourceVersion);
// what its watch cache serves does not. A batch agent, steady for a while,
// whose workers each list one pool's node config from etcd every two
// seconds or so with a one-second deadline, starts timing out; the first
// worker to fail twice in a row gives up, which fails its Job. Another
// namespace's agent, reading the same from the cache, stays healthy. The
// cause is outside the evidence: the truth names no change; extra.stall
// says when the stall began and ended.

func init() {
	register(&Family{Name: "etcd-stall",
		Summary: "etcd stalls again and again (a slow disk); the apiserver's etcd reads and writes wait, its cache does not; a steady agent's workers time out (no change in the cluster)",
		Run:     runEtcdStall})
}

// etcdPID reads the running etcd's process id from the control plane's
// pids file.
func etcdPID() (int, error) {
	dir := os.Getenv("FAULTLINE_CLUSTER_DIR")
	if dir == "" {
		return 0, fmt.Errorf("FAULTLINE_CLUSTER_DIR is not set: run under hack/cluster/zoo")
	}
	f, err := os.Open(filepath.Join(dir, "pids"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	pid := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if name, p, ok := strings.Cut(sc.Text(), " "); ok && name == "etcd" {
			if pid, err = strconv.Atoi(strings.TrimSpace(p)); err != nil {
				return 0, fmt.Errorf("pids: etcd: %w", err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if pid == 0 {
		return 0, fmt.Errorf("no etcd in %s", filepath.Join(dir, "pids"))
	}
	return pid, nil
}

// stallEtcd stops etcd for stop of every period until ctx ends, and leaves
// it running. The returned channel closes when it is running again.
func stallEtcd(ctx context.Context, pid int, stop, period time.Duration) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer syscall.Kill(pid, syscall.SIGCONT)
		for ctx.Err() == nil {
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(stop):
			}
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(period - stop):
			}
		}
	}()
	return done
}

func runEtcdStall(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	perm := c.rng.Perm(len(agentNamespaces))
	ns, other := agentNamespaces[perm[0]], agentNamespaces[perm[1]]
	name, version := Pick(c, fanoutAgents), c.version()
	nb, nbVersion := pickOther(c, neighbourNames, name), c.version()
	workers, every := c.Between(40, 64), c.Dur(1500*time.Millisecond, 2500*time.Millisecond)
	stop, period := c.Dur(1200*time.Millisecond, 1800*time.Millisecond), c.Dur(2500*time.Millisecond, 3000*time.Millisecond)
	pid, err := etcdPID()
	if err != nil {
		return "", err
	}
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := c.fleetObjects(ctx, fleet, "configmaps"); err != nil {
		return "", err
	}
	for _, n := range []string{ns, other} {
		if err := c.Namespace(ctx, n); err != nil {
			return "", err
		}
		if err := c.readers(ctx, n, "configmaps"); err != nil {
			return "", err
		}
	}
	// The agent: steady, each list answered well within its deadline.
	cr, created, fail, wctx, stopAgent, err := c.podAgent(ctx, routineActor, ns, name, version, workers, time.Second)
	if err != nil {
		return "", err
	}
	defer stopAgent()
	pool := Pick(c, fleet.Pools)
	op := apiload.Op{Verb: "list", Resource: "configmaps", Namespace: "node-config", Selector: "pool=" + pool}
	done := make(chan struct{})
	go func() {
		defer close(done)
		cr.run(wctx, func(i int, w *apiload.Worker) {
			w.Delay, w.Repeat, w.Every, w.Jitter = c.Dur(0, every), []apiload.Op{op}, every, every/2
			w.Tries, w.Pause = 2, 500*time.Millisecond
		}, fail)()
	}()
	nbOp := apiload.Op{Verb: "list", Resource: "configmaps", Namespace: "node-config", Selector: "pool=" + pool, Cached: true}
	_, stopNb, err := c.neighbour(ctx, other, nb, nbVersion, c.Between(10, 20), func(i int, w *apiload.Worker) {
		w.Delay, w.Repeat, w.Every, w.Jitter = c.Dur(0, every), []apiload.Op{nbOp}, every, every/2
	})
	if err != nil {
		return "", err
	}
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		stopNb()
		return "", err
	}
	Sleep(ctx, c.Dur(15*time.Second, 25*time.Second))
	if gave, _ := cr.failures(); len(gave) > 0 {
		stopNb()
		return "", fmt.Errorf("%d workers gave up before the stall: the steady load is too much for this machine", len(gave))
	}
	lastGood := Now()
	Sleep(ctx, time.Second)
	stallStart := Now()
	sctx, endStall := context.WithCancel(ctx)
	stalled := stallEtcd(sctx, pid, stop, period)
	defer func() { endStall(); <-stalled }()
	if err := until(ctx, 2*time.Minute, "a worker giving up", func() (bool, error) {
		gave, _ := cr.failures()
		return len(gave) > 0, nil
	}); err != nil {
		stopNb()
		return "", err
	}
	Sleep(ctx, c.Dur(20*time.Second, 30*time.Second))
	endStall()
	<-stalled
	stallEnd := Now()
	stopAgent()
	<-done
	_, failed, err := c.stormOver(ctx, cr, ns, name, stopNb)
	if err != nil {
		return "", err
	}
	gave, firstGaveUp := cr.failures()
	firstBad := cr.counter.FirstError(lastGood)
	if firstBad.IsZero() || firstGaveUp.Before(firstBad) {
		firstBad = firstGaveUp
	}
	e.Boundary = &Boundary{LastGood: lastGood, FirstBad: firstBad, Tolerance: "2s"}
	e.Slice = map[string]string{"owner/Job": name}
	e.SliceEquivalents = []map[string]string{{"image.tag/" + name: agentImage(name, version)}}
	// The agent is its namespace's only workload: the counterexample that
	// tells is the neighbour of another namespace, which reads the same
	// from the cache and stays good.
	e.CounterexampleDiffersIn = []string{"owner/Job"}
	e.extra("stall", map[string]any{"component": "etcd", "start": stallStart, "end": stallEnd,
		"stopMs": stop.Milliseconds(), "periodMs": period.Milliseconds()})
	e.extra("created", created.Ref)
	e.extra("workers", workers)
	e.extra("failedWorkers", len(gave))
	e.extra("failedPods", failed)
	return fmt.Sprintf(`A batch agent that had run for weeks fails.

## What on-call saw
%s/%s, a Job of %d workers that each list a pool's node config every few seconds,
had been steady; now it has failed: %d of its pods exited 1 with messages like "%s",
and the Job controller deleted the others.
Nothing about it changed and its load is flat. %s/%s, which reads the same, is fine.`,
		ns, name, workers, failed, apiload.GiveUpMessage(cr.firstError()), other, nb), nil
}
