package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// routineActor makes the routine changes every cluster sees (never the
// cause of anything).
var routineActor = Actor{User: "platform-automation", UserAgent: "platform-operator/1.9.0 (linux/amd64) client-go/v0.37.2"}

// Background lays out what every incident sits in: a healthy service, an
// unused dashboard ConfigMap, and a lone unrelated pod failure well before
// the incident (a lone failure must never become the boundary). It returns
// when the failure has happened.
func (c *Cluster) Background(ctx context.Context) error {
	if err := c.Namespace(ctx, "ops"); err != nil {
		return err
	}
	if err := c.ConfigMap(ctx, "ops", "dashboards", map[string]string{"home": "v1", "alerts": "v7"}); err != nil {
		return err
	}
	replicas := c.Between(3, 8)
	if err := c.Deployment(ctx, routineActor, "web", "frontend", replicas, Template{Image: "registry.example/frontend:4.2"}); err != nil {
		return err
	}
	name := Pick(c, []string{"log-rotate", "backup-sync", "metrics-compact"})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ops", Labels: map[string]string{"app": name}},
		Spec:       Template{Image: "registry.example/ops-tools:0.9"}.spec(corev1.RestartPolicyNever),
	}
	if _, err := c.Admin.CoreV1().Pods("ops").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("noise pod: %w", err)
	}
	if err := c.WaitRunning(ctx, "ops", "app="+name, 1, time.Minute); err != nil {
		return err
	}
	msg := Pick(c, []string{"upload failed, connection reset by peer", "disk quota exceeded", "context deadline exceeded"})
	if _, err := c.FailPods(ctx, "ops", []string{name}, "Error", 1, msg); err != nil {
		return err
	}
	c.log.Info("noise: a lone failure", "pod", "ops/"+name)
	return nil
}

// Routine makes n routine changes that harm nothing: a dashboard edit, a
// healthy service scaled, a maintenance label on a few nodes.
func (c *Cluster) Routine(ctx context.Context, f *Fleet, n int) error {
	for i := range n {
		switch c.Intn(3) {
		case 0:
			patch := map[string]any{"data": map[string]string{"home": fmt.Sprintf("v%d", 2+i+c.Intn(50))}}
			if err := c.PatchAs(ctx, routineActor, "configmaps", "ops", "dashboards", patch); err != nil {
				return err
			}
		case 1:
			if err := c.Scale(ctx, routineActor, "web", "frontend", c.Between(3, 9)); err != nil {
				return err
			}
		default:
			var nodes []string
			for range 3 {
				nodes = append(nodes, Pick(c, f.Nodes).Name)
			}
			if err := c.LabelNodes(ctx, routineActor, nodes, "maintenance-window", Pick(c, []string{"sun-02", "sat-04", "wed-23"})); err != nil {
				return err
			}
		}
		Sleep(ctx, c.Dur(2*time.Second, 6*time.Second))
	}
	return nil
}
