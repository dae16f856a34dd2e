package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Family psa-enforce: a security team moves namespaces to Pod Security's
// restricted profile by labelling them (pod-security.kubernetes.io/
// enforce=restricted). The label acts only as a pod is admitted: running
// pods carry on. In one namespace, one of the 2-4 services still runs as
// root with no security context; when automation next restarts the
// namespace's services, the apiserver refuses every new pod of that one
// ("violates PodSecurity"), its ReplicaSet reports FailedCreate and the
// rollout stalls, while its neighbours, which comply, roll fine. Just
// before, the same actor labelled another namespace whose services all
// comply. Namespaces are audited at the Metadata level: the evidence says
// who patched the Namespace and when, not which label.

func init() {
	register(&Family{Name: "psa-enforce",
		Summary: "a namespace is labelled to enforce Pod Security's restricted profile; the one service there that runs as root has its next pods refused",
		Run:     runPSAEnforce})
}

// enforceRestricted labels a namespace as kubectl label does, to enforce
// the restricted profile.
func (c *Cluster) enforceRestricted(ctx context.Context, a Actor, ns string) error {
	p := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"restricted","pod-security.kubernetes.io/enforce-version":"latest"}}}`)
	if _, err := c.As(a).CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, p, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label namespace %s: %w", ns, err)
	}
	return nil
}

func runPSAEnforce(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	t, err := c.teamSetting(ctx, e)
	if err != nil {
		return "", err
	}
	fleet, ns, other, services, victim := t.fleet, t.ns, t.other, t.services, t.victim
	others := t.spare[:c.Between(1, 2)]
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	for _, s := range services {
		tmpl := Template{Image: "registry.example/" + s + ":3.1", Restricted: s != victim}
		if err := c.Deployment(ctx, routineActor, ns, s, c.Between(6, 14), tmpl); err != nil {
			return "", err
		}
	}
	for _, s := range others {
		if err := c.Deployment(ctx, routineActor, other, s, c.Between(6, 14), Template{Image: "registry.example/" + s + ":3.1", Restricted: true}); err != nil {
			return "", err
		}
	}
	actor, err := c.routineThenActor(ctx, fleet)
	if err != nil {
		return "", err
	}
	decoyAt := Now()
	if err := c.enforceRestricted(ctx, actor, other); err != nil {
		return "", err
	}
	e.Decoys = []Change{{Ref: "Namespace/" + other, Dimension: "labels", At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(3*time.Second, 8*time.Second))
	at := Now()
	if err := c.enforceRestricted(ctx, actor, ns); err != nil {
		return "", err
	}
	e.Changes = []Change{{Ref: "Namespace/" + ns, Dimension: "labels", At: at, Actor: &actor}}
	Sleep(ctx, c.Dur(10*time.Second, 20*time.Second))
	lastGood := Now()
	Sleep(ctx, time.Second)
	if err := c.restartAll(ctx, routineActor, other, others); err != nil {
		return "", err
	}
	if err := c.restartAll(ctx, routineActor, ns, services); err != nil {
		return "", err
	}
	if err := c.refusedRollout(ctx, e, lastGood, ns, victim); err != nil {
		return "", err
	}
	e.Population = map[string]string{"namespace": ns}
	e.CounterexampleDiffersIn = []string{"owner.podTemplateHash", "owner/ReplicaSet", "owner/Deployment", "spec/securityContext"}
	e.Mitigation = []Action{{Action: "rollback", Target: "Namespace/" + ns}}
	e.extra("services", len(services))
	return fmt.Sprintf(`After the nightly restart, one service in %s has no new pods.

## What on-call saw
%s/%s's rollout stalls: no new pod of it appears, and its new ReplicaSet reports
FailedCreate. Its old pods still run. The other services of %s, and those of %s,
were restarted at the same moment and are fine.`, ns, ns, victim, ns, other), nil
}
