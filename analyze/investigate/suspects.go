package investigate

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/gang"
	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
)

// suspects ranks the changes that could explain the slice, in three
// steps: gather the candidates, score each on the units, rank them.
//
// Candidates come from two sources:
//
//   - changes in time: the identity dimensions of the objects the bad
//     units ran on (their ConfigMaps, Secrets, nodes, owners) that changed
//     before the first bad observation;
//   - differences: the dimensions in which the bad slice differs from its
//     known-good counterexample (a digest pulled anew, a node's driver),
//     which no object's history need show.
//
// Each is scored on the investigator's three questions over the units
// (score.go): did it come before the first bad? do the bad units hold it?
// do comparable good units lack it?
func suspects(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension,
	rep *Report, typ map[string]string, firstBad, since time.Time) ([]Suspect, error) {
	if rep.Slice == nil {
		return []Suspect{}, nil
	}
	until := lastBad(units, ids, rep.Slice.Where, firstBad)
	cands, owners, err := gather(ctx, s, units, ids, rep, typ, firstBad, since, until)
	if err != nil {
		return nil, err
	}
	if err := markRestarts(ctx, s, cands, rep.ns); err != nil {
		return nil, err
	}
	in := scoring{units: units, ids: ids, pop: populationOf(units, rep.ns), owners: owners, firstBad: firstBad, storms: rep.storms}
	if in.apiLoad, err = measuredLoad(ctx, s, cands, units, rep.ns, since, until); err != nil {
		return nil, err
	}
	out := scoreSuspects(cands, in)
	if err := scope(ctx, s, out, since, until); err != nil {
		return nil, err
	}
	return out, nil
}

// lastBad is when the last bad unit of the slice went bad (firstBad when
// none did later). A change need only precede the bad units it explains: a
// drain taints node after node, a denial may come after the first bad.
func lastBad(units []*outcome.Unit, ids []map[string]identity.Dimension, where map[string]string, firstBad time.Time) time.Time {
	until := firstBad
	for i, u := range units {
		if u.Bad() && matches(ids[i], where) && u.BadAt.After(until) {
			until = u.BadAt
		}
	}
	return until
}

// gather collects the candidate suspects: changes in time of the objects
// the bad units of the slice ran on, and their differences from the
// counterexample, then the suspects of the other sources (nodes, writes,
// access, placement, restarts). It also returns the owners of those units.
func gather(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension,
	rep *Report, typ map[string]string, firstBad, since, until time.Time) ([]*Suspect, map[string]bool, error) {
	where := rep.Slice.Where
	refs, owners := ranOn(units, ids, where)
	changes, err := changesBefore(ctx, s, refs, firstBad, since, until)
	if err != nil {
		return nil, nil, err
	}
	cs := &candidates{byKey: map[candidateKey]*Suspect{}}
	cs.addChanges(changes)
	if err := cs.addOnGoodNodes(ctx, s, units, ids, refs, firstBad, since, until); err != nil {
		return nil, nil, err
	}
	cs.addDifferences(rep.Counterexample, units, ids, ownerOf(typ, rep.ns))
	out := cs.list()
	more, err := otherSuspects(ctx, s, units, ids, rep, firstBad, since, until)
	if err != nil {
		return nil, nil, err
	}
	return append(out, more...), owners, nil
}

// ranOn returns the objects the bad units of the slice (where) ran on,
// and their owners (Kind/name).
func ranOn(units []*outcome.Unit, ids []map[string]identity.Dimension, where map[string]string) ([]identity.Ref, map[string]bool) {
	refSet := map[identity.Ref]bool{}
	owners := map[string]bool{}
	for i, u := range units {
		if !u.Bad() || !matches(ids[i], where) {
			continue
		}
		for _, d := range ids[i] {
			if r, err := identity.ParseRef(d.Evidence.Ref, ""); err == nil && r.Kind != "Pod" {
				refSet[r] = true
			} else if strings.HasPrefix(d.Evidence.Ref, "ConfigMap/") || strings.HasPrefix(d.Evidence.Ref, "Secret/") {
				parts := strings.SplitN(d.Evidence.Ref, "/", 3)
				if len(parts) == 3 {
					refSet[identity.Ref{Kind: parts[0], Namespace: parts[1], Name: parts[2]}] = true
				}
			}
			// A node agent: the DaemonSet that ran it on the unit's node.
			if rest, ok := strings.CutPrefix(d.Name, "node.agent/"); ok {
				if parts := strings.Split(rest, "/"); len(parts) == 3 {
					refSet[identity.Ref{Kind: "DaemonSet", Namespace: parts[0], Name: parts[1]}] = true
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
	return refs, owners
}

// changesBefore reads the changes of refs in [since, until]. Node changes
// are read until the last unit of the slice went bad (until, lastBad);
// other objects' changes after the first bad are consequences.
func changesBefore(ctx context.Context, s Store, refs []identity.Ref, firstBad, since, until time.Time) ([]identity.ObjectChange, error) {
	all, err := identity.Changes(ctx, s, refs, since, until)
	if err != nil {
		return nil, err
	}
	var changes []identity.ObjectChange
	for _, c := range all {
		if !c.When.After(firstBad) || strings.HasPrefix(c.Ref, "Node/") {
			changes = append(changes, c)
		}
	}
	return changes, nil
}

// candidateKey is a change: the same change made by several objects is
// one candidate.
type candidateKey struct{ dim, from, to string }

// candidates are the changes and differences gathered, in the order first
// seen.
type candidates struct {
	byKey map[candidateKey]*Suspect
	order []candidateKey
}

// add counts ref as making the change k, at (observed: seen in time; else
// a difference from the counterexample).
func (cs *candidates) add(k candidateKey, ref string, at time.Time, run, line int64, observed bool) *Suspect {
	c := cs.byKey[k]
	if c == nil {
		c = &Suspect{Ref: ref, Dimension: k.dim, From: k.from, To: k.to, At: at, Run: run, Line: line, Kind: "change"}
		if !observed {
			c.Kind = "difference"
		}
		cs.byKey[k] = c
		cs.order = append(cs.order, k)
	}
	c.Objects++
	c.refs = append(c.refs, ref)
	if strings.HasPrefix(ref, "Node/") && observed {
		if c.nodeAt == nil {
			c.nodeAt = map[string]time.Time{}
		}
		if t, ok := c.nodeAt[ref]; !ok || at.Before(t) {
			c.nodeAt[ref] = at
		}
	}
	if observed && (c.At.IsZero() || at.Before(c.At)) {
		c.At, c.Run, c.Line, c.Ref = at, run, line, ref
	}
	return c
}

// addChanges adds the changes in time, but for a whole ConfigMap's or
// Secret's change that restates its keys' and a node's taints the node
// lifecycle controller set.
func (cs *candidates) addChanges(changes []identity.ObjectChange) {
	keyed := map[string]bool{} // objects whose keys changed: their whole-content change restates it
	for _, c := range changes {
		if strings.Count(c.Dimension, "/") == 2 && (strings.HasPrefix(c.Dimension, "configmap/") || strings.HasPrefix(c.Dimension, "secret/")) {
			keyed[c.Ref+"@"+c.When.String()] = true
		}
	}
	for _, c := range changes {
		if (strings.HasPrefix(c.Dimension, "configmap/") || strings.HasPrefix(c.Dimension, "secret/")) &&
			strings.Count(c.Dimension, "/") == 1 && keyed[c.Ref+"@"+c.When.String()] {
			continue
		}
		if c.Dimension == "node.taints" && systemTaintsOnly(c.From, c.To) {
			continue
		}
		if strings.HasPrefix(c.Ref, "DaemonSet/") && strings.HasPrefix(c.Dimension, "image.tag/") {
			continue // its twin node.agent/… below is the same write, held by the pods of its nodes
		}
		sp := cs.add(candidateKey{c.Dimension, c.From, c.To}, c.Ref, c.When, c.Evidence.Run, c.Evidence.Line, true)
		if agent, ok := strings.CutPrefix(c.Dimension, "node.agent/"); ok && strings.HasPrefix(c.Ref, "DaemonSet/") {
			// A DaemonSet's new image, named as the DaemonSet's own change
			// and counted by the pods whose nodes run it.
			sp.Dimension, sp.holds = "image.tag/"+agent[strings.LastIndex(agent, "/")+1:], c.Dimension
		}
	}
}

// addOnGoodNodes notes, on each change of nodes' state gathered from the
// bad units' nodes (a taint, a cordon: supportOfNodeChange), the same
// change made in the same act on the nodes the good units in scope ran
// on. A change reaches the units on a node whether they went bad or not:
// a good unit it found running, or that started after it, holds it as a
// bad one does (a cordon before a drain reaches every pod of the drained
// nodes, those evicted without trouble too). The same act is the span of
// the change on the bad units' nodes, widened by actSlack: one client's
// writes to a batch of nodes land within it, where the same change made
// again seconds apart (a decoy cordon first, then a drain) is another.
// Only the support counts these nodes: the change's own objects, time
// and scope stay those that reached bad units.
func (cs *candidates) addOnGoodNodes(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension,
	refs []identity.Ref, firstBad, since, until time.Time) error {
	want := map[candidateKey]*Suspect{}
	for _, k := range cs.order {
		if sp := cs.byKey[k]; (k.dim == "node.taints" || k.dim == "node.unschedulable") && len(sp.nodeAt) > 0 {
			want[k] = sp
		}
	}
	if len(want) == 0 {
		return nil
	}
	have := map[identity.Ref]bool{}
	for _, r := range refs {
		have[r] = true
	}
	var more []identity.Ref
	for i, u := range units {
		r := identity.Ref{Kind: "Node", Name: ids[i]["node"].Value}
		if u.Good() && r.Name != "" && !have[r] {
			have[r] = true
			more = append(more, r)
		}
	}
	if len(more) == 0 {
		return nil
	}
	changes, err := changesBefore(ctx, s, more, firstBad, since, until)
	if err != nil {
		return err
	}
	for _, c := range changes {
		sp := want[candidateKey{c.Dimension, c.From, c.To}]
		if sp == nil {
			continue
		}
		if !inAct(sp.nodeAt, c.When) {
			continue // another act
		}
		if sp.goodNodeAt == nil {
			sp.goodNodeAt = map[string]time.Time{}
		}
		if t, ok := sp.goodNodeAt[c.Ref]; !ok || c.When.Before(t) {
			sp.goodNodeAt[c.Ref] = c.When
		}
	}
	return nil
}

// inAct says whether t lies within the span of the node changes at,
// widened by actSlack.
func inAct(at map[string]time.Time, t time.Time) bool {
	var first, last time.Time
	for _, x := range at {
		if first.IsZero() || x.Before(first) {
			first = x
		}
		if x.After(last) {
			last = x
		}
	}
	return !t.Before(first.Add(-actSlack)) && !t.After(last.Add(actSlack))
}

// actSlack is how far outside the span of a change on the bad units'
// nodes the same change on another node is still the same act: more than
// one client's round trips between back-to-back writes, less than the
// seconds between two acts a person or a script makes one after another.
const actSlack = time.Second

// addDifferences adds the differences from the counterexample ce, in
// content (not names), not already seen changing in time; owner, when
// known, is the object they are laid at.
func (cs *candidates) addDifferences(ce *Counterexample, units []*outcome.Unit, ids []map[string]identity.Dimension, owner string) {
	if ce == nil {
		return
	}
	other := otherWorkload(ce)
	for _, d := range ce.Differs {
		// Only a different value is a contrast: a counterexample that does
		// not use the object at all (another job's ConfigMap) says nothing.
		if d.Bad == "" || d.Good == "" || !contentDim(d.Dimension) {
			continue
		}
		// Two workloads run their own images from their own templates:
		// that a counterexample of another workload runs another image
		// is what it is, not a change (nothing went from its image to
		// the slice's). The same image under another digest is one
		// (a tag pushed again).
		if other && ownTemplate(ce, d.Dimension) {
			continue
		}
		if cs.byKey[candidateKey{d.Dimension, d.Good, d.Bad}] != nil {
			continue // already seen changing in time
		}
		if d.Bad == identity.Deleted {
			continue // the object's deletion is the change (deletionSuspects)
		}
		if admittedIn(units, ids, d.Dimension, d.Bad) {
			continue // set at admission, not by the workload: mutationSuspects
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
		if owner != "" {
			ref = owner
		}
		c := cs.add(candidateKey{d.Dimension, d.Good, d.Bad}, ref, at, run, line, false)
		c.Objects = 0
	}
}

// otherWorkload says whether the counterexample is a pod of another
// workload than the slice's: their owners, other than the ReplicaSets a
// Deployment rolls through, differ.
func otherWorkload(ce *Counterexample) bool {
	for _, d := range ce.Differs {
		if kind, ok := strings.CutPrefix(d.Dimension, "owner/"); ok && !strings.Contains(kind, ".") && kind != "ReplicaSet" {
			return true
		}
	}
	return false
}

// ownTemplate says whether a dimension of the counterexample differs
// because its workload's template does: the template's own hash, an
// image tag, a container's resources, probes, env, command or args, a pod
// spec field (spec/FIELD), or the digest of a container whose
// image tag differs too.
func ownTemplate(ce *Counterexample, name string) bool {
	switch {
	case strings.HasPrefix(name, "owner."), strings.HasPrefix(name, "image.tag/"), strings.HasPrefix(name, "resources/"),
		strings.HasPrefix(name, "probes/"), strings.HasPrefix(name, "command/"), strings.HasPrefix(name, "args/"),
		strings.HasPrefix(name, "env/"), strings.HasPrefix(name, "spec/"):
		return true
	case strings.HasPrefix(name, "owner/"):
		return strings.HasSuffix(name, ".podTemplateHash") || strings.HasSuffix(name, ".controllerRevision")
	}
	if c, ok := strings.CutPrefix(name, "image.digest/"); ok {
		return slices.ContainsFunc(ce.Differs, func(d Differ) bool { return d.Dimension == "image.tag/"+c })
	}
	return false
}

// list returns the candidates in the order first seen, but for a whole
// ConfigMap's or Secret's content, which restates its keys' changes.
func (cs *candidates) list() []*Suspect {
	keyedObj := map[string]bool{}
	for _, k := range cs.order {
		if parts := strings.SplitN(k.dim, "/", 3); len(parts) == 3 && (parts[0] == "configmap" || parts[0] == "secret") {
			keyedObj[parts[0]+"/"+parts[1]] = true
		}
	}
	var out []*Suspect
	for _, k := range cs.order {
		if keyedObj[k.dim] {
			continue
		}
		out = append(out, cs.byKey[k])
	}
	return out
}

// otherSuspects are the candidates of the other sources: nodes gone bad,
// writes whose content is not in the evidence, access, placement and
// apiserver restarts.
func otherSuspects(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension,
	rep *Report, firstBad, since, until time.Time) ([]*Suspect, error) {
	where := rep.Slice.Where
	out := nodeSuspects(rep.NodeHealth)
	writes, err := writeSuspects(ctx, s, unreadable(units, ids, where), since, firstBad)
	if err != nil {
		return nil, err
	}
	out = append(out, writes...)
	out = append(out, deletionSuspects(units, ids, where)...)
	missing, err := missingSuspects(ctx, s, units, ids, where, out, since, firstBad)
	if err != nil {
		return nil, err
	}
	out = append(out, missing...)
	access, err := accessSuspects(ctx, s, units, ids, rep.cons, where, since, until.Add(time.Second))
	if err != nil {
		return nil, err
	}
	out = append(out, access...)
	throttles, err := throttleSuspects(ctx, s, units, ids, rep.cons, where, since, until.Add(time.Second))
	if err != nil {
		return nil, err
	}
	out = append(out, throttles...)
	crds, err := crdSuspects(ctx, s, units, ids, rep.cons, where, since, until.Add(time.Second))
	if err != nil {
		return nil, err
	}
	out = append(out, crds...)
	admission, err := admissionSuspects(ctx, s, units, ids, where, since, until.Add(time.Second))
	if err != nil {
		return nil, err
	}
	out = append(out, admission...)
	mutations, err := mutationSuspects(ctx, s, units, ids, where, since, firstBad)
	if err != nil {
		return nil, err
	}
	out = append(out, mutations...)
	preemptors, err := preemptionSuspects(ctx, s, units, ids, where, since, until.Add(time.Second))
	if err != nil {
		return nil, err
	}
	out = append(out, preemptors...)
	operations, err := operationSuspects(ctx, s, units, ids, where, since, until.Add(time.Second))
	if err != nil {
		return nil, err
	}
	out = append(out, operations...)
	quota, err := quotaSuspects(ctx, s, units, ids, where, since, until.Add(time.Second))
	if err != nil {
		return nil, err
	}
	out = append(out, quota...)
	netpols, err := netPolicySuspects(ctx, s, units, ids, where, since, firstBad)
	if err != nil {
		return nil, err
	}
	out = append(out, netpols...)
	services, err := serviceSuspects(ctx, s, units, ids, where, since, firstBad)
	if err != nil {
		return nil, err
	}
	out = append(out, services...)
	callees, err := calleeSuspects(ctx, s, units, ids, where, since, firstBad)
	if err != nil {
		return nil, err
	}
	out = append(out, callees...)
	specs, err := ownerSpecSuspects(ctx, s, units, ids, where, since, firstBad)
	if err != nil {
		return nil, err
	}
	out = append(out, specs...)
	placement, err := placementSuspects(ctx, s, units, ids, rep.cons, where, since, firstBad)
	if err != nil {
		return nil, err
	}
	out = append(out, placement...)
	restarts, err := restartSuspects(ctx, s, units, since, firstBad)
	if err != nil {
		return nil, err
	}
	out = append(out, restarts...)
	return append(out, hostSuspects(rep.hosts, units, ids, rep.cascade)...), nil
}

// scored is a suspect being scored.
type scored struct {
	sp      Suspect
	sup     support
	created bool
	base    float64 // confidence before competitors
	why     string  // what the confidence rests on, when not the contrast (sup)
}

// scoring is what the candidates are scored against: the units in scope
// and their identities, the population compared (score.go), the owners
// of the bad slice's units (Kind/name), and the first bad instant.
type scoring struct {
	units    []*outcome.Unit
	ids      []map[string]identity.Dimension
	pop      population
	owners   map[string]bool
	firstBad time.Time
	storms   *dnsStorms // a workload's arrival may have made one
	// apiLoad is the load measured on the apiserver from the slice's
	// namespace (measuredLoad); nil when none could be measured.
	apiLoad *apiLoad
}

// scoreSuspects scores each candidate on the units (score.go), drops what
// cannot be a cause (changed after the first bad; an object created along
// the way that owns no bad unit), and ranks the rest.
func scoreSuspects(cands []*Suspect, in scoring) []Suspect {
	var all []*scored
	contentExplains := false
	for _, c := range cands {
		x, content := in.score(c)
		if x == nil {
			continue
		}
		contentExplains = contentExplains || content
		all = append(all, x)
	}
	all = in.weighLoad(all, contentExplains)
	discount(all)
	return rank(all, in.firstBad)
}

// score is one candidate's support and why, or nil when it cannot be a
// cause; content says that it is content (not a carrier nor a restart)
// the bad units' holding of which explains them.
func (in scoring) score(c *Suspect) (x *scored, content bool) {
	sp := *c
	x = &scored{sp: sp}
	var why []string
	if sp.Dimension == "created" && sp.reached == nil {
		kind, name := createdOwner(sp)
		if !in.owners[kind+"/"+name] {
			return nil, false // objects created along the way explain nothing
		}
		x.created = true
		x.sup = in.pop.supportOfOwner(in.units, in.ids, kind, name)
		why = append(why, fmt.Sprintf("created %s before the first bad; the bad units are its pods", ago(sp.At, in.firstBad)))
	} else {
		if sp.Kind == "difference" {
			why = append(why, "the bad units differ from the good in it (first seen "+ts(sp.At, in.firstBad)+")")
		} else if !sp.At.IsZero() && !sp.At.After(in.firstBad) {
			why = append(why, fmt.Sprintf("changed %s before the first bad", ago(sp.At, in.firstBad)))
		} else {
			return nil, false // changed after the first bad: a consequence, not a cause
		}
		x.sup = in.pop.supportOfSuspect(in.units, in.ids, &sp)
		if !carrier(sp.Dimension) && sp.restart == nil && x.sup.strength() >= 0.5 {
			content = true
		}
	}
	if sp.Objects > 1 {
		why = append(why, fmt.Sprintf("%d objects made this change", sp.Objects))
	}
	if c.Why != "" {
		why = append(why, c.Why) // how the evidence shows it reached the units
	}
	x.sp.Why = strings.Join(why, "; ")
	x.sp.Objects = sp.Objects
	return x, content
}

// weighLoad sets each suspect's base confidence, weighing a workload's
// arrival against an apiserver restart and against content that explains
// the failures (contentExplains).
func (in scoring) weighLoad(all []*scored, contentExplains bool) []*scored {
	shaped, _ := loadShaped(in.units)
	all, trigger, triggerAt := restartsScored(all, in.units, in.firstBad, shaped)
	for _, x := range all {
		if x.sp.restart == nil {
			x.base = x.sup.confidence(0)
		}
		if n := float64(x.sup.bad); x.sp.named && x.sp.Dimension == "created" && x.sup.strength()*n/(n+1) > x.base {
			// The apiserver attributed every refusal to the object this
			// write created, which did not exist before it: the split is
			// its own word, not a chance the contrast must rule out.
			// What stays is how few bad units show it.
			x.base = x.sup.strength() * n / (n + 1)
			x.why = x.sup.reason(0) + "; but every refusal names it, and it was created before them: the apiserver's own attribution, not a chance"
		}
		if x.sp.restartOnly {
			x.base = 0
			x.sp.Why += "; but its template changed only to restart its pods (kubectl.kubernetes.io/restartedAt): nothing they run with changed"
		}
		if x.created && x.base > 0 && !triggerAt.IsZero() && x.sp.At.Before(triggerAt) {
			// Its units ran through its arrival unharmed and failed after
			// the restart: the arrival is the condition, the restart the
			// trigger (restarts.go).
			x.base *= trigger
			x.sp.Why += "; its units ran through its arrival and failed after the apiserver restarted"
			x.why = fmt.Sprintf("%s; but its units ran through its arrival unharmed and failed after the apiserver restarted (p=%.2g)",
				x.sup.reason(0), trigger)
		}
		// A workload's arrival is a cause only when what its units ran
		// with explains nothing and they failed the way load fails: their
		// messages say so, or a load was measured that began with it (a
		// CoreDNS storm; the apiserver's bursts are read in conclude).
		storm := x.created && in.storms.after(x.sp.At, in.firstBad, x.sp.Ref) != nil
		var heldFor time.Duration
		held := false
		if x.created {
			heldFor, held = in.apiLoad.heldBefore(x.sp.At, in.firstBad)
		}
		switch {
		case x.created && (contentExplains || !(shaped || storm)):
			x.base = 0
			x.sp.Why += "; but what the units ran with explains the failures, or they did not fail the way load does"
		case x.created && !storm && !in.apiLoad.after(x.sp.At):
			// Words that sound like load (refused, timed out) are not
			// load: where the apiserver's requests were measured and
			// none of the namespace's clients burst after the arrival,
			// nor did CoreDNS, no load began with it.
			x.base = 0
			x.sp.Why += "; but no load was measured after it: no burst of its namespace's clients on the apiserver, no DNS query storm"
		case x.created && !storm && held:
			x.base = 0
			x.sp.Why += fmt.Sprintf("; but its namespace's clients had run at the rate they failed at, for %s with no failure, until %s before the first bad: the load did not rise into the failures, what serves it changed (see faultline controlplane)",
				steadyWindow, heldFor.Round(time.Second))
		case x.created && storm:
			x.sp.Why += "; a CoreDNS query storm began after it and ran into the first failure: see faultline dns"
		case x.created:
			x.sp.Why += "; its units failed the way load does (throttled, timed out): see faultline controlplane"
		}
	}
	// A generation counts the writes to a workload's spec; its template
	// hash says whether what its pods run with changed (a change of
	// rollout strategy or replicas bumps the one and not the other). So a
	// generation is never surer than its workload's template hash.
	for _, x := range all {
		if !strings.HasSuffix(x.sp.Dimension, ".generation") {
			continue
		}
		for _, y := range all {
			if y.sp.Ref == x.sp.Ref && (y.sp.Dimension == "owner.podTemplateHash" || y.sp.Dimension == "owner.controllerRevision") && y.base < x.base {
				x.base = y.base
				x.sp.Why += "; but a generation counts writes to the spec, and its template hash says " + ifZero(y.base,
					"nothing its pods run with changed", "what they run with changed no more surely than that")
			}
		}
	}
	return all
}

// ifZero is zero when f is 0, else other.
func ifZero(f float64, zero, other string) string {
	if f == 0 {
		return zero
	}
	return other
}

// discount shares each suspect's confidence with its competitors and sets
// the score it is ranked by.
func discount(all []*scored) {
	for _, x := range all {
		// Competitors: content changes that explain the units as well.
		// A carrier competes with none but shares the discount of the
		// content it carried: it is never surer than what it carried.
		competitors := 0
		if x.base > 0 {
			for _, y := range all {
				if y != x && !carrier(y.sp.Dimension) && !y.created && y.base >= 0.8*x.base && (y.sp.Dimension != x.sp.Dimension || y.sp.Ref != x.sp.Ref) &&
					!namesNodes(y, x) && (x.sp.act == "" || y.sp.act != x.sp.act) {
					competitors++
				}
			}
		}
		x.sp.Confidence = round3(x.base / float64(1+competitors))
		x.sp.ConfidenceWhy = x.sup.reason(competitors)
		if x.why != "" {
			x.sp.ConfidenceWhy = x.why + competing(competitors)
		}
		// Rank by confidence; a carrier yields to the content it carried,
		// and a change seen in time to nothing.
		x.sp.Score = x.sp.Confidence
		if carrier(x.sp.Dimension) {
			x.sp.Score -= 0.05
		}
		if x.sp.Kind == "change" {
			x.sp.Score += 0.01
		}
		x.sp.Score = round3(x.sp.Score)
	}
}

// namesNodes says whether y is a property of nodes that only names where
// x happened: a node property the bad units' nodes had all along (a
// difference, such as their pool or GPU driver) against a change seen
// happening at the time: a condition those nodes reported (DiskPressure,
// NotReady), a label, kernel or taint they were given, an agent rolled
// out to them, or an image the units' workload rolled out that fails on
// those nodes only. What the nodes were is where; what happened is what:
// a property held all along does not say why it broke now. (The other
// way round, the change still competes with the property.)
func namesNodes(y, x *scored) bool {
	return y.sp.Kind == "difference" && strings.HasPrefix(y.sp.Dimension, "node.") && x.sp.Kind == "change"
}

// rank orders the suspects by score, nearer the first bad first, and
// keeps the first maxSuspects.
func rank(all []*scored, firstBad time.Time) []Suspect {
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].sp.Score != all[j].sp.Score {
			return all[i].sp.Score > all[j].sp.Score
		}
		// Nearer the first bad first.
		return firstBad.Sub(all[i].sp.At) < firstBad.Sub(all[j].sp.At)
	})
	const maxSuspects = 20
	out := make([]Suspect, 0, min(len(all), maxSuspects))
	for i, x := range all {
		if i == maxSuspects {
			break
		}
		x.sp.Rank = i + 1
		out = append(out, x.sp)
	}
	return out
}

// createdOwner is the kind and name of a "created" suspect's object.
func createdOwner(sp Suspect) (kind, name string) {
	parts := strings.Split(sp.Ref, "/")
	if len(parts) < 2 {
		return sp.To, sp.Ref
	}
	return parts[0], parts[len(parts)-1]
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// contentDim says whether a dimension is content a unit ran with (a
// digest, a config hash, a node's identity, an artifact), as opposed to a
// name that merely tells units apart.
func contentDim(name string) bool {
	switch {
	case strings.HasPrefix(name, "owner/"):
		return strings.HasSuffix(name, ".podTemplateHash") || strings.HasSuffix(name, ".controllerRevision")
	case name == "node" || name == "rank" || name == "run":
		return false
	case name == "node.zone" || name == "node.pool" || strings.HasPrefix(name, "node.label/topology.kubernetes.io/"):
		return false // where a unit ran, not what it ran with: a change there is the suspect
	}
	return true
}

// systemTaintsOnly says whether a node.taints change only adds or removes
// the taints the node lifecycle controller sets in reaction to a condition
// (node.kubernetes.io/not-ready, unreachable, unschedulable, ...): the
// reaction, not the cause.
func systemTaintsOnly(from, to string) bool {
	set := func(s string) map[string]bool {
		out := map[string]bool{}
		for _, t := range strings.Split(s, ",") {
			if t != "" {
				out[t] = true
			}
		}
		return out
	}
	a, b := set(from), set(to)
	system := func(t string) bool {
		// out-of-service is the one a person sets.
		return strings.HasPrefix(t, "node.kubernetes.io/") && !strings.HasPrefix(t, "node.kubernetes.io/out-of-service")
	}
	for t := range a {
		if !b[t] && !system(t) {
			return false
		}
	}
	for t := range b {
		if !a[t] && !system(t) {
			return false
		}
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
	// A host fault that explains a gang's first rank is advised on with the
	// gang (gangAdvice), not twice.
	if len(rep.Changes) > 0 && confidentChange(rep.Changes[0]) && !(gangExplains(rep) && rep.Changes[0].Dimension == "created") &&
		!(rep.Changes[0].host != nil && gangHost(rep)) {
		mit = append(mit, undo(rep, rep.Changes[0])...)
	}
	gm, gc := gangAdvice(rep.Gangs)
	mit, conf = append(mit, gm...), append(conf, gc...)
	return mit, append(conf, confirmation(rep)...)
}

// undo is the mitigation of a confident leading change, top: by the kind
// of change, what to roll back, set or cordon.
func undo(rep *Report, top Suspect) []Action {
	switch {
	case strings.HasPrefix(top.Dimension, "configmap/") || strings.HasPrefix(top.Dimension, "secret/"):
		return []Action{undoContent(rep, top)}
	case top.restart != nil:
		// The restart is over; what made it harm is how the slice's
		// clients came back: every one of them at once, relisting.
		if o := ownerOf(rep.typical, rep.ns); o != "" {
			return []Action{{Action: "set", Target: o + " reads", To: "relist from the watch cache (resourceVersion=0) after a jittered backoff when a watch breaks",
				Why: "the apiserver restarted and every client relisted at once: see faultline controlplane"}}
		}
		return nil
	case top.unplaced:
		// Pods that were never placed need the nodes back: undo the
		// change on every node that made it (cordoning them would keep
		// the pods away too).
		a := Action{Action: "rollback", Target: nodeTarget(top), To: top.From,
			Why: "undo " + top.Dimension + " on the nodes that got it, so the pending pods can be placed"}
		a.Command, a.Verify = nodeRollback(top)
		return []Action{a}
	case top.Dimension == "node.taints" || top.Dimension == "node.unschedulable":
		// A taint or a cordon pushed work away: undo it on every node
		// that got it (cordoning them would keep it away).
		a := Action{Action: "rollback", Target: nodeTarget(top), To: top.From,
			Why: "undo " + top.Dimension + " on the nodes that got it, so the evicted work can come back"}
		a.Command, a.Verify = nodeRollback(top)
		return []Action{a}
	case strings.HasPrefix(top.Dimension, "node."):
		return undoNode(top)
	case strings.HasPrefix(top.Dimension, "image.digest/"):
		return []Action{pinDigest(rep, top)}
	case strings.HasPrefix(top.Dimension, "image.tag/"):
		// The workload's rollout back to its previous revision.
		a := Action{Action: "rollback", Target: top.Ref, To: top.From,
			Why: "back to the last-known-good image (the previous revision)"}
		if kind, ns, name := splitRef(top.Ref); workloadResource(kind) != "" {
			a.Command, a.Verify = rolloutUndoCommand(kind, ns, name, rep.undoRev), rolloutStatusCommand(kind, ns, name)
			if rep.undoRev > 0 {
				a.Why = fmt.Sprintf("back to the last-known-good image (revision %d ran it)", rep.undoRev)
			}
		}
		return []Action{a}
	case top.Dimension == "created" && top.DNS != nil:
		return dnsArrival(top)
	case top.admits != "":
		return []Action{undoAdmission(top)}
	case top.preemptor, top.quota:
		return []Action{givesRoomBack(top)}
	case top.netpol:
		return []Action{undoNetPolicy(top)}
	case top.throttles:
		return []Action{undoFlowControl(top)}
	case top.budget:
		return []Action{undoBudget(top)}
	case top.validates:
		return []Action{undoSchema(top)}
	case top.service:
		return []Action{undoService(top)}
	case top.ownerSpec:
		return []Action{undoOwnerSpec(top)}
	case top.callee != "":
		return []Action{undoCallee(top)}
	case top.Dimension == "created":
		return spreadArrival(top)
	case top.Dimension == "deleted":
		return []Action{recreate(top)}
	}
	return []Action{{Action: "rollback", Target: top.Ref, To: top.From,
		Why: "undo " + top.Dimension + " to its last-known-good value"}}
}

// recreate puts a deleted object back as it last stood. Its last version
// is in the timeline when the audit log or a dump carried its body (a
// Secret's never does: its values are not stored).
func recreate(top Suspect) Action {
	kind, ns, name := splitRef(top.Ref)
	a := Action{Action: "rollback", Target: top.Ref,
		Why: "recreate it as it stood before it was deleted: its last version, if the timeline holds it, is the last of " +
			command("faultline", "history", strings.ToLower(kind)+"/"+strings.TrimPrefix(ns+"/", "/")+name)}
	a.Verify = objectCommand("get", kind, ns, name)
	return a
}

// undoContent restores a ConfigMap's or Secret's content, or one key of
// it, to its last-known-good value.
func undoContent(rep *Report, top Suspect) Action {
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
	a := Action{Action: "rollback", Target: target, To: top.From,
		Why: fmt.Sprintf("restore%s to its last-known-good content", key)}
	if _, ns, name := splitRef(target); len(parts) == 3 {
		if ns == "" && !strings.HasPrefix(top.Ref, kind+"/") {
			ns = rep.ns
		}
		var known bool
		a.Command, known = restoreKeyCommand(kind, ns, name, parts[2], top.From)
		a.Verify = getKeyCommand(kind, ns, name, parts[2])
		if !known {
			a.Why += "; its previous value was not stored (only its hash): put it in place of the placeholder"
		}
	}
	return a
}

// nodeTarget is a node change's scope: the selector of every node that
// made it, when one label does, else its ref.
func nodeTarget(top Suspect) string {
	if top.Selector != "" {
		return top.Selector
	}
	return top.Ref
}

// undoNode cordons the nodes that made a change of node identity and sets
// it back to its last-known-good value.
func undoNode(top Suspect) []Action {
	// The change's scope: the selector of every node that made it,
	// never one arbitrary member.
	target := nodeTarget(top)
	mit := []Action{{Action: "cordon", Target: target,
		Why:     "stop new work landing where " + top.Dimension + "=" + top.To,
		Command: nodesCommand("cordon", top.Selector, top.refs), Verify: getNodesCommand(top.Selector, top.refs, "")}}
	if top.From != "" && !nodeCondition(top.Dimension) {
		a := Action{Action: "set", Target: target + " " + strings.TrimPrefix(top.Dimension, "node.label/"), To: top.From,
			Why: "back to the last-known-good node identity"}
		a.Command, a.Verify = nodeRollback(top)
		mit = append(mit, a)
	}
	return mit
}

// pinDigest pins a container's image to its last-known-good digest.
func pinDigest(rep *Report, top Suspect) Action {
	repo := ""
	if tag := typTag(rep, strings.TrimPrefix(top.Dimension, "image.digest/")); tag != "" {
		repo = imageRepo(tag)
	}
	a := Action{Action: "set", Target: top.Ref + " image", To: repo + "@" + top.From,
		Why: "pin the last-known-good digest: the tag now points at " + top.To}
	if kind, ns, name := splitRef(top.Ref); workloadResource(kind) != "" {
		if repo == "" {
			repo = placeholder("repository")
		}
		a.Command = setImageCommand(kind, ns, name, strings.TrimPrefix(top.Dimension, "image.digest/"), repo+"@"+top.From)
		a.Verify = rolloutStatusCommand(kind, ns, name)
	}
	return a
}

// spreadArrival is the mitigation of a workload's arrival: spread its
// units' start and scope what each reads.
func spreadArrival(top Suspect) []Action {
	start := spreadStart(top, "its arrival is the change: spread its units' start over a window (see faultline controlplane)")
	if start.Command != "" {
		start.Verify = "faultline controlplane"
	}
	return []Action{start,
		{Action: "set", Target: top.Ref + " reads", To: "namespace- and label-scoped reads from the watch cache or a shared informer",
			Why: "what each unit reads at start is multiplied by the number of units"}}
}

// spreadStart spreads a workload's units' start over a window, for why;
// a Job is suspended until then (the command).
func spreadStart(top Suspect, why string) Action {
	start := Action{Action: "set", Target: top.Ref + " start", To: "jittered or rate-limited start", Why: why}
	if kind, ns, name := splitRef(top.Ref); kind == "Job" {
		start.Why += "; suspend it until then"
		start.Command = command(append(append([]string{"kubectl", "patch", "job", name}, nsArgs(ns)...), "--type", "merge", "-p", `{"spec":{"suspend":true}}`)...)
	}
	return start
}

// gangAdvice is, for each gang job whose first rank failed apart from the
// cascade, the fix and the prediction that confirms it.
func gangAdvice(gangs []gang.Finding) (mit []Action, conf []string) {
	for _, g := range gangs {
		if h, ok := g.HostCause(); ok && g.Cascade > 0 {
			m, c := hostAdvice(g, h)
			mit, conf = append(mit, m...), append(conf, c)
			continue
		}
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
	return mit, conf
}

// confirmation is the prediction the counterexample lets one test, or
// why there is none.
func confirmation(rep *Report) []string {
	ce := rep.Counterexample
	switch {
	case ce == nil && rep.Slice != nil:
		return []string{"No known-good unit in the evidence resembles the bad slice: the root cause cannot be confirmed from this evidence alone."}
	case ce == nil:
		return nil
	case ce.InSlice:
		return []string{fmt.Sprintf("%s matches the whole bad slice and stayed good: identity alone does not explain the failure; compare timing and load (faultline controlplane).", ce.Ref)}
	}
	var ds []string
	for i, d := range ce.Differs {
		if i == 3 {
			ds = append(ds, fmt.Sprintf("and %d more", len(ce.Differs)-3))
			break
		}
		ds = append(ds, fmt.Sprintf("%s (bad %s, good %s)", d.Dimension, ShortID(d.Bad), ShortID(d.Good)))
	}
	return []string{fmt.Sprintf("%s stayed good and differs from the bad slice in %s. Prediction to test: a unit like the bad ones with the counterexample's value stays good, and one like the counterexample with the bad value fails.",
		ce.Ref, strings.Join(ds, ", "))}
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

// hostAdvice is the fix of a gang whose first rank's node logged the fault
// that explains it: keep work off the node, restart the job without it,
// and what the fault's catalog says to do with the node; and the
// prediction that confirms it.
func hostAdvice(g gang.Finding, h gang.HostError) ([]Action, string) {
	refs := []string{"Node/" + h.Node}
	mit := []Action{
		{Action: "cordon", Target: "Node/" + h.Node, Why: "stop new work landing on a node that logged " + h.What(),
			Command: nodesCommand("cordon", "", refs), Verify: getNodesCommand("", refs, "")},
		{Action: "set", Target: rankTarget(g),
			To:  "restart from the last checkpoint on other nodes",
			Why: fmt.Sprintf("the first of %d failures, on Node/%s; the %d after it are the cascade", g.Cascade+1, h.Node, g.Cascade)},
	}
	if h.Action != "" {
		mit = append(mit, Action{Action: "repair", Target: "Node/" + h.Node, To: h.Action,
			Why: "what the fault's catalog recommends for " + h.What()})
	}
	conf := fmt.Sprintf("Node/%s logged %s %s before %s failed first; the %d ranks after it failed with %s. If the node is the cause, its health check fails (for a GPU: nvidia-smi -q, a DCGM diagnostic) and a rerun without it survives past %s.",
		h.Node, h.What(), h.Lead.Round(time.Millisecond), g.First.Ref, g.Cascade, reasons(g.CascadeReasons), g.First.At.Format(time.RFC3339))
	return mit, conf
}

// rankTarget names a gang's first rank: "Job/train rank 3", or its pod
// when its rank is not known.
func rankTarget(g gang.Finding) string {
	if g.First.Rank == "" {
		return g.First.Ref
	}
	return g.Owner + " rank " + g.First.Rank
}
