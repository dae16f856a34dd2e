package main

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Family job-deadline: two training Jobs run in a namespace, each with a
// day's activeDeadlineSeconds. The actor, meaning to cap a short
// evaluation Job elsewhere, patches the wrong Job's activeDeadlineSeconds
// down to minutes, less than it has already run: the Job controller fails
// the Job (DeadlineExceeded) at once and deletes its running pods. Nothing
// in the pods' template changed; only the Job's own spec did. Just before,
// the same actor raised another namespace's Job's deadline, harmlessly.

func init() {
	register(&Family{Name: "job-deadline",
		Summary: "a running training Job's activeDeadlineSeconds is patched below the time it has run; its controller fails it and deletes its pods",
		Run:     runJobDeadline})
}

func deadline(secs int64) func(*batchv1.Job) {
	return func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = ptr.To(secs) }
}

func runJobDeadline(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	spaces := []string{"research", "training", "llm", "vision"}
	perm := c.rng.Perm(len(spaces))
	ns, other := spaces[perm[0]], spaces[perm[1]]
	name := Pick(c, []string{"pretrain-7b", "sft-run", "rlhf-ppo"})
	sibling := Pick(c, []string{"tokenizer-build", "data-shard"})
	eval := Pick(c, []string{"eval-nightly", "eval-sweep"})
	const day = 86400
	workers := c.Between(8, 24)
	image := "registry.example/" + name + ":" + c.version()
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	for _, j := range []struct {
		ns, name, image string
		n               int
	}{
		{ns, name, image, workers},
		{ns, sibling, "registry.example/" + sibling + ":" + c.version(), c.Between(4, 10)},
		{other, eval, "registry.example/" + eval + ":" + c.version(), c.Between(2, 6)},
	} {
		if err := c.Job(ctx, routineActor, j.ns, j.name, j.n, 0, Template{Image: j.image, Container: j.name}, deadline(day)); err != nil {
			return "", err
		}
	}
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(20*time.Second, 40*time.Second))
	actor := c.DrawActor()
	jobs := func(ns string) interface {
		Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*batchv1.Job, error)
	} {
		return c.As(actor).BatchV1().Jobs(ns)
	}
	decoyAt := Now()
	if _, err := jobs(other).Patch(ctx, eval, types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"activeDeadlineSeconds":%d}}`, 2*day)), metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("patch job %s/%s: %w", other, eval, err)
	}
	e.Decoys = []Change{{Ref: "Job/" + other + "/" + eval, Dimension: "spec.activeDeadlineSeconds", From: fmt.Sprint(day), To: fmt.Sprint(2 * day), At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(4*time.Second, 10*time.Second))
	lastGood := Now()
	Sleep(ctx, time.Second)
	limit := int64(c.Between(5, 15))
	at := Now()
	if _, err := jobs(ns).Patch(ctx, name, types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"activeDeadlineSeconds":%d}}`, limit)), metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("patch job %s/%s: %w", ns, name, err)
	}
	e.Changes = []Change{{Ref: "Job/" + ns + "/" + name, Dimension: "spec.activeDeadlineSeconds", From: fmt.Sprint(day), To: fmt.Sprint(limit), At: at, Actor: &actor}}
	var failedAt time.Time
	if err := until(ctx, time.Minute, "the job failing", func() (bool, error) {
		j, err := c.Admin.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range j.Status.Conditions {
			if cond.Type == batchv1.JobFailed && cond.Status == "True" {
				failedAt = cond.LastTransitionTime.Time
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(20*time.Second, 30*time.Second))
	e.Boundary = &Boundary{LastGood: lastGood, FirstBad: failedAt, Tolerance: "2s"}
	e.Slice = map[string]string{"owner/Job": name}
	e.SliceEquivalents = []map[string]string{{"image.tag/" + name: image}}
	e.Population = map[string]string{"namespace": ns}
	e.CounterexampleDiffersIn = []string{"owner/Job"}
	e.Mitigation = []Action{{Action: "rollback", Target: "Job/" + ns + "/" + name}}
	return fmt.Sprintf(`A training Job died mid-run with every pod deleted.

## What on-call saw
%s/%s (%d workers) had been training for a while; it is now Failed and its pods are
gone. No pod logged an error. %s/%s, in the same namespace, is still running.
Someone was tidying up Job limits today.`, ns, name, workers, ns, sibling), nil
}
