package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Family quota-exhausted: a namespace has long had a quota on its pod
// count. The actor submits a batch Job there whose pods take what the
// quota had left; nothing fails yet. When automation next restarts the
// namespace's service, the apiserver refuses its new pods (exceeded
// quota): its rollout stalls. No quota was written: another workload used
// the room. Just before, the same actor submitted a small Job in another
// namespace, which runs.

func init() {
	register(&Family{Name: "quota-exhausted",
		Summary: "a batch Job takes what a namespace's pod quota had left; the service restarted there next gets its new pods refused",
		Run:     runQuotaExhausted})
}

func runQuotaExhausted(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	if _, err := c.Nodes(ctx, e.Nodes); err != nil {
		return "", err
	}
	spaces := []string{"research", "ml", "training", "recsys"}
	perm := c.rng.Perm(len(spaces))
	ns, other := spaces[perm[0]], spaces[perm[1]]
	name := Pick(c, []string{"feature-store", "ranker", "embedder"})
	replicas := c.Between(6, 12)
	batch := c.Between(10, 20)
	limit := replicas + batch
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := c.Namespace(ctx, ns); err != nil {
		return "", err
	}
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "team-pods", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(int64(limit), resource.DecimalSI)}}}
	if _, err := c.As(routineActor).CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create quota %s/team-pods: %w", ns, err)
	}
	if err := c.Deployment(ctx, routineActor, ns, name, replicas, Template{Image: "registry.example/" + name + ":2.0"}); err != nil {
		return "", err
	}
	// The service rolls all its pods at once (maxSurge 100%): a restart
	// asks for as many new pods as it runs.
	if err := c.PatchAs(ctx, routineActor, "deployments", ns, name,
		map[string]any{"spec": map[string]any{"strategy": map[string]any{"rollingUpdate": map[string]any{"maxSurge": "100%"}}}}); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(6*time.Second, 12*time.Second))
	actor := c.DrawActor()
	small := "eval-" + Pick(c, []string{"a", "b", "c"})
	decoyAt := Now()
	if err := c.Job(ctx, actor, other, small, 2, 0, Template{Image: "registry.example/eval:1.4"}); err != nil {
		return "", err
	}
	e.Decoys = []Change{{Ref: "Job/" + other + "/" + small, Dimension: "created", At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(3*time.Second, 8*time.Second))
	job := "sweep-" + Pick(c, []string{"lr", "wd", "bs"})
	at := Now()
	if err := c.Job(ctx, actor, ns, job, batch, 0, Template{Image: "registry.example/sweep:0.9"}); err != nil {
		return "", err
	}
	e.Changes = []Change{{Ref: "Job/" + ns + "/" + job, Dimension: "created", At: at, Actor: &actor}}
	Sleep(ctx, c.Dur(8*time.Second, 15*time.Second))
	lastGood := Now()
	Sleep(ctx, time.Second)
	if err := c.RolloutRestart(ctx, routineActor, ns, name); err != nil {
		return "", err
	}
	// The refused pods are the new ReplicaSet's.
	if err := c.refusedRollout(ctx, e, lastGood, ns, name); err != nil {
		return "", err
	}
	e.Population = map[string]string{"namespace": ns}
	e.CounterexampleDiffersIn = []string{"owner.podTemplateHash", "owner/ReplicaSet", "owner/Deployment"}
	e.Mitigation = []Action{{Action: "rollback", Target: "Job/" + ns + "/" + job}}
	e.extra("quota", limit)
	e.extra("batch", batch)
	return fmt.Sprintf(`A service's rollout stalls: its new pods never appear.

## What on-call saw
%s/%s was restarted by automation; no new pod of it appeared, and its new
ReplicaSet reports FailedCreate. Its old pods still run. Nobody touched the
namespace's quota.`, ns, name), nil
}
