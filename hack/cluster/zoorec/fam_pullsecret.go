package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Family pull-secret-rotated: a team pulls one service's image from its
// private registry with a credential attached to the service's
// ServiceAccount (imagePullSecrets), so its pod template names no secret:
// admission adds it to every pod. A rotation script writes a new token to
// that Secret, of a robot account the registry does not know. Running
// pods carry on; when automation next restarts the namespace's 2-4
// services, that service's new pods cannot pull their image
// (ImagePullBackOff, "unauthorized") while the others, pulling public
// images, roll fine. Just before, the same script rotated another
// namespace's credential with a good token. Secrets are audited at the
// Metadata level: the evidence says who wrote the Secret and when.

func init() {
	register(&Family{Name: "pull-secret-rotated",
		Summary: "a registry credential a service's ServiceAccount carries is rotated to a token the registry refuses; its next pods cannot pull",
		Run:     runPullSecretRotated})
}

// dockerConfig is a kubernetes.io/dockerconfigjson body for one registry.
func dockerConfig(registry, user, token string) []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + token))
	return []byte(fmt.Sprintf(`{"auths":{%q:{"username":%q,"password":%q,"auth":%q}}}`, registry, user, token, auth))
}

// pullSecret creates (or, with rotate, updates as the actor) a registry
// credential.
func (c *Cluster) pullSecret(ctx context.Context, a Actor, ns, name, registry, user, token string, rotate bool) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: dockerConfig(registry, user, token)}}
	var err error
	if rotate {
		_, err = c.As(a).CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
	} else {
		_, err = c.Admin.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("write secret %s/%s: %w", ns, name, err)
	}
	return nil
}

func runPullSecretRotated(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	t, err := c.teamSetting(ctx, e)
	if err != nil {
		return "", err
	}
	fleet, ns, other, services, victim, neighbour := t.fleet, t.ns, t.other, t.services, t.victim, t.spare[0]
	secret := Pick(c, []string{"corp-registry", "registry-pull", "private-registry"})
	registry := Pick(c, []string{"registry.corp.example", "harbor.corp.example", "cr.corp.example"})
	image := func(s string) string { return registry + "/" + s + "/" + s + ":2.4" }
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	// Each service runs as its own ServiceAccount; the private registry's
	// credential is on the ServiceAccounts of those that pull from it.
	setup := func(ns, s string, private bool) error {
		if err := c.Namespace(ctx, ns); err != nil {
			return err
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: s}}
		img := "registry.example/" + s + ":2.4"
		if private {
			sa.ImagePullSecrets = []corev1.LocalObjectReference{{Name: secret}}
			img = image(s)
		}
		if _, err := c.Admin.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create serviceaccount %s/%s: %w", ns, s, err)
		}
		return c.Deployment(ctx, routineActor, ns, s, c.Between(6, 14), Template{Image: img, ServiceAccount: s})
	}
	for _, n := range []string{ns, other} {
		if err := c.Namespace(ctx, n); err != nil {
			return "", err
		}
		if err := c.pullSecret(ctx, routineActor, n, secret, registry, "robot$"+n, fmt.Sprintf("%x", c.rng.Uint64()), false); err != nil {
			return "", err
		}
	}
	for _, s := range services {
		if err := setup(ns, s, s == victim); err != nil {
			return "", err
		}
	}
	if err := setup(other, neighbour, true); err != nil {
		return "", err
	}
	actor, err := c.routineThenActor(ctx, fleet)
	if err != nil {
		return "", err
	}
	decoyAt := Now()
	if err := c.pullSecret(ctx, actor, other, secret, registry, "robot$"+other, fmt.Sprintf("%x", c.rng.Uint64()), true); err != nil {
		return "", err
	}
	e.Decoys = []Change{{Ref: "Secret/" + other + "/" + secret, Dimension: "secret/" + secret + "/" + corev1.DockerConfigJsonKey, At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(2*time.Second, 6*time.Second))
	at := Now()
	// The wrong robot account: the registry does not know it.
	if err := c.pullSecret(ctx, actor, ns, secret, registry, "robot$"+other, fmt.Sprintf("%x", c.rng.Uint64()), true); err != nil {
		return "", err
	}
	ref := "Secret/" + ns + "/" + secret
	e.Changes = []Change{{Ref: ref, Dimension: "secret/" + secret + "/" + corev1.DockerConfigJsonKey, At: at, Actor: &actor}}
	Sleep(ctx, c.Dur(10*time.Second, 20*time.Second))
	before, err := c.Pods(ctx, ns, "app="+victim)
	if err != nil {
		return "", err
	}
	msg := fmt.Sprintf(`rpc error: code = Unknown desc = failed to pull and unpack image %q: failed to resolve reference %q: pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed`,
		image(victim), image(victim))
	failer := c.StartPullFailer(ctx, ns, "app="+victim, podNames(before), image(victim), msg)
	lastGood := Now()
	Sleep(ctx, time.Second)
	if err := c.RolloutRestart(ctx, routineActor, other, neighbour); err != nil {
		return "", err
	}
	if err := c.restartAll(ctx, routineActor, ns, services); err != nil {
		return "", err
	}
	if _, err := c.stalledRollout(ctx, e, failer, lastGood, ns, victim); err != nil {
		return "", err
	}
	e.Population = map[string]string{"namespace": ns}
	e.CounterexampleDiffersIn = []string{"owner.podTemplateHash", "owner/ReplicaSet", "owner/Deployment", "serviceAccount", "secret/" + secret, "image.tag/main"}
	e.Mitigation = []Action{{Action: "rollback", Target: ref}}
	e.extra("services", len(services))
	return fmt.Sprintf(`After the nightly restart, one service in %s cannot start its new pods.

## What on-call saw
%s/%s's new pods sit in ImagePullBackOff; its old pods still run. The other
services of %s, and %s/%s, were restarted at the same moment and are fine.`, ns, ns, victim, ns, other, neighbour), nil
}
