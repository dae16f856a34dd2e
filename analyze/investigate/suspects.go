package investigate

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
)

// suspects ranks the changes that could explain the slice. Two sources:
//
//   - changes in time: the identity dimensions of the objects the bad
//     units ran on (their ConfigMaps, Secrets, nodes, owners) that changed
//     before the first bad observation;
//   - differences: the dimensions in which the bad slice differs from its
//     known-good counterexample (a digest pulled anew, a node's driver),
//     which no object's history need show.
//
// Each is scored on the investigator's three questions: did it come
// before the first bad? does the bad slice hold the new value? does the
// counterexample lack it?
func suspects(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension,
	rep *Report, typ map[string]string, firstBad, since time.Time) ([]Suspect, error) {
	if rep.Slice == nil {
		return []Suspect{}, nil
	}
	where := rep.Slice.Where
	var good map[string]identity.Dimension
	if ce := rep.Counterexample; ce != nil {
		for i, u := range units {
			if u.Ref == ce.Ref {
				good = ids[i]
			}
		}
	}
	// Objects the bad units of the slice ran on, and their owners.
	refSet := map[identity.Ref]bool{}
	owners := map[string]bool{}
	nbad := 0
	for i, u := range units {
		if !u.Bad() || !matches(ids[i], where) {
			continue
		}
		nbad++
		for _, d := range ids[i] {
			if r, err := identity.ParseRef(d.Evidence.Ref, ""); err == nil && r.Kind != "Pod" {
				refSet[r] = true
			} else if strings.HasPrefix(d.Evidence.Ref, "ConfigMap/") || strings.HasPrefix(d.Evidence.Ref, "Secret/") {
				parts := strings.SplitN(d.Evidence.Ref, "/", 3)
				if len(parts) == 3 {
					refSet[identity.Ref{Kind: parts[0], Namespace: parts[1], Name: parts[2]}] = true
				}
			}
			if strings.HasPrefix(d.Name, "owner/") && !strings.Contains(d.Name, ".") {
				owners[strings.TrimPrefix(d.Name, "owner/")+"/"+d.Value] = true
			}
		}
	}
	refs := make([]identity.Ref, 0, len(refSet))
	for r := range refSet {
		refs = append(refs, r)
	}
	changes, err := identity.Changes(ctx, s, refs, since, firstBad)
	if err != nil {
		return nil, err
	}

	type key struct{ dim, from, to string }
	byKey := map[key]*Suspect{}
	var order []key
	add := func(k key, ref string, at time.Time, run, line int64, observed bool) {
		sp := byKey[k]
		if sp == nil {
			sp = &Suspect{Ref: ref, Dimension: k.dim, From: k.from, To: k.to, At: at, Run: run, Line: line, Kind: "change"}
			if !observed {
				sp.Kind = "difference"
			}
			byKey[k] = sp
			order = append(order, k)
		}
		sp.Objects++
		if observed && (sp.At.IsZero() || at.Before(sp.At)) {
			sp.At, sp.Run, sp.Line = at, run, line
		}
	}
	for _, c := range changes {
		add(key{c.Dimension, c.From, c.To}, c.Ref, c.When, c.Evidence.Run, c.Evidence.Line, true)
	}
	// Differences from the counterexample, in content (not names).
	if ce := rep.Counterexample; ce != nil {
		for _, d := range ce.Differs {
			// Only a different value is a contrast: a counterexample that does
			// not use the object at all (another job's ConfigMap) says nothing.
			if d.Bad == "" || d.Good == "" || !contentDim(d.Dimension) {
				continue
			}
			// When the bad value was first seen in a bad unit.
			var at time.Time
			var run, line int64
			ref := ""
			for i, u := range units {
				dd, ok := ids[i][d.Dimension]
				if !u.Bad() || !ok || dd.Value != d.Bad {
					continue
				}
				if at.IsZero() || dd.Evidence.Time.Before(at) {
					at, run, line, ref = dd.Evidence.Time, dd.Evidence.Run, dd.Evidence.Line, dd.Evidence.Ref
				}
			}
			k := key{d.Dimension, d.Good, d.Bad}
			if sp := byKey[k]; sp != nil {
				continue // already seen changing in time
			}
			if o := ownerOf(typ, rep.ns); o != "" {
				ref = o
			}
			add(k, ref, at, run, line, false)
			byKey[k].Objects = 0
		}
	}

	out := make([]Suspect, 0, len(order))
	for _, k := range order {
		sp := *byKey[k]
		var why []string
		score := 0.0
		inTime := !sp.At.IsZero() && !sp.At.After(firstBad)
		if k.dim == "created" {
			// A new owner of the bad units: its arrival is the change.
			if owners[strings.TrimPrefix(sp.Ref, sp.To+"/")] || ownsBad(sp.Ref, owners) {
				score += 2
				why = append(why, fmt.Sprintf("created %s before the first bad; the bad units are its pods", ago(sp.At, firstBad)))
			} else {
				continue // objects created along the way explain nothing
			}
		} else {
			if sp.Kind == "difference" {
				why = append(why, "the bad slice differs from the counterexample in it (first seen "+ts(sp.At, firstBad)+")")
			} else if inTime {
				score += 1
				why = append(why, fmt.Sprintf("changed %s before the first bad", ago(sp.At, firstBad)))
			} else {
				continue // changed after the first bad: a consequence, not a cause
			}
			if typ[k.dim] == k.to && k.to != "" {
				score += 2
				why = append(why, fmt.Sprintf("the bad slice (%d units) holds the new value", nbad))
			}
			if _, ok := where[k.dim]; ok {
				score += 1
			}
			if good != nil {
				if g, ok := good[k.dim]; ok && g.Value == k.to {
					score -= 2
					why = append(why, "but the counterexample holds it too")
				} else {
					score += 1
					why = append(why, "the counterexample does not")
				}
			}
		}
		if sp.Objects > 1 {
			why = append(why, fmt.Sprintf("%d objects made this change", sp.Objects))
		}
		sp.Score = score
		sp.Why = strings.Join(why, "; ")
		out = append(out, sp)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		// Nearer the first bad first.
		return firstBad.Sub(out[i].At) < firstBad.Sub(out[j].At)
	})
	const maxSuspects = 20
	if len(out) > maxSuspects {
		out = out[:maxSuspects]
	}
	for i := range out {
		out[i].Rank = i + 1
	}
	return out, nil
}

// contentDim says whether a dimension is content a unit ran with (a
// digest, a config hash, a node's identity, an artifact), as opposed to a
// name that merely tells units apart.
func contentDim(name string) bool {
	switch {
	case strings.HasPrefix(name, "owner/"):
		return strings.HasSuffix(name, ".podTemplateHash") || strings.HasSuffix(name, ".controllerRevision")
	case name == "node" || name == "rank" || name == "run":
		return false
	}
	return true
}

// ownerOf is the top owner of the bad slice, Kind/namespace/name.
func ownerOf(typ map[string]string, ns string) string {
	for _, k := range []string{"Deployment", "StatefulSet", "DaemonSet", "MPIJob", "PyTorchJob", "JobSet", "Job", "ReplicaSet"} {
		if v := typ["owner/"+k]; v != "" {
			return k + "/" + ns + "/" + v
		}
	}
	return ""
}

func ownsBad(ref string, owners map[string]bool) bool {
	parts := strings.Split(ref, "/")
	if len(parts) < 2 {
		return false
	}
	return owners[parts[0]+"/"+parts[len(parts)-1]]
}

// ts says when, relative to the first bad.
func ts(at, firstBad time.Time) string {
	switch d := firstBad.Sub(at); {
	case d > 0:
		return ago(at, firstBad) + " before the first bad"
	case d < 0:
		return ago(firstBad, at) + " after the first bad"
	}
	return "with the first bad"
}

func ago(at, t time.Time) string {
	d := t.Sub(at)
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// advise turns the findings into mitigation (what to undo, to which
// last-known-good identity) and, apart, the confirmation the
// counterexample allows.
func advise(rep *Report) (mit []Action, conf []string) {
	mit, conf = []Action{}, []string{}
	// A gang job whose first rank died of its own cause explains the
	// avalanche; the job's arrival (a "created" suspect) then does not.
	gangExplains := false
	for _, g := range rep.Gangs {
		gangExplains = gangExplains || (g.Distinct && g.Cascade > 0)
	}
	if len(rep.Changes) > 0 && rep.Changes[0].Score > 0 && !(gangExplains && rep.Changes[0].Dimension == "created") {
		top := rep.Changes[0]
		switch {
		case strings.HasPrefix(top.Dimension, "configmap/") || strings.HasPrefix(top.Dimension, "secret/"):
			kind := "ConfigMap"
			if strings.HasPrefix(top.Dimension, "secret/") {
				kind = "Secret"
			}
			parts := strings.SplitN(top.Dimension, "/", 3)
			target := top.Ref
			if !strings.HasPrefix(target, kind+"/") {
				target = kind + "/" + parts[1]
			}
			key := ""
			if len(parts) == 3 {
				key = " key " + parts[2]
			}
			mit = append(mit, Action{Action: "rollback", Target: target, To: top.From,
				Why: fmt.Sprintf("restore%s to its last-known-good content", key)})
		case strings.HasPrefix(top.Dimension, "node."):
			target := top.Ref
			if p := rep.typical["node.pool"]; p != "" {
				target = "node.pool=" + p
			}
			mit = append(mit, Action{Action: "cordon", Target: target,
				Why: "stop new work landing where " + top.Dimension + "=" + top.To})
			if top.From != "" {
				mit = append(mit, Action{Action: "set", Target: target + " " + strings.TrimPrefix(top.Dimension, "node.label/"), To: top.From,
					Why: "back to the last-known-good node identity"})
			}
		case strings.HasPrefix(top.Dimension, "image.digest/"):
			repo := ""
			if tag := typTag(rep, strings.TrimPrefix(top.Dimension, "image.digest/")); tag != "" {
				repo = imageRepo(tag)
			}
			mit = append(mit, Action{Action: "set", Target: top.Ref + " image", To: repo + "@" + top.From,
				Why: "pin the last-known-good digest: the tag now points at " + top.To})
		case strings.HasPrefix(top.Dimension, "image.tag/"):
			mit = append(mit, Action{Action: "rollback", Target: top.Ref + " image", To: top.From,
				Why: "back to the last-known-good image"})
		case top.Dimension == "created":
			mit = append(mit, Action{Action: "set", Target: top.Ref + " start", To: "jittered or rate-limited start",
				Why: "its arrival is the change: spread its units' start over a window (see faultline controlplane)"},
				Action{Action: "set", Target: top.Ref + " reads", To: "namespace- and label-scoped reads from the watch cache or a shared informer",
					Why: "what each unit reads at start is multiplied by the number of units"})
		default:
			mit = append(mit, Action{Action: "rollback", Target: top.Ref, To: top.From,
				Why: "undo " + top.Dimension + " to its last-known-good value"})
		}
	}
	for _, g := range rep.Gangs {
		if g.Distinct && g.Cascade > 0 {
			what := ""
			if g.First.Reason == "OOMKilled" {
				what = " memory"
			}
			owner := g.Owner
			if parts := strings.SplitN(g.First.Ref, "/", 3); len(parts) == 3 {
				if i := strings.Index(owner, "/"); i > 0 {
					owner = owner[:i] + "/" + parts[1] + owner[i:]
				}
			}
			mit = append(mit, Action{Action: "set", Target: fmt.Sprintf("%s rank %s%s", owner, g.First.Rank, what),
				To:  "fix what killed the first rank (" + g.First.Reason + "), then restart from the last checkpoint",
				Why: fmt.Sprintf("the first of %d failures; the %d after it are the cascade", g.Cascade+1, g.Cascade)})
			conf = append(conf, fmt.Sprintf("%s failed first (%s, exit %d) %s before any other rank; the %d ranks after it failed with %s: if the cause is the first rank's, a rerun with only that fixed survives past %s.",
				g.First.Ref, g.First.Reason, g.First.ExitCode, g.Lead.Round(time.Millisecond), g.Cascade, reasons(g.CascadeReasons), g.First.At.Format(time.RFC3339)))
		}
	}
	if ce := rep.Counterexample; ce != nil {
		if ce.InSlice {
			conf = append(conf, fmt.Sprintf("%s matches the whole bad slice and stayed good: identity alone does not explain the failure; compare timing and load (faultline controlplane).", ce.Ref))
		} else {
			var ds []string
			for i, d := range ce.Differs {
				if i == 3 {
					ds = append(ds, fmt.Sprintf("and %d more", len(ce.Differs)-3))
					break
				}
				ds = append(ds, fmt.Sprintf("%s (bad %s, good %s)", d.Dimension, ShortID(d.Bad), ShortID(d.Good)))
			}
			conf = append(conf, fmt.Sprintf("%s stayed good and differs from the bad slice in %s. Prediction to test: a unit like the bad ones with the counterexample's value stays good, and one like the counterexample with the bad value fails.",
				ce.Ref, strings.Join(ds, ", ")))
		}
	} else if rep.Slice != nil {
		conf = append(conf, "No known-good unit in the evidence resembles the bad slice: the root cause cannot be confirmed from this evidence alone.")
	}
	return mit, conf
}

func typTag(rep *Report, container string) string {
	return rep.typical["image.tag/"+container]
}

func imageRepo(image string) string {
	if i := strings.LastIndex(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image
}

func reasons(m map[string]int) string {
	var parts []string
	for r, n := range m {
		parts = append(parts, fmt.Sprintf("%s (%d)", r, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// ShortID shortens a sha256 digest for display; other values stand.
func ShortID(s string) string {
	if s == "" {
		return "(none)"
	}
	if strings.HasPrefix(s, "sha256:") && len(s) > 19 {
		return s[:19]
	}
	return s
}
