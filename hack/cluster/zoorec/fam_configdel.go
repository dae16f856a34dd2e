package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Family config-deleted: a cleanup job deletes ConfigMaps it believes
// unused. The first it deletes is truly unused (an old version of a
// service's config); the second is still read by a running service.
// Nothing happens until the namespace's nightly restart: that service's new
// pods cannot start (CreateContainerConfigError when the ConfigMap is read
// through envFrom, FailedMount when it is mounted), while the other
// services restarted beside it are fine.

func init() {
	register(&Family{Name: "config-deleted",
		Summary: "a ConfigMap a service still reads is deleted by a cleanup; the service's next pods cannot start",
		Run:     runConfigDeleted})
}

// configMissing reports the pods as a kubelet reports a container whose
// ConfigMap is gone: through envFrom the container cannot be made
// (CreateContainerConfigError); through a volume the pod's volume cannot
// be mounted and the container stays in ContainerCreating.
func (c *Cluster) configMissing(ctx context.Context, ns string, pods []corev1.Pod, image, cm, mode string) (time.Time, error) {
	return c.notReady(ctx, ns, pods, "config-missing", func(p corev1.Pod, name string, t time.Time) (corev1.ContainerStatus, string, string) {
		if mode == "volume" {
			return corev1.ContainerStatus{Name: name, Image: image,
					State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}},
				"FailedMount", fmt.Sprintf(`MountVolume.SetUp failed for volume "config" : configmap %q not found`, cm)
		}
		return corev1.ContainerStatus{Name: name, Image: image,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: fmt.Sprintf("configmap %q not found", cm)}}},
			"Failed", fmt.Sprintf("Error: configmap %q not found", cm)
	})
}

func runConfigDeleted(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	if _, err := c.Nodes(ctx, e.Nodes); err != nil {
		return "", err
	}
	ns := Pick(c, teamNamespaces)
	mode := Pick(c, []string{"envFrom", "volume"})
	perm := c.rng.Perm(len(serviceNames))
	n := c.Between(2, 4)
	services := make([]string, n)
	for i := range services {
		services[i] = serviceNames[perm[i]]
	}
	victim := services[c.Intn(n)]
	image := "registry.example/server:4.2"
	template := func(name string) Template {
		t := Template{Image: image}
		cm := corev1.LocalObjectReference{Name: name + "-config"}
		if mode == "envFrom" {
			t.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cm}}}
		} else {
			t.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cm}}}}
			t.Mounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/" + name}}
		}
		return t
	}
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := c.Namespace(ctx, ns); err != nil {
		return "", err
	}
	for _, s := range services {
		if err := c.ConfigMap(ctx, ns, s+"-config", map[string]string{"SERVICE": s, "WORKERS": "8", "LOG_LEVEL": "info"}); err != nil {
			return "", err
		}
	}
	// The old version of the victim's config, which nothing reads any more.
	old := victim + "-config-v1"
	if err := c.ConfigMap(ctx, ns, old, map[string]string{"SERVICE": victim, "WORKERS": "4"}); err != nil {
		return "", err
	}
	for _, s := range services {
		if err := c.Deployment(ctx, routineActor, ns, s, c.Between(6, 14), template(s)); err != nil {
			return "", err
		}
	}
	Sleep(ctx, c.Dur(6*time.Second, 12*time.Second))
	actor := c.DrawActor()
	del := func(name string) (Change, error) {
		at := Now()
		if err := c.As(actor).CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return Change{}, fmt.Errorf("delete configmap %s/%s: %w", ns, name, err)
		}
		return Change{Ref: "ConfigMap/" + ns + "/" + name, Dimension: "deleted", At: at, Actor: &actor}, nil
	}
	decoy, err := del(old)
	if err != nil {
		return "", err
	}
	e.Decoys = []Change{decoy}
	Sleep(ctx, c.Dur(2*time.Second, 6*time.Second))
	ch, err := del(victim + "-config")
	if err != nil {
		return "", err
	}
	e.Changes = []Change{ch}
	// Nothing runs differently until the pods restart.
	Sleep(ctx, c.Dur(10*time.Second, 20*time.Second))
	before, err := c.Pods(ctx, ns, "app="+victim)
	if err != nil {
		return "", err
	}
	lastGood := Now()
	Sleep(ctx, time.Second)
	cm := victim + "-config"
	crash := c.startCrasher(ctx, ns, "app="+victim, podNames(before), nil, func(ctx context.Context, pods []corev1.Pod) (time.Time, error) {
		return c.configMissing(ctx, ns, pods, image, cm, mode)
	})
	for _, s := range services {
		if err := c.RolloutRestart(ctx, routineActor, ns, s); err != nil {
			crash.Stop()
			return "", err
		}
	}
	if _, err := c.stalledRollout(ctx, e, crash, lastGood, ns, victim); err != nil {
		return "", err
	}
	e.Population = map[string]string{"namespace": ns}
	e.CounterexampleDiffersIn = []string{"owner.podTemplateHash", "owner/Deployment"}
	e.Mitigation = []Action{{Action: "rollback", Target: ch.Ref}}
	e.extra("mode", mode)
	e.extra("services", len(services))
	return fmt.Sprintf(`After the nightly restart, one service in %s cannot start its pods.

## What on-call saw
%s/%s's new pods never start; its old pods still run, and the rollout has stalled.
The other services of %s were restarted at the same moment and are fine. A cleanup
of unused objects ran this evening.`, ns, ns, victim, ns), nil
}
