package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Family init-break: a service's pods run a schema migration in an init
// container before the server starts. The actor bumps the migration's
// image alone (kubectl set image deployment/NAME migrate=...); the new
// migration fails at every start, so the new pods never get past their
// init container (Init:CrashLoopBackOff) and the rollout stalls, the old
// pods still serving. The server's image is unchanged. Shortly before, the
// same actor bumped the server image of a neighbour in the same
// namespace, which rolls fine.

func init() {
	register(&Family{Name: "init-break",
		Summary: "a service's init container (its migration) is bumped to an image that fails; its new pods never start",
		Run:     runInitBreak})
}

// initCrash reports the pods as a kubelet reports a pod whose init
// container exits 1 at every start: Pending, not initialized, the init
// container terminated with its message (between two back-offs), the
// main container waiting, and a BackOff event. (A terminated state, not
// the waiting CrashLoopBackOff between restarts, so that kwok does not
// run the init container again.) It returns when it reported the first.
func (c *Cluster) initCrash(ctx context.Context, ns string, pods []corev1.Pod, image, msg string) (time.Time, error) {
	var first time.Time
	for _, p := range pods {
		t := Now()
		if first.IsZero() {
			first = t
		}
		ts := metav1.NewTime(t)
		term := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: msg, StartedAt: ts, FinishedAt: ts}}
		name := p.Spec.InitContainers[0].Name
		patch := map[string]any{"status": map[string]any{
			"phase": "Pending",
			"conditions": []map[string]any{
				{"type": "Initialized", "status": "False", "reason": "ContainersNotInitialized", "message": "containers with incomplete status: [" + name + "]", "lastTransitionTime": t.Format(time.RFC3339)},
				{"type": "Ready", "status": "False", "reason": "ContainersNotReady", "lastTransitionTime": t.Format(time.RFC3339)},
				{"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady", "lastTransitionTime": t.Format(time.RFC3339)}},
			"initContainerStatuses": []corev1.ContainerStatus{{Name: name, Image: image, RestartCount: 3, State: term, LastTerminationState: term}},
			"containerStatuses": []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name, Image: p.Spec.Containers[0].Image,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}}}
		b, _ := json.Marshal(patch)
		if _, err := c.Kwok.CoreV1().Pods(ns).Patch(ctx, p.Name, types.StrategicMergePatchType, b, metav1.PatchOptions{}, "status"); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return first, fmt.Errorf("init-crash %s/%s: %w", ns, p.Name, err)
		}
		c.Event(ctx, &p, "Warning", "BackOff", "Back-off restarting failed container "+name+" in pod "+p.Name, t)
	}
	return first, nil
}

func runInitBreak(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	fleet, ns, name, neighbour, err := c.serviceFleet(ctx, e)
	if err != nil {
		return "", err
	}
	migrate := func(app, tag string) *corev1.Container {
		return &corev1.Container{Name: "migrate", Image: "registry.example/" + app + "-migrate:" + tag}
	}
	from, to := "1.4", Pick(c, []string{"1.5", "2.0"})
	msg := Pick(c, []string{
		"alembic.util.exc.CommandError: Can't locate revision identified by 'c41f2a9e07b3'",
		"ERROR: relation \"feature_versions\" already exists",
		"migrate: dirty database version 42. Fix and force version.",
	})
	if _, err := c.serviceAndNeighbour(ctx, fleet, ns, name, Template{Image: "registry.example/" + name + ":3.3", Init: migrate(name, from)},
		neighbour, Template{Image: "registry.example/" + neighbour + ":2.1", Init: migrate(neighbour, "0.9")}); err != nil {
		return "", err
	}
	actor := c.DrawActor()
	decoyAt := Now()
	if err := c.patchContainer(ctx, actor, ns, neighbour, "image", map[string]any{"image": "registry.example/" + neighbour + ":2.2"}); err != nil {
		return "", err
	}
	e.Decoys = []Change{{Ref: "Deployment/" + ns + "/" + neighbour, Dimension: "image.tag/main", From: "registry.example/" + neighbour + ":2.1",
		To: "registry.example/" + neighbour + ":2.2", At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(5*time.Second, 12*time.Second))
	pods, err := c.Pods(ctx, ns, "app="+name)
	if err != nil {
		return "", err
	}
	lastGood := Now()
	Sleep(ctx, time.Second)
	newImage := migrate(name, to).Image
	crash := c.startCrasher(ctx, ns, "app="+name, podNames(pods), nil, func(ctx context.Context, pods []corev1.Pod) (time.Time, error) {
		return c.initCrash(ctx, ns, pods, newImage, msg)
	})
	at := Now()
	patch := map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"initContainers": []map[string]any{{"name": "migrate", "image": newImage}}}}}}
	b, err := json.Marshal(patch)
	if err != nil {
		crash.Stop()
		return "", err
	}
	if _, err := c.As(actor).AppsV1().Deployments(ns).Patch(ctx, name, types.StrategicMergePatchType, b, metav1.PatchOptions{}); err != nil {
		crash.Stop()
		return "", fmt.Errorf("set image of %s/%s: %w", ns, name, err)
	}
	e.Changes = []Change{{Ref: "Deployment/" + ns + "/" + name, Dimension: "initImage.tag/migrate", From: migrate(name, from).Image, To: newImage, At: at, Actor: &actor}}
	if _, err := c.stalledRollout(ctx, e, crash, lastGood, ns, name); err != nil {
		return "", err
	}
	e.Population = map[string]string{"owner/Deployment": name}
	e.CounterexampleDiffersIn = []string{"owner.podTemplateHash", "initImage.tag/migrate"}
	e.Mitigation = []Action{{Action: "rollback", Target: "Deployment/" + ns + "/" + name}}
	return fmt.Sprintf(`A service's new pods never start as its rollout brings them up.

## What on-call saw
%s/%s's new pods stay in Init and restart; its old pods still serve, and the
rollout has stalled. Its server image did not change. %s/%s, in the same
namespace, rolled a new image fine.`, ns, name, ns, neighbour), nil
}
