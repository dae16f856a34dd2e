package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Family probe-break: the actor points a service's readiness probe at a
// path its image does not serve (the path of the next release); its new
// pods run but never turn ready (Unhealthy: 404), and the rollout stalls
// with the old pods still serving. Nothing crashes. Shortly before, the
// same actor changed the probe period of a neighbour in the same
// namespace, whose new pods turn ready.

func init() {
	register(&Family{Name: "probe-break",
		Summary: "a service's readiness probe is pointed at a path its image does not serve; its new pods never turn ready",
		Run:     runProbeBreak})
}

func readiness(path string, period int32) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(8080)}},
		PeriodSeconds: period, FailureThreshold: 3}
}

// setProbe sets the Deployment's container readiness probe as the actor.
func (c *Cluster) setProbe(ctx context.Context, a Actor, ns, name string, p *corev1.Probe) error {
	return c.patchContainer(ctx, a, ns, name, "readiness probe", map[string]any{"readinessProbe": p})
}

// unready reports the pods as a kubelet reports a running container whose
// readiness probe fails: running, not ready, and Unhealthy events.
func (c *Cluster) unready(ctx context.Context, ns string, pods []corev1.Pod, image, msg string) (time.Time, error) {
	return c.notReady(ctx, ns, pods, "unready", func(p corev1.Pod, name string, t time.Time) (corev1.ContainerStatus, string, string) {
		started := true
		return corev1.ContainerStatus{Name: name, Image: image, Started: &started,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t)}}},
			"Unhealthy", msg
	})
}

func runProbeBreak(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	ns := Pick(c, []string{"serve", "search", "payments"})
	apps := []string{"checkout", "gateway", "catalog", "profile"}
	perm := c.rng.Perm(len(apps))
	name, neighbour := apps[perm[0]], apps[perm[1]]
	to := Pick(c, []string{"/readyz", "/v2/health", "/health/ready"})
	image := "registry.example/" + name + ":1.8"
	if _, err := c.serviceAndNeighbour(ctx, fleet, ns, name, Template{Image: image, Readiness: readiness("/healthz", 10)},
		neighbour, Template{Image: "registry.example/" + neighbour + ":3.0", Readiness: readiness("/healthz", 10)}); err != nil {
		return "", err
	}
	actor := c.DrawActor()
	decoyAt := Now()
	if err := c.setProbe(ctx, actor, ns, neighbour, readiness("/healthz", 5)); err != nil {
		return "", err
	}
	e.Decoys = []Change{{Ref: "Deployment/" + ns + "/" + neighbour, Dimension: "probes/main/readiness", At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(5*time.Second, 12*time.Second))
	pods, err := c.Pods(ctx, ns, "app="+name)
	if err != nil {
		return "", err
	}
	lastGood := Now()
	Sleep(ctx, time.Second)
	msg := "Readiness probe failed: HTTP probe failed with statuscode: 404"
	crash := c.startCrasher(ctx, ns, "app="+name, podNames(pods), nil, func(ctx context.Context, pods []corev1.Pod) (time.Time, error) {
		return c.unready(ctx, ns, pods, image, msg)
	})
	at := Now()
	if err := c.setProbe(ctx, actor, ns, name, readiness(to, 10)); err != nil {
		crash.Stop()
		return "", err
	}
	e.Changes = []Change{{Ref: "Deployment/" + ns + "/" + name, Dimension: "probes/main/readiness", At: at, Actor: &actor}}
	if _, err := c.stalledRollout(ctx, e, crash, lastGood, ns, name); err != nil {
		return "", err
	}
	e.Population = map[string]string{"owner/Deployment": name}
	e.CounterexampleDiffersIn = []string{"owner.podTemplateHash", "probes/main/readiness"}
	e.Mitigation = []Action{{Action: "rollback", Target: "Deployment/" + ns + "/" + name}}
	e.extra("path", to)
	return fmt.Sprintf(`A service's rollout has stalled.

## What on-call saw
%s/%s's new pods are Running but never Ready; its old pods still serve. Nothing
crashes. %s/%s, in the same namespace, rolled out fine a minute earlier.`, ns, name, ns, neighbour), nil
}
