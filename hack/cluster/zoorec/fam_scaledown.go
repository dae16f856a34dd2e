package main

import (
	"context"
	"fmt"
	"time"
)

// Family backend-scaled-down: a namespace runs a backend behind a Service
// and a frontend that calls it by the Service's DNS name (callChain). The
// actor, cutting the cost of what looks like an idle service, scales the
// backend's Deployment to zero: its pods go (deleted, not failed), the
// endpoints empty, and the frontend's running pods fail their calls
// ("connection refused") and crash-loop. Nothing the frontend ran with
// changed and nothing was written to the Service. Just before, the same
// actor scaled another namespace's service nobody calls to zero.

func init() {
	register(&Family{Name: "backend-scaled-down",
		Summary: "the Deployment behind a Service is scaled to zero; the frontend that calls the Service crash-loops",
		Run:     runBackendScaledDown})
}

func runBackendScaledDown(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	ch, err := c.newCallChain(ctx, e)
	if err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(6*time.Second, 12*time.Second))
	actor := c.DrawActor()
	decoyAt := Now()
	if err := c.Scale(ctx, actor, ch.other, ch.otherSvc, 0); err != nil {
		return "", err
	}
	e.Decoys = []Change{{Ref: "Deployment/" + ch.other + "/" + ch.otherSvc, Dimension: "spec.replicas", To: "0", At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(4*time.Second, 10*time.Second))
	pods, err := c.Running(ctx, ch.ns, "app="+ch.frontend)
	if err != nil {
		return "", err
	}
	backends, err := c.Running(ctx, ch.ns, "app="+ch.backend)
	if err != nil {
		return "", err
	}
	lastGood := Now()
	Sleep(ctx, time.Second)
	at := Now()
	if err := c.Scale(ctx, actor, ch.ns, ch.backend, 0); err != nil {
		return "", err
	}
	e.Changes = []Change{{Ref: "Deployment/" + ch.ns + "/" + ch.backend, Dimension: "spec.replicas",
		From: fmt.Sprint(len(backends)), To: "0", At: at, Actor: &actor}}
	if err := ch.refused(ctx, c, e, pods, lastGood); err != nil {
		return "", err
	}
	// The backend's pods were deleted, not left good: no good pod of the
	// namespace is left to be the counterexample.
	e.Population = nil
	e.Mitigation = []Action{{Action: "rollback", Target: "Deployment/" + ch.ns + "/" + ch.backend}}
	return fmt.Sprintf(`A frontend crash-loops: its backend refuses connections.

## What on-call saw
%s/%s (%d replicas) went into CrashLoopBackOff within seconds: "fetch features ...
%s.%s.svc.cluster.local:8080 ... connection refused". Nothing was deployed to it.
A cost clean-up of idle services was under way today.`,
		ch.ns, ch.frontend, ch.replicas, ch.backend, ch.ns), nil
}
