package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Family env-flag: the actor changes one environment variable a service's
// container is given as a literal (kubectl set env): a feature flag, a
// batch size, a model path. The image, its config and everything else
// stay as they were; the service's new pods exit 1 as the rollout brings
// them up. Shortly before, the same actor changed another variable of a
// neighbour in the same namespace (its log level), whose new pods run
// fine.

func init() {
	register(&Family{Name: "env-flag",
		Summary: "one literal environment variable of a service is changed; its new pods exit 1 as the rollout brings them up",
		Run:     runEnvFlag})
}

// envFlag is a variable whose new value the service cannot run with, and
// what the service says as it exits.
type envFlag struct{ name, from, to, msg string }

var envFlags = []envFlag{
	{"ATTN_IMPL", "flash2", "flash3", "ValueError: unknown attention implementation 'flash3'"},
	{"MAX_BATCH_TOKENS", "8192", "65536", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 12.50 GiB"},
	{"MODEL_PATH", "/models/v5", "/models/v6", "FileNotFoundError: [Errno 2] No such file or directory: '/models/v6/config.json'"},
	{"SHARD_COUNT", "8", "12", "AssertionError: 12 shards do not divide 32 attention heads"},
}

// setEnv sets one environment variable of the Deployment's container, as
// kubectl set env does.
func (c *Cluster) setEnv(ctx context.Context, a Actor, ns, name, key, value string) error {
	return c.patchContainer(ctx, a, ns, name, "env "+key, map[string]any{"env": []map[string]string{{"name": key, "value": value}}})
}

func runEnvFlag(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	fleet, ns, name, neighbour, err := c.serviceFleet(ctx, e)
	if err != nil {
		return "", err
	}
	flag := Pick(c, envFlags)
	env := func(f envFlag) []corev1.EnvVar {
		out := []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "WORKERS", Value: "8"}}
		for _, x := range envFlags {
			v := x.from
			if x.name == f.name {
				v = f.from
			}
			out = append(out, corev1.EnvVar{Name: x.name, Value: v})
		}
		return out
	}
	image := "registry.example/" + name + ":3.1"
	if _, err := c.serviceAndNeighbour(ctx, fleet, ns, name, Template{Image: image, Env: env(flag)},
		neighbour, Template{Image: "registry.example/" + neighbour + ":1.6", Env: env(flag)}); err != nil {
		return "", err
	}
	actor := c.DrawActor()
	decoyAt := Now()
	if err := c.setEnv(ctx, actor, ns, neighbour, "LOG_LEVEL", "debug"); err != nil {
		return "", err
	}
	e.Decoys = []Change{{Ref: "Deployment/" + ns + "/" + neighbour, Dimension: "env/main/LOG_LEVEL", From: "info", To: "debug", At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(5*time.Second, 12*time.Second))
	pods, err := c.Pods(ctx, ns, "app="+name)
	if err != nil {
		return "", err
	}
	lastGood := Now()
	Sleep(ctx, time.Second)
	crash := c.StartCrasher(ctx, ns, "app="+name, podNames(pods), image, "", flag.msg)
	at := Now()
	if err := c.setEnv(ctx, actor, ns, name, flag.name, flag.to); err != nil {
		crash.Stop()
		return "", err
	}
	dim := "env/main/" + flag.name
	e.Changes = []Change{{Ref: "Deployment/" + ns + "/" + name, Dimension: dim, From: flag.from, To: flag.to, At: at, Actor: &actor}}
	if _, err := c.stalledRollout(ctx, e, crash, lastGood, ns, name); err != nil {
		return "", err
	}
	e.Population = map[string]string{"owner/Deployment": name}
	e.CounterexampleDiffersIn = []string{"owner.podTemplateHash", dim}
	e.Mitigation = []Action{{Action: "rollback", Target: "Deployment/" + ns + "/" + name}}
	e.extra("flag", flag.name)
	return fmt.Sprintf(`A service's new pods crash as its rollout brings them up.

## What on-call saw
%s/%s's new pods exit 1 within seconds of starting; its old pods still run, and
the rollout has stalled. Its image did not change. %s/%s, in the same namespace,
rolled fine. Settings were being tuned today.`, ns, name, ns, neighbour), nil
}
