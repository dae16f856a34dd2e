package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// nodeLogs are the logs of a recording's nodes, written after it in the
// formats nodes write them (kwok nodes have no kernel, kubelet or GPU of
// their own): per node, a journald JSON export (journal.json: kernel and
// kubelet), dmesg --time-format=iso text (dmesg.log), and a job's rank
// output as kubectl logs --timestamps gives it (POD.log). Lines carry the
// instants of the recording.
type nodeLogs struct {
	c       *Cluster
	journal map[string][]logLine // node -> journald entries
	dmesg   map[string][]logLine
	jobs    map[string][]logLine // node + "/" + pod -> lines
	boot    string
}

type logLine struct {
	at   time.Time
	unit string // "kernel", "kubelet"
	msg  string
}

func newNodeLogs(c *Cluster) *nodeLogs {
	return &nodeLogs{c: c, journal: map[string][]logLine{}, dmesg: map[string][]logLine{}, jobs: map[string][]logLine{},
		boot: fmt.Sprintf("%032x", c.rng.Uint64())}
}

// kernel logs a kernel message in the node's journal.
func (l *nodeLogs) kernel(node string, at time.Time, msg string) {
	l.journal[node] = append(l.journal[node], logLine{at, "kernel", msg})
}

// xid logs an NVIDIA Xid as the driver writes it (NVIDIA's Xid catalog:
// "NVRM: Xid (PCI:DDDD:BB:DD): CODE, pid=PID, name=NAME, TEXT") and the
// lines the driver writes after it.
func (l *nodeLogs) xid(node string, at time.Time, pci string, code int, text string) {
	pid := 2000 + l.c.Intn(60000)
	l.kernel(node, at, fmt.Sprintf("NVRM: Xid (PCI:%s): %d, pid=%d, name=python3, %s", pci, code, pid, text))
	if code == 79 {
		l.kernel(node, at.Add(3*time.Millisecond), "NVRM: GPU "+pci+".0: GPU has fallen off the bus.")
		l.kernel(node, at.Add(5*time.Millisecond), "NVRM: A GPU crash dump has been created. If possible, please run")
		l.kernel(node, at.Add(5*time.Millisecond), "NVRM: nvidia-bug-report.sh as root to collect this data before")
		l.kernel(node, at.Add(5*time.Millisecond), "NVRM: the NVIDIA kernel module is unloaded.")
	}
}

// job logs a rank's last lines: its NCCL setup, then how it ended.
func (l *nodeLogs) job(node, pod string, at time.Time, last string) {
	k := node + "/" + pod
	pid := 100 + l.c.Intn(900)
	l.jobs[k] = append(l.jobs[k],
		logLine{at.Add(-40 * time.Second), "", fmt.Sprintf("%s:%d:%d [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0", pod, pid, pid)},
		logLine{at.Add(-39 * time.Second), "", fmt.Sprintf("%s:%d:%d [0] NCCL INFO Bootstrap : Using eth0:10.0.%d.%d<0>", pod, pid, pid, l.c.Intn(250), l.c.Intn(250))},
		logLine{at.Add(-38 * time.Second), "", fmt.Sprintf("%s:%d:%d [0] NCCL INFO comm 0x55d5c8a0 rank 0 nranks 8 cudaDev 0 busId 18000 - Init COMPLETE", pod, pid, pid+7)},
		logLine{at, "", last})
}

// decoys are faults a method that blames any error near a bad unit would
// take: an earlier Xid 79 on a node the job never ran on, an Xid 13 (an
// application's fault, NVIDIA's catalog says) on a node running a pod
// that stays good, a link flap on a cascade rank's node, and corrected
// ECC errors.
func (l *nodeLogs) decoys(start time.Time, fleet []Node, job, good []corev1.Pod, cascadeRank corev1.Pod) {
	used := map[string]bool{}
	for _, p := range append(slices.Clone(job), good...) {
		used[p.Spec.NodeName] = true
	}
	var idle []string
	for _, n := range fleet {
		if !used[n.Name] {
			idle = append(idle, n.Name)
		}
	}
	if len(idle) > 0 {
		l.xid(Pick(l.c, idle), start.Add(-l.c.Dur(20*time.Second, 60*time.Second)), "0000:9a:00", 79, "GPU has fallen off the bus.")
	}
	if len(good) > 0 {
		n := Pick(l.c, good).Spec.NodeName
		l.xid(n, time.Now().UTC().Add(-l.c.Dur(2*time.Second, 5*time.Second)), "0000:18:00", 13,
			"Graphics SM Warp Exception on (GPC 1, TPC 0, SM 1): Out Of Range Address")
	}
	if n := cascadeRank.Spec.NodeName; n != "" {
		at := time.Now().UTC().Add(-l.c.Dur(1*time.Second, 3*time.Second))
		l.dmesg[n] = append(l.dmesg[n], logLine{at, "kernel", "mlx5_core 0000:0c:00.0 eth1: Link down"},
			logLine{at.Add(900 * time.Millisecond), "kernel", "mlx5_core 0000:0c:00.0 eth1: Link up"})
	}
	for range 3 {
		n := Pick(l.c, fleet).Name
		l.kernel(n, start.Add(l.c.Dur(0, 30*time.Second)), "NVRM: GPU 0000:2a:00.0: single-bit ECC error corrected, count 1")
	}
}

// everyday adds the lines every node writes all day to each node logged
// (and to a handful more), over [start, end].
func (l *nodeLogs) everyday(start, end time.Time) {
	nodes := map[string]bool{}
	for n := range l.journal {
		nodes[n] = true
	}
	for k := range l.jobs {
		nodes[strings.SplitN(k, "/", 2)[0]] = true
	}
	span := end.Sub(start)
	for n := range nodes {
		for i := range 40 {
			at := start.Add(span * time.Duration(i) / 40)
			pod := "pod-" + strconv.Itoa(l.c.Intn(1000))
			l.journal[n] = append(l.journal[n],
				logLine{at, "kubelet", fmt.Sprintf(`I%s    2114 kubelet.go:2456] "SyncLoop (PLEG): event for pod" pod="ml/%s" event={"Type":"ContainerStarted"}`, at.Format("0102 15:04:05.000000"), pod)},
				logLine{at.Add(time.Millisecond), "kernel", fmt.Sprintf("IPv6: ADDRCONF(NETDEV_CHANGE): veth%x: link becomes ready", l.c.Intn(1<<24))},
				logLine{at.Add(2 * time.Millisecond), "kernel", fmt.Sprintf("audit: type=1400 audit(%d.%03d:%d): apparmor=\"STATUS\" operation=\"profile_replace\" name=\"cri-containerd.apparmor.d\"", at.Unix(), at.Nanosecond()/1e6, 100+i)})
		}
	}
}

// write writes the logs into out/nodelogs/NODE/.
func (l *nodeLogs) write(out string) error {
	for node, lines := range l.journal {
		if err := l.writeFile(filepath.Join(out, "nodelogs", node, "journal.json"), lines, func(x logLine) (string, error) { return l.journalEntry(node, x) }); err != nil {
			return err
		}
	}
	for node, lines := range l.dmesg {
		if err := l.writeFile(filepath.Join(out, "nodelogs", node, "dmesg.log"), lines, func(x logLine) (string, error) {
			return x.at.Format("2006-01-02T15:04:05,000000-07:00") + " " + x.msg, nil
		}); err != nil {
			return err
		}
	}
	for k, lines := range l.jobs {
		if err := l.writeFile(filepath.Join(out, "nodelogs", k+".log"), lines, func(x logLine) (string, error) {
			return x.at.Format(time.RFC3339Nano) + " " + x.msg, nil
		}); err != nil {
			return err
		}
	}
	return nil
}

func (l *nodeLogs) writeFile(path string, lines []logLine, format func(logLine) (string, error)) error {
	slices.SortStableFunc(lines, func(a, b logLine) int { return a.at.Compare(b.at) })
	var b strings.Builder
	for _, x := range lines {
		s, err := format(x)
		if err != nil {
			return err
		}
		b.WriteString(s + "\n")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// journalEntry is one entry as journalctl -o json exports it.
func (l *nodeLogs) journalEntry(node string, x logLine) (string, error) {
	e := map[string]string{
		"__REALTIME_TIMESTAMP": strconv.FormatInt(x.at.UnixMicro(), 10),
		"_BOOT_ID":             l.boot,
		"_HOSTNAME":            node,
		"MESSAGE":              x.msg,
	}
	switch x.unit {
	case "kernel":
		e["_TRANSPORT"], e["SYSLOG_IDENTIFIER"], e["PRIORITY"] = "kernel", "kernel", "4"
	default:
		e["_TRANSPORT"], e["SYSLOG_IDENTIFIER"], e["_SYSTEMD_UNIT"], e["PRIORITY"] = "stdout", x.unit, x.unit+".service", "6"
	}
	b, err := json.Marshal(e)
	return string(b), err
}
