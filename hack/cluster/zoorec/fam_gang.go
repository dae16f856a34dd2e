package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Family 7: one rank of a gang job dies; its peers lose the collective and
// exit with NCCL errors in waves, and past its backoff limit the Job
// controller fails the job and tears the rest down.

func init() {
	register(&Family{Name: "gang-rank-death", Summary: "one rank of a gang job dies (OOM, CUDA fault, segfault); NCCL cascade; the job is torn down",
		Run: runGangRankDeath})
}

type rankDeath struct {
	reason string
	code   int
	msg    string
}

var rankDeaths = []rankDeath{
	{"OOMKilled", 137, ""},
	{"Error", 1, "CUDA error - an illegal memory access was encountered"},
	{"Error", 139, "Segmentation fault (core dumped) in dataloader worker"},
}

func runGangRankDeath(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	ns := Pick(c, []string{"ml", "research", "pretrain"})
	name := Pick(c, []string{"llm-pretrain", "moe-train", "diffusion-train", "rlhf-ppo"})
	other := Pick(c, []string{"eval", "batch-infer", "data-prep"})
	ranks := Pick(c, []int{64, 128, 256, 384})
	if e.Nodes >= 1000 {
		ranks = 512
	}
	ranks = min(ranks, len(fleet.Nodes)*8-64)
	death := Pick(c, rankDeaths)
	victim := c.Intn(ranks)
	backoff := c.Between(ranks/8, ranks/3)
	pods, err := c.startGang(ctx, fleet, ns, name, other, ranks, backoff, "registry.example/trainer:3.")
	if err != nil {
		return "", err
	}
	first, peers := rankPod(pods, victim)
	if first.Name == "" {
		return "", fmt.Errorf("rank %d of %s has no running pod", victim, name)
	}
	c.rng.Shuffle(len(peers), func(i, j int) { peers[i], peers[j] = peers[j], peers[i] })
	cascade := peers[:min(len(peers), backoff+c.Between(ranks/8, ranks/4))]
	lastGood := Now()
	Sleep(ctx, time.Second)
	firstBad, err := c.FailPods(ctx, ns, []string{first.Name}, death.reason, death.code, death.msg)
	if err != nil {
		return "", err
	}
	lead := c.Dur(2*time.Second, 6*time.Second)
	Sleep(ctx, lead)
	c.cascade(ctx, ns, cascade)
	if err := c.waitJobFailed(ctx, ns, name); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(6*time.Second, 10*time.Second))

	e.Boundary = crashBoundary(lastGood, firstBad)
	e.Changes = []Change{}
	e.Slice = map[string]string{"owner/Job": name}
	e.SliceEquivalents = []map[string]string{}
	e.Population = map[string]string{}
	e.CounterexampleDiffersIn = []string{"owner/Job"}
	if m := death.mitigation(ns, name, victim, first.Spec.NodeName); m != nil {
		e.Mitigation = m
	}
	e.extra("firstRank", map[string]any{"pod": "Pod/" + ns + "/" + first.Name, "rank": victim, "reason": death.reason,
		"exitCode": death.code, "at": firstBad, "node": first.Spec.NodeName})
	e.extra("ranks", ranks)
	e.extra("cascadeAtLeast", len(cascade)/3+1)
	e.extra("cascadeReason", "NCCL error, remote process exited or there was a network error")
	return fmt.Sprintf(`A %d-rank training job died within seconds; hundreds of pods show errors.

## What on-call saw
%s/%s (%d ranks) is Failed with BackoffLimitExceeded. Most of its pods ended with
"NCCL error, remote process exited or there was a network error", the rest were
terminated by the Job controller. %s/%s on the same fleet kept running. Which rank
started it, and why?`, ranks, ns, name, ranks, ns, other), nil
}

// mitigation is what would have worked against the death of rank victim
// of Job ns/name, on node: more memory for an OOM kill, cordoning the node
// for a CUDA error; nil for a segmentation fault.
func (d rankDeath) mitigation(ns, name string, victim int, node string) []Action {
	switch {
	case d.reason == "OOMKilled":
		return []Action{{Action: "set", Target: fmt.Sprintf("Job/%s/%s rank %d memory", ns, name, victim), To: "a higher memory limit, then restart from the last checkpoint"}}
	case d.code == 1:
		return []Action{{Action: "cordon", Target: "Node/" + node}}
	}
	return nil
}

// rankPod returns the pod of rank victim (by completion index) among a
// Job's pods, and the names of the others.
func rankPod(pods []corev1.Pod, victim int) (first corev1.Pod, peers []string) {
	for _, p := range pods {
		if p.Labels["batch.kubernetes.io/job-completion-index"] == strconv.Itoa(victim) {
			first = p
		} else {
			peers = append(peers, p.Name)
		}
	}
	return first, peers
}

// cascade fails the pods in two to four waves, a second or so apart, as
// the ranks waiting on a dead one give up with an NCCL error.
func (c *Cluster) cascade(ctx context.Context, ns string, pods []string) {
	waves := c.Between(2, 4)
	for w := range waves {
		part := pods[w*len(pods)/waves : (w+1)*len(pods)/waves]
		if _, err := c.FailPods(ctx, ns, part, "Error", 1, "NCCL error, remote process exited or there was a network error"); err != nil {
			c.log.Warn("cascade wave", "err", err) // the controller may already be tearing down
		}
		Sleep(ctx, c.Dur(1*time.Second, 3*time.Second))
	}
}

// waitJobFailed waits (90 s at most) for Job ns/name to fail.
func (c *Cluster) waitJobFailed(ctx context.Context, ns, name string) error {
	return until(ctx, 90*time.Second, "job "+name+" failed", func() (bool, error) {
		j, err := c.Admin.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range j.Status.Conditions {
			if cond.Type == batchv1.JobFailed && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// startGang runs the background, a gang Job ns/name of ranks pods (with
// backoff) and a Job other beside it on an image of release (a minor
// version drawn), and routine changes; it returns the gang's running pods.
func (c *Cluster) startGang(ctx context.Context, fleet *Fleet, ns, name, other string, ranks, backoff int, release string) ([]corev1.Pod, error) {
	if err := c.Background(ctx); err != nil {
		return nil, err
	}
	tmpl := Template{Image: release + strconv.Itoa(c.Intn(4)), Container: "trainer", GPU: true}
	if err := c.Job(ctx, routineActor, ns, name, ranks, backoff, tmpl); err != nil {
		return nil, err
	}
	if err := c.Job(ctx, routineActor, ns, other, c.Between(12, 40), 0, tmpl); err != nil {
		return nil, err
	}
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return nil, err
	}
	Sleep(ctx, c.Dur(6*time.Second, 12*time.Second))
	return c.Running(ctx, ns, "app="+name)
}
