package nodelogs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// classifyCases are real messages (docs/nodelogs.md cites where each
// format is written) and what they are.
var classifyCases = []struct {
	name, msg string
	want      *Match // nil: no match
}{
	{"xid 79 with process", "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.",
		&Match{Reason: ReasonXid, Code: 79, PCI: "0000:3b:00", PID: 1234, Process: "python3"}},
	{"xid unknown process", "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
		&Match{Reason: ReasonXid, Code: 79, PCI: "0000:3b:00"}},
	{"xid without pid or name", "NVRM: Xid (PCI:0000:2B:00): 79, GPU has fallen off the bus.",
		&Match{Reason: ReasonXid, Code: 79, PCI: "0000:2b:00"}},
	{"xid of an old driver", "NVRM: Xid (0000:01:00): 13, Graphics SM Warp Exception on (GPC 0, TPC 0): Out Of Range Address",
		&Match{Reason: ReasonXid, Code: 13, PCI: "0000:01:00"}},
	{"xid on a MIG instance", "NVRM: Xid (PCI:0000:3b:00 GPU-I:01 GPU-CI:00): 31, pid=5678, name=python, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f_12340000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
		&Match{Reason: ReasonXid, Code: 31, PCI: "0000:3b:00", PID: 5678, Process: "python"}},
	{"xid 63 is an xid, not a bare row remap", "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.",
		&Match{Reason: ReasonXid, Code: 63, PCI: "0000:10:1c", PID: 1896}},
	{"xid 74 is an xid, not a bare nvlink error", "NVRM: Xid (PCI:0000:b9:00): 74, pid=<unknown>, name=<unknown>, NVLink: fatal error detected on link 6(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)",
		&Match{Reason: ReasonXid, Code: 74, PCI: "0000:b9:00"}},
	{"xid of an undocumented code", "NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
		&Match{Reason: ReasonXid, Code: 154, PCI: "0000:3b:00"}},
	{"nvswitch sxid", "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)",
		&Match{Reason: ReasonNVLink, PCI: "0000:05:00.0", SXid: 12028}},
	{"nvlink link disabled", "NVRM: GPU 0000:65:00.0: NVLink link 2 disabled due to error",
		&Match{Reason: ReasonNVLink, PCI: "0000:65:00.0"}},
	{"nvlink start-up", "nvidia-nvlink: Nvlink Core is being initialized, major device number 511", nil},
	{"row remap relayed without its xid", "gpu 0000:3b:00.0: Row Remapper: New row marked for remapping, reset gpu to activate.",
		&Match{Reason: ReasonRowRemap, PCI: "0000:3b:00.0"}},
	{"edac corrected", "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1 slot:0 page:0x4a3b2 offset:0x640 grain:32 syndrome:0x0 - err_code:0x0000:0x009f socket:0 imc:0 rank:0 bg:1 ba:2 row:0x1c3a col:0x1c8)",
		&Match{Reason: ReasonECC, Normal: true}},
	{"edac uncorrected", "EDAC MC1: 1 UE memory read error on CPU_SrcID#1_MC#0_Chan#0_DIMM#0 (channel:0 slot:0 page:0x1a2b3 offset:0x0 grain:32 - err_code:0x0000:0x0090 socket:1 imc:0 rank:1)",
		&Match{Reason: ReasonECC}},
	{"cuda uncorrectable ecc", "RuntimeError: CUDA error: uncorrectable ECC error encountered",
		&Match{Reason: ReasonECC, Component: ComponentCUDA}},
	{"ecc enabled at boot", "NVRM: GPU 0000:3b:00.0: ECC is enabled", nil},
	{"edac banner", "EDAC MC: Ver: 3.0.0", nil},
	{"oom killed process", "Out of memory: Killed process 1234 (python) total-vm:123456789kB, anon-rss:98765432kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:200000kB oom_score_adj:0",
		&Match{Reason: ReasonOOMKill, PID: 1234, Process: "python"}},
	{"memcg oom killed process", "Memory cgroup out of memory: Killed process 4321 (pt_main_thread) total-vm:95000000kB, anon-rss:80000000kB, file-rss:120000kB, shmem-rss:0kB, UID:0 pgtables:170000kB oom_score_adj:999",
		&Match{Reason: ReasonOOMKill, PID: 4321, Process: "pt_main_thread"}},
	{"oom-kill summary", "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-4b1f.scope,mems_allowed=0-1,oom_memcg=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f4e2c1a_9b7d_4e8f_a1b2_c3d4e5f60718.slice,task_memcg=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f4e2c1a_9b7d_4e8f_a1b2_c3d4e5f60718.slice/cri-containerd-4b1f.scope,task=python,pid=1234,uid=0",
		&Match{Reason: ReasonOOMKill, PID: 1234, Process: "python", PodUID: "0f4e2c1a-9b7d-4e8f-a1b2-c3d4e5f60718"}},
	{"oom killer invoked", "python invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=999", nil},
	{"pleg", `E1201 15:31:03.878276    1234 kubelet.go:2697] "Skipping pod synchronization" err="PLEG is not healthy: pleg was last seen active 3m5.30015447s ago; threshold is 3m0s"`,
		&Match{Reason: ReasonPLEG, Component: ComponentKubelet}},
	{"eviction reclaim", `I1201 15:31:03.878276    1234 eviction_manager.go:389] "Eviction manager: attempting to reclaim" resourceName="ephemeral-storage"`,
		&Match{Reason: ReasonKubeletEviction, Component: ComponentKubelet, Resource: "ephemeral-storage"}},
	{"eviction of a pod", `I1201 15:31:04.001002    1234 eviction_manager.go:658] "Eviction manager: pod is evicted successfully" pod="ml/train-0"`,
		&Match{Reason: ReasonKubeletEviction, Component: ComponentKubelet, Pod: "ml/train-0"}},
	{"evicted pod", "evicted pod ml/train-3 to reclaim memory",
		&Match{Reason: ReasonKubeletEviction, Component: ComponentKubelet, Pod: "ml/train-3"}},
	{"eviction manager idle", `I1201 15:31:03.878276    1234 eviction_manager.go:379] "Eviction manager: no resources are starved"`, nil},
	{"watchdog timeout", "[rank3]:[E1201 15:31:03.878276 1234 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600046 milliseconds before timing out.",
		&Match{Reason: ReasonNCCLTimeout, Component: ComponentNCCL, Rank: 3}},
	{"watchdog timeout of a process group", "[PG ID 0 PG GUID 0(default_pg) Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800090 milliseconds before timing out.",
		&Match{Reason: ReasonNCCLTimeout, Component: ComponentNCCL, Rank: 5}},
	{"nccl warn timed out", "gpu-0086:1234:5678 [0] NCCL WARN Net : Call to recv from 10.0.0.2<41234> failed : Connection timed out",
		&Match{Reason: ReasonNCCLTimeout, Component: ComponentNCCL, PID: 1234}},
	{"nccl system error", "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3",
		&Match{Reason: ReasonNCCLSystemError, Component: ComponentNCCL}},
	{"nccl remote error", "RuntimeError: NCCL error: remote process exited or there was a network error, NCCL version 2.18.5",
		&Match{Reason: ReasonNCCLRemoteError, Component: ComponentNCCL}},
	{"nccl remote error by name", "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
		&Match{Reason: ReasonNCCLRemoteError, Component: ComponentNCCL}},
	{"nccl info", "gpu-0086:1234:5678 [0] NCCL INFO Channel 00/32 :    0   1   2   3", nil},
	{"conntrack full", "nf_conntrack: nf_conntrack: table full, dropping packet",
		&Match{Reason: ReasonConntrackFull}},
	{"link down", "eth0: Link is Down", &Match{Reason: ReasonLinkDown, Iface: "eth0"}},
	{"nic link up", "e1000e 0000:00:1f.6 eno1: NIC Link is Up 1000 Mbps Full Duplex, Flow Control: Rx/Tx",
		&Match{Reason: ReasonLinkUp, Normal: true, Iface: "eno1", PCI: "0000:00:1f.6"}},
	{"mlx5 link down", "mlx5_core 0000:3b:00.0 ens1f0np0: Link down",
		&Match{Reason: ReasonLinkDown, Iface: "ens1f0np0", PCI: "0000:3b:00.0"}},
	{"bond slave down", "bond0: (slave eth1): link status definitely down, disabling slave",
		&Match{Reason: ReasonLinkDown, Iface: "eth1"}},
	{"sata link up", "ata1: SATA link up 6.0 Gbps (SStatus 133 SControl 300)", nil},
	{"addrconf", "IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready", nil},
	{"nothing", `I1201 15:31:03.878276    1234 kubelet.go:1234] "SyncLoop (PLEG): event for pod" pod="ml/train-0"`, nil},
}

func TestNodeLogClassify(t *testing.T) {
	for _, tc := range classifyCases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Classify(tc.msg)
			if tc.want == nil {
				if ok {
					t.Errorf("Classify(%q) = %+v, want no match", tc.msg, got)
				}
				return
			}
			want := *tc.want
			if want.Component == "" {
				want.Component = ComponentKernel
			}
			if want.Rank == 0 {
				want.Rank = -1 // not known (TestNodeLogRankZero has a rank 0)
			}
			if !ok {
				t.Fatalf("Classify(%q): no match, want %+v", tc.msg, want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			if !mayMatch([]byte(tc.msg)) {
				t.Errorf("mayMatch(%q) = false for a message that matches", tc.msg)
			}
		})
	}
}

func TestNodeLogRankZero(t *testing.T) {
	m, ok := Classify("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.")
	if !ok || m.Rank != 0 {
		t.Errorf("got %+v, %v: want rank 0", m, ok)
	}
}

// TestNodeLogXidTable: every code the issue names has a documented meaning, and
// the codes NVIDIA puts on the application are the only ones that say so.
func TestNodeLogXidTable(t *testing.T) {
	app := map[int]bool{13: true, 31: true, 43: true}
	for _, c := range []int{13, 31, 43, 45, 48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120} {
		x := LookupXid(c)
		if x.Meaning == "" || x.Action == "" {
			t.Errorf("Xid %d: no meaning or action: %+v", c, x)
		}
		if (x.Origin == OriginApplication) != app[c] {
			t.Errorf("Xid %d: origin %q", c, x.Origin)
		}
	}
	if x := LookupXid(154); x.Meaning != "" || x.Origin != OriginUnknown {
		t.Errorf("Xid 154: %+v, want no meaning, origin unknown", x)
	}
}
