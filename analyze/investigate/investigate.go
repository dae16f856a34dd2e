// Package investigate runs the investigator's method over a timeline:
//
//  1. the earliest known-bad instant, as a change point in the rate of bad
//     observations (analyze/boundary), and the last known-good before it;
//  2. the units in scope: pods that went bad from that instant on, and pods
//     that stayed good (a failure before the boundary is noise, not scope);
//  3. their exact identities (analyze/identity) and the smallest slice of
//     identity dimensions that covers the bad ones (analyze/slice);
//  4. a known-good counterexample: the good unit most like the bad slice;
//  5. suspects: the changes of identity, in the objects the bad units ran
//     on and between the counterexample and the bad units, ranked by how
//     well they explain the slice;
//  6. gang jobs: the first rank to fail, apart from the cascade;
//  7. mitigation (what to roll back or cordon, to which last-known-good
//     identity) kept apart from root-cause confirmation (the prediction the
//     counterexample lets one test).
//
// It returns a Report whose JSON is a stable contract (docs/investigate.md).
// It never prints and never imports an ingester.
package investigate

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/boundary"
	"github.com/faultline/faultline/analyze/controlplane"
	"github.com/faultline/faultline/analyze/gang"
	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/analyze/slice"
	"github.com/faultline/faultline/timeline"
)

// SchemaVersion is the version of the Report's JSON contract.
const SchemaVersion = 2

// Store is what an investigation reads.
type Store interface {
	Versions(ctx context.Context, q timeline.VersionQuery) ([]timeline.ObjectVersion, error)
	Records(ctx context.Context, q timeline.Query) iter.Seq2[*timeline.Record, error]
	Bounds(ctx context.Context) (first, last time.Time, err error)
}

// Options shape an investigation.
type Options struct {
	Bad, Good    string    // CEL; "" for outcome.DefaultBad / DefaultGood
	Since, Until time.Time // the span to look at; zero: all the evidence
	Rules        []identity.Rule
	// MaxEvidence bounds the evidence listed at each side of the boundary.
	MaxEvidence int
}

// Report is an investigation's findings.
type Report struct {
	SchemaVersion int    `json:"schemaVersion"`
	Window        Window `json:"window"`
	Bad           string `json:"bad"`
	// Verdict is "cause" when the evidence names a confident cause, else
	// "no-confident-cause"; VerdictWhy says why in one line, and Next what
	// to collect or mark to get further (docs/investigate.md).
	Verdict        string          `json:"verdict"`
	VerdictWhy     string          `json:"verdictWhy"`
	Next           []string        `json:"next,omitempty"`
	Boundary       *Boundary       `json:"boundary"`
	Changes        []Suspect       `json:"changes"`
	Slice          *Slice          `json:"slice"`
	Counterexample *Counterexample `json:"counterexample"`
	Gangs          []gang.Finding  `json:"gangs"`
	// Episodes are independent faults beside the main one (episodes.go).
	Episodes []Episode `json:"episodes"`
	// NodeHealth are the nodes seen going bad in the window (NotReady),
	// whether or not they ran a unit.
	NodeHealth []NodeHealth `json:"nodeHealth"`
	// Slow is the episode of slow requests to etcd from several clients under way
	// when the units first failed (controlplane.SlowAt), if any: the
	// apiserver's storage or the apiserver itself, not the units' doing.
	Slow *controlplane.Slow `json:"slow,omitempty"`
	// Schedulers are the spans in the window in which a scheduler placed
	// and judged no pod while pods waited for it (outcome.NotScheduled):
	// a scheduler that hangs, or one named that does not run.
	Schedulers []outcome.SchedulerIdle `json:"schedulers,omitempty"`
	// Controllers are the spans in the window in which a controller made
	// no request while changes of its objects waited for it
	// (outcome.NotObserved): a controller that hangs, or none that runs.
	Controllers  []outcome.ControllerIdle `json:"controllers,omitempty"`
	Mitigation   []Action                 `json:"mitigation"`
	Confirmation []string                 `json:"confirmation"`
	Units        UnitCounts               `json:"units"`
	// Warnings say what weakens the report: the --bad or --good expression
	// failed at run time on some observations, which counted as no match.
	Warnings []string `json:"warnings,omitempty"`
	// WindowedRuns are the ingest runs that kept only a window of their
	// log (ingest audit --since/--until) and left events out: evidence
	// the report did not see.
	WindowedRuns []WindowedRun `json:"windowedRuns,omitempty"`
	// BadObservations counts the observations the outcome classifier found
	// bad in the window (bad records and bad object states): the same set
	// as timeline --where 'bad', bisect and the TUI's histogram.
	BadObservations int `json:"badObservations"`

	typical map[string]string // the bad slice's typical identity
	ns      string            // the bad slice's namespace
	units   []*outcome.Unit
	ids     []map[string]identity.Dimension
	cons    constraints           // the units' constraints (access.go)
	bad     []outcome.Observation // the classifier's bad observations
	undoRev int                   // the revision to roll the leading suspect back to (commands.go)
	hosts   *hostEvidence         // the faults nodes logged in the window (hosterrors.go)
	storms  *dnsStorms            // CoreDNS's query storms in the window (dnsevidence.go)
	cascade map[*outcome.Unit]bool
	slow    *slowRead // the slow requests' episode at the first bad, read beside the rest (load.go)
}

// Observations returns the observations the outcome classifier found
// bad in the window, oldest first.
func (r *Report) Observations() []outcome.Observation { return r.bad }

// Matching returns the units in scope whose identity matches every
// dimension=value of where, and how many of them went bad.
func (r *Report) Matching(where map[string]string) (refs []string, bad int) {
	for i, u := range r.units {
		if matches(r.ids[i], where) {
			refs = append(refs, u.Ref)
			if u.Bad() {
				bad++
			}
		}
	}
	return refs, bad
}

// UnitInfo is one unit in scope as the investigation saw it: its fate and
// its identity (dimension → value).
type UnitInfo struct {
	Ref       string
	Namespace string
	Bad       bool // went bad from the boundary on
	Good      bool // seen good, never bad
	Identity  map[string]string
}

// Unit returns the unit in scope called ref (Pod/NAMESPACE/NAME).
func (r *Report) Unit(ref string) (UnitInfo, bool) {
	for i, u := range r.units {
		if u.Ref != ref {
			continue
		}
		id := make(map[string]string, len(r.ids[i]))
		for k, d := range r.ids[i] {
			id[k] = d.Value
		}
		return UnitInfo{Ref: u.Ref, Namespace: u.Namespace, Bad: u.Bad(), Good: u.Good(), Identity: id}, true
	}
	return UnitInfo{}, false
}

// Window is the span of evidence looked at.
type Window struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Boundary is the earliest known-bad instant and the last known-good one.
type Boundary struct {
	LastGood     time.Time  `json:"lastGood,omitzero"`
	FirstBad     time.Time  `json:"firstBad"`
	IncidentEnd  time.Time  `json:"incidentEnd"`
	BaselineRate float64    `json:"baselinePerSecond"`
	IncidentRate float64    `json:"incidentPerSecond"`
	Score        float64    `json:"score"`
	Noise        int        `json:"noiseBefore"` // bad observations before the boundary, set aside
	Evidence     []Evidence `json:"evidence"`
}

// Evidence is one observation that supports a finding.
type Evidence struct {
	Side   string    `json:"side"` // "good" or "bad"
	Time   time.Time `json:"time"`
	Ref    string    `json:"ref"`
	What   string    `json:"what"`
	Record int64     `json:"record,omitempty"`
	Run    int64     `json:"run"`
	Line   int64     `json:"line"`
}

// Suspect is one change, ranked.
type Suspect struct {
	Rank      int       `json:"rank"`
	Ref       string    `json:"ref"`
	Dimension string    `json:"dimension"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	At        time.Time `json:"at,omitzero"`
	Why       string    `json:"why"`
	Score     float64   `json:"score"`
	// Confidence is the evidence that this change is the cause, in [0, 1],
	// and ConfidenceWhy what it rests on, in one line (docs/investigate.md).
	Confidence    float64 `json:"confidence"`
	ConfidenceWhy string  `json:"confidenceWhy"`
	Objects       int     `json:"objects"` // objects that made the same change
	// Selector matches exactly the objects that made the change, when one
	// label does (a pool, a zone, a rack): the change's scope.
	Selector string `json:"selector,omitempty"`

	refs   []string // the objects that made it
	unread bool     // a write whose content is not in the evidence (writes.go)
	// holds is the dimension the units hold the change in when it is not
	// the change's own: a DaemonSet's image (image.tag/C) is held by the
	// pods of its nodes as node.agent/NS/NAME/C.
	holds string
	// reached are the units the evidence shows the change reached, when
	// that is not what they hold (access.go, placement.go).
	reached map[*outcome.Unit]bool
	// admits names the admission object written (admission.go), as a
	// refusal would quote it.
	admits string
	// mutates: the admission write set what the units were created with
	// (mutation.go), rather than refusing them.
	mutates bool
	// preemptor: the arrival of a workload whose pods preempted the
	// bad units (preemption.go).
	preemptor bool
	// quota: the arrival of a workload whose pods used the room of a
	// quota the units were then refused for (quota.go).
	quota bool
	// netpol: a write to a network policy (netpolicy.go).
	netpol bool
	// throttles: a write to an API Priority and Fairness object
	// (throttle.go).
	throttles bool
	// budget: a write to a PodDisruptionBudget whose namespace's pods
	// then had evictions refused (operations.go).
	budget bool
	// named: every refusal the write reached names the object it wrote
	// (mentions), as the apiserver attributes a refusal to the webhook or
	// policy that made it (admission.go, operations.go).
	named bool
	// refusedOp is the operation on pods from outside them (an eviction)
	// refused after a write to a budget or an admission configuration
	// (operations.go).
	refusedOp outcome.Operation
	// validates: a write to the CustomResourceDefinition of a resource
	// whose writes were then refused as invalid (schema.go).
	validates bool
	// service: a write to a Service the bad units' failures name
	// (services.go).
	service bool
	// ownerSpec: a change to a controller's own spec, outside its pod
	// template (ownerspec.go).
	ownerSpec bool
	// callee is the Service ("NS/NAME") the bad units' failures name,
	// for a change to a workload behind it (services.go).
	callee string
	// verb is the audit verb of a write whose content is not in the
	// evidence (writeSuspect); refused, the ServiceAccounts refused after
	// it (writesBeforeRefusal).
	verb    string
	refused []string
	// act names the act a write was part of: one actor's writes with
	// nothing seen between them (writesBeforeRefusal). The writes of one
	// act do not compete.
	act string
	// restartOnly: a template hash whose templates differ only by a
	// restart's annotation (restartonly.go).
	restartOnly bool
	// unplaced: a node change that turned away pods never placed
	// (placement.go); undoing it, not cordoning, lets them in.
	unplaced bool
	restart  *controlplane.Restart // an apiserver restart (restarts.go)
	// host are the node faults behind a host-error suspect (hosterrors.go),
	// skip the units it is not judged on (a gang's cascade), chance the
	// largest chance of its coincidence in time.
	host   []gang.HostError
	skip   map[*outcome.Unit]bool
	chance float64
	// nodeAt is when each node ("Node/NAME") made the change, when nodes
	// made it one after another (a drain).
	nodeAt map[string]time.Time
	// goodNodeAt is when the same act made the change on the nodes of
	// good units in scope (addOnGoodNodes): counted by the support only.
	goodNodeAt map[string]time.Time
	// Kind is "change" (an object's identity changed in time) or
	// "difference" (the bad slice differs from its counterexample).
	Kind string `json:"kind"`
	Run  int64  `json:"run,omitempty"`
	Line int64  `json:"line,omitempty"`
	// By and UserAgent name who made the change: the user and user agent
	// of the audit record that wrote it (empty when none did, as for a
	// difference, or a version read only from a dump).
	By        string `json:"by,omitempty"`
	UserAgent string `json:"userAgent,omitempty"`
	// Load is the control-plane burst behind a load-shaped cause (a
	// workload's arrival, an apiserver restart): its class and client.
	Load *LoadEvidence `json:"load,omitempty"`
	// DNS is the CoreDNS storm behind it (dnsevidence.go), when the
	// timeline holds CoreDNS's series.
	DNS *DNSEvidence `json:"dns,omitempty"`
}

// Slice is the smallest affected slice.
type Slice struct {
	Where map[string]string `json:"where"`
	// Equivalents are other descriptions of exactly the same units, the
	// most interpretable first (Where is the best of all).
	Equivalents []map[string]string `json:"equivalents,omitempty"`
	Bad         int                 `json:"bad"`
	Total       int                 `json:"total"`
	Coverage    float64             `json:"coverage"`
	Precision   float64             `json:"precision"`
	// Others are further causes, for incidents with several.
	Others []slice.Cause `json:"others,omitempty"`
}

// Counterexample is a known-good unit most like the bad slice.
type Counterexample struct {
	Ref     string   `json:"ref"`
	Matches int      `json:"matches"`
	Differs []Differ `json:"differs"`
	// InSlice says the good unit matches every condition of the slice: the
	// slice's identity does not explain the failure on its own.
	InSlice bool `json:"inSlice"`
}

// Differ is one dimension in which the counterexample differs.
type Differ struct {
	Dimension string `json:"dimension"`
	Bad       string `json:"bad"`
	Good      string `json:"good"`
}

// Action is one mitigation step.
type Action struct {
	Action string `json:"action"` // rollback, cordon, set, scale
	Target string `json:"target"`
	To     string `json:"to,omitempty"`
	Why    string `json:"why"`
	// Command is the kubectl command line that applies the step, to paste
	// ("" when no single command does, as for a code change); a value the
	// evidence does not hold is a <placeholder> kubectl refuses as it
	// stands. Verify is the command that shows the step worked.
	Command string `json:"command,omitempty"`
	Verify  string `json:"verify,omitempty"`
}

// UnitCounts says how many units the slice was searched over.
type UnitCounts struct {
	Bad, Good, Noise, Unknown int
}

// ErrNoEvidence is a timeline that holds nothing to investigate.
var ErrNoEvidence = errors.New("the timeline is empty")

// ErrOnlySeries is a timeline that holds metric series (faultline ingest
// metrics) and no records: investigate reads what the apiserver and the
// nodes wrote (audit records, Events, objects, node logs); the series are
// read by the pressure analyses (faultline dns, network, cardinality).
// It wraps ErrNoEvidence: there is nothing to investigate either way.
var ErrOnlySeries = fmt.Errorf("%w of records: it holds only metric series", ErrNoEvidence)

// noRecords is the error for a timeline without records: ErrOnlySeries
// when the store shows it holds series, else ErrNoEvidence.
func noRecords(ctx context.Context, s Store) error {
	sr, ok := s.(timeline.SeriesReader)
	if !ok {
		return ErrNoEvidence
	}
	for _, err := range sr.Series(ctx, timeline.SeriesQuery{}) {
		if err != nil {
			return err
		}
		return ErrOnlySeries
	}
	return ErrNoEvidence
}

// Run investigates: it reads the outcomes in the window, then takes the
// method's numbered steps (the package comment), one function each.
func Run(ctx context.Context, s Store, opt Options) (*Report, error) {
	if opt.MaxEvidence == 0 {
		opt.MaxEvidence = 5
	}
	first, last, err := s.Bounds(ctx)
	if err != nil {
		return nil, err
	}
	if first.IsZero() {
		return nil, noRecords(ctx, s)
	}
	stored := last
	if !opt.Since.IsZero() {
		first = opt.Since
	}
	if !opt.Until.IsZero() {
		last = opt.Until
	}
	rep := &Report{SchemaVersion: SchemaVersion, Window: Window{first, last}, Changes: []Suspect{},
		Gangs: []gang.Finding{}, Episodes: []Episode{}, NodeHealth: []NodeHealth{}, Mitigation: []Action{}, Confirmation: []string{}}
	if rep.WindowedRuns, err = windowedRuns(ctx, s); err != nil {
		return nil, err
	}

	out, err := outcome.Read(ctx, s, outcome.Options{Bad: opt.Bad, Good: opt.Good, Since: opt.Since, Until: opt.Until, Last: stored})
	if err != nil {
		return nil, err
	}
	rep.Bad = out.BadExpr
	rep.bad, rep.BadObservations = out.Bad, len(out.Bad)
	for _, sp := range out.Idle {
		if (opt.Since.IsZero() || sp.Until.After(opt.Since)) && (opt.Until.IsZero() || sp.From.Before(opt.Until)) {
			rep.Schedulers = append(rep.Schedulers, sp)
		}
	}
	for _, sp := range out.Stalled {
		if (opt.Since.IsZero() || sp.Until.After(opt.Since)) && (opt.Until.IsZero() || sp.From.Before(opt.Until)) {
			rep.Controllers = append(rep.Controllers, sp)
		}
	}
	// Whatever the report ends with, it says where its expressions failed.
	defer func() {
		for _, err := range out.FilterErrors() {
			rep.Warnings = append(rep.Warnings, err.Error())
		}
	}()
	if len(out.Bad) == 0 {
		decide(rep)
		windowedHint(rep)
		return rep, nil
	}

	// 1. The boundary.
	cp, err := findBoundary(ctx, s, out, rep, first, last, opt.MaxEvidence)
	if err != nil {
		return nil, err
	}
	rep.slow = readSlowAt(ctx, s, cp.FirstBad)
	// 2. Units in scope.
	units, members := inScope(out, cp.FirstBad, &rep.Units)
	// 3. Identities and the slice.
	ids, ranks, err := identities(ctx, s, units, opt.Rules, rep)
	if err != nil {
		return nil, err
	}
	rep.Slice, err = findSlice(ctx, units, ids)
	if err != nil {
		return nil, err
	}
	// 4. The counterexample.
	findCounterexample(rep, units, ids, cp.FirstBad)
	// 5. Node health, the faults nodes logged, gang jobs' cascades (not
	// evidence of their own), then the suspects.
	rep.NodeHealth = nodeHealth(out, first, units, ids)
	if err := readBeyondAPIServer(ctx, s, rep, first, last, ids); err != nil {
		return nil, err
	}
	gangs := findGangs(members, ranks)
	rep.cascade = cascadeOf(gangs, units)
	rep.Changes, err = suspects(ctx, s, units, ids, rep, rep.typical, cp.FirstBad, first)
	if err != nil {
		return nil, err
	}
	// 5b. Independent episodes; the earliest is the main one.
	if err := separate(ctx, s, out, units, ids, rep, identity.NewResolver(s, rep.Boundary.LastGood, opt.Rules), first); err != nil {
		return nil, err
	}
	// 6. Gang jobs, with what their first rank's node logged.
	rep.Gangs = gangs
	attachHost(rep.hosts, rep.Gangs, units, ids)
	// 7. A verdict, then mitigation apart from confirmation.
	if err := conclude(ctx, s, out, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// readBeyondAPIServer reads the evidence of the window the apiserver did
// not write: the faults nodes logged, and CoreDNS's query storms.
func readBeyondAPIServer(ctx context.Context, s Store, rep *Report, first, last time.Time, ids []map[string]identity.Dimension) error {
	var err error
	if rep.hosts, err = readHostFaults(ctx, s, first, last, fleetNodes(ids)); err != nil {
		return err
	}
	rep.storms, err = readDNSStorms(ctx, s, first, last)
	return err
}

// findBoundary is step 1: the earliest known-bad instant (a change point
// in the times of the bad observations, moved back to a precursor) and
// the last known-good one before it, with the evidence of each. It sets
// rep.Boundary and returns the change point.
func findBoundary(ctx context.Context, s Store, all *outcome.Outcomes, rep *Report, first, last time.Time, maxEvidence int) (boundary.Result, error) {
	// The pods a Job counted in one write weigh as one observation.
	view := *all
	view.Bad = outcome.OnePerWrite(all.Bad)
	out := &view
	times := make([]time.Time, len(out.Bad))
	for i, o := range out.Bad {
		times[i] = o.Time
	}
	cp := boundary.Find(times, first, last)
	if i := precursor(out, cp.First, cp.FirstBad); i < cp.First {
		cp.First, cp.FirstBad = i, out.Bad[i].Time
	}
	b := &Boundary{FirstBad: cp.FirstBad, IncidentEnd: cp.End, BaselineRate: cp.BaselineRate,
		IncidentRate: cp.IncidentRate, Score: cp.Score, Noise: cp.First}
	// Container states and events are stamped to the second: the failure
	// they report may have begun up to a second before they say, and
	// nothing seen in that second is known good.
	goodUntil := cp.FirstBad
	if src := out.Bad[cp.First].Source; src == outcome.SourceStatus || src == timeline.SourceEvent {
		goodUntil = goodUntil.Truncate(time.Second)
	}
	lastGood, err := lastGoodBefore(ctx, s, out, goodUntil)
	if err != nil {
		return cp, err
	}
	if lastGood != nil {
		b.LastGood = lastGood.Time
		b.Evidence = append(b.Evidence, evidenceOf("good", lastGood))
	}
	for i := cp.First; i <= cp.Last && i < cp.First+maxEvidence; i++ {
		b.Evidence = append(b.Evidence, evidenceOf("bad", &out.Bad[i]))
	}
	rep.Boundary = b
	return cp, nil
}

// inScope is step 2: the units in scope, those that went bad from
// firstBad on and those that stayed good, counted into n; and members,
// every unit but the noise (bad before firstBad), for the gangs.
//
// When every unit that went bad from firstBad on went bad by a refused
// operation of a client from outside it (outcome.Unit.Target: a drain's
// evictions), or by the same operation's answer (a pod the drain did
// evict), the units in scope are those the operations were tried on: the
// pods nobody acted on say nothing of why the operation failed, and a
// pod it evicted stood good for it (in scope as such; its own story, for
// the gangs, is unchanged). When some went bad of themselves, the refused
// operations' targets are left out: what failed the pods is the
// question, and no pod failed of the operation.
func inScope(out *outcome.Outcomes, firstBad time.Time, n *UnitCounts) (units, members []*outcome.Unit) {
	targets, others := false, false
	for _, u := range out.Units {
		if u.Bad() && !u.BadAt.Before(firstBad) {
			switch {
			case !u.Target.IsZero() && u.AnsweredAt.IsZero():
				targets = true
			case u.Target.IsZero():
				others = true
			}
		}
	}
	onlyTargets := targets && !others
	for _, u := range out.Units {
		if !u.Bad() || !u.BadAt.Before(firstBad) {
			members = append(members, u)
		}
		refused := !u.Target.IsZero() && u.AnsweredAt.IsZero()
		switch {
		case u.Bad() && u.BadAt.Before(firstBad):
			n.Noise++
		case (onlyTargets && u.Target.IsZero()) || (!onlyTargets && refused && u.Bad()):
			// Outside the scope, and not counted in it.
		case onlyTargets && u.Bad() && !refused:
			// Evicted by the operation's answer: good for the
			// operation, seen so when it was answered.
			c := *u
			c.BadAt, c.Reason, c.Message, c.LastGood = time.Time{}, "", "", u.AnsweredAt
			units = append(units, &c)
			n.Good++
		case u.Bad():
			units = append(units, u)
			n.Bad++
		case u.Good():
			units = append(units, u)
			n.Good++
		default:
			n.Unknown++
		}
	}
	return units, members
}

// identities is step 3's first half: each unit's identity at its start,
// split into the sliceable dimensions (ids, parallel to units) and the
// constraints (rep.cons), and each pod's rank, kept apart from the slice.
func identities(ctx context.Context, s Store, units []*outcome.Unit, rules []identity.Rule, rep *Report) ([]map[string]identity.Dimension, map[*outcome.Unit]string, error) {
	res := identity.NewResolver(s, time.Time{}, rules)
	res.PinAtPodStart()
	ids := make([]map[string]identity.Dimension, len(units))
	cons := constraints{}
	ranks := map[*outcome.Unit]string{}                // rank is per pod: kept apart from the slice
	templates := map[identity.Ref]*identity.Identity{} // unborn units' controllers
	for i, u := range units {
		var id *identity.Identity
		var err error
		if u.Unborn {
			// The pods its controller could not create: what they would
			// have run with, the same for each of them.
			kind, _, _ := strings.Cut(u.Owner, "/")
			ref := identity.Ref{Kind: kind, Namespace: u.Namespace, Name: u.Name}
			if id = templates[ref]; id == nil {
				id, err = res.OfTemplate(ctx, ref, u.BadAt)
				templates[ref] = id
			}
		} else {
			id, err = res.Of(ctx, identity.Ref{Kind: "Pod", Namespace: u.Namespace, Name: u.Name})
		}
		if err != nil {
			if nf := (*identity.ErrNotFound)(nil); errors.As(err, &nf) {
				ids[i] = map[string]identity.Dimension{}
				continue
			}
			return nil, nil, fmt.Errorf("identity of %s: %w", u.Ref, err)
		}
		ids[i], cons[u] = map[string]identity.Dimension{}, map[string]string{}
		if r, ok := id.Get("rank"); ok {
			ranks[u] = r
		}
		for _, d := range id.Dimensions {
			switch {
			case constraint(d.Name):
				cons[u][d.Name] = d.Value
			case sliceable(d.Name):
				ids[i][d.Name] = d
			}
		}
	}
	rep.units, rep.ids, rep.cons = units, ids, cons
	return ids, ranks, nil
}

// findCounterexample is step 4: with a slice, its typical identity
// (rep.typical), its namespace (rep.ns) and the known-good unit most
// like it (rep.Counterexample).
func findCounterexample(rep *Report, units []*outcome.Unit, ids []map[string]identity.Dimension, firstBad time.Time) {
	if rep.Slice == nil {
		return
	}
	rep.typical = typical(units, ids, rep.Slice.Where)
	for i, u := range units {
		if u.Bad() && matches(ids[i], rep.Slice.Where) {
			rep.ns = u.Namespace
			break
		}
	}
	rep.Counterexample = counterexample(units, ids, rep.typical, rep.Slice.Where, rep.ns, firstBad)
}

// findGangs is step 6: gang jobs whose first rank failed apart from the
// cascade, over members with their ranks.
func findGangs(members []*outcome.Unit, ranks map[*outcome.Unit]string) []gang.Finding {
	gs := gang.Find(members, func(u *outcome.Unit) string { return ranks[u] })
	if gs == nil {
		gs = []gang.Finding{}
	}
	return gs
}

// conclude is step 7: the verdict, the last known-good moved before a
// confident cause, the evidence of load, the revision to undo to, and
// then mitigation apart from confirmation.
func conclude(ctx context.Context, s Store, out *outcome.Outcomes, rep *Report) error {
	decide(rep)
	windowedHint(rep)
	if err := lastGoodBeforeCause(ctx, s, out, rep); err != nil {
		return err
	}
	if err := hostBoundary(ctx, s, out, rep); err != nil {
		return err
	}
	if err := loadEvidence(ctx, s, rep); err != nil {
		return err
	}
	if err := slowEvidence(ctx, s, rep); err != nil {
		return err
	}
	dnsEvidence(rep)
	explainDNS(rep)
	if err := undoRevision(ctx, s, rep); err != nil {
		return err
	}
	rep.Mitigation, rep.Confirmation = advise(rep)
	return nil
}

func evidenceOf(side string, o *outcome.Observation) Evidence {
	what := o.Reason
	if o.Code != 0 {
		what = fmt.Sprintf("HTTP %d", o.Code)
		if o.Object.Resource != "" {
			what += " on " + o.Object.Resource
		}
		if o.By != "" {
			what += " (asked by " + strings.ToLower(o.By) + ")" // the pod whose request was refused
		}
	}
	if o.Message != "" {
		what += ": " + o.Message
	}
	ref := o.Ref()
	if o.Object.Kind == "" && o.Object.Resource != "" {
		ref = strings.TrimSuffix(o.Object.Resource+"/"+o.Object.Namespace+"/"+o.Object.Name, "/")
	}
	return Evidence{Side: side, Time: o.Time, Ref: ref, What: what, Record: o.RecordID, Run: o.Evidence.Run, Line: o.Evidence.Line}
}

// sliceable says whether a dimension can describe a slice: per-pod
// dimensions (rank, run) and hashes of whole objects cannot.
func sliceable(name string) bool {
	switch name {
	case "rank", "run":
		return false
	}
	return true
}

func findSlice(ctx context.Context, units []*outcome.Unit, ids []map[string]identity.Dimension) (*Slice, error) {
	// Dimensions every unit shares with one value say nothing.
	var keep []string
	for _, d := range allDims(ids) {
		values := map[string]bool{}
		for _, id := range ids {
			values[id[d].Value] = true
		}
		if len(values) > 1 {
			keep = append(keep, d)
		}
	}
	keep = separating(redundant(keep), units, ids, slice.MaxDims)
	cube := &slice.Cube{Dims: keep, Measure: slice.Ratio}
	nbad, weighted := 0, false
	for i, u := range units {
		leaf := slice.Leaf{Values: make([]string, len(keep)), Total: 1}
		for j, d := range keep {
			leaf.Values[j] = ids[i][d].Value
		}
		if u.Bad() {
			leaf.Bad = 1
			nbad++
			if !u.Target.IsZero() && u.Refusals > 1 {
				// Each retry of a refused operation is the apiserver's
				// decision asked again: a refusal that holds is evidence
				// as much as another pod refused once.
				leaf.Bad, leaf.Total = float64(u.Refusals), float64(u.Refusals)
				weighted = true
			}
		}
		cube.Leaves = append(cube.Leaves, leaf)
	}
	if nbad == 0 || len(keep) == 0 {
		return nil, nil
	}
	res, err := slice.Search(ctx, cube, slice.Options{})
	if err != nil {
		return nil, fmt.Errorf("slice: %w", err)
	}
	if len(res.Causes) == 0 {
		return nil, nil
	}
	c := res.Causes[0]
	where, equivalents := nameSlice(units, ids, keep, map[string]string(c.Where))
	sl := &Slice{Where: where, Equivalents: equivalents, Bad: int(c.Bad), Total: int(c.Total),
		Coverage: c.Coverage, Precision: c.Precision, Others: res.Causes[1:]}
	if weighted {
		// The slice's size is in units, whatever the search weighed.
		sl.Bad, sl.Total = 0, 0
		for i, u := range units {
			if matches(ids[i], map[string]string(c.Where)) {
				sl.Total++
				if u.Bad() {
					sl.Bad++
				}
			}
		}
	}
	return sl, nil
}

func matches(id map[string]identity.Dimension, where map[string]string) bool {
	for k, v := range where {
		if id[k].Value != v {
			return false
		}
	}
	return true
}

// typical is the identity of the bad units in the slice: per dimension,
// the value most of them share.
func typical(units []*outcome.Unit, ids []map[string]identity.Dimension, where map[string]string) map[string]string {
	counts := map[string]map[string]int{}
	n := 0
	for i, u := range units {
		if !u.Bad() || !matches(ids[i], where) {
			continue
		}
		n++
		for name, d := range ids[i] {
			if counts[name] == nil {
				counts[name] = map[string]int{}
			}
			counts[name][d.Value]++
		}
	}
	out := map[string]string{}
	for name, c := range counts {
		best, bestN := "", 0
		for v, k := range c {
			if k > bestN || (k == bestN && v < best) {
				best, bestN = v, k
			}
		}
		if bestN*2 > n { // a majority: a value the slice shares
			out[name] = best
		}
	}
	return out
}

// counterexample is the good unit most like the bad slice outside it: of
// the slice's population (its namespace, ns) when that holds one, as the
// suspects are scored over it; then sharing the most of the slice's
// typical identity; then created nearest the first bad.
func counterexample(units []*outcome.Unit, ids []map[string]identity.Dimension, typ, where map[string]string, ns string, firstBad time.Time) *Counterexample {
	best, bestScore := -1, -1
	inPop := false
	for i, u := range units {
		// A counterexample stayed good and differs in the slice: a good
		// unit inside the slice contradicts it, it does not confirm it.
		if !u.Good() || matches(ids[i], where) {
			continue
		}
		if in := u.Namespace == ns; in != inPop {
			if !in {
				continue
			}
			inPop, best, bestScore = true, -1, -1
		}
		score := 0
		for name, v := range typ {
			if perUnit(name) {
				continue
			}
			if ids[i][name].Value == v {
				score++
			}
		}
		if score > bestScore || (score == bestScore && closer(u, units[best], firstBad)) {
			best, bestScore = i, score
		}
	}
	if best < 0 {
		return nil
	}
	c := &Counterexample{Ref: units[best].Ref, Matches: bestScore, Differs: []Differ{}, InSlice: matches(ids[best], where)}
	names := map[string]bool{}
	for n := range typ {
		names[n] = true
	}
	for n := range ids[best] {
		names[n] = true
	}
	for n := range names {
		if perUnit(n) {
			continue
		}
		if _, inWhere := where[n]; typ[n] == "" && !inWhere {
			continue // the bad units share no value here: no contrast to draw
		}
		if g := ids[best][n].Value; g != typ[n] {
			c.Differs = append(c.Differs, Differ{Dimension: n, Bad: typ[n], Good: g})
		}
	}
	sort.Slice(c.Differs, func(i, j int) bool {
		// The slice's own dimensions first.
		_, ai := where[c.Differs[i].Dimension]
		_, aj := where[c.Differs[j].Dimension]
		if ai != aj {
			return ai
		}
		return c.Differs[i].Dimension < c.Differs[j].Dimension
	})
	return c
}

// perUnit dimensions tell units apart by design.
func perUnit(name string) bool {
	return name == "node" || name == "rank" || name == "run"
}

// closer prefers the good unit created nearest the boundary.
func closer(a, b *outcome.Unit, t time.Time) bool {
	da, db := a.Created.Sub(t), b.Created.Sub(t)
	if da < 0 {
		da = -da
	}
	if db < 0 {
		db = -db
	}
	if da != db {
		return da < db
	}
	return a.Ref < b.Ref
}

// lastGoodRecord is the latest record before before that is neither bad
// nor a failed request, among the lastGoodReach records before it.
//
// The records are read newest first in growing windows (a minute, an hour,
// then all before), the same records in the same order as one read of
// them all: one read of "the last lastGoodReach records before T" costs a
// columnar store a pass over every record before T to find where they
// start, and the record sought is most often the first one read.
func lastGoodRecord(ctx context.Context, s Store, out *outcome.Outcomes, before time.Time) (*outcome.Observation, error) {
	left, until := lastGoodReach, before
	for _, back := range []time.Duration{time.Minute, time.Hour, 0} {
		q := timeline.Query{Until: until, Desc: true, Limit: left,
			Fields: out.BadNeeds() | timeline.FieldReason | timeline.FieldCode}
		if back > 0 {
			q.Since = before.Add(-back)
		}
		for r, err := range s.Records(ctx, q) {
			if err != nil {
				return nil, err
			}
			left--
			bad, err := out.IsBad(r)
			if err != nil {
				return nil, err
			}
			if !bad && r.Code < 400 {
				return &outcome.Observation{Time: r.Time, Source: r.Source, Object: r.Object, Reason: r.Reason,
					Code: r.Code, RecordID: r.ID, Evidence: r.Evidence}, nil
			}
		}
		if left == 0 || back == 0 {
			break
		}
		until = q.Since
	}
	return nil, nil
}

// lastGoodReach is how many records before a time lastGoodRecord looks at.
const lastGoodReach = 1000

// Precursors: a job's first failure often comes seconds before the
// avalanche it causes (one rank dies, its peers follow), too far ahead for
// the change point to reach on timing alone when the evidence holds little
// baseline. A pod that went bad within precursorWindow before the boundary
// and belongs to the same controller as pods that went bad at the boundary
// is part of the incident, and the earliest such failure is its first bad.
const precursorWindow = 5 * time.Minute

// precursor returns the index in out.Bad of the earliest precursor's bad
// observation, or first when there is none.
func precursor(out *outcome.Outcomes, first int, firstBad time.Time) int {
	owners := map[string]bool{} // namespace/Kind/name of the pods bad at the boundary
	for _, u := range out.Units {
		if u.Bad() && !u.BadAt.Before(firstBad) && u.Owner != "" && u.BadAt.Sub(firstBad) < precursorWindow {
			owners[u.Namespace+"/"+u.Owner] = true
		}
	}
	earliest := firstBad
	for _, u := range out.Units {
		if u.Bad() && u.BadAt.Before(earliest) && firstBad.Sub(u.BadAt) <= precursorWindow && owners[u.Namespace+"/"+u.Owner] {
			earliest = u.BadAt
		}
	}
	for i := first - 1; i >= 0; i-- {
		if out.Bad[i].Time.Before(earliest) {
			break
		}
		if out.Bad[i].Time.Equal(earliest) {
			return i
		}
	}
	return first
}

// lastGoodBeforeCause moves the last known-good instant before a confident
// cause: what was seen good after a change, before the units it broke had
// run into it, was not known good, only not yet bad. The bisect window
// [last good, first bad] then holds the cause, as git bisect's would.
func lastGoodBeforeCause(ctx context.Context, s Store, out *outcome.Outcomes, rep *Report) error {
	b := rep.Boundary
	if rep.Verdict != VerdictCause || b == nil || len(rep.Changes) == 0 || !confidentChange(rep.Changes[0]) {
		return nil
	}
	// A workload's arrival breaks nothing until its load builds: the
	// window is the load's, not the creation's.
	at := rep.Changes[0].At
	if rep.Changes[0].Kind != "change" || rep.Changes[0].Dimension == "created" || at.IsZero() || !at.Before(b.LastGood) {
		return nil
	}
	lg, err := lastGoodBefore(ctx, s, out, at)
	if err != nil || lg == nil {
		return err
	}
	b.LastGood = lg.Time
	for i := range b.Evidence {
		if b.Evidence[i].Side == "good" {
			b.Evidence[i] = evidenceOf("good", lg)
		}
	}
	return nil
}

// lastGoodBefore is the last instant known good before t: the latest
// observation before it that is not bad, an object seen Ready or a record
// (a request served, a Normal event). Evidence that keeps arriving with
// nothing bad in it is evidence of health, so the latest of either is the
// last known good, not only the last state change to Ready.
func lastGoodBefore(ctx context.Context, s Store, out *outcome.Outcomes, t time.Time) (*outcome.Observation, error) {
	var lg *outcome.Observation
	for i := range out.Good {
		if !out.Good[i].Time.Before(t) {
			break
		}
		lg = &out.Good[i]
	}
	rec, err := lastGoodRecord(ctx, s, out, t)
	if err != nil {
		return nil, err
	}
	if rec != nil && (lg == nil || rec.Time.After(lg.Time)) {
		lg = rec
	}
	return lg, nil
}

// sameEpisode says whether the node episode is what the main findings
// already name: their leading suspect is its nodes' failure.
func sameEpisode(nep *Episode, changes []Suspect) bool {
	return len(changes) > 0 && len(nep.Changes) > 0 && nodeCondition(changes[0].Dimension) && changes[0].Dimension == nep.Changes[0].Dimension
}
