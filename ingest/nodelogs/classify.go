package nodelogs

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/faultline/faultline/timeline"
)

// Reasons of the records a node log gives: timeline's, which the
// analyses read.
const (
	ReasonXid             = timeline.NodeXid
	ReasonECC             = timeline.NodeECC
	ReasonRowRemap        = timeline.NodeRowRemap
	ReasonNVLink          = timeline.NodeNVLink
	ReasonPLEG            = timeline.NodePLEG
	ReasonKubeletEviction = timeline.NodeKubeletEviction
	ReasonOOMKill         = timeline.NodeOOMKill
	ReasonNCCLTimeout     = timeline.NodeNCCLTimeout
	ReasonNCCLSystemError = timeline.NodeNCCLSystemError
	ReasonNCCLRemoteError = timeline.NodeNCCLRemoteError
	ReasonConntrackFull   = timeline.NodeConntrackFull
	ReasonLinkDown        = timeline.NodeLinkDown
	ReasonLinkUp          = timeline.NodeLinkUp
)

// Components that log the lines, when the log does not say.
const (
	ComponentKernel  = "kernel"
	ComponentKubelet = "kubelet"
	ComponentNCCL    = "nccl"
	ComponentCUDA    = "cuda"
)

// Match is what a message was found to be.
type Match struct {
	Reason string
	Code   int  // the Xid code, for ReasonXid; else 0
	Normal bool // a recovery or a corrected error: record type Normal
	// Component is who logs such a message (kernel, kubelet, nccl, cuda);
	// a journal's own fields take precedence.
	Component string
	PCI       string // PCI address of the device
	PID       int    // the process concerned; 0 if not known
	Process   string // its name
	Iface     string // the network interface
	Pod       string // NAMESPACE/NAME
	PodUID    string
	Resource  string // the resource an eviction reclaims
	Rank      int    // the collective's rank; -1 if not known
	SXid      int    // an NVSwitch SXid code, for ReasonNVLink
}

// Type is the record type: Normal for a recovery or a corrected error,
// else Warning.
func (m *Match) Type() string {
	if m.Normal {
		return "Normal"
	}
	return "Warning"
}

// rule matches one kind of message: match runs only on a message holding
// one of keys (case-sensitive, each at least three bytes long), so most
// messages cost one pass of the gate and no regexp.
type rule struct {
	keys  []string
	match func(msg string, m *Match) bool
}

// rules in the order they are tried: the first that matches wins (an
// NVSwitch SXid before a GPU Xid, an Xid before the ECC or NVLink words in
// its text).
var rules = []rule{
	{[]string{"SXid ("}, matchSXid},
	{[]string{"Xid ("}, matchXid},
	{[]string{"NVLink", "NVLINK", "nvlink"}, matchNVLink},
	{[]string{"emap"}, matchRowRemap},
	{[]string{"ECC", "EDAC"}, matchECC},
	{[]string{"Killed process", "oom-kill:"}, matchOOM},
	{[]string{"PLEG is not healthy"}, matchPLEG},
	{[]string{"viction manager", "victed pod"}, matchEviction},
	{[]string{"collective operation timeout", "remote process exited", "ncclRemoteError", "unhandled system error", "ncclSystemError", "NCCL WARN"}, matchNCCL},
	{[]string{"table full"}, matchConntrack},
	{[]string{"Link is Up", "Link is Down", ": Link up", ": Link down", "link status definitely"}, matchLink},
}

// gate finds every rule's keys in one pass over a line: a position whose
// first two bytes start a key (a bit set of the 64 Ki pairs, 8 KiB) and
// whose first three may (a bit set of 64 Ki hashes of them: a common pair
// such as "re" or ": " rarely goes on as a key does) is compared with the
// keys whole. About a nanosecond a byte, where a substring search per key
// cost twenty passes. A line holding none of the keys matches nothing.
type gate struct {
	pairs, triples [1 << 16 / 64]uint64
	keys           map[uint16][]string // by their first two bytes
}

var theGate = func() *gate {
	g := &gate{keys: map[uint16][]string{}}
	for _, r := range rules {
		for _, k := range r.keys {
			p, t := pair(k[0], k[1]), triple(k[0], k[1], k[2])
			g.pairs[p>>6] |= 1 << (p & 63)
			g.triples[t>>6] |= 1 << (t & 63)
			g.keys[p] = append(g.keys[p], k)
		}
	}
	return g
}()

func pair(a, b byte) uint16 { return uint16(a)<<8 | uint16(b) }

func triple(a, b, c byte) uint16 {
	return uint16((uint32(a)<<16 | uint32(b)<<8 | uint32(c)) * 2654435761 >> 16)
}

// mayMatch reports whether line holds a key of some rule: the cheap test
// every line passes through before any parsing.
func mayMatch(line []byte) bool {
	g := theGate
	for i := 0; i+2 < len(line); i++ {
		p := pair(line[i], line[i+1])
		if g.pairs[p>>6]&(1<<(p&63)) == 0 {
			continue
		}
		t := triple(line[i], line[i+1], line[i+2])
		if g.triples[t>>6]&(1<<(t&63)) != 0 && g.hasKey(line[i:], p) {
			return true
		}
	}
	return false
}

// hasKey reports whether b starts with a key whose first two bytes are p.
func (g *gate) hasKey(b []byte, p uint16) bool {
	for _, k := range g.keys[p] {
		if len(b) >= len(k) && string(b[:len(k)]) == k {
			return true
		}
	}
	return false
}

// Classify finds what a log message (without its timestamp) reports; ok
// is false for a message that matches no pattern, as most do.
func Classify(msg string) (m Match, ok bool) {
	for _, r := range rules {
		if !containsAny(msg, r.keys) {
			continue
		}
		m = Match{Rank: -1, Component: ComponentKernel}
		if r.match(msg, &m) {
			return m, true
		}
	}
	return Match{}, false
}

func containsAny(s string, keys []string) bool {
	for _, k := range keys {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

var (
	// NVIDIA's driver prints (src/nvidia/src/kernel/gpu/rc/kernel_rc.c,
	// krcReportXid): "NVRM: Xid (PCI:%04x:%02x:%02x): %d, pid=%s,
	// name=%s, %s", with " GPU-I:%02u GPU-CI:%02u" in the parenthesis on
	// a MIG GPU, pid='<unknown>' and name=<unknown> when no process is
	// known; some codes (79) and older drivers print no pid or name, and
	// older drivers no "PCI:".
	xidRe     = regexp.MustCompile(`\bXid \((?:PCI:)?([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.[0-7])?[^)]*\):? (\d{1,6})\b,?\s*(.*)$`)
	xidProcRe = regexp.MustCompile(`^pid=('?<?[\w/]*>?'?)(?:,\s*|$)(?:name=([^,]*)(?:,\s*|$))?`)
	// NVSwitch errors (the nvswitch driver, SXID printing):
	// "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 ...".
	sxidRe     = regexp.MustCompile(`SXid \(PCI:([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)\): (\d{1,6})\b`)
	rowRemapRe = regexp.MustCompile(`(?i)\brow[ -]?remap`)
	// The kernel's EDAC core (drivers/edac/edac_mc.c, edac_mc_handle_error):
	// "EDAC MC0: 1 CE memory read error on ..." (corrected), "... UE ..."
	// (uncorrected).
	edacRe = regexp.MustCompile(`\bEDAC [^:]*: \d+ (CE|UE)\b`)
	eccRe  = regexp.MustCompile(`\bECC\b`)
	// The OOM killer (mm/oom_kill.c): "Out of memory: Killed process 1234
	// (python) total-vm:...", "Memory cgroup out of memory: Killed process
	// ...", and the summary "oom-kill:constraint=CONSTRAINT_MEMCG,...,
	// task_memcg=/kubepods/burstable/pod<uid>/<id>,task=python,pid=1234,uid=0".
	oomKilledRe  = regexp.MustCompile(`[Oo]ut of memory[^:]*: Killed process (\d+) \(([^)]*)\)`)
	oomSummaryRe = regexp.MustCompile(`\boom-kill:constraint=[^,]*,.*?\btask=([^,]*),pid=(\d+)`)
	memcgRe      = regexp.MustCompile(`\btask_memcg=([^,\s]*)`)
	podUIDRe     = regexp.MustCompile(`pod([0-9a-fA-F]{8}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{12})`)
	// klog structured values: pod="ml/train-0" resourceName="memory".
	podKVRe      = regexp.MustCompile(`\bpods?="?\[?([a-z0-9][a-z0-9.-]*/[a-z0-9][a-z0-9.-]*)`)
	evictedPodRe = regexp.MustCompile(`(?i)\bevicted pod:? "?([a-z0-9][a-z0-9.-]*/[a-z0-9][a-z0-9.-]*)`)
	resourceKVRe = regexp.MustCompile(`\bresourceName="([^"]*)"`)
	// PyTorch's c10d (ProcessGroupNCCL.cpp): "[Rank 3] Watchdog caught
	// collective operation timeout: WorkNCCL(...)"; newer "[PG ID 0 PG GUID
	// 0(default_pg) Rank 3]"; its log prefix "[rank3]:".
	rankRe = regexp.MustCompile(`\[(?:PG [^\]]*?)?Rank (\d{1,7})\]|\[rank(\d{1,7})\]`)
	// NCCL's own log prefix (src/debug.cc): "HOST:PID:TID [DEV] NCCL WARN ...".
	ncclPrefixRe = regexp.MustCompile(`(?:^|\s)[\w.-]+:(\d{1,9}):\d{1,9} \[\d+\] NCCL `)
	// Network drivers: "eth0: Link is Down", "e1000e 0000:00:1f.6 eno1: NIC
	// Link is Up 1000 Mbps Full Duplex" (also igb, ixgbe, ice, tg3...);
	// mlx5_core (en_main.c): "mlx5_core 0000:3b:00.0 ens1f0np0: Link down";
	// bonding (bond_main.c): "bond0: (slave eth1): link status definitely
	// down, disabling slave".
	linkIsRe   = regexp.MustCompile(`([\w.@-]+):? (?:NIC )?Link is (Up|Down)\b`)
	linkMlxRe  = regexp.MustCompile(`([\w.@-]+): Link (up|down)\b`)
	linkBondRe = regexp.MustCompile(`\(slave ([\w.@-]+)\): link status definitely (up|down)\b|link status definitely (up|down) for interface ([\w.@-]+)`)
	pciRe      = regexp.MustCompile(`\b([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\b`)
)

func matchXid(msg string, m *Match) bool {
	g := xidRe.FindStringSubmatch(msg)
	if g == nil {
		return false
	}
	code, err := strconv.Atoi(g[2])
	if err != nil {
		return false
	}
	m.Reason, m.Code, m.PCI = ReasonXid, code, strings.ToLower(g[1])
	if p := xidProcRe.FindStringSubmatch(g[3]); p != nil {
		m.PID = atoi(strings.Trim(p[1], "'"))
		if name := strings.TrimSpace(p[2]); name != "" && name != "<unknown>" {
			m.Process = name
		}
	}
	return true
}

func matchSXid(msg string, m *Match) bool {
	g := sxidRe.FindStringSubmatch(msg)
	if g == nil {
		return false
	}
	m.Reason, m.PCI, m.SXid = ReasonNVLink, strings.ToLower(g[1]), atoi(g[2])
	return true
}

// nvlinkFaults are the words of an NVLink line that reports a fault:
// "NVLink: fatal error detected on link 6", "NVLink link 2 disabled due to
// error" (lower case).
var nvlinkFaults = []string{"error", "fatal", "fault", "fail"}

func matchNVLink(msg string, m *Match) bool {
	if !containsAny(strings.ToLower(msg), nvlinkFaults) {
		return false
	}
	m.Reason, m.PCI = ReasonNVLink, pci(msg)
	return true
}

func matchRowRemap(msg string, m *Match) bool {
	if !rowRemapRe.MatchString(msg) {
		return false
	}
	m.Reason, m.PCI = ReasonRowRemap, pci(msg)
	return true
}

func matchECC(msg string, m *Match) bool {
	if g := edacRe.FindStringSubmatch(msg); g != nil {
		m.Reason, m.Normal = ReasonECC, g[1] == "CE"
		return true
	}
	if !eccRe.MatchString(msg) {
		return false
	}
	low := strings.ToLower(msg)
	if !strings.Contains(low, "error") {
		return false // "ECC is enabled", "ECC mode: on"
	}
	uncorrected := containsAny(low, []string{"uncorrect", "double", "dbe", "uncontained", "multi-bit", "multi bit"})
	corrected := containsAny(low, []string{"corrected", "correctable", "single", "sbe"})
	m.Reason, m.Normal, m.PCI = ReasonECC, corrected && !uncorrected, pci(msg)
	if strings.Contains(msg, "CUDA") {
		m.Component = ComponentCUDA
	}
	return true
}

func matchOOM(msg string, m *Match) bool {
	if g := oomSummaryRe.FindStringSubmatch(msg); g != nil {
		m.Reason, m.Process, m.PID = ReasonOOMKill, g[1], atoi(g[2])
		if c := memcgRe.FindStringSubmatch(msg); c != nil {
			if u := podUIDRe.FindStringSubmatch(c[1]); u != nil {
				m.PodUID = strings.ToLower(strings.ReplaceAll(u[1], "_", "-"))
			}
		}
		return true
	}
	if g := oomKilledRe.FindStringSubmatch(msg); g != nil {
		m.Reason, m.PID, m.Process = ReasonOOMKill, atoi(g[1]), g[2]
		return true
	}
	return false
}

func matchPLEG(msg string, m *Match) bool {
	m.Reason, m.Component = ReasonPLEG, ComponentKubelet
	return true
}

// evictionSteps are the eviction manager's lines that report an eviction
// under way (pkg/kubelet/eviction/eviction_manager.go), not its routine
// ("no resources are starved") or its failures to read stats.
var evictionSteps = []string{"attempting to reclaim", "must evict", "evicted", "unable to evict"}

func matchEviction(msg string, m *Match) bool {
	low := strings.ToLower(msg)
	manager := strings.Contains(low, "eviction manager:") && containsAny(low, evictionSteps)
	if !manager && !strings.Contains(low, "evicted pod") {
		return false
	}
	m.Reason, m.Component = ReasonKubeletEviction, ComponentKubelet
	if g := podKVRe.FindStringSubmatch(msg); g != nil {
		m.Pod = g[1]
	} else if g := evictedPodRe.FindStringSubmatch(msg); g != nil {
		m.Pod = g[1]
	}
	if g := resourceKVRe.FindStringSubmatch(msg); g != nil {
		m.Resource = g[1]
	}
	return true
}

func matchNCCL(msg string, m *Match) bool {
	switch {
	case strings.Contains(msg, "Watchdog caught collective operation timeout"):
		m.Reason = ReasonNCCLTimeout
	case strings.Contains(msg, "remote process exited or there was a network error"), strings.Contains(msg, "ncclRemoteError"):
		m.Reason = ReasonNCCLRemoteError
	case strings.Contains(msg, "unhandled system error"), strings.Contains(msg, "ncclSystemError"):
		m.Reason = ReasonNCCLSystemError
	case strings.Contains(msg, "NCCL WARN") && containsAny(msg, []string{"Timeout", "timeout", "timed out"}):
		m.Reason = ReasonNCCLTimeout
	default:
		return false
	}
	m.Component = ComponentNCCL
	if strings.Contains(msg, "ank") {
		if g := rankRe.FindStringSubmatch(msg); g != nil {
			m.Rank = atoi(g[1] + g[2])
		}
	}
	if strings.Contains(msg, "] NCCL ") {
		if g := ncclPrefixRe.FindStringSubmatch(msg); g != nil {
			m.PID = atoi(g[1])
		}
	}
	return true
}

func matchConntrack(msg string, m *Match) bool {
	// net/netfilter/nf_conntrack_core.c: "nf_conntrack: table full,
	// dropping packet".
	if !strings.Contains(msg, "conntrack") || !strings.Contains(msg, "dropping packet") {
		return false
	}
	m.Reason = ReasonConntrackFull
	return true
}

func matchLink(msg string, m *Match) bool {
	var iface, state string
	if g := linkIsRe.FindStringSubmatch(msg); g != nil {
		iface, state = g[1], g[2]
	} else if g := linkMlxRe.FindStringSubmatch(msg); g != nil {
		iface, state = g[1], g[2]
	} else if g := linkBondRe.FindStringSubmatch(msg); g != nil {
		iface, state = g[1]+g[4], g[2]+g[3]
	} else {
		return false
	}
	m.Reason, m.Iface, m.PCI = ReasonLinkDown, iface, pci(msg)
	if strings.EqualFold(state, "up") {
		m.Reason, m.Normal = ReasonLinkUp, true
	}
	return true
}

// pci returns the first PCI address (0000:3b:00.0) in msg, lower case.
func pci(msg string) string {
	if g := pciRe.FindStringSubmatch(msg); g != nil {
		return strings.ToLower(g[1])
	}
	return ""
}

// atoi reads a non-negative decimal; 0 for anything else.
func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
