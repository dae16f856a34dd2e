package investigate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/gang"
	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
)

// Host errors. A node's own log (ingest/nodelogs) names faults the
// apiserver never sees: a GPU fallen off the bus, an uncorrectable ECC
// error, an OOM kill, a stalled kubelet, a link down. Such an error is a
// candidate cause of the units that ran on its node when it came. It
// reached a bad unit when it came after the unit was created and no later
// than the unit went bad; it reached a good unit when it came while the
// unit ran, and the unit stayed good: evidence against it. Errors of one
// kind (reason and code) on several nodes make one suspect.
//
// Two things keep the consequences apart from the cause:
//   - a gang job's cascade is not evidence: its ranks died because the
//     first did, so the bad units judged are each gang's first rank, not
//     the ranks that followed it;
//   - what a collective reports on every rank once one is gone (an NCCL
//     timeout, a lost peer: timeline.NodeConsequences) is never a suspect.
//
// And a coincidence is weighed: in a large fleet some node logs some error
// every hour. The chance that an error of one kind lands on a given node in
// the lead it had before a failure is about the kind's rate per node-second
// over the fleet times that lead (HostError.Chance). A small chance is what
// the coincidence in time rests on.

// hostFault is one node-fault record as the analysis reads it.
type hostFault struct {
	gang.HostError
	key string // reason and code: one suspect per key
}

// hostEvidence is the node faults of a window and what they are weighed
// against: how many nodes the fleet has and how long the window is.
type hostEvidence struct {
	faults []hostFault // oldest first
	nodes  int
	span   time.Duration
	rate   map[string]float64 // faults per node-second, by key
}

// readHostFaults reads the node-fault records of [since, until).
func readHostFaults(ctx context.Context, s Store, since, until time.Time, nodes int) (*hostEvidence, error) {
	f, err := timeline.CompileFilter(outcome.NodeFaults)
	if err != nil {
		return nil, fmt.Errorf("node faults: %w", err) // a constant: a bug
	}
	ev := &hostEvidence{span: until.Sub(since), rate: map[string]float64{}}
	seen := map[string]bool{}
	for r, err := range s.Records(ctx, timeline.Query{Since: since, Until: until.Add(time.Nanosecond), Where: f}) {
		if err != nil {
			return nil, fmt.Errorf("node faults: %w", err)
		}
		var extra struct{ Meaning, Origin, Action string }
		_ = json.Unmarshal(r.Extra, &extra) // what is not there is not known
		h := gang.HostError{Node: r.Object.Name, Reason: r.Reason, Code: r.Code, At: r.Time, Meaning: extra.Meaning,
			Origin: extra.Origin, Action: extra.Action, Record: r.ID, Run: r.Evidence.Run, Line: r.Evidence.Line}
		key := h.Reason + "\x00" + strconv.Itoa(h.Code)
		ev.faults = append(ev.faults, hostFault{HostError: h, key: key})
		seen[h.Node] = true
	}
	sort.SliceStable(ev.faults, func(i, j int) bool { return ev.faults[i].At.Before(ev.faults[j].At) })
	ev.nodes = max(nodes, len(seen), 1)
	span := max(ev.span.Seconds(), 1)
	for _, h := range ev.faults {
		ev.rate[h.key] += 1 / (float64(ev.nodes) * span)
	}
	return ev, nil
}

// fleetNodes counts the nodes the units in scope ran on: the fleet as the
// evidence shows it (a lower bound, so chances come out no smaller than
// they are).
func fleetNodes(ids []map[string]identity.Dimension) int {
	set := map[string]bool{}
	for _, id := range ids {
		if n := id["node"].Value; n != "" {
			set[n] = true
		}
	}
	return len(set)
}

// chance is how likely an error of the kind key is to land on one node in
// lead by chance: 1 - exp(-rate × lead), the lead at least a second (the
// apiserver stamps container states to the second).
func (ev *hostEvidence) chance(key string, lead time.Duration) float64 {
	return 1 - math.Exp(-ev.rate[key]*max(lead.Seconds(), 1))
}

// before returns the faults on node in [from, to], oldest first, leaving out
// the consequences of a lost peer.
func (ev *hostEvidence) before(node string, from, to time.Time) []hostFault {
	var out []hostFault
	for _, h := range ev.faults {
		if h.Node == node && !h.At.Before(from) && !h.At.After(to) && !slices.Contains(timeline.NodeConsequences, h.Reason) {
			out = append(out, h)
		}
	}
	return out
}

// cascadeOf is the set of units whose failure a gang's first failure
// explains: every failed rank of a gang job but the first.
func cascadeOf(gangs []gang.Finding, units []*outcome.Unit) map[*outcome.Unit]bool {
	firsts := map[string]bool{}
	owners := map[string]bool{}
	for _, g := range gangs {
		firsts[g.First.Ref] = true
		owners[g.Owner] = true
	}
	out := map[*outcome.Unit]bool{}
	for _, u := range units {
		if u.Bad() && owners[u.Owner] && !firsts[u.Ref] {
			out[u] = true
		}
	}
	return out
}

// hostSuspects makes a suspect of each kind of node fault that reached a
// bad unit (one not in the cascade) before it failed.
func hostSuspects(ev *hostEvidence, units []*outcome.Unit, ids []map[string]identity.Dimension, cascade map[*outcome.Unit]bool) []*Suspect {
	if ev == nil || len(ev.faults) == 0 {
		return nil
	}
	byKey := map[string]*Suspect{}
	var order []string
	for i, u := range units {
		node := ids[i]["node"].Value
		if node == "" || cascade[u] || !(u.Bad() || u.Good()) {
			continue
		}
		to := u.BadAt
		if u.Good() {
			to = time.Unix(1<<40, 0) // while it ran: to the end
			if !u.Deleted.IsZero() {
				to = u.Deleted
			}
		}
		for _, h := range ev.before(node, u.Created, to) {
			sp := byKey[h.key]
			if sp == nil {
				if !u.Bad() {
					continue // a fault that reached only good units is no suspect (yet)
				}
				sp = newHostSuspect(h, cascade)
				byKey[h.key] = sp
				order = append(order, h.key)
			}
			sp.reached[u] = true
			ref := "Node/" + h.Node
			if !slices.Contains(sp.refs, ref) {
				sp.refs = append(sp.refs, ref)
				sp.nodeAt[ref] = h.At
			}
			if u.Bad() {
				lead := u.BadAt.Sub(h.At)
				e := h.HostError
				e.Lead = lead
				sp.host = append(sp.host, e)
				sp.chance = max(sp.chance, ev.chance(h.key, lead))
				if h.At.Before(sp.At) {
					sp.At = h.At
				}
			}
		}
	}
	out := make([]*Suspect, 0, len(order))
	for _, k := range order {
		sp := byKey[k]
		if len(sp.host) == 0 {
			continue
		}
		sort.Strings(sp.refs)
		sp.Ref, sp.Objects = sp.refs[0], len(sp.refs)
		first := sp.host[0]
		sp.Why = fmt.Sprintf("%s logged on the node of %d bad unit(s), %s before the first of them failed; chance of such a coincidence %.2g",
			first.What(), len(sp.host), first.Lead.Round(time.Millisecond), sp.chance)
		out = append(out, sp)
	}
	return out
}

// newHostSuspect is the suspect of the kind of fault h: "node.xid" to
// "79", or "node.oomkill" to "OOMKill".
func newHostSuspect(h hostFault, cascade map[*outcome.Unit]bool) *Suspect {
	to := h.Reason
	if h.Code != 0 {
		to = strconv.Itoa(h.Code)
	}
	return &Suspect{Dimension: "node." + strings.ToLower(h.Reason), To: to, At: h.At, Kind: KindFault, Run: h.Run, Line: h.Line,
		reached: map[*outcome.Unit]bool{}, nodeAt: map[string]time.Time{}, skip: cascade}
}

// supportOfHost counts the units a node fault reached, the cascade of a
// gang set aside: its failures are the first rank's, not evidence of
// their own. The chance of the coincidence in time bounds the p-value.
func (p population) supportOfHost(units []*outcome.Unit, sp *Suspect) support {
	s := support{good: len(p.good), chance: sp.chance}
	for _, i := range p.bad {
		if sp.skip[units[i]] {
			continue
		}
		s.bad++
		if sp.reached[units[i]] {
			s.badHold++
		}
	}
	for _, i := range p.good {
		if sp.reached[units[i]] {
			s.goodHold++
		}
	}
	return s
}

// attachHost gives each gang its first rank's host errors: what the node
// it ran on logged from the rank's start until it failed, with the lead
// and the chance of each, and leads the rank's cause with the likeliest.
func attachHost(ev *hostEvidence, gangs []gang.Finding, units []*outcome.Unit, ids []map[string]identity.Dimension) {
	if ev == nil || len(ev.faults) == 0 {
		return
	}
	for gi := range gangs {
		g := &gangs[gi]
		i := slices.IndexFunc(units, func(u *outcome.Unit) bool { return u.Ref == g.First.Ref })
		if i < 0 || ids[i]["node"].Value == "" {
			continue
		}
		u := units[i]
		g.First.Node = ids[i]["node"].Value
		for _, h := range ev.before(g.First.Node, u.Created, u.BadAt) {
			lead := u.BadAt.Sub(h.At)
			e := h.HostError
			e.Lead, e.Chance = lead, round3sig(ev.chance(h.key, lead))
			g.Host = append(g.Host, e)
		}
		sort.SliceStable(g.Host, func(a, b int) bool { return g.Host[a].Chance < g.Host[b].Chance })
	}
}

// round3sig keeps three significant digits: a chance of 1e-7 stays one.
func round3sig(x float64) float64 {
	if x == 0 {
		return 0
	}
	f, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
	return f
}

// KindFault is the kind of a suspect that is a fault a node logged, not a
// change of identity nor a difference.
const KindFault = "fault"

// hostBoundary moves the earliest known-bad instant back to the fault the
// verdict blames, when its node logged it before the first unit failed: the
// fault is itself a bad observation, the first of the incident. The last
// known-good moves before it too.
func hostBoundary(ctx context.Context, s Store, out *outcome.Outcomes, rep *Report) error {
	b := rep.Boundary
	if rep.Verdict != VerdictCause || b == nil {
		return nil
	}
	var h *gang.HostError
	for _, g := range rep.Gangs {
		if c, ok := g.HostCause(); ok && g.Cascade > 0 {
			h = &c
			break
		}
	}
	if h == nil && len(rep.Changes) > 0 && rep.Changes[0].Kind == KindFault && confidentChange(rep.Changes[0]) && len(rep.Changes[0].host) > 0 {
		h = &rep.Changes[0].host[0]
	}
	if h == nil || !h.At.Before(b.FirstBad) {
		return nil
	}
	b.FirstBad = h.At
	b.Evidence = slices.DeleteFunc(b.Evidence, func(e Evidence) bool { return e.Side == "good" })
	bad := Evidence{Side: "bad", Time: h.At, Ref: "Node/" + h.Node, What: h.What(), Record: h.Record, Run: h.Run, Line: h.Line}
	b.Evidence = append([]Evidence{bad}, b.Evidence...)
	lg, err := lastGoodBefore(ctx, s, out, h.At)
	if err != nil {
		return err
	}
	b.LastGood = time.Time{}
	if lg != nil {
		b.LastGood = lg.Time
		b.Evidence = append([]Evidence{evidenceOf("good", lg)}, b.Evidence...)
	}
	return nil
}
