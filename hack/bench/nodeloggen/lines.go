package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"strconv"
)

// A source of journal entries: who writes them, how often, and the fields
// journald adds to each of its entries.
type source struct {
	weight int    // share of the journal's entries, in %
	fields string // the entry's fields after _HOSTNAME, each followed by a comma
	noise  func(g *gen) string
	hits   func(g *gen) string
}

var sources = []source{
	{55, `"PRIORITY":"6","SYSLOG_FACILITY":"3","_TRANSPORT":"stdout","SYSLOG_IDENTIFIER":"kubelet","_PID":"2345","_UID":"0","_GID":"0","_COMM":"kubelet","_EXE":"/usr/bin/kubelet","_CMDLINE":"/usr/bin/kubelet --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf --config=/var/lib/kubelet/config.yaml --container-runtime-endpoint=unix:///run/containerd/containerd.sock --node-labels=pool=h100-a --eviction-hard=memory.available<500Mi","_CAP_EFFECTIVE":"1ffffffffff","_SYSTEMD_CGROUP":"/system.slice/kubelet.service","_SYSTEMD_UNIT":"kubelet.service","_SYSTEMD_SLICE":"system.slice","_SYSTEMD_INVOCATION_ID":"5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b","_STREAM_ID":"a1b2c3d4e5f60718293a4b5c6d7e8f90",`,
		kubeletNoise, kubeletHit},
	{15, `"PRIORITY":"6","SYSLOG_FACILITY":"3","_TRANSPORT":"stdout","SYSLOG_IDENTIFIER":"containerd","_PID":"1234","_UID":"0","_GID":"0","_COMM":"containerd","_EXE":"/usr/bin/containerd","_CMDLINE":"/usr/bin/containerd","_SYSTEMD_CGROUP":"/system.slice/containerd.service","_SYSTEMD_UNIT":"containerd.service","_SYSTEMD_SLICE":"system.slice","_STREAM_ID":"0b1c2d3e4f5a69788796a5b4c3d2e1f0",`,
		containerdNoise, nil},
	{20, `"PRIORITY":"4","SYSLOG_FACILITY":"0","_TRANSPORT":"kernel","SYSLOG_IDENTIFIER":"kernel",`,
		kernelNoise, kernelHit},
	{10, `"PRIORITY":"6","SYSLOG_FACILITY":"3","_TRANSPORT":"stdout","SYSLOG_IDENTIFIER":"torchrun","_PID":"4242","_UID":"1000","_GID":"1000","_COMM":"python3","_EXE":"/usr/bin/python3.11","_CMDLINE":"/usr/bin/python3 /usr/local/bin/torchrun --nnodes 8 --nproc-per-node 8 train.py --config llm-70b.yaml","_SYSTEMD_CGROUP":"/system.slice/train-job.service","_SYSTEMD_UNIT":"train-job.service","_SYSTEMD_SLICE":"system.slice","_STREAM_ID":"c0d1e2f3a4b5968778695a4b3c2d1e0f",`,
		jobNoise, jobHit},
}

// journalLine writes one entry of journalctl -o json.
func (g *gen) journalLine(w *bufio.Writer, hit bool) {
	k := g.r.IntN(100)
	s := sources[len(sources)-1]
	for _, c := range sources {
		if k < c.weight {
			s = c
			break
		}
		k -= c.weight
	}
	if hit && s.hits == nil { // containerd logs nothing faultline keeps
		s = sources[0]
	}
	msg := s.noise
	if hit {
		msg = s.hits
	}
	us := g.at.UnixMicro()
	mono := g.at.Sub(g.boot).Microseconds()
	b := g.buf[:0]
	b = append(b, `{"__CURSOR":"s=9f1c2d3e4b5a69788a9b0c1d2e3f4a5b;i=`...)
	g.seq++
	b = strconv.AppendUint(b, 0x3f1a00+g.seq, 16)
	b = append(b, `;b=4d2e7c1b9a0f4e8d8c7b6a5f4e3d2c1b;m=`...)
	b = strconv.AppendInt(b, mono, 16)
	b = append(b, `;t=`...)
	b = strconv.AppendInt(b, us, 16)
	b = append(b, `;x=77a1b2c3d4e5f607","__REALTIME_TIMESTAMP":"`...)
	b = strconv.AppendInt(b, us, 10)
	b = append(b, `","__MONOTONIC_TIMESTAMP":"`...)
	b = strconv.AppendInt(b, mono, 10)
	b = append(b, `","_BOOT_ID":"4d2e7c1b9a0f4e8d8c7b6a5f4e3d2c1b","_MACHINE_ID":"0a1b2c3d4e5f60718293a4b5c6d7e8f9","_HOSTNAME":"`...)
	b = append(b, g.o.node...)
	b = append(b, `",`...)
	b = append(b, s.fields...)
	b = append(b, `"MESSAGE":`...)
	b = appendJSONString(b, msg(g))
	b = append(b, "}\n"...)
	w.Write(b)
	g.buf = b
}

// dmesgLine writes one line of dmesg --time-format=iso.
func (g *gen) dmesgLine(w *bufio.Writer, hit bool) {
	b := g.at.AppendFormat(g.buf[:0], "2006-01-02T15:04:05,000000-07:00")
	b = append(b, ' ')
	if hit {
		b = append(b, kernelHit(g)...)
	} else {
		b = append(b, kernelNoise(g)...)
	}
	b = append(b, '\n')
	w.Write(b)
	g.buf = b
}

// appendJSONString quotes s as journalctl does: quote, backslash and
// control characters escaped, everything else as it is.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, fmt.Sprintf(`\u%04x`, c)...)
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// oneOf picks a template by its weight.
func oneOf[T any](r *rand.Rand, choices []weighted[T]) T {
	total := 0
	for _, c := range choices {
		total += c.w
	}
	k := r.IntN(total)
	for _, c := range choices {
		if k < c.w {
			return c.v
		}
		k -= c.w
	}
	return choices[len(choices)-1].v
}

type weighted[T any] struct {
	w int
	v T
}

// Fields that vary from line to line.
func (g *gen) pid() int    { return 1000 + g.r.IntN(60000) }
func (g *gen) pod() string { return fmt.Sprintf("%s/%s-%d", g.ns(), g.job(), g.r.IntN(64)) }
func (g *gen) ns() string {
	return [...]string{"llm-pretrain", "vision-train", "kube-system", "monitoring"}[g.r.IntN(4)]
}
func (g *gen) job() string  { return [...]string{"train", "worker", "loader", "eval"}[g.r.IntN(4)] }
func (g *gen) veth() string { return fmt.Sprintf("veth%08x", g.r.Uint32()) }
func (g *gen) gpuBus() string {
	return fmt.Sprintf("%02x:00", [...]int{0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb}[g.r.IntN(8)])
}
func (g *gen) klog(level byte, file string) string {
	return fmt.Sprintf("%c%s %7d %s] ", level, g.at.Format("0102 15:04:05.000000"), 2345, file)
}
func (g *gen) uid() string {
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", g.r.Uint32(), g.r.IntN(1<<16), g.r.IntN(1<<12), 0x8000|g.r.IntN(1<<14), g.r.Uint64()&(1<<48-1))
}

// The lines nodes write all day, that faultline counts and drops.

func kernelNoise(g *gen) string {
	return oneOf(g.r, []weighted[func() string]{
		{20, func() string {
			return fmt.Sprintf("cni0: port %d(%s) entered %s state", 1+g.r.IntN(60), g.veth(), [...]string{"blocking", "forwarding", "disabled"}[g.r.IntN(3)])
		}},
		{12, func() string { return fmt.Sprintf("device %s entered promiscuous mode", g.veth()) }},
		{8, func() string { return fmt.Sprintf("IPv6: ADDRCONF(NETDEV_CHANGE): %s: link becomes ready", g.veth()) }},
		{10, func() string {
			return fmt.Sprintf("IPv4: martian source 10.%d.%d.%d from 10.%d.%d.%d, on dev eth0", g.r.IntN(8), g.r.IntN(256), g.r.IntN(256), g.r.IntN(8), g.r.IntN(256), g.r.IntN(256))
		}},
		{15, func() string {
			return fmt.Sprintf(`audit: type=1400 audit(%d.%03d:%d): apparmor="DENIED" operation="open" class="file" profile="cri-containerd.apparmor.d" name="/proc/sys/kernel/random/boot_id" pid=%d comm="python" requested_mask="r" denied_mask="r" fsuid=0 ouid=0`,
				g.at.Unix(), g.at.Nanosecond()/1e6, g.r.IntN(1e6), g.pid())
		}},
		{10, func() string {
			return fmt.Sprintf("overlayfs: fs on '/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/%d/fs' does not support file handles, falling back to xino=off.", g.r.IntN(100000))
		}},
		{5, func() string { return fmt.Sprintf("NVRM: GPU at PCI:0000:%s: GPU-%s", g.gpuBus(), g.uid()) }},
		{5, func() string {
			return fmt.Sprintf("EXT4-fs (nvme%dn1p1): mounted filesystem with ordered data mode. Quota mode: none.", g.r.IntN(4))
		}},
		{5, func() string { return fmt.Sprintf("eth0: renamed from tmp%x", g.r.Uint32()) }},
		{5, func() string {
			return fmt.Sprintf("TCP: request_sock_TCPv6: Possible SYN flooding on port [::]:%d. Sending cookies.", 10250+g.r.IntN(3))
		}},
		{3, func() string { return "nvidia-nvlink: Nvlink Core is being initialized, major device number 511" }},
		{2, func() string {
			return fmt.Sprintf("ata%d: SATA link up 6.0 Gbps (SStatus 133 SControl 300)", 1+g.r.IntN(4))
		}},
	})()
}

func kubeletNoise(g *gen) string {
	return oneOf(g.r, []weighted[func() string]{
		{30, func() string {
			return g.klog('I', "kubelet.go:2500") + fmt.Sprintf(`"SyncLoop (probe)" probe="readiness" status="ready" pod=%q`, g.pod())
		}},
		{15, func() string {
			return g.klog('I', "prober.go:107") + fmt.Sprintf(`"Probe failed" probeType="Readiness" pod=%q podUID=%q containerName="web" probeResult="failure" output="HTTP probe failed with statuscode: 503"`, g.pod(), g.uid())
		}},
		{20, func() string {
			return g.klog('I', "reconciler_common.go:258") + fmt.Sprintf(`"operationExecutor.VerifyControllerAttachedVolume started for volume \"kube-api-access-%05x\" (UniqueName: \"kubernetes.io/projected/%s-kube-api-access\") pod=%q`, g.r.IntN(1<<20), g.uid(), g.pod())
		}},
		{10, func() string {
			p := g.pod()
			return g.klog('E', "pod_workers.go:1301") + fmt.Sprintf(`"Error syncing pod, skipping" err="failed to \"StartContainer\" for \"loader\" with CrashLoopBackOff: \"back-off 5m0s restarting failed container=loader pod=%s\"" pod=%q`, p, p)
		}},
		{15, func() string {
			return g.klog('I', "kubelet.go:2465") + fmt.Sprintf(`"SyncLoop (PLEG): event for pod" pod=%q event={"ID":%q,"Type":"ContainerStarted","Data":"%016x"}`, g.pod(), g.uid(), g.r.Uint64())
		}},
		{8, func() string {
			return g.klog('I', "kubelet.go:2421") + fmt.Sprintf(`"SyncLoop UPDATE" source="api" pods=[%q]`, g.pod())
		}},
		{2, func() string {
			return g.klog('I', "eviction_manager.go:379") + `"Eviction manager: no resources are starved"`
		}},
	})()
}

func containerdNoise(g *gen) string {
	ts := g.at.Format("2006-01-02T15:04:05.000000000Z07:00")
	id := fmt.Sprintf("%016x%016x", g.r.Uint64(), g.r.Uint64())
	return oneOf(g.r, []weighted[func() string]{
		{40, func() string {
			return fmt.Sprintf(`time=%q level=info msg="StartContainer for \"%s\" returns successfully"`, ts, id)
		}},
		{30, func() string {
			return fmt.Sprintf(`time=%q level=info msg="shim disconnected" id=%s namespace=k8s.io`, ts, id)
		}},
		{20, func() string {
			return fmt.Sprintf(`time=%q level=info msg="RunPodSandbox for &PodSandboxMetadata{Name:%s-%d,Uid:%s,Namespace:%s,Attempt:0,} returns sandbox id \"%s\""`, ts, g.job(), g.r.IntN(64), g.uid(), g.ns(), id)
		}},
		{10, func() string {
			return fmt.Sprintf(`time=%q level=info msg="ImageUpdate event name:\"nvcr.io/nvidia/pytorch:24.0%d-py3\""`, ts, 1+g.r.IntN(9))
		}},
	})()
}

func jobNoise(g *gen) string {
	rank := g.r.IntN(64)
	return oneOf(g.r, []weighted[func() string]{
		{50, func() string {
			return fmt.Sprintf("[rank%d]: step %d | loss %.4f | lr 3.0e-04 | grad_norm %.3f | tokens/s %d | mfu %.1f%%", rank, g.r.IntN(100000), 1+g.r.Float64()*2, g.r.Float64(), 100000+g.r.IntN(50000), 35+g.r.Float64()*10)
		}},
		{30, func() string {
			return fmt.Sprintf("%s:%d:%d [%d] NCCL INFO Channel %02d/32 :    0   1   2   3   4   5   6   7", g.o.node, 4242, 4300+g.r.IntN(64), g.r.IntN(8), g.r.IntN(32))
		}},
		{10, func() string {
			return fmt.Sprintf("%s:%d:%d [%d] NCCL INFO comm 0x%x rank %d nRanks 64 nNodes 8 localRanks 8 localRank %d MNNVL 0", g.o.node, 4242, 4300+g.r.IntN(64), rank%8, g.r.Uint32(), rank, rank%8)
		}},
		{10, func() string {
			return fmt.Sprintf("[rank%d]: Saving checkpoint to /ckpt/step-%d ...", rank, g.r.IntN(100000))
		}},
	})()
}

// The lines faultline keeps.

// xidText is the rest of an Xid line after its code, by code.
var xidText = map[int]string{
	13:  "Graphics SM Warp Exception on (GPC 1, TPC 2, SM 0): Out Of Range Address",
	31:  "Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f_12340000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
	43:  "Ch 00000010",
	45:  "Ch 00000010",
	48:  "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.",
	61:  "0000(0000) 00000000 00000000",
	62:  "0000(0000) 00000000 00000000",
	63:  "Row Remapper: New row marked for remapping, reset gpu to activate.",
	64:  "Row Remapper: Failure to mark row for remapping",
	74:  "NVLink: fatal error detected on link 6(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)",
	79:  "GPU has fallen off the bus.",
	92:  "High single-bit ECC error rate",
	94:  "Contained: SM (0x1). RST: No, D-RST: No",
	95:  "Uncontained: FBHUB. RST: Yes, D-RST: No",
	119: "Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).",
	120: "GSP task timeout @ pc:0x48a7c6, task: 1",
}

var xidCodes = []weighted[int]{
	{10, 13}, {12, 31}, {8, 43}, {8, 45}, {3, 48}, {2, 61}, {2, 62}, {5, 63}, {1, 64},
	{6, 74}, {8, 79}, {4, 92}, {3, 94}, {2, 95}, {3, 119}, {2, 120},
}

func kernelHit(g *gen) string {
	return oneOf(g.r, []weighted[func() string]{
		{25, func() string {
			code := oneOf(g.r, xidCodes)
			who := fmt.Sprintf("pid=%d, name=python, ", g.pid())
			if code == 48 || code == 74 || code == 79 || code >= 92 || g.r.IntN(4) == 0 {
				who = "pid='<unknown>', name=<unknown>, "
			}
			return fmt.Sprintf("NVRM: Xid (PCI:0000:%s): %d, %s%s", g.gpuBus(), code, who, xidText[code])
		}},
		{6, func() string {
			return fmt.Sprintf("nvidia-nvswitch%d: SXid (PCI:0000:%02x:00.0): 12028, Non-fatal, Link %d egress non-posted PRIV error (First)", g.r.IntN(4), 5+g.r.IntN(4), g.r.IntN(64))
		}},
		{3, func() string {
			return fmt.Sprintf("NVRM: GPU 0000:%s.0: NVLink link %d disabled due to error", g.gpuBus(), g.r.IntN(18))
		}},
		{8, func() string {
			return fmt.Sprintf("EDAC MC%d: 1 CE memory read error on CPU_SrcID#%d_MC#0_Chan#1_DIMM#0 (channel:1 slot:0 page:0x%x offset:0x640 grain:32 syndrome:0x0 - err_code:0x0000:0x009f socket:0 imc:0 rank:0 bg:1 ba:2 row:0x1c3a col:0x1c8)", g.r.IntN(2), g.r.IntN(2), g.r.IntN(1<<20))
		}},
		{2, func() string {
			return fmt.Sprintf("EDAC MC%d: 1 UE memory read error on CPU_SrcID#%d_MC#0_Chan#0_DIMM#0 (channel:0 slot:0 page:0x%x offset:0x0 grain:32 - err_code:0x0000:0x0090 socket:1 imc:0 rank:1)", g.r.IntN(2), g.r.IntN(2), g.r.IntN(1<<20))
		}},
		{8, func() string {
			u := g.uid()
			pod := "kubepods-burstable-pod" + replaceDash(u) + ".slice"
			return fmt.Sprintf("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-%08x.scope,mems_allowed=0-1,oom_memcg=/kubepods.slice/kubepods-burstable.slice/%s,task_memcg=/kubepods.slice/kubepods-burstable.slice/%s/cri-containerd-%08x.scope,task=python,pid=%d,uid=0", g.r.Uint32(), pod, pod, g.r.Uint32(), g.pid())
		}},
		{8, func() string {
			return fmt.Sprintf("Memory cgroup out of memory: Killed process %d (pt_main_thread) total-vm:%dkB, anon-rss:%dkB, file-rss:120000kB, shmem-rss:0kB, UID:0 pgtables:170000kB oom_score_adj:999", g.pid(), 90000000+g.r.IntN(9000000), 80000000+g.r.IntN(9000000))
		}},
		{2, func() string {
			return fmt.Sprintf("Out of memory: Killed process %d (python) total-vm:%dkB, anon-rss:%dkB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:200000kB oom_score_adj:0", g.pid(), 120000000+g.r.IntN(9000000), 98000000+g.r.IntN(9000000))
		}},
		{12, func() string { return "nf_conntrack: nf_conntrack: table full, dropping packet" }},
		{7, func() string {
			return fmt.Sprintf("mlx5_core 0000:%02x:00.0 ens%df0np0: Link down", 0x3b+g.r.IntN(4), 1+g.r.IntN(4))
		}},
		{7, func() string {
			return fmt.Sprintf("mlx5_core 0000:%02x:00.0 ens%df0np0: Link up", 0x3b+g.r.IntN(4), 1+g.r.IntN(4))
		}},
		{4, func() string { return "eth0: Link is Down" }},
		{4, func() string {
			return "e1000e 0000:00:1f.6 eno1: NIC Link is Up 1000 Mbps Full Duplex, Flow Control: Rx/Tx"
		}},
		{4, func() string { return "bond0: (slave eth1): link status definitely down, disabling slave" }},
	})()
}

func kubeletHit(g *gen) string {
	return oneOf(g.r, []weighted[func() string]{
		{40, func() string {
			return g.klog('E', "kubelet.go:2697") + fmt.Sprintf(`"Skipping pod synchronization" err="PLEG is not healthy: pleg was last seen active 3m%d.%ds ago; threshold is 3m0s"`, g.r.IntN(60), g.r.IntN(1000))
		}},
		{20, func() string {
			return g.klog('I', "eviction_manager.go:389") + fmt.Sprintf(`"Eviction manager: attempting to reclaim" resourceName=%q`, [...]string{"memory", "ephemeral-storage", "nodefs.inodes"}[g.r.IntN(3)])
		}},
		{20, func() string {
			return g.klog('I', "eviction_manager.go:658") + fmt.Sprintf(`"Eviction manager: pod is evicted successfully" pod=%q`, g.pod())
		}},
		{20, func() string {
			return g.klog('I', "eviction_manager.go:404") + `"Eviction manager: must evict pod(s) to reclaim" resourceName="memory"`
		}},
	})()
}

func jobHit(g *gen) string {
	rank := g.r.IntN(64)
	return oneOf(g.r, []weighted[func() string]{
		{40, func() string {
			return fmt.Sprintf("[rank%d]:[E%s %d ProcessGroupNCCL.cpp:616] [Rank %d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=%d, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for %d milliseconds before timing out.", rank, g.at.Format("0102 15:04:05.000000"), 4242, rank, g.r.IntN(100000), 600000+g.r.IntN(1000))
		}},
		{20, func() string {
			return "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3"
		}},
		{20, func() string {
			return "RuntimeError: NCCL error: remote process exited or there was a network error, NCCL version 2.19.3"
		}},
		{15, func() string {
			return fmt.Sprintf("%s:%d:%d [%d] NCCL WARN Net : Call to recv from 10.0.%d.%d<%d> failed : Connection timed out", g.o.node, 4242, 4300+g.r.IntN(64), g.r.IntN(8), g.r.IntN(8), g.r.IntN(256), 40000+g.r.IntN(20000))
		}},
		{5, func() string { return "RuntimeError: CUDA error: uncorrectable ECC error encountered" }},
	})()
}

// replaceDash writes a pod UID as systemd's cgroup names do: - as _.
func replaceDash(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '-' {
			b[i] = '_'
		}
	}
	return string(b)
}
