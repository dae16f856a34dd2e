package investigate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/faultline/faultline/timeline"
)

// This file turns mitigations into commands to paste: Action.Command, the
// kubectl command line that applies the step, and Action.Verify, the one
// that shows it worked. Every command is built here, from the action's
// suspect, so that advise decides what to do and this file only how to
// say it to kubectl. A step no single command applies (a code change, a
// node's kernel) has no Command; the text says so.

// placeholder is a value the evidence does not hold, for the user to fill
// in: kubectl refuses it as it stands, so a paste cannot apply it by
// mistake.
func placeholder(what string) string { return "<" + what + ">" }

// splitRef splits "Kind/NAMESPACE/NAME" or "Kind/NAME".
func splitRef(ref string) (kind, ns, name string) {
	parts := strings.SplitN(ref, "/", 3)
	switch len(parts) {
	case 3:
		return parts[0], parts[1], parts[2]
	case 2:
		return parts[0], "", parts[1]
	}
	return "", "", ref
}

// shellSafe are the words a POSIX shell reads as they are.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote quotes s for a POSIX shell: as it is when nothing in it is
// special, else in single quotes, a single quote in s written '\”.
func shellQuote(s string) string {
	if s != "" && shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// command joins a command's words, each quoted for the shell. A
// placeholder stays as it is: it is meant to be replaced, and a shell
// reading it unreplaced fails (a redirection from a missing file) before
// kubectl runs.
func command(words ...string) string {
	out := make([]string, len(words))
	for i, w := range words {
		if strings.HasPrefix(w, "<") && strings.HasSuffix(w, ">") && !strings.ContainsAny(w[1:len(w)-1], "<>'") {
			out[i] = w
			continue
		}
		out[i] = shellQuote(w)
	}
	return strings.Join(out, " ")
}

// nsArgs is "-n NS", or nothing for a cluster-scoped object.
func nsArgs(ns string) []string {
	if ns == "" {
		return nil
	}
	return []string{"-n", ns}
}

// mergePatch is the JSON merge patch {"data":{key:value}} (a null value
// removes the key), written without HTML escaping so that it reads as
// typed.
func mergePatch(field, key string, value *string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	var v any
	if value != nil {
		v = *value
	}
	_ = enc.Encode(map[string]map[string]any{field: {key: v}}) // strings and null always encode
	return strings.TrimSuffix(b.String(), "\n")
}

// hashed says whether a stored value is a hash, not the value itself.
func hashed(v string) bool {
	return strings.HasPrefix(v, "sha256:") || strings.HasPrefix(v, "hmac-sha256:")
}

// restoreKeyCommand restores one key of a ConfigMap or Secret to its
// previous value: a merge patch of data (stringData for a Secret, so the
// value is written as it reads), or the key's removal when it did not
// exist before. It says whether the previous value is in the command;
// when only its hash was stored, a placeholder stands for it.
func restoreKeyCommand(kind, ns, name, key, prev string) (cmd string, known bool) {
	resource, field := "configmap", "data"
	if kind == "Secret" {
		resource, field = "secret", "stringData"
	}
	var value *string
	switch {
	case prev == "":
		// The key is new: removing it restores the object.
		value, known = nil, true
	case kind == "Secret" || hashed(prev):
		v := placeholder("previous value of " + key)
		value = &v
	default:
		value, known = &prev, true
	}
	patch := mergePatch(field, key, value)
	if value == nil && kind == "Secret" {
		patch = mergePatch("data", key, nil)
	}
	words := append([]string{"kubectl", "patch", resource, name}, nsArgs(ns)...)
	words = append(words, "--type", "merge", "-p", patch)
	return command(words...), known
}

// jsonpathKey writes a map key as a kubectl jsonpath step: dots escaped.
func jsonpathKey(key string) string { return strings.ReplaceAll(key, ".", `\.`) }

// getKeyCommand shows one key of a ConfigMap (a Secret's value is never
// shown: its keys are listed instead).
func getKeyCommand(kind, ns, name, key string) string {
	if kind == "Secret" {
		return command(append([]string{"kubectl", "describe", "secret", name}, nsArgs(ns)...)...)
	}
	words := append([]string{"kubectl", "get", "configmap", name}, nsArgs(ns)...)
	return command(append(words, "-o", "jsonpath={.data."+jsonpathKey(key)+"}")...)
}

// workloadResource is kubectl's name for a workload kind; "" for kinds
// whose template cannot be rolled back.
func workloadResource(kind string) string {
	switch kind {
	case "Deployment", "StatefulSet", "DaemonSet":
		return strings.ToLower(kind)
	}
	return ""
}

// rolloutUndoCommand rolls a workload back: to revision rev when it is
// known (> 0), else to the previous one.
func rolloutUndoCommand(kind, ns, name string, rev int) string {
	words := append([]string{"kubectl", "rollout", "undo", workloadResource(kind) + "/" + name}, nsArgs(ns)...)
	if rev > 0 {
		words = append(words, "--to-revision="+strconv.Itoa(rev))
	}
	return command(words...)
}

// rolloutStatusCommand waits for a workload's rollout to finish.
func rolloutStatusCommand(kind, ns, name string) string {
	return command(append([]string{"kubectl", "rollout", "status", strings.ToLower(kind) + "/" + name}, nsArgs(ns)...)...)
}

// setImageCommand sets one container's image.
func setImageCommand(kind, ns, name, container, image string) string {
	words := append([]string{"kubectl", "set", "image", strings.ToLower(kind) + "/" + name}, nsArgs(ns)...)
	return command(append(words, container+"="+image)...)
}

// nodeArgs names nodes: by their selector when they have one (a fleet
// change is acted on as a whole, never through one arbitrary member), else
// each by name.
func nodeArgs(selector string, refs []string) []string {
	if selector != "" {
		return []string{"-l", selector}
	}
	var names []string
	for _, r := range refs {
		names = append(names, strings.TrimPrefix(r, "Node/"))
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// nodesCommand is kubectl VERB [nodes] on the nodes, then the rest.
func nodesCommand(verb string, selector string, refs []string, rest ...string) string {
	words := []string{"kubectl", verb}
	if verb != "cordon" && verb != "uncordon" {
		words = append(words, "nodes")
	}
	words = append(words, nodeArgs(selector, refs)...)
	return command(append(words, rest...)...)
}

// getNodesCommand lists the nodes, with a label's column when one is
// named.
func getNodesCommand(selector string, refs []string, label string) string {
	words := append([]string{"kubectl", "get", "nodes"}, nodeArgs(selector, refs)...)
	if label != "" {
		words = append(words, "-L", label)
	}
	return command(words...)
}

// taintChanges are the kubectl taint arguments that take a node's taints
// from "to" back to "from" (each a sorted "key[=value]:effect" list, as
// identity writes node.taints): the taints added removed (key:effect-),
// the taints removed added back.
func taintChanges(from, to string) []string {
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	was, now := split(from), split(to)
	var args []string
	for _, t := range now {
		if !slices.Contains(was, t) {
			k, effect, _ := strings.Cut(t, ":")
			k, _, _ = strings.Cut(k, "=")
			args = append(args, k+":"+effect+"-")
		}
	}
	for _, t := range was {
		if !slices.Contains(now, t) {
			args = append(args, t)
		}
	}
	return args
}

// nodeRollback undoes a node change on the nodes that made it: a label
// set back (or removed when it was new), the taints added removed, a
// cordon lifted. "" for node dimensions kubectl cannot set.
func nodeRollback(sp Suspect) (cmd, verify string) {
	switch {
	case strings.HasPrefix(sp.Dimension, "node.label/"):
		key := strings.TrimPrefix(sp.Dimension, "node.label/")
		arg := key + "=" + sp.From
		if sp.From == "" {
			arg = key + "-"
		}
		return nodesCommand("label", sp.Selector, sp.refs, arg, "--overwrite"), getNodesCommand(sp.Selector, sp.refs, key)
	case sp.Dimension == "node.taints":
		args := taintChanges(sp.From, sp.To)
		if len(args) == 0 {
			return "", ""
		}
		return nodesCommand("taint", sp.Selector, sp.refs, args...),
			command(append(append([]string{"kubectl", "get", "nodes"}, nodeArgs(sp.Selector, sp.refs)...), "-o", "custom-columns=NAME:.metadata.name,TAINTS:.spec.taints[*].key")...)
	case sp.Dimension == "node.unschedulable":
		return nodesCommand("uncordon", sp.Selector, sp.refs), getNodesCommand(sp.Selector, sp.refs, "")
	}
	return "", ""
}

// revisionOf is the rollout revision of a Deployment whose template ran
// image in container: the deployment.kubernetes.io/revision annotation of
// the latest version of the Deployment's ReplicaSet with that image; 0
// when the timeline holds none.
func revisionOf(ctx context.Context, s Store, ns, deployment, container, image string) (int, error) {
	vs, err := s.Versions(ctx, timeline.VersionQuery{Group: "apps", Resource: "replicasets", Namespace: ns})
	if err != nil {
		return 0, err
	}
	best := 0
	for _, v := range vs {
		var rs struct {
			Metadata struct {
				Annotations     map[string]string `json:"annotations"`
				OwnerReferences []struct {
					Kind, Name string
				} `json:"ownerReferences"`
			} `json:"metadata"`
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct{ Name, Image string } `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if json.Unmarshal(v.Content, &rs) != nil {
			continue
		}
		owned := false
		for _, o := range rs.Metadata.OwnerReferences {
			owned = owned || (o.Kind == "Deployment" && o.Name == deployment)
		}
		ran := false
		for _, c := range rs.Spec.Template.Spec.Containers {
			ran = ran || (c.Name == container && c.Image == image)
		}
		if !owned || !ran {
			continue
		}
		if n, err := strconv.Atoi(rs.Metadata.Annotations["deployment.kubernetes.io/revision"]); err == nil && n > best {
			best = n
		}
	}
	return best, nil
}

// undoRevision finds, for a leading suspect that changed a Deployment's
// image, the revision that ran the image before (revisionOf), for advise.
func undoRevision(ctx context.Context, s Store, rep *Report) error {
	if len(rep.Changes) == 0 {
		return nil
	}
	top := rep.Changes[0]
	kind, ns, name := splitRef(top.Ref)
	if kind != "Deployment" || !strings.HasPrefix(top.Dimension, "image.tag/") || top.From == "" {
		return nil
	}
	rev, err := revisionOf(ctx, s, ns, name, strings.TrimPrefix(top.Dimension, "image.tag/"), top.From)
	if err != nil {
		return fmt.Errorf("revision of %s: %w", top.Ref, err)
	}
	rep.undoRev = rev
	return nil
}

// objectCommand runs a kubectl verb (get, delete) on one object.
func objectCommand(verb, kind, ns, name string) string {
	return command(append([]string{"kubectl", verb, strings.ToLower(kind) + "/" + name}, nsArgs(ns)...)...)
}
