package nodelogs

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/timeline/sqlite"
)

// Lines of the benchmark's node logs, by format: 1 M in all.
const (
	benchJournal = 400_000 // journalctl -o json of kubelet, containerd and the kernel
	benchDmesg   = 300_000 // dmesg --time-format=iso
	benchJob     = 300_000 // kubectl logs --timestamps of a job's NCCL output
)

// Lines that match nothing, as nodes write them most of the time.
var (
	kernelNoise = []string{
		"IPv4: martian source 10.0.3.17 from 10.0.5.2, on dev eth0",
		"cni0: port 3(veth3a4b5c6d) entered forwarding state",
		"device veth3a4b5c6d entered promiscuous mode",
		`audit: type=1400 audit(1796139063.878:1234): apparmor="DENIED" operation="open" profile="cri-containerd.apparmor.d" name="/proc/sys/kernel/random/boot_id" pid=4242 comm="python"`,
		"NVRM: GPU at PCI:0000:3b:00: GPU-8f1c2d3e-4b5a-6978-8a9b-0c1d2e3f4a5b",
		"overlayfs: fs on '/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/4242/fs' does not support file handles, falling back to xino=off.",
		"nvidia-nvlink: Nvlink Core is being initialized, major device number 511",
		"EXT4-fs (nvme0n1p1): mounted filesystem with ordered data mode. Quota mode: none.",
	}
	kubeletNoise = []string{
		`I1201 15:31:03.878276    2345 kubelet.go:2500] "SyncLoop (probe)" probe="readiness" status="ready" pod="ml/train-17"`,
		`I1201 15:31:03.878276    2345 prober.go:107] "Probe failed" probeType="Readiness" pod="ml/web-5" podUID="0f4e2c1a-9b7d-4e8f-a1b2-c3d4e5f60718" containerName="web" probeResult="failure" output="HTTP probe failed with statuscode: 503"`,
		`I1201 15:31:03.878276    2345 reconciler_common.go:258] "operationExecutor.VerifyControllerAttachedVolume started for volume \"kube-api-access-x7k2p\"" pod="ml/train-3"`,
		`E1201 15:31:03.878276    2345 pod_workers.go:1301] "Error syncing pod, skipping" err="failed to \"StartContainer\" for \"loader\" with CrashLoopBackOff: \"back-off 5m0s restarting failed container=loader pod=ml/loader-2\"" pod="ml/loader-2"`,
		`I1201 15:31:03.878276    2345 kubelet.go:1234] "SyncLoop (PLEG): event for pod" pod="ml/train-0" event={"ID":"0f4e2c1a","Type":"ContainerStarted"}`,
	}
	containerdNoise = []string{
		`time="2026-12-01T15:31:03.878276123Z" level=info msg="StartContainer for \"4b1f9c2d\" returns successfully"`,
		`time="2026-12-01T15:31:03.878276123Z" level=info msg="shim disconnected" id=4b1f9c2d namespace=k8s.io`,
	}
	jobNoise = []string{
		"step 1234 | loss 2.3456 | lr 3.0e-04 | grad_norm 0.812 | tokens/s 123456 | mfu 41.2%",
		"gpu-0086:4242:4300 [0] NCCL INFO Channel 00/32 :    0   1   2   3   4   5   6   7",
		"gpu-0086:4242:4300 [0] NCCL INFO comm 0x5581c6a0 rank 3 nRanks 64 nNodes 8 localRanks 8 localRank 3 MNNVL 0",
		"[rank3]:[W1201 15:31:03.878276 4242 ProcessGroupNCCL.cpp:4561] Warning: TORCH_NCCL_AVOID_RECORD_STREAMS is the default now",
		"Saving checkpoint to /ckpt/step-1234 ...",
	}
	// One line in a hundred matches.
	kernelHits = []string{
		"NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=python, GPU has fallen off the bus.",
		"mlx5_core 0000:5e:00.0 ens2f0np0: Link down",
		"mlx5_core 0000:5e:00.0 ens2f0np0: Link up",
		"nf_conntrack: nf_conntrack: table full, dropping packet",
		"Memory cgroup out of memory: Killed process 4242 (python) total-vm:95000000kB, anon-rss:80000000kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:170000kB oom_score_adj:999",
	}
	kubeletHits = []string{
		`E1201 15:31:03.878276    2345 kubelet.go:2697] "Skipping pod synchronization" err="PLEG is not healthy: pleg was last seen active 3m5.3s ago; threshold is 3m0s"`,
		`I1201 15:31:03.878276    2345 eviction_manager.go:658] "Eviction manager: pod is evicted successfully" pod="ml/train-9"`,
	}
	jobHits = []string{
		"[rank3]:[E1201 15:31:03.878276 4242 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600046 milliseconds before timing out.",
		"torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL version 2.19.3",
	}
)

// pick is a noise line, or one in a hundred a line that matches.
func pick(r *rand.Rand, noise, hits []string) string {
	if len(hits) > 0 && r.IntN(100) == 0 {
		return hits[r.IntN(len(hits))]
	}
	return noise[r.IntN(len(noise))]
}

// writeBenchLogs writes the benchmark's three node logs into dir.
func writeBenchLogs(b *testing.B, dir string) []File {
	r := rand.New(rand.NewPCG(1, 2))
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	files := []File{
		{Path: filepath.Join(dir, "gpu-0086.journal.json")},
		{Path: filepath.Join(dir, "gpu-0086.dmesg")},
		{Path: filepath.Join(dir, "gpu-0086.train-0.log")},
	}
	for i, n := range []int{benchJournal, benchDmesg, benchJob} {
		f, err := os.Create(files[i].Path)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		for range n {
			at = at.Add(time.Duration(r.IntN(20_000)) * time.Microsecond)
			switch i {
			case 0:
				w.WriteString(benchJournalLine(r, at))
			case 1:
				fmt.Fprintf(w, "%s %s", at.Format("2006-01-02T15:04:05,000000+00:00"), pick(r, kernelNoise, kernelHits))
			case 2:
				fmt.Fprintf(w, "%s %s", at.Format(time.RFC3339Nano), pick(r, jobNoise, jobHits))
			}
			w.WriteByte('\n')
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	return files
}

// benchJournalLine is an entry of journalctl -o json with the fields
// systemd writes: kubelet's (with its long command line), containerd's or
// the kernel's.
func benchJournalLine(r *rand.Rand, at time.Time) string {
	us := at.UnixMicro()
	head := fmt.Sprintf(`{"__CURSOR":"s=9f1c2d3e4b5a69788a9b0c1d2e3f4a5b;i=%x;b=4d2e7c1b9a0f4e8d8c7b6a5f4e3d2c1b;m=%x;t=%x;x=77a1b2c3d4e5f607","__REALTIME_TIMESTAMP":"%d","__MONOTONIC_TIMESTAMP":"%d","_BOOT_ID":"4d2e7c1b9a0f4e8d8c7b6a5f4e3d2c1b","_MACHINE_ID":"0a1b2c3d4e5f60718293a4b5c6d7e8f9","_HOSTNAME":"gpu-0086","PRIORITY":"6","SYSLOG_FACILITY":"3",`,
		us, us, us, us, us%1_000_000_000)
	var tail, msg string
	switch k := r.IntN(10); {
	case k < 6:
		msg = pick(r, kubeletNoise, kubeletHits)
		tail = `"_TRANSPORT":"stdout","SYSLOG_IDENTIFIER":"kubelet","_PID":"2345","_UID":"0","_GID":"0","_COMM":"kubelet","_EXE":"/usr/bin/kubelet","_CMDLINE":"/usr/bin/kubelet --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf --config=/var/lib/kubelet/config.yaml --container-runtime-endpoint=unix:///run/containerd/containerd.sock --node-labels=pool=h100-a --eviction-hard=memory.available<500Mi","_CAP_EFFECTIVE":"1ffffffffff","_SYSTEMD_CGROUP":"/system.slice/kubelet.service","_SYSTEMD_UNIT":"kubelet.service","_SYSTEMD_SLICE":"system.slice","_SYSTEMD_INVOCATION_ID":"5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b","_STREAM_ID":"a1b2c3d4e5f60718293a4b5c6d7e8f90",`
	case k < 8:
		msg = pick(r, containerdNoise, nil)
		tail = `"_TRANSPORT":"stdout","SYSLOG_IDENTIFIER":"containerd","_PID":"1234","_UID":"0","_GID":"0","_COMM":"containerd","_EXE":"/usr/bin/containerd","_CMDLINE":"/usr/bin/containerd","_SYSTEMD_CGROUP":"/system.slice/containerd.service","_SYSTEMD_UNIT":"containerd.service","_SYSTEMD_SLICE":"system.slice",`
	default:
		msg = pick(r, kernelNoise, kernelHits)
		tail = `"_TRANSPORT":"kernel","SYSLOG_IDENTIFIER":"kernel","_SOURCE_MONOTONIC_TIMESTAMP":"1234567890",`
	}
	return head + tail + `"MESSAGE":` + jsonString(msg) + "}"
}

func jsonString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// BenchmarkIngestNodeLogs ingests 1 M node-log lines (docs/nodelogs.md has
// the mix; one in a hundred matches) into a fresh SQLite timeline file:
// the target is 1 M lines in 5 s or less.
func BenchmarkIngestNodeLogs(b *testing.B) {
	files := writeBenchLogs(b, b.TempDir())
	var size int64
	for _, f := range files {
		fi, _ := os.Stat(f.Path)
		size += fi.Size()
	}
	b.SetBytes(size)
	var lines, records int64
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "b.db"), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cpu0 := cpuTime()
		runs, err := Ingest(context.Background(), s, files, Options{})
		cpu += cpuTime() - cpu0
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		lines, records = 0, 0
		for _, r := range runs {
			lines, records = lines+r.Lines, records+r.Records
		}
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(records), "records/op")
	// CPU seconds of both goroutines (reading, storing): on a machine
	// shared with other work the wall clock measures the neighbours too.
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
