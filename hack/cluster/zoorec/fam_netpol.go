package main

import (
	"context"
	"fmt"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Family netpol-break: the actor applies a default-deny egress
// NetworkPolicy to a namespace (a hardening rollout); the namespace's
// service, which calls a database, can no longer connect: its running
// pods fail their connections and crash-loop ("i/o timeout"). The same
// actor first applied an allow-all policy to another namespace, whose
// service stays healthy. Nothing the crashing pods ran with changed, and
// no pod spec names the policy: it selects them by namespace.

func init() {
	register(&Family{Name: "netpol-break",
		Summary: "a default-deny egress NetworkPolicy lands on a namespace; its service's running pods lose their database and crash-loop",
		Run:     runNetpolBreak})
}

func netpol(ns, name string, deny bool) *networkingv1.NetworkPolicy {
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}}}
	if !deny {
		np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}} // one empty rule: everything
	}
	return np
}

func runNetpolBreak(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	spaces := []string{"payments", "search", "serve", "recsys"}
	perm := c.rng.Perm(len(spaces))
	ns, other := spaces[perm[0]], spaces[perm[1]]
	name := Pick(c, []string{"ledger", "catalog", "profile"})
	neighbour := Pick(c, []string{"indexer", "ranker"})
	policy := Pick(c, []string{"default-deny-egress", "deny-all", "baseline-egress"})
	replicas := c.Between(6, 16)
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := c.Deployment(ctx, routineActor, ns, name, replicas, Template{Image: "registry.example/" + name + ":4.2"}); err != nil {
		return "", err
	}
	if err := c.Deployment(ctx, routineActor, other, neighbour, c.Between(6, 16), Template{Image: "registry.example/" + neighbour + ":1.9"}); err != nil {
		return "", err
	}
	actor, err := c.routineThenActor(ctx, fleet)
	if err != nil {
		return "", err
	}
	nps := func(ns string) interface {
		Create(context.Context, *networkingv1.NetworkPolicy, metav1.CreateOptions) (*networkingv1.NetworkPolicy, error)
	} {
		return c.As(actor).NetworkingV1().NetworkPolicies(ns)
	}
	decoyAt := Now()
	if _, err := nps(other).Create(ctx, netpol(other, "allow-egress", false), metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create network policy: %w", err)
	}
	e.Decoys = []Change{{Ref: "NetworkPolicy/" + other + "/allow-egress", Dimension: "created", At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(4*time.Second, 10*time.Second))
	pods, err := c.Running(ctx, ns, "app="+name)
	if err != nil {
		return "", err
	}
	lastGood := Now()
	Sleep(ctx, time.Second)
	at := Now()
	if _, err := nps(ns).Create(ctx, netpol(ns, policy, true), metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create network policy: %w", err)
	}
	e.Changes = []Change{{Ref: "NetworkPolicy/" + ns + "/" + policy, Dimension: "created", At: at, Actor: &actor}}
	// The pods' next connections time out; each gives up after its
	// retries, a few seconds apart.
	Sleep(ctx, c.Dur(3*time.Second, 6*time.Second))
	msg := fmt.Sprintf("FATAL: could not connect to database: dial tcp 10.96.%d.%d:5432: i/o timeout", c.Between(1, 250), c.Between(1, 250))
	firstBad, err := c.CrashLoop(ctx, ns, pods, "registry.example/"+name+":4.2", "", msg)
	if err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(20*time.Second, 30*time.Second))
	e.Boundary = crashBoundary(lastGood, firstBad)
	e.Slice = map[string]string{"owner/Deployment": name}
	e.SliceEquivalents = []map[string]string{{"namespace": ns}}
	e.CounterexampleDiffersIn = []string{"namespace", "owner/Deployment"}
	e.Mitigation = []Action{{Action: "rollback", Target: "NetworkPolicy/" + ns + "/" + policy}}
	return fmt.Sprintf(`A service crash-loops: it cannot reach its database.

## What on-call saw
%s/%s (%d replicas) went into CrashLoopBackOff within seconds: "could not connect
to database ... i/o timeout". Nothing was deployed to it. %s/%s is fine. Security
hardening was being rolled out today.`, ns, name, replicas, other, neighbour), nil
}
