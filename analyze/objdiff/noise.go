package objdiff

import (
	"fmt"
	"strconv"
	"strings"
)

// noiseTable lists the fields Diff strips unless Options.KeepNoise is set:
// fields that change without the object changing in a way a user looks for
// when investigating an incident. Paths are in Change.Path syntax; [*] is
// every element of an array. A rule with a kind applies only to objects of
// that kind (read from the object's kind, or the other side's when one side
// lacks it).
//
// Kept on purpose, because they are signal:
//   - metadata.deletionTimestamp, metadata.deletionGracePeriodSeconds: the
//     object is being deleted.
//   - metadata.uid: a different uid is a different object (deleted and
//     recreated under the same name).
//   - the deployment.kubernetes.io/revision annotation: it numbers rollouts.
//     A Deployment's moves with each new pod template (and on a rollback), a
//     ReplicaSet's says which revision it runs. On a rollback the old
//     ReplicaSet's revision jumps to the newest number with no other change:
//     that annotation is the only trace of the rollback on the ReplicaSet.
//   - status.daemonEndpoints (Node): the kubelet's port changes only when the
//     kubelet is reconfigured.
//   - the status, reason and message of a condition: only its timestamps are
//     noise; a transition shows in status and reason.
var noiseTable = []struct {
	kind string // "" for every kind
	path string
	why  string
}{
	{"", "metadata.resourceVersion", "bumps on every write"},
	{"", "metadata.managedFields", "server-side apply bookkeeping: who last wrote which field, with a timestamp per write"},
	{"", "metadata.generation", "bumps on every spec write; the spec change itself is shown"},
	{"", "metadata.creationTimestamp", "fixed for an object's life; a recreation shows as a metadata.uid change"},
	{"", "metadata.selfLink", "derived from the name; deprecated and no longer set"},
	{"", `metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]`, "a copy of the applied spec; the spec's own changes are shown"},
	{"", "status.observedGeneration", "follows metadata.generation"},
	{"", "status.conditions[*].lastHeartbeatTime", "says only that the reporter is alive (Node conditions every few seconds)"},
	{"", "status.conditions[*].lastProbeTime", "says only that a probe ran"},
	{"", "status.conditions[*].lastTransitionTime", "moves with the condition's status, which is shown"},
	{"", "status.conditions[*].lastUpdateTime", "Deployment conditions: moves with every progress update, whose reason and message are shown"},
	{"Node", "status.images", "the node's image list churns with every pull and garbage collection"},
	{"Lease", "spec.renewTime", "the holder renewing its lease: a heartbeat (the holder itself, spec.holderIdentity, is kept)"},
}

// noiseRule is a compiled noiseTable entry.
type noiseRule struct {
	kind string
	path []pathSeg
}

var noiseRules = compileNoise()

func compileNoise() []noiseRule {
	rules := make([]noiseRule, len(noiseTable))
	for i, n := range noiseTable {
		p, err := parsePath(n.path)
		if err != nil || len(p) == 0 {
			panic(fmt.Sprintf("objdiff: noise table: %q: %v", n.path, err))
		}
		rules[i] = noiseRule{kind: n.kind, path: p}
	}
	return rules
}

// pathSeg is one step of a parsed path: a map key, an array index, or every
// element of an array ([*]).
type pathSeg struct {
	key   string
	index int // >= 0: an array index; -1: a map key; -2: [*]
}

const (
	segKey = -1
	segAll = -2
)

// parsePath parses the Change.Path syntax: key or .key for identifiers,
// ["key"] (Go-quoted) for other keys, [i] for array indexes and [*] for
// every element. The empty path is the root.
func parsePath(s string) ([]pathSeg, error) {
	var segs []pathSeg
	for i := 0; i < len(s); {
		switch {
		case s[i] == '[' && strings.HasPrefix(s[i:], "[*]"):
			segs = append(segs, pathSeg{index: segAll})
			i += 3
		case s[i] == '[' && i+1 < len(s) && s[i+1] == '"':
			q, err := strconv.QuotedPrefix(s[i+1:])
			if err != nil {
				return nil, fmt.Errorf("offset %d: %w", i+1, err)
			}
			key, _ := strconv.Unquote(q)
			i += 1 + len(q)
			if i >= len(s) || s[i] != ']' {
				return nil, fmt.Errorf("offset %d: want ]", i)
			}
			i++
			segs = append(segs, pathSeg{key: key, index: segKey})
		case s[i] == '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("offset %d: want ]", i)
			}
			n, err := strconv.Atoi(s[i+1 : i+end])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("offset %d: bad index %q", i+1, s[i+1:i+end])
			}
			segs = append(segs, pathSeg{index: n})
			i += end + 1
		default:
			if s[i] == '.' {
				if i == 0 {
					return nil, fmt.Errorf("offset 0: leading .")
				}
				i++
			} else if i > 0 {
				return nil, fmt.Errorf("offset %d: want . or [", i)
			}
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			if !isIdent(s[i:j]) {
				return nil, fmt.Errorf("offset %d: %q is not an identifier; quote it as [%q]", i, s[i:j], s[i:j])
			}
			segs = append(segs, pathSeg{key: s[i:j], index: segKey})
			i = j
		}
	}
	return segs, nil
}

// stripNoise removes the noise table's fields from two normalized objects
// (copies: Diff never strips its inputs).
func stripNoise(x, y map[string]any) {
	kx, ky := kindOf(x), kindOf(y)
	if kx == "" {
		kx = ky
	}
	if ky == "" {
		ky = kx
	}
	for _, r := range noiseRules {
		if r.kind == "" || r.kind == kx {
			strip(x, r.path)
		}
		if r.kind == "" || r.kind == ky {
			strip(y, r.path)
		}
	}
}

func kindOf(m map[string]any) string {
	k, _ := m["kind"].(string)
	return k
}

// strip deletes the value at path under v and reports whether it deleted
// anything. A map that stripping leaves empty is deleted too: the API server
// omits empty maps (annotations, status), so an object whose only annotation
// was last-applied-configuration and one without annotations are the same.
func strip(v any, path []pathSeg) bool {
	seg := path[0]
	switch n := v.(type) {
	case map[string]any:
		if seg.index != segKey {
			return false
		}
		child, ok := n[seg.key]
		if !ok {
			return false
		}
		if len(path) == 1 {
			delete(n, seg.key)
			return true
		}
		if !strip(child, path[1:]) {
			return false
		}
		if m, ok := child.(map[string]any); ok && len(m) == 0 {
			delete(n, seg.key)
		}
		return true
	case array:
		removed := false
		for i, e := range n {
			if seg.index == segAll || seg.index == i {
				if len(path) == 1 {
					continue // array elements are never deleted: that would renumber the rest
				}
				if strip(e, path[1:]) {
					removed = true
				}
			}
		}
		return removed
	}
	return false
}
