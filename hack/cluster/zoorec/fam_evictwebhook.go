package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Family eviction-webhook: the actor installs a validating webhook on the
// evictions of one namespace's pods (a policy engine guarding its
// workloads), failing closed, whose backend does not answer. Nothing
// breaks: no one evicts. Later, node-upgrade automation drains a batch
// of nodes (as pdb-drain-stall's): every eviction of that namespace's
// pods is refused (500 "failed calling webhook"), retried every 5 s until
// the deadline; the other pods of the batch are evicted. The same actor
// first installed another such webhook, failing open, over another
// namespace: its pod on the batch is evicted.

func init() {
	register(&Family{Name: "eviction-webhook",
		Summary: "a validating webhook on one namespace's pod evictions fails closed with no backend; a later node drain has every eviction there refused (500) and stalls",
		Run:     runEvictionWebhook})
}

// evictionWebhook is a webhook like the admission families' (webhook),
// on the evictions of the namespaces' pods instead of their creation.
func evictionWebhook(name string, namespaces []string, policy admissionv1.FailurePolicyType) *admissionv1.ValidatingWebhookConfiguration {
	w := webhook(name, namespaces, policy)
	w.Webhooks[0].Rules[0].Rule.Resources = []string{"pods/eviction"}
	return w
}

func runEvictionWebhook(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	ns, other, name, neighbour, err := drainSetting(ctx, c, e)
	if err != nil {
		return "", err
	}
	guard := Pick(c, []string{"workload-guard", "eviction-policy", "disruption-guard"})
	decoy := Pick(c, []string{"eviction-audit", "drain-logger"})
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := c.Deployment(ctx, routineActor, ns, name, c.Between(6, 14), Template{Image: "registry.example/" + name + ":3.1"}); err != nil {
		return "", err
	}
	if err := c.Deployment(ctx, routineActor, other, neighbour, c.Between(6, 14), Template{Image: "registry.example/" + neighbour + ":1.8"}); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(5*time.Second, 10*time.Second))
	actor := c.DrawActor()
	hooks := c.As(actor).AdmissionregistrationV1().ValidatingWebhookConfigurations()
	decoyAt := Now()
	if _, err := hooks.Create(ctx, evictionWebhook(decoy, []string{other}, admissionv1.Ignore), metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create webhook %s: %w", decoy, err)
	}
	e.Decoys = []Change{{Ref: "ValidatingWebhookConfiguration/" + decoy, Dimension: "created", At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(3*time.Second, 8*time.Second))
	at := Now()
	ref := "ValidatingWebhookConfiguration/" + guard
	if _, err := hooks.Create(ctx, evictionWebhook(guard, []string{ns}, admissionv1.Fail), metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create webhook %s: %w", guard, err)
	}
	e.Changes = []Change{{Ref: ref, Dimension: "created", At: at, Actor: &actor}}
	Sleep(ctx, c.Dur(10*time.Second, 20*time.Second))

	batch, d, err := c.drainTruth(ctx, e, ns, name, other, neighbour)
	if err != nil {
		return "", err
	}
	e.SliceEquivalents = append(e.SliceEquivalents, map[string]string{"namespace": ns})
	e.Mitigation = []Action{{Action: "rollback", Target: ref}}
	return fmt.Sprintf(`A node upgrade stalls.

## What on-call saw
Node-upgrade automation drained a batch of %d nodes (%s). %d of them are
still cordoned with pods on them; the upgrade's log repeats "500 Internal
Server Error" on evictions until its deadline. The other nodes of the batch
were drained and upgraded.`, len(batch), strings.Join(batch, ", "), len(d.undrained)), nil
}

// drainBatch draws a batch of nodes to drain: two or three running pods
// of ns/name and none of other/neighbour's, one running exactly one of
// other/neighbour's and none of name's, and up to two running neither.
func (c *Cluster) drainBatch(ctx context.Context, ns, name, other, neighbour string) ([]string, error) {
	held, err := c.Running(ctx, ns, "app="+name)
	if err != nil {
		return nil, err
	}
	free, err := c.Running(ctx, other, "app="+neighbour)
	if err != nil {
		return nil, err
	}
	heldOn, freeOn := countOn(held), countOn(free)
	var heldNodes, freeNodes []string
	for n := range heldOn {
		if freeOn[n] == 0 {
			heldNodes = append(heldNodes, n)
		}
	}
	for n, k := range freeOn {
		if k == 1 && heldOn[n] == 0 {
			freeNodes = append(freeNodes, n)
		}
	}
	sort.Strings(heldNodes)
	sort.Strings(freeNodes)
	if len(heldNodes) < 2 || len(freeNodes) < 1 {
		return nil, fmt.Errorf("the pods of %s/%s and %s/%s share too many nodes: draw another seed", ns, name, other, neighbour)
	}
	c.rng.Shuffle(len(heldNodes), func(i, j int) { heldNodes[i], heldNodes[j] = heldNodes[j], heldNodes[i] })
	batch := append(heldNodes[:min(len(heldNodes), c.Between(2, 3))], Pick(c, freeNodes))
	all, err := c.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, i := range c.rng.Perm(len(all.Items)) {
		n := all.Items[i].Name
		if len(batch) >= 5 || heldOn[n] > 0 || freeOn[n] > 0 || c.Intn(2) == 0 {
			continue
		}
		batch = append(batch, n)
	}
	sort.Strings(batch)
	return batch, nil
}
