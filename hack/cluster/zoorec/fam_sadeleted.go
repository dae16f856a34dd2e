package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Family sa-deleted: a cleanup deletes ServiceAccounts it believes unused:
// first a legacy one nothing runs as, then the one a service's pods run
// as. Its running pods carry on; when automation restarts the namespace's
// services, the apiserver refuses every new pod of that service (the
// ServiceAccount admission plugin: "serviceaccount ... not found"): none
// is created, its ReplicaSet reports FailedCreate, the rollout stalls.
// The other services, restarted beside it, are fine.

func init() {
	register(&Family{Name: "sa-deleted",
		Summary: "a ServiceAccount a service runs as is deleted by a cleanup; the service's next pods are refused at admission",
		Run:     runSADeleted})
}

func runSADeleted(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	if _, err := c.Nodes(ctx, e.Nodes); err != nil {
		return "", err
	}
	ns := Pick(c, teamNamespaces)
	perm := c.rng.Perm(len(serviceNames))
	services := make([]string, c.Between(2, 4))
	for i := range services {
		services[i] = serviceNames[perm[i]]
	}
	victim := services[c.Intn(len(services))]
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := c.Namespace(ctx, ns); err != nil {
		return "", err
	}
	sas := c.Admin.CoreV1().ServiceAccounts(ns)
	for _, name := range append(append([]string{}, services...), "legacy-"+victim) {
		if _, err := sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			return "", fmt.Errorf("create serviceaccount %s/%s: %w", ns, name, err)
		}
	}
	for _, s := range services {
		if err := c.Deployment(ctx, routineActor, ns, s, c.Between(6, 14), Template{Image: "registry.example/server:4.2", ServiceAccount: s}); err != nil {
			return "", err
		}
	}
	Sleep(ctx, c.Dur(6*time.Second, 12*time.Second))
	actor := c.DrawActor()
	del := func(name string) (Change, error) {
		at := Now()
		if err := c.As(actor).CoreV1().ServiceAccounts(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return Change{}, fmt.Errorf("delete serviceaccount %s/%s: %w", ns, name, err)
		}
		return Change{Ref: "ServiceAccount/" + ns + "/" + name, Dimension: "deleted", At: at, Actor: &actor}, nil
	}
	if err := c.cleanupThenRestart(ctx, e, del, "legacy-"+victim, victim, ns, services, victim); err != nil {
		return "", err
	}
	e.CounterexampleDiffersIn = []string{"owner.podTemplateHash", "owner/ReplicaSet", "owner/Deployment", "serviceAccount"}
	return refusedStory(ns, victim, ""), nil
}

// cleanupThenRestart is the incident of the families whose cleanup
// deletes an object admission looks up: the actor deletes decoy (which
// nothing uses) and then target (with del), automation restarts the
// namespace's services a while later, and victim's new pods are refused
// (refusedRollout). It sets the changes, the decoys, the population and
// the mitigation (recreate the target).
func (c *Cluster) cleanupThenRestart(ctx context.Context, e *Expected, del func(name string) (Change, error),
	decoy, target, ns string, services []string, victim string) error {
	d, err := del(decoy)
	if err != nil {
		return err
	}
	e.Decoys = []Change{d}
	Sleep(ctx, c.Dur(2*time.Second, 6*time.Second))
	ch, err := del(target)
	if err != nil {
		return err
	}
	e.Changes = []Change{ch}
	Sleep(ctx, c.Dur(10*time.Second, 20*time.Second))
	lastGood := Now()
	Sleep(ctx, time.Second)
	if err := c.restartAll(ctx, routineActor, ns, services); err != nil {
		return err
	}
	// The refused pods are the new ReplicaSet's.
	if err := c.refusedRollout(ctx, e, lastGood, ns, victim); err != nil {
		return err
	}
	e.Population = map[string]string{"namespace": ns}
	e.Mitigation = []Action{{Action: "rollback", Target: ch.Ref}}
	e.extra("services", len(services))
	return nil
}

// refusedStory is what on-call saw of a service whose new pods were
// refused after the nightly restart, and a last line of context.
func refusedStory(ns, victim, context string) string {
	if context != "" {
		context = " " + context
	}
	return fmt.Sprintf(`After the nightly restart, one service in %s has no new pods.

## What on-call saw
%s/%s's rollout stalls: no new pod of it appears, and its new ReplicaSet reports
FailedCreate. Its old pods still run. The other services of %s were restarted at
the same moment and are fine.%s`, ns, ns, victim, ns, context)
}
