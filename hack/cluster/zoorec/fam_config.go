package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Families 1 and 2: a key of a ConfigMap or a Secret changes; of several
// services that read config from it (or from their own), only the one that
// reads that key fails, and only its pods that start after the change.

func init() {
	register(&Family{Name: "config-key", Summary: "a ConfigMap key consumed (env, envFrom or volume) by one of several services changes",
		Run: func(ctx context.Context, c *Cluster, e *Expected) (string, error) {
			return runKeyChange(ctx, c, e, "configmaps")
		}})
	register(&Family{Name: "secret-rotation", Summary: "a Secret is rotated; the one service that reads it fails to authenticate",
		Run: func(ctx context.Context, c *Cluster, e *Expected) (string, error) {
			return runKeyChange(ctx, c, e, "secrets")
		}})
}

var serviceNames = []string{"vision-train", "llm-pretrain", "ranker", "embedder", "tokenizer", "feature-store", "reward-model"}
var teamNamespaces = []string{"ml", "research", "inference", "training", "recsys"}

type consumer struct {
	name, obj, key string // the Deployment, the object it reads, the key
	replicas       int
}

// keyChange is one drawn scenario of families 1 and 2.
type keyChange struct {
	kind, ns, mode, trigger string
	consumers               []consumer
	victim, decoy           int // indexes into consumers
}

func drawKeyChange(c *Cluster, kind string) *keyChange {
	k := &keyChange{kind: kind, ns: Pick(c, teamNamespaces), trigger: Pick(c, []string{"restart", "scale"})}
	k.mode = Pick(c, []string{"env", "envFrom", "volume"})
	if kind == "secrets" {
		// A rotated Secret reaches pods when something restarts them: a
		// reloader restarts the consumers of the Secret that changed.
		k.mode, k.trigger = Pick(c, []string{"env", "volume"}), "restart"
	}
	n := c.Between(2, 4)
	perm := c.rng.Perm(len(serviceNames))
	for i := range n {
		name := serviceNames[perm[i]]
		cs := consumer{name: name, replicas: c.Between(6, 24)}
		switch {
		case k.mode == "env" && kind == "configmaps":
			cs.obj, cs.key = "platform-config", strings.ToUpper(strings.ReplaceAll(name, "-", "_"))+"_LR"
		case kind == "configmaps":
			cs.obj, cs.key = name+"-config", "LR"
		default:
			cs.obj, cs.key = name+"-creds", "DB_PASSWORD"
		}
		k.consumers = append(k.consumers, cs)
	}
	k.victim = c.Intn(n)
	k.decoy = (k.victim + 1 + c.Intn(n-1)) % n
	return k
}

// template is how a consumer reads its key.
func (k *keyChange) template(cs consumer) Template {
	t := Template{Image: "registry.example/trainer:2.3", Container: "trainer", GPU: true}
	switch {
	case k.mode == "env" && k.kind == "configmaps":
		t.Env = []corev1.EnvVar{{Name: "LR", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: cs.obj}, Key: cs.key}}}}
	case k.mode == "env":
		t.Env = []corev1.EnvVar{{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: cs.obj}, Key: cs.key}}}}
	case k.mode == "envFrom":
		t.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: cs.obj}}}}
	default:
		src := corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cs.obj}}}
		if k.kind == "secrets" {
			src = corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: cs.obj}}
		}
		t.Volumes = []corev1.Volume{{Name: "config", VolumeSource: src}}
		t.Mounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/" + cs.name}}
	}
	return t
}

func (k *keyChange) setup(ctx context.Context, c *Cluster) error {
	if err := c.Namespace(ctx, k.ns); err != nil {
		return err
	}
	shared := map[string]string{}
	for _, cs := range k.consumers {
		switch {
		case k.kind == "secrets":
			if err := c.Secret(ctx, k.ns, cs.obj, map[string]string{cs.key: "pw-" + cs.name + "-2026a", "DB_USER": cs.name}); err != nil {
				return err
			}
		case cs.obj == "platform-config":
			shared[cs.key] = "0.001"
		default:
			if err := c.ConfigMap(ctx, k.ns, cs.obj, map[string]string{cs.key: "0.001", "BATCH": "512"}); err != nil {
				return err
			}
		}
	}
	if len(shared) > 0 {
		shared["LOG_LEVEL"] = "info"
		if err := c.ConfigMap(ctx, k.ns, "platform-config", shared); err != nil {
			return err
		}
	}
	for _, cs := range k.consumers {
		if err := c.Deployment(ctx, routineActor, k.ns, cs.name, cs.replicas, k.template(cs)); err != nil {
			return err
		}
	}
	return nil
}

// change sets a consumer's key to value as the actor and returns the
// change as the truth records it.
func (k *keyChange) change(ctx context.Context, c *Cluster, a Actor, cs consumer, from, to string) (Change, error) {
	at := Now()
	var patch any = map[string]any{"data": map[string]string{cs.key: to}}
	if k.kind == "secrets" {
		patch = map[string]any{"stringData": map[string]string{cs.key: to}}
	}
	if err := c.PatchAs(ctx, a, k.kind, k.ns, cs.obj, patch); err != nil {
		return Change{}, err
	}
	kind, dim := "ConfigMap", "configmap/"+cs.obj+"/"+cs.key
	ch := Change{Ref: kind + "/" + k.ns + "/" + cs.obj, Dimension: dim, From: sha(from), To: sha(to), At: at, Actor: &a}
	if k.kind == "secrets" {
		// Secret values are never in the audit log nor in faultline: the
		// change is known by its key, not its value.
		ch.Ref, ch.Dimension, ch.From, ch.To = "Secret/"+k.ns+"/"+cs.obj, "secret/"+cs.obj+"/"+cs.key, "", ""
	}
	return ch, nil
}

// trigger makes the consumers' pods start anew after the change: the
// config reloader restarts those whose config changed, or the autoscaler
// adds replicas to every consumer.
func (k *keyChange) restartConsumers(ctx context.Context, c *Cluster) (map[string]int, error) {
	added := map[string]int{}
	for i, cs := range k.consumers {
		switch {
		case k.trigger == "restart" && (i == k.victim || i == k.decoy):
			reloader := Actor{User: "platform-automation", UserAgent: "stakater-reloader/v1.2.1"}
			if err := c.RolloutRestart(ctx, reloader, k.ns, cs.name); err != nil {
				return nil, err
			}
			added[cs.name] = (cs.replicas + 3) / 4 // the surge of a rolling update: 25 %
		case k.trigger == "scale":
			more := c.Between(3, 8)
			hpa := Actor{User: "platform-automation", UserAgent: "horizontal-pod-autoscaler/v1.37.2"}
			if err := c.Scale(ctx, hpa, k.ns, cs.name, cs.replicas+more); err != nil {
				return nil, err
			}
			added[cs.name] = more
		}
	}
	return added, nil
}

func runKeyChange(ctx context.Context, c *Cluster, e *Expected, kind string) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	_ = fleet
	k := drawKeyChange(c, kind)
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := k.setup(ctx, c); err != nil {
		return "", err
	}
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(6*time.Second, 12*time.Second))

	actor := c.DrawActor()
	victim := k.consumers[k.victim]
	bad := fmt.Sprintf("0.%d", 5+c.Intn(4))
	if kind == "secrets" {
		bad = fmt.Sprintf("pw-%s-2026b-%d", victim.name, c.Intn(1000))
	}
	if err := k.decoyChange(ctx, c, e, actor); err != nil {
		return "", err
	}
	before, err := k.podsBefore(ctx, c)
	if err != nil {
		return "", err
	}
	lastGood := Now()
	Sleep(ctx, time.Second)
	from := "0.001"
	if kind == "secrets" {
		from = "pw-" + victim.name + "-2026a"
	}
	ch, err := k.change(ctx, c, actor, victim, from, bad)
	if err != nil {
		return "", err
	}
	e.Changes = []Change{ch}
	Sleep(ctx, c.Dur(2*time.Second, 10*time.Second))
	added, err := k.restartConsumers(ctx, c)
	if err != nil {
		return "", err
	}
	msg := "invalid learning rate " + bad
	if kind == "secrets" {
		msg = "FATAL password authentication failed for user " + victim.name
	}
	crash := c.StartCrasher(ctx, k.ns, "app="+victim.name, before[victim.name], "registry.example/trainer:2.3", "", msg)
	if err := crash.WaitOrStop(ctx, added[victim.name], 2*time.Minute); err != nil {
		return "", err
	}
	// The other consumers' new pods start and stay healthy.
	for i, cs := range k.consumers {
		if i != k.victim && added[cs.name] > 0 {
			if err := c.WaitRunning(ctx, k.ns, "app="+cs.name, cs.replicas, 2*time.Minute); err != nil {
				return "", err
			}
		}
	}
	Sleep(ctx, c.Dur(5*time.Second, 10*time.Second))
	badPods, firstBad, err := crash.Stop()
	if err != nil {
		return "", err
	}
	e.Boundary = crashBoundary(lastGood, firstBad)
	k.truth(e, ch, badPods)
	return k.story(msg), nil
}

// podsBefore returns the names of each consumer's pods, by consumer.
func (k *keyChange) podsBefore(ctx context.Context, c *Cluster) (map[string]map[string]bool, error) {
	before := map[string]map[string]bool{}
	for _, cs := range k.consumers {
		pods, err := c.Pods(ctx, k.ns, "app="+cs.name)
		if err != nil {
			return nil, err
		}
		before[cs.name] = podNames(pods)
	}
	return before, nil
}

// decoyChange has the actor change another service's key first; that
// service restarts on it and stays healthy.
func (k *keyChange) decoyChange(ctx context.Context, c *Cluster, e *Expected, actor Actor) error {
	decoy := k.consumers[k.decoy]
	decoyTo := "0.002"
	if k.kind == "secrets" {
		decoyTo = "pw-" + decoy.name + "-2026b"
	}
	decoyFrom := "0.001"
	if k.kind == "secrets" {
		decoyFrom = "pw-" + decoy.name + "-2026a"
	}
	dch, err := k.change(ctx, c, actor, decoy, decoyFrom, decoyTo)
	if err != nil {
		return err
	}
	e.Decoys = append(e.Decoys, dch)
	Sleep(ctx, c.Dur(3*time.Second, 15*time.Second))
	return nil
}

// truth sets the slice, the population, the counterexample and the
// mitigation of the change ch, whose new pods crashed (badPods).
func (k *keyChange) truth(e *Expected, ch Change, badPods []corev1.Pod) {
	victim := k.consumers[k.victim]
	e.Slice = map[string]string{ch.Dimension: ch.To}
	e.SliceEquivalents = []map[string]string{}
	if k.trigger == "restart" && len(badPods) > 0 {
		e.SliceEquivalents = append(e.SliceEquivalents, map[string]string{"owner/Deployment": victim.name,
			"owner.podTemplateHash": badPods[0].Labels["pod-template-hash"]})
	}
	if k.kind == "secrets" && len(badPods) > 0 {
		// No value to name (a Secret's values are never stored): the slice
		// is the pods the reloader started after the rotation.
		e.Slice = map[string]string{"owner.podTemplateHash": badPods[0].Labels["pod-template-hash"]}
	}
	e.Population = map[string]string{}
	e.CounterexampleDiffersIn = []string{ch.Dimension, "owner/Deployment"}
	if k.trigger == "restart" {
		// The service's own pods started before the change stayed good:
		// they differ in the ReplicaSet that the restart carried the new
		// value with.
		e.CounterexampleDiffersIn = append(e.CounterexampleDiffersIn, "owner.podTemplateHash")
	}
	if k.kind == "secrets" {
		e.Mitigation = []Action{{Action: "rollback", Target: ch.Ref}}
	} else {
		e.Mitigation = []Action{{Action: "rollback", Target: ch.Ref, To: ch.From}}
	}
	e.extra("mode", k.mode)
	e.extra("trigger", k.trigger)
	e.extra("badPods", len(badPods))
}

// story is what on-call saw; msg is what the crashing pods log.
func (k *keyChange) story(msg string) string {
	what := "ConfigMap"
	if k.kind == "secrets" {
		what = "Secret"
	}
	return fmt.Sprintf(`New pods of one service crash-loop in namespace %s; the other services there are healthy.

## What on-call saw
%d services in %s (%s) read their settings from %ss. Since a few minutes ago the new
pods of one of them go into CrashLoopBackOff ("%s"), while its older pods and the
other services keep running. Several people and bots changed things in the last hour.`,
		k.ns, len(k.consumers), k.ns, consumerNames(k.consumers), what, msg)
}

func consumerNames(cs []consumer) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.name)
	}
	return strings.Join(out, ", ")
}
