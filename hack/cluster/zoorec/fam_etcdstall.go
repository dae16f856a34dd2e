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

// componentPID reads the process id of the control plane's component name
// (etcd, kube-scheduler, ...) from its pids file (the last one started:
// hack/cluster/restart rewrites its line).
func componentPID(name string) (int, error) {
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
		if n, p, ok := strings.Cut(sc.Text(), " "); ok && n == name {
			if pid, err = strconv.Atoi(strings.TrimSpace(p)); err != nil {
				return 0, fmt.Errorf("pids: %s: %w", name, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if pid == 0 {
		return 0, fmt.Errorf("no %s in %s", name, filepath.Join(dir, "pids"))
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
	pid, err := componentPID("etcd")
	if err != nil {
		return "", err
	}
	// The agent: steady, each list answered well within its deadline.
	sa, err := c.steadyAgents(ctx, e, ns, other, name, version, nb, nbVersion, workers, every, time.Second)
	if err != nil {
		return "", err
	}
	cr, created, stopAgent := sa.cr, sa.created, sa.stop
	defer stopAgent()
	lastGood := Now()
	Sleep(ctx, time.Second)
	stallStart := Now()
	sctx, endStall := context.WithCancel(ctx)
	stalled := stallEtcd(sctx, pid, stop, period)
	defer func() { endStall(); <-stalled }()
	if err := sa.givenUp(ctx, c); err != nil {
		return "", err
	}
	endStall()
	<-stalled
	stallEnd := Now()
	failed, gave, err := sa.end(ctx, c, e, ns, name, version, lastGood)
	if err != nil {
		return "", err
	}
	e.extra("stall", map[string]any{"component": "etcd", "start": stallStart, "end": stallEnd,
		"stopMs": stop.Milliseconds(), "periodMs": period.Milliseconds()})
	e.extra("created", created.Ref)
	e.extra("workers", workers)
	e.extra("failedWorkers", gave)
	e.extra("failedPods", failed)
	return fmt.Sprintf(`A batch agent that had run for weeks fails.

## What on-call saw
%s/%s, a Job of %d workers that each list a pool's node config every few seconds,
had been steady; now it has failed: %d of its pods exited 1 with messages like "%s",
and the Job controller deleted the others.
Nothing about it changed and its load is flat. %s/%s, which reads the same, is fine.`,
		ns, name, workers, failed, apiload.GiveUpMessage(cr.firstError()), other, nb), nil
}
