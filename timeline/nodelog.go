package timeline

// Reasons of node-log records (SourceNode): what one line of a node's own
// log reported. ingest/nodelogs makes them; the analyses read them.
const (
	NodeXid             = "Xid"             // an NVIDIA driver Xid error; Code is its number
	NodeECC             = "ECC"             // a GPU memory ECC error
	NodeRowRemap        = "RowRemap"        // a GPU memory row remapped or failing to
	NodeNVLink          = "NVLink"          // an NVLink error
	NodePLEG            = "PLEG"            // the kubelet's pod lifecycle event generator stalled
	NodeKubeletEviction = "KubeletEviction" // the kubelet's eviction manager reclaiming
	NodeOOMKill         = "OOMKill"         // the kernel's OOM killer killed a process
	NodeNCCLTimeout     = "NCCLTimeout"     // a collective timed out (NCCL, PyTorch watchdog)
	NodeNCCLSystemError = "NCCLSystemError" // NCCL "unhandled system error"
	NodeNCCLRemoteError = "NCCLRemoteError" // NCCL "remote process exited or there was a network error"
	NodeConntrackFull   = "ConntrackFull"   // nf_conntrack table full, packets dropped
	NodeLinkDown        = "LinkDown"        // a network link went down
	NodeLinkUp          = "LinkUp"          // a network link came up
)

// NodeFaults are the node-log reasons that report a fault of the node: a
// record of one of them with Type "Warning" is a bad observation of its
// node. (A link coming up and a corrected ECC error are "Normal"; the
// NodeConsequences are not the node's.)
var NodeFaults = []string{NodeXid, NodeECC, NodeRowRemap, NodeNVLink, NodePLEG, NodeKubeletEviction,
	NodeOOMKill, NodeNCCLSystemError, NodeConntrackFull, NodeLinkDown}

// NodeConsequences are the node-log reasons that report what another
// fault did to a job rather than a fault of the node they were logged on:
// a collective that timed out or lost a peer fails on every rank once one
// rank is gone. They stay in the timeline, as what the job said; they are
// no bad observation of the node and never a suspect.
var NodeConsequences = []string{NodeNCCLTimeout, NodeNCCLRemoteError}
