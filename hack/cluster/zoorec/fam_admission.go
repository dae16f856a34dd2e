package main

import (
	"context"
	"fmt"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Family admission-break: the actor changes what admits a namespace's
// pods. Either a validating admission webhook for pods of that namespace,
// failing closed, whose backend does not answer (it is not deployed yet,
// or its Service has no endpoint); or a ResourceQuota on CPU, which
// refuses every pod that does not declare CPU requests and limits, as the
// namespace's pods do not. Nothing breaks at once: running pods are not
// admitted again. When a Deployment of that namespace is next restarted,
// every pod create of its new ReplicaSet is refused (500 "failed calling
// webhook", or 403 "failed quota"), the ReplicaSet reports FailedCreate,
// and the rollout stalls. The same actor first installed another webhook
// that fails open, and a Deployment of another namespace, restarted at
// the same moment, stays healthy.

func init() {
	register(&Family{Name: "admission-break",
		Summary: "a validating webhook that fails closed, with no backend, is installed for a namespace; its Deployments' new pods are refused (500) and rollouts stall",
		Run:     runAdmissionBreak})
}

// webhook is a ValidatingWebhookConfiguration of one webhook on pod
// creates in the namespaces named, calling a backend that is not there.
func webhook(name string, namespaces []string, policy admissionv1.FailurePolicyType) *admissionv1.ValidatingWebhookConfiguration {
	none := admissionv1.SideEffectClassNone
	return &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name: name + ".policy.example.com",
			// Port 9 (discard) on the apiserver's host: nothing listens,
			// as when the webhook's Service has no ready endpoint.
			ClientConfig: admissionv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:9/validate")},
			Rules: []admissionv1.RuleWithOperations{{
				Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: namespaces,
			}}},
			FailurePolicy:           ptr.To(policy),
			SideEffects:             &none,
			TimeoutSeconds:          ptr.To(int32(2)),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

func runAdmissionBreak(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	spaces := []string{"ml", "serve", "research", "inference", "search"}
	perm := c.rng.Perm(len(spaces))
	ns, other := spaces[perm[0]], spaces[perm[1]]
	apps := []string{"ranker", "embedder", "feature-store", "tokenizer", "gateway"}
	aperm := c.rng.Perm(len(apps))
	name, neighbour := apps[aperm[0]], apps[aperm[1]]
	what := Pick(c, []string{"webhook", "quota"})
	guard := Pick(c, []string{"pod-security-guard", "image-policy", "quota-guard"})
	if what == "quota" {
		guard = Pick(c, []string{"compute-quota", "team-budget", "cpu-limits"})
	}
	decoy := Pick(c, []string{"label-audit", "cost-annotator"})
	replicas := c.Between(6, 20)
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := c.Deployment(ctx, routineActor, ns, name, replicas, Template{Image: "registry.example/" + name + ":3.2"}); err != nil {
		return "", err
	}
	if err := c.Deployment(ctx, routineActor, other, neighbour, c.Between(6, 20), Template{Image: "registry.example/" + neighbour + ":1.4"}); err != nil {
		return "", err
	}
	actor, err := c.routineThenActor(ctx, fleet)
	if err != nil {
		return "", err
	}
	hooks := c.As(actor).AdmissionregistrationV1().ValidatingWebhookConfigurations()
	// The decoy: the same actor installs a webhook over both namespaces
	// that fails open; its backend is not there either, and every pod is
	// admitted.
	decoyAt := Now()
	if _, err := hooks.Create(ctx, webhook(decoy, []string{ns, other}, admissionv1.Ignore), metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create webhook %s: %w", decoy, err)
	}
	e.Decoys = []Change{{Ref: "ValidatingWebhookConfiguration/" + decoy, Dimension: "created", At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(4*time.Second, 10*time.Second))
	lastGood := Now()
	Sleep(ctx, time.Second)
	at := Now()
	ref := "ValidatingWebhookConfiguration/" + guard
	if what == "quota" {
		ref = "ResourceQuota/" + ns + "/" + guard
		q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: guard, Namespace: ns},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
				corev1.ResourceRequestsCPU: resource.MustParse("200"), corev1.ResourceLimitsCPU: resource.MustParse("400")}}}
		if _, err := c.As(actor).CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
			return "", fmt.Errorf("create quota %s: %w", guard, err)
		}
	} else if _, err := hooks.Create(ctx, webhook(guard, []string{ns}, admissionv1.Fail), metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create webhook %s: %w", guard, err)
	}
	e.Changes = []Change{{Ref: ref, Dimension: "created", At: at, Actor: &actor}}
	Sleep(ctx, c.Dur(5*time.Second, 15*time.Second))
	// Automation restarts both Deployments at once (a config reload, a
	// node image rollout): only the guarded namespace's new pods are
	// refused.
	if err := c.RolloutRestart(ctx, routineActor, other, neighbour); err != nil {
		return "", err
	}
	if err := c.RolloutRestart(ctx, routineActor, ns, name); err != nil {
		return "", err
	}
	// The refused pods are the new ReplicaSet's.
	if err := c.refusedRollout(ctx, e, lastGood, ns, name); err != nil {
		return "", err
	}
	e.Population = map[string]string{"namespace": ns}
	e.CounterexampleDiffersIn = []string{"owner.podTemplateHash", "owner/ReplicaSet", "namespace"}
	e.Mitigation = []Action{{Action: "rollback", Target: ref}}
	e.extra("what", what)
	return fmt.Sprintf(`A Deployment's rollout stalls: its new pods never appear.

## What on-call saw
%s/%s (%d replicas) was restarted by automation; no new pod of it appeared, and
its new ReplicaSet reports FailedCreate. Its old pods still run. %s/%s, restarted
at the same moment, is fine. Platform changes were made today.`, ns, name, replicas, other, neighbour), nil
}

// newestTemplateHash is the pod-template-hash of the Deployment's newest
// ReplicaSet.
func (c *Cluster) newestTemplateHash(ctx context.Context, ns, name string) (string, error) {
	rss, err := c.Admin.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return "", fmt.Errorf("replicasets of %s/%s: %w", ns, name, err)
	}
	var hash string
	var newest time.Time
	for _, rs := range rss.Items {
		if t := rs.CreationTimestamp.Time; hash == "" || t.After(newest) {
			hash, newest = rs.Labels["pod-template-hash"], t
		}
	}
	if hash == "" {
		return "", fmt.Errorf("no ReplicaSet of %s/%s", ns, name)
	}
	return hash, nil
}

// firstEvent waits for the first event of the reason in the namespace and
// returns when it happened.
func (c *Cluster) firstEvent(ctx context.Context, ns, reason string) (time.Time, error) {
	return c.firstEventSince(ctx, ns, reason, time.Time{})
}
