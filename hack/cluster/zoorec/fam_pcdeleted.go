package main

import (
	"context"
	"fmt"
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Family priorityclass-deleted: each of a namespace's 2-4 services runs at
// a PriorityClass of its own tier. A cleanup deletes PriorityClasses it
// believes unused: first a legacy one nothing names, then the one a
// service's pods name. Its running pods carry on (a pod's priority is set
// once, at admission); when automation restarts the namespace's services,
// the apiserver refuses every new pod of that service (the Priority
// admission plugin: "no PriorityClass with name ... was found"): none is
// created, its ReplicaSet reports FailedCreate, the rollout stalls. The
// others, restarted beside it, are fine.

func init() {
	register(&Family{Name: "priorityclass-deleted",
		Summary: "a PriorityClass a service's pods name is deleted by a cleanup; the service's next pods are refused at admission",
		Run:     runPCDeleted})
}

// priorityTiers are the PriorityClasses a platform gives its services.
var priorityTiers = []string{"serving-critical", "training-high", "batch-standard", "research-low", "eval-medium"}

func runPCDeleted(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	if _, err := c.Nodes(ctx, e.Nodes); err != nil {
		return "", err
	}
	ns := Pick(c, teamNamespaces)
	perm := c.rng.Perm(len(serviceNames))
	tiers := c.rng.Perm(len(priorityTiers))
	services := make([]string, c.Between(2, 4))
	class := map[string]string{}
	for i := range services {
		services[i] = serviceNames[perm[i]]
		class[services[i]] = priorityTiers[tiers[i]]
	}
	victim := services[c.Intn(len(services))]
	legacy := "legacy-" + class[victim]
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := c.Namespace(ctx, ns); err != nil {
		return "", err
	}
	pcs := c.Admin.SchedulingV1().PriorityClasses()
	for i, name := range append(append([]string{}, priorityTiers...), legacy) {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: int32(1000 * (len(priorityTiers) - i))}
		if _, err := pcs.Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			return "", fmt.Errorf("create priorityclass %s: %w", name, err)
		}
	}
	for _, s := range services {
		if err := c.Deployment(ctx, routineActor, ns, s, c.Between(6, 14), Template{Image: "registry.example/server:4.2", Priority: class[s]}); err != nil {
			return "", err
		}
	}
	Sleep(ctx, c.Dur(6*time.Second, 12*time.Second))
	actor := c.DrawActor()
	del := func(name string) (Change, error) {
		at := Now()
		if err := c.As(actor).SchedulingV1().PriorityClasses().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return Change{}, fmt.Errorf("delete priorityclass %s: %w", name, err)
		}
		return Change{Ref: "PriorityClass/" + name, Dimension: "deleted", At: at, Actor: &actor}, nil
	}
	if err := c.cleanupThenRestart(ctx, e, del, legacy, class[victim], ns, services, victim); err != nil {
		return "", err
	}
	e.CounterexampleDiffersIn = []string{"owner.podTemplateHash", "owner/ReplicaSet", "owner/Deployment", "spec/priorityClassName"}
	return refusedStory(ns, victim, "The platform team was tidying cluster-wide settings today."), nil
}
