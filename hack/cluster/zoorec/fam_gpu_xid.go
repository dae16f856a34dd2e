package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Family 16: a GPU falls off the bus (NVIDIA Xid 79) under one rank of a
// gang job; the rank's process dies with a CUDA error two seconds later,
// its peers lose the collective and exit with NCCL errors, and the Job
// controller tears the rest down. Every rank fails the same way (Error,
// exit 1): the pods alone cannot tell the first rank's cause from the
// cascade. The node's own kernel log can.
//
// Node logs have no real source on kwok nodes: the recorder writes them in
// the formats nodes write (journald JSON export, dmesg --time-format=iso,
// kubectl logs --timestamps of the job's ranks) at the instants of the
// recording, into nodelogs/NODE/. Beside the Xid: the first rank's and
// the cascade's own job logs (the NCCL errors are consequences), and
// decoys a method that blames any error on a bad unit's node would take:
// an earlier Xid 79 on a node that ran nothing of the job, an Xid 13 (an
// application's fault) beside a pod that stayed good, a link flap on a
// node of the cascade before the first death, corrected ECC errors, and
// the kubelet's and kernel's everyday lines.

func init() {
	register(&Family{Name: "gpu-xid-rank-death", Summary: "a GPU falls off the bus (Xid 79) under one rank of a gang job; NCCL cascade; the job is torn down",
		Run: runGPUXidRankDeath})
}

func runGPUXidRankDeath(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	logs := newNodeLogs(c)
	ns := Pick(c, []string{"ml", "research", "pretrain"})
	name := Pick(c, []string{"llm-pretrain", "moe-train", "diffusion-train", "vision-train"})
	other := Pick(c, []string{"eval", "batch-infer", "data-prep"})
	ranks := min(Pick(c, []int{64, 128, 256}), len(fleet.Nodes)*8-64)
	victim := c.Intn(ranks)
	backoff := c.Between(ranks/8, ranks/3)
	start := Now()
	pods, err := c.startGang(ctx, fleet, ns, name, other, ranks, backoff, "registry.example/trainer:4.")
	if err != nil {
		return "", err
	}
	good, err := c.Running(ctx, ns, "app="+other)
	if err != nil {
		return "", err
	}
	first, peers := rankPod(pods, victim)
	if first.Name == "" {
		return "", fmt.Errorf("rank %d of %s has no running pod", victim, name)
	}
	c.rng.Shuffle(len(peers), func(i, j int) { peers[i], peers[j] = peers[j], peers[i] })
	cascade := peers[:min(len(peers), backoff+c.Between(ranks/8, ranks/4))]
	node := first.Spec.NodeName
	byName := podsByName(pods)
	logs.decoys(start, fleet.Nodes, pods, good, byName[cascade[0]])
	Sleep(ctx, c.Dur(3*time.Second, 8*time.Second))
	lastGood := Now()
	Sleep(ctx, 500*time.Millisecond)
	pci := fmt.Sprintf("0000:%02x:00", Pick(c, []int{0x18, 0x2a, 0x3b, 0x5d, 0x9a, 0xab, 0xba, 0xdb}))
	xidAt := Now()
	logs.xid(node, xidAt, pci, 79, "GPU has fallen off the bus.")
	Sleep(ctx, c.Dur(1500*time.Millisecond, 3*time.Second))
	const cudaLost = "RuntimeError: CUDA error: unspecified launch failure"
	firstBad, err := c.FailPods(ctx, ns, []string{first.Name}, "Error", 1, cudaLost)
	if err != nil {
		return "", err
	}
	logs.job(node, first.Name, firstBad.Add(-200*time.Millisecond), cudaLost)
	Sleep(ctx, c.Dur(2*time.Second, 6*time.Second))
	for _, p := range cascade {
		logs.job(byName[p].Spec.NodeName, p, Now(), "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL version 2.21.5")
	}
	c.cascade(ctx, ns, cascade)
	if err := c.waitJobFailed(ctx, ns, name); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(6*time.Second, 10*time.Second))
	logs.everyday(start, Now())
	if err := logs.write(c.Out); err != nil {
		return "", err
	}

	e.Boundary = &Boundary{LastGood: lastGood, FirstBad: xidAt, Tolerance: "1s"}
	e.Changes = []Change{{Ref: "Node/" + node, Dimension: "node.xid", From: "", To: "79"}}
	e.Slice = map[string]string{"owner/Job": name}
	e.SliceEquivalents = []map[string]string{}
	e.Population = map[string]string{}
	e.CounterexampleDiffersIn = []string{"owner/Job"}
	e.Mitigation = []Action{{Action: "cordon", Target: "Node/" + node}}
	e.extra("firstRank", map[string]any{"pod": "Pod/" + ns + "/" + first.Name, "rank": victim, "reason": "Error",
		"exitCode": 1, "at": firstBad, "node": node})
	e.extra("hostError", map[string]any{"node": node, "reason": "Xid", "code": 79, "at": xidAt, "pci": pci})
	e.extra("ranks", ranks)
	e.extra("cascadeAtLeast", len(cascade)/3+1)
	e.extra("cascadeReason", "NCCL error, remote process exited or there was a network error")
	return fmt.Sprintf(`A %d-rank training job died within seconds; every failed pod says Error.

## What on-call saw
%s/%s (%d ranks) is Failed with BackoffLimitExceeded. Its failed pods all exited with
code 1, most of them with "NCCL error, remote process exited or there was a network
error"; the rest were terminated by the Job controller. %s/%s on the same fleet kept
running. The nodes' logs were collected afterwards (nodelogs/). Which rank started it,
and why?`, ranks, ns, name, ranks, ns, other), nil
}

// podsByName indexes pods by name.
func podsByName(pods []corev1.Pod) map[string]corev1.Pod {
	m := make(map[string]corev1.Pod, len(pods))
	for _, p := range pods {
		m[p.Name] = p
	}
	return m
}
