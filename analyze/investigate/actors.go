package investigate

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/actor"
	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/timeline"
)

// scope names, for every suspect, who made the change (the user and user
// agent of the audit record that wrote the version) and, for the leading
// node changes, every node that made the same change in the window (not
// only those the bad units ran on) and the label selector that matches
// exactly them.
func scope(ctx context.Context, s Store, sps []Suspect, since, until time.Time) error {
	var nodes []timeline.ObjectVersion
	var nodeChanges []identity.ObjectChange
	loadNodes := func() error {
		if nodes != nil {
			return nil
		}
		var err error
		if nodes, err = s.Versions(ctx, timeline.VersionQuery{Resource: "nodes"}); err != nil {
			return err
		}
		refs := make([]identity.Ref, len(nodes))
		for i, n := range nodes {
			refs[i] = identity.Ref{Kind: "Node", Name: n.Object.Name}
		}
		nodeChanges, err = identity.Changes(ctx, s, refs, since, until)
		return err
	}
	for i := range sps {
		sp := &sps[i]
		if err := actorOf(ctx, s, sp); err != nil {
			return err
		}
		if i >= maxScoped || !strings.HasPrefix(sp.Ref, "Node/") || sp.Kind != "change" {
			continue
		}
		if err := loadNodes(); err != nil {
			return err
		}
		hit := sp.refs                    // the nodes the bad units ran on
		if !nodeCondition(sp.Dimension) { // every node that made the same change
			var same []string
			for _, c := range nodeChanges {
				if c.Dimension == sp.Dimension && c.From == sp.From && c.To == sp.To {
					same = append(same, c.Ref)
				}
			}
			if len(same) > 0 {
				sp.refs, sp.Objects = same, len(same)
			}
		}
		if sp.Objects > 1 {
			sp.Selector = selectorOf(sp.refs, nodes)
			if sp.Selector == "" {
				sp.Selector = selectorWithin(hit, sp.refs, nodes)
			}
		}
	}
	return nil
}

// selectorWithin is the widest node label whose holders all made the
// change and include every node where the harm was (hit): the scope of
// the change as it did harm, when the same change was also made elsewhere
// (a cordon of a few other nodes beside a zone's drain). "" when none.
func selectorWithin(hit, changed []string, nodes []timeline.ObjectVersion) string {
	in := map[string]bool{}
	for _, r := range changed {
		in[strings.TrimPrefix(r, "Node/")] = true
	}
	labels := nodeLabels(nodes)
	count := map[string]int{} // key=value -> holders, all of them changed
	ok := map[string]bool{}
	for n, l := range labels {
		for k, v := range l {
			kv := k + "=" + v
			if _, seen := ok[kv]; !seen {
				ok[kv] = true
			}
			count[kv]++
			if !in[n] {
				ok[kv] = false
			}
		}
	}
	best := ""
	for kv, good := range ok {
		if !good || strings.HasPrefix(kv, "kubernetes.io/hostname=") {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		covers := true
		for _, r := range hit {
			if labels[strings.TrimPrefix(r, "Node/")][k] != v {
				covers = false
				break
			}
		}
		if covers && (best == "" || count[kv] > count[best] || (count[kv] == count[best] && kv < best)) {
			best = kv
		}
	}
	return best
}

// maxScoped is how many suspects get their scope looked up.
const maxScoped = 10

// actorOf finds the audit record that wrote the suspect's version: the one
// with its evidence (run and line), near its time.
func actorOf(ctx context.Context, s Store, sp *Suspect) error {
	if sp.Kind != "change" || sp.Run == 0 || sp.At.IsZero() || sp.restart != nil {
		return nil
	}
	a, err := actor.At(ctx, s, timeline.Evidence{Run: sp.Run, Line: sp.Line}, sp.At)
	if err != nil {
		return err
	}
	if a.Known() {
		sp.By, sp.UserAgent = a.By, a.UserAgent
	}
	return nil
}

// selectorOf is "key=value" for the node label whose holders are exactly
// the given nodes ("Node/NAME"); when several are, the one that names the
// nodes' place (placeRank), then the shortest key; "" when no label names
// that set.
func selectorOf(refs []string, nodes []timeline.ObjectVersion) string {
	want := map[string]bool{}
	for _, r := range refs {
		want[strings.TrimPrefix(r, "Node/")] = true
	}
	labels := nodeLabels(nodes)
	// Candidate labels: those every changed node holds with one value.
	var first map[string]string
	for n := range want {
		first = labels[n]
		break
	}
	var cands []string
	for k, v := range first {
		if k == "kubernetes.io/hostname" {
			continue
		}
		all := true
		for n := range want {
			if labels[n][k] != v {
				all = false
				break
			}
		}
		if !all {
			continue
		}
		exact := true
		for n, l := range labels {
			if l[k] == v && !want[n] {
				exact = false
				break
			}
		}
		if exact {
			cands = append(cands, k+"="+v)
		}
	}
	keyLen := func(s string) int { return strings.Index(s, "=") }
	sort.Slice(cands, func(i, j int) bool {
		if pi, pj := placeRank(cands[i][:keyLen(cands[i])]), placeRank(cands[j][:keyLen(cands[j])]); pi != pj {
			return pi < pj
		}
		if keyLen(cands[i]) != keyLen(cands[j]) {
			return keyLen(cands[i]) < keyLen(cands[j])
		}
		return cands[i] < cands[j]
	})
	if len(cands) == 0 {
		return ""
	}
	return cands[0]
}

// nodeLabels are the nodes' labels, by name.
func nodeLabels(nodes []timeline.ObjectVersion) map[string]map[string]string {
	labels := map[string]map[string]string{}
	for _, v := range nodes {
		var m struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(v.Content, &m); err == nil {
			labels[v.Object.Name] = m.Metadata.Labels
		}
	}
	return labels
}

// placeRank orders node labels by how plainly they name where the nodes
// are, as an operator acts on them: a pool, a zone or region, a rack, then
// any other label (a cost center, a team) that happens to hold the same
// nodes.
func placeRank(key string) int {
	switch {
	case identity.PoolLabel(key):
		return 0
	case key == "topology.kubernetes.io/zone" || key == "topology.kubernetes.io/region":
		return 1
	case key == "rack" || strings.HasSuffix(key, "/rack"):
		return 2
	}
	return 3
}
