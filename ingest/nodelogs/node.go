package nodelogs

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// NodeNameError is a node name that is no valid Kubernetes node name, or
// that names a log rather than a node: the file's records could not be
// tied to their node.
type NodeNameError struct {
	Path    string // the file, as in messages; "" for the option's node
	Name    string // the name found
	From    string // where it was found: "the option", "its folder", "its file name", "_HOSTNAME"
	Problem string
}

func (e *NodeNameError) Error() string {
	msg := fmt.Sprintf("node name %q (from %s) %s", e.Name, e.From, e.Problem)
	if e.Path == "" {
		return msg
	}
	return e.Path + ": " + msg
}

// Where a file's node name comes from.
const (
	fromOption   = "the option"
	fromFolder   = "its folder"
	fromFileName = "its file name"
	fromHostname = "_HOSTNAME"
)

// logNames are base names of logs, not of nodes: /var/log/kern.log is no
// node "kern".
var logNames = []string{"dmesg", "kern", "kernel", "syslog", "messages", "journal", "kubelet", "containerd", "log", "logs", "output", "stdout", "stderr", "-"}

// CheckNodeName returns why name is no valid Kubernetes node name (a
// DNS-1123 subdomain: lower case alphanumerics, '-' and '.', at most 253
// characters), or "".
func CheckNodeName(name string) string {
	if name == "" {
		return "is empty"
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "is not a valid Kubernetes node name: " + strings.Join(errs, "; ")
	}
	return ""
}

// fileNode names the node of a file: the option's node; else, for a file
// found below a folder (root), the first folder below it (ROOT/NODE/...);
// else the file's base name up to its first '.' (gpu-0086.dmesg,
// gpu-0086.journal.json.gz). slash says that p and root are
// slash-separated (names of an fs.FS).
func fileNode(opt Options, p, root string, slash bool) (node, from string) {
	if opt.Node != "" {
		return opt.Node, fromOption
	}
	base, rel := filepath.Base, relBelow(p, root, slash)
	if slash {
		base = path.Base
	}
	if first, _, ok := strings.Cut(rel, "/"); ok && first != "" {
		return first, fromFolder
	}
	name, _, _ := strings.Cut(base(p), ".")
	return name, fromFileName
}

// relBelow is p relative to root, slash-separated, or "" when root is
// unset or p is not below it.
func relBelow(p, root string, slash bool) string {
	if root == "" {
		return ""
	}
	if slash {
		rel, ok := strings.CutPrefix(p, strings.TrimSuffix(root, "/")+"/")
		if !ok {
			return ""
		}
		return rel
	}
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	return filepath.ToSlash(rel)
}

// checkFileNode refuses a file's node name that is invalid or names a log.
func checkFileNode(file, node, from string) error {
	if p := CheckNodeName(node); p != "" {
		return &NodeNameError{Path: file, Name: node, From: from, Problem: p + ": name the node"}
	}
	if from == fromFileName && slices.Contains(logNames, node) {
		return &NodeNameError{Path: file, Name: node, From: from, Problem: "names a log, not a node: name the node, or put the file in a folder named after it"}
	}
	return nil
}

// hostNode is the node named by a journal entry's _HOSTNAME: kubelet
// names its node by the host name in lower case
// (k8s.io/component-helpers/node/util.GetHostname).
func hostNode(hostname string) (string, error) {
	node := strings.ToLower(strings.TrimSpace(hostname))
	if p := CheckNodeName(node); p != "" {
		return "", &FieldError{Field: "_HOSTNAME", Problem: fmt.Sprintf("%q %s", hostname, p)}
	}
	return node, nil
}
