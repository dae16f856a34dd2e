package nodelogs

import "slices"

// Xid is what NVIDIA documents about one Xid code: what it means, where
// the fault usually lies, and what to do about it.
type Xid struct {
	Code    int
	Meaning string // NVIDIA's description of the code
	// Origin is where the fault usually lies, by NVIDIA's list of causes:
	// "application" (the program's own fault: the GPU stays healthy),
	// "driver" (the driver or the GPU's firmware) or "hardware" (the GPU,
	// its memory, links or bus). "unknown" for a code not in the table.
	Origin string
	Action string // what NVIDIA recommends
}

// Origins of an Xid.
const (
	OriginApplication = "application"
	OriginDriver      = "driver"
	OriginHardware    = "hardware"
	OriginUnknown     = "unknown"
)

// xids are the codes faultline knows. The meanings are NVIDIA's ("Xid
// Errors", https://docs.nvidia.com/deploy/xid-errors/index.html, the table
// of codes with their possible causes); the actions follow NVIDIA's Xid
// catalog (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html,
// its immediate and investigatory resolution buckets) and, for the memory
// codes, "GPU Memory Error Management"
// (https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html).
// docs/nodelogs.md gives the source of each row.
var xids = map[int]Xid{
	13: {13, "Graphics Engine Exception", OriginApplication,
		"restart the application and debug it; if it recurs with an unchanged application, run DCGM diagnostics (dcgmi diag -r 3) to rule out the GPU"},
	31: {31, "GPU memory page fault", OriginApplication,
		"restart the application and debug its memory accesses (an illegal address); suspect the driver only if it began with a driver change"},
	43: {43, "GPU stopped processing", OriginApplication,
		"restart the application: it faulted, the GPU stays healthy and needs no reset"},
	45: {45, "Preemptive cleanup, due to previous errors", OriginDriver,
		"none by itself: the driver tore down the channels of a process that ended or hit an earlier error; look at the Xid or kill before it"},
	48: {48, "Double Bit ECC Error", OriginHardware,
		"drain the GPU's work and reset the GPU; Xid 63 or 64 after it says whether the row was remapped; if it recurs, run DCGM diagnostics and RMA"},
	61: {61, "Internal micro-controller breakpoint/warning", OriginDriver,
		"reset the GPU (or reboot the node); contact NVIDIA support if it recurs"},
	62: {62, "Internal micro-controller halt", OriginHardware,
		"drain the node and reset the GPU (reboot if the reset fails); check cooling; contact NVIDIA support if it recurs"},
	63: {63, "ECC page retirement or row remapping recording event", OriginHardware,
		"no urgency: reset the GPU when its work allows, to activate the remapped row (nvidia-smi -q -d ROW_REMAPPER shows it pending)"},
	64: {64, "ECC page retirement or row remapper recording failure", OriginHardware,
		"drain the node and reset the GPU; the memory could not be repaired: RMA the GPU if it recurs"},
	74: {74, "NVLink Error", OriginHardware,
		"drain the node and reset the GPUs on the link; check its counters (nvidia-smi nvlink -e) and the seating; RMA if it persists"},
	79: {79, "GPU has fallen off the bus", OriginHardware,
		"drain the node, then reset or reseat the GPU (usually a reboot); check PCIe, power and cooling; RMA if it recurs"},
	92: {92, "High single-bit ECC error rate", OriginHardware,
		"corrected errors: keep running, reset the GPU at a convenient time; RMA if the rate stays high"},
	94: {94, "Contained ECC error", OriginHardware,
		"restart the application that hit it (the others on the GPU are unaffected); reset the GPU when convenient to remap the row"},
	95: {95, "Uncontained ECC error", OriginHardware,
		"every application on the GPU is affected: drain the node and reset the GPU; RMA if it recurs"},
	119: {119, "GSP RPC Timeout", OriginDriver,
		"reset the GPU or reboot the node; if it recurs, collect nvidia-bug-report and update the driver"},
	120: {120, "GSP Error", OriginDriver,
		"reset the GPU or reboot the node; if it recurs, collect nvidia-bug-report and update the driver"},
}

// LookupXid returns what is known of an Xid code; a code not in the table
// has an empty meaning and origin "unknown".
func LookupXid(code int) Xid {
	if x, ok := xids[code]; ok {
		return x
	}
	return Xid{Code: code, Origin: OriginUnknown}
}

// XidCodes lists the codes with a documented meaning, ascending.
func XidCodes() []int {
	codes := make([]int, 0, len(xids))
	for c := range xids {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	return codes
}
