package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Family limitrange-default: a platform team gives default limits to the
// namespaces whose pods declare none, with a LimitRange in each. A
// LimitRange only acts when a pod is admitted, so nothing running changes.
// In one namespace the default memory limit is below what its service
// uses: when automation next restarts that service, its new pods are
// created with the default limit and are OOMKilled. In another namespace
// the same actor's LimitRange defaults to more than its service uses, and
// that service, restarted at the same moment, runs fine. Neither
// Deployment changed but for the restart.

func init() {
	register(&Family{Name: "limitrange-default",
		Summary: "a LimitRange gives a namespace's pods a default memory limit below their use; the service's next pods are OOMKilled",
		Run:     runLimitRangeDefault})
}

// limitRange creates a LimitRange giving containers that declare no
// memory limit a default one.
func (c *Cluster) limitRange(ctx context.Context, a Actor, ns, name, memory string) error {
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:    corev1.LimitTypeContainer,
			Default: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)},
		}}}}
	if _, err := c.As(a).CoreV1().LimitRanges(ns).Create(ctx, lr, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create limitrange %s/%s: %w", ns, name, err)
	}
	return nil
}

func runLimitRangeDefault(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	perm := c.rng.Perm(len(teamNamespaces))
	ns, other := teamNamespaces[perm[0]], teamNamespaces[perm[1]]
	aperm := c.rng.Perm(len(serviceNames))
	name, neighbour := serviceNames[aperm[0]], serviceNames[aperm[1]]
	lrName := Pick(c, []string{"default-limits", "container-defaults", "mem-defaults"})
	low, high := Pick(c, []string{"256Mi", "512Mi"}), Pick(c, []string{"8Gi", "16Gi"})
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	image := "registry.example/" + name + ":2.7"
	replicas := c.Between(6, 16)
	if err := c.Deployment(ctx, routineActor, ns, name, replicas, Template{Image: image}); err != nil {
		return "", err
	}
	if err := c.Deployment(ctx, routineActor, other, neighbour, c.Between(6, 16), Template{Image: "registry.example/" + neighbour + ":1.9"}); err != nil {
		return "", err
	}
	actor, err := c.routineThenActor(ctx, fleet)
	if err != nil {
		return "", err
	}
	decoyAt := Now()
	if err := c.limitRange(ctx, actor, other, lrName, high); err != nil {
		return "", err
	}
	e.Decoys = []Change{{Ref: "LimitRange/" + other + "/" + lrName, Dimension: "created", At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(4*time.Second, 10*time.Second))
	lastGood := Now()
	Sleep(ctx, time.Second)
	at := Now()
	ref := "LimitRange/" + ns + "/" + lrName
	if err := c.limitRange(ctx, actor, ns, lrName, low); err != nil {
		return "", err
	}
	e.Changes = []Change{{Ref: ref, Dimension: "created", At: at, Actor: &actor}}
	Sleep(ctx, c.Dur(5*time.Second, 15*time.Second))
	pods, err := c.Pods(ctx, ns, "app="+name)
	if err != nil {
		return "", err
	}
	crash := c.StartOOMCrasher(ctx, ns, "app="+name, podNames(pods), image)
	// Automation restarts both services at once (a node image rollout).
	if err := c.RolloutRestart(ctx, routineActor, other, neighbour); err != nil {
		crash.Stop()
		return "", err
	}
	if err := c.RolloutRestart(ctx, routineActor, ns, name); err != nil {
		crash.Stop()
		return "", err
	}
	if _, err := c.stalledRollout(ctx, e, crash, lastGood, ns, name); err != nil {
		return "", err
	}
	e.Population = map[string]string{"owner/Deployment": name}
	e.CounterexampleDiffersIn = []string{"owner.podTemplateHash", "resources/main/limits.memory"}
	e.Mitigation = []Action{{Action: "rollback", Target: ref}}
	return fmt.Sprintf(`A service's new pods crash-loop after a routine restart.

## What on-call saw
%s/%s (%d replicas) was restarted by automation; its new pods are OOMKilled within
seconds of starting, its old pods still run, and the rollout has stalled. No one
changed the Deployment. %s/%s, restarted at the same moment, is fine. The platform
team rolled out namespace defaults today.`, ns, name, replicas, other, neighbour), nil
}
