// Package outcome says what went bad and what stayed good: it reads the
// states objects were seen in (pods Failed, OOMKilled, CrashLoopBackOff;
// nodes NotReady; jobs Failed) and the records that report trouble (Warning
// events, apiserver 429s and 5xx), as observations in time, and folds them
// into units (pods) that went bad, stayed good, or neither.
//
// What counts as bad is a CEL expression over record fields (the same
// fields as `faultline timeline --where`); object states are offered to it
// as records of source "status" whose reason is the state (OOMKilled,
// CrashLoopBackOff, Failed, NodeNotReady, BackoffLimitExceeded, ...).
package outcome

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/timeline"
)

// DefaultBad is what counts as bad when the user says nothing: the failure
// states of pods, nodes and jobs, the Warning events that report them,
// apiserver responses that shed or fail API requests (not health probes
// such as /readyz, which fail by design while an apiserver starts), and
// the faults a node's own log reports (timeline.NodeFaults).
const DefaultBad = "(" + defaultBadRequests + ") || " + defaultBadStates + " || (" + defaultBadNode + ")"

// RefusedWrite selects the writes refused as malformed (400) or invalid
// (422): the write did not take place, and the same write is refused
// again however often it is tried. (A 400 to a read can pass with a
// retry: a container's log asked for before it started.)
const RefusedWrite = `code in [400, 422] && verb in ["create", "update", "patch"]`

// NotServed selects the requests on a collection (a create, a list, a
// watch) answered 404: their resource is not served (its CRD is gone) or
// their namespace is gone. A named object's 404 only says that object is
// missing.
const NotServed = `code == 404 && verb in ["create", "list", "watch", "deletecollection"]`

// The two halves of DefaultBad, queried apart so that each uses its index.
const (
	// "code >= 400" first lets SQLite use its index of error responses.
	// A workload's own identity denied (401, 403) fails the workload; a
	// system component's denials at start-up (its RBAC not yet loaded)
	// are the control plane's own. So does a workload's write refused as
	// malformed (400) or invalid (422): the write did not take place, and
	// the same write is refused again however often it is tried; and one
	// whose request on a collection (a create, a list, a watch) is
	// answered 404: the resource is not served (its CRD is gone), or the
	// namespace is gone.
	//
	// A pod create refused (403: a quota, a ServiceAccount gone, a policy)
	// is a pod that did not come to be, whoever asked: a controller's
	// refused creates are its workload's failures, as its FailedCreate
	// event says (an Event that counts repeats is one record).
	defaultBadRequests = `code >= 400 && (code == 429 || code >= 500 || ` +
		`((code in [401, 403] || (` + RefusedWrite + `) || (` + NotServed + `)) && ` +
		`user.startsWith("system:serviceaccount:") && !user.startsWith("system:serviceaccount:kube-system:")) || ` +
		`(code == 403 && verb == "create" && resource == "pods" && subresource == "" && ns != "kube-system")) && resource != ""`
	//
	// Besides the failures named, any Warning event about a pod (a volume
	// that will not mount, a sandbox that cannot be made, a readiness
	// probe that fails), a pod whose phase is Failed whatever its kubelet's
	// reason (its state is of type Warning: UnexpectedAdmissionError,
	// OutOfcpu, NodeAffinity...), and any state of a node but Ready (nodeState: a
	// condition that reports a problem) are bad. Such a warning about a
	// pod that was Ready in the end did not fail it (fold).
	defaultBadStates = `reason in [` +
		`"Failed", "OOMKilled", "Error", "ContainerCannotRun", "CrashLoopBackOff", "BackOff", ` +
		`"ErrImagePull", "ImagePullBackOff", "CreateContainerConfigError", "Evicted", "Preempted", ` +
		`"FailedScheduling", "FailedCreate", "NodeNotReady", "BackoffLimitExceeded", "DeadlineExceeded", "NotObserved"] || ` +
		`(reason != "" && type == "Warning" && source in ["event", "status"] && kind == "Pod") || ` +
		`(reason != "" && reason != "Ready" && source == "status" && kind == "Node")`
	// NodeFaults: the node-log reasons of timeline.NodeFaults (a test
	// holds the two lists equal), reason first for its index.
	defaultBadNode = `reason in ["Xid", "ECC", "RowRemap", "NVLink", "PLEG", "KubeletEviction", "OOMKill", ` +
		`"NCCLSystemError", "ConntrackFull", "LinkDown"] && source == "node" && type == "Warning"`
	// NodeFaults selects the records of node faults (ingest/nodelogs).
	NodeFaults = defaultBadNode
)

// DefaultGood is what counts as good: units that ran to completion or were
// Ready.
const DefaultGood = `source == "status" && reason in ["Ready", "Running", "Succeeded", "Complete"]`

// SourceStatus is the source kind of observations made from object states.
const SourceStatus timeline.SourceKind = "status"

// Observation is one thing seen at a time: an object's state, or a record.
type Observation struct {
	Time     time.Time           `json:"time"`
	Source   timeline.SourceKind `json:"source"`
	Object   timeline.ObjectRef  `json:"object"`
	Reason   string              `json:"reason,omitempty"`
	Message  string              `json:"message,omitempty"`
	Code     int                 `json:"code,omitempty"`
	ExitCode int                 `json:"exitCode,omitempty"`
	// Type is an event's type (Warning, Normal); of a state, Warning when
	// the object itself says it failed (a pod's phase Failed), whatever
	// the reason its kubelet gave.
	Type     string            `json:"type,omitempty"`
	Bad      bool              `json:"bad"`
	RecordID int64             `json:"record,omitempty"` // 0 for states read from object versions
	Evidence timeline.Evidence `json:"evidence"`
	// By is the pod ("Pod/namespace/name") whose own request was denied,
	// when the apiserver recorded it (a bound ServiceAccount token): the
	// denial is the pod's failure.
	By string `json:"by,omitempty"`
	// CountedBy is the Job ("Job/namespace/name") that counted this pod
	// as failed (its status.uncountedTerminatedPods.failed): a pod it
	// terminated as it failed (a deadline passed, its backoff limit
	// reached) is failed by its Job's word, whatever its own state.
	CountedBy string `json:"countedBy,omitempty"`
	// Target is the operation (Unit.Target) of a request from outside the
	// pod that was refused: the pod it named is the unit.
	Target Operation `json:"target,omitzero"`
}

// Ref is "Kind/namespace/name" of the object observed.
func (o *Observation) Ref() string { return refString(o.Object) }

func refString(o timeline.ObjectRef) string {
	if o.Namespace == "" {
		return o.Kind + "/" + o.Name
	}
	return o.Kind + "/" + o.Namespace + "/" + o.Name
}

// Unit is one pod's story: when it was created, when it was last seen
// good, when it first went bad and why. (Or, Unborn, the story of the
// pods a controller could not create.)
type Unit struct {
	Ref       string    `json:"ref"` // Pod/ns/name; unborn: CONTROLLER/ns/name/N
	Namespace string    `json:"-"`
	Name      string    `json:"-"`
	UID       string    `json:"uid,omitempty"`
	Created   time.Time `json:"created,omitzero"`
	LastGood  time.Time `json:"lastGood,omitzero"`
	BadAt     time.Time `json:"badAt,omitzero"`
	Reason    string    `json:"reason,omitempty"`
	Message   string    `json:"message,omitempty"`
	ExitCode  int       `json:"exitCode,omitempty"`
	Deleted   time.Time `json:"deleted,omitzero"`
	Completed bool      `json:"completed,omitempty"` // seen Succeeded
	// Owner is the pod's controller, "Kind/name" (Job/train), if any.
	Owner string `json:"owner,omitempty"`
	// Unborn: the unit is the pods a controller (Ref, Owner: a
	// ReplicaSet, Job, StatefulSet...) could not create, refused by the
	// apiserver; it has no pod of its own, and its identity is the
	// controller's pod template.
	Unborn bool `json:"unborn,omitempty"`
	// Refused: the unit went bad by a request of its own that the
	// apiserver shed (429) or failed (5xx). Its work was refused; the pod
	// itself may have lived on, so it is no rank that died (analyze/gang).
	Refused bool `json:"refused,omitempty"`
	// Killed: the unit went bad as its Job counted it failed before it
	// failed of itself: its controller terminated it (a deadline passed,
	// the Job failed), so it is no rank that died either.
	Killed bool `json:"killed,omitempty"`
	// Target is the operation of a client from outside the pod (a
	// person, or automation such as a drain) that acted on the pod, as
	// "VERB pods/SUBRESOURCE by USER" in JSON: refused, when the unit went bad by
	// it (an eviction a disruption budget refused), or answered. The pod
	// itself may have run on: the failure is the client's operation on
	// it, so it is no rank that died either, and the units such an
	// operation was tried on are the population it is judged in (a pod
	// it evicted stayed good for it, though deleted).
	Target Operation `json:"target,omitzero"`
	// Refusals counts the refusals of Target on the unit: each retry of
	// the operation is the apiserver's decision asked again, later.
	Refusals int `json:"-"`
	// AnsweredAt is when Target was answered on the unit (zero: it was
	// not). A pod evicted by that answer went bad by it (Evicted,
	// EvictionByEvictionAPI), and stood good for the operation all the
	// same: it did what the client asked.
	AnsweredAt time.Time `json:"-"`
	// Source is the kind of evidence the unit was first seen bad in.
	Source timeline.SourceKind `json:"-"`
	// Evidence is where the first bad (else the last good) state was read.
	Evidence timeline.Evidence `json:"evidence"`
	RecordID int64             `json:"record,omitempty"`
}

// Bad reports whether the unit went bad.
func (u *Unit) Bad() bool { return !u.BadAt.IsZero() }

// Good reports whether the unit was seen good, never went bad, and was
// not deleted before it completed: a pod torn down by its controller
// mid-incident has no known fate. A pod an operation from outside it was
// answered on (Target: a drain evicted it) stood good for that operation,
// deleted or not.
func (u *Unit) Good() bool {
	return u.BadAt.IsZero() && !u.LastGood.IsZero() && (u.Deleted.IsZero() || u.Completed || !u.Target.IsZero())
}

// Store is what outcomes are read from.
type Store interface {
	Versions(ctx context.Context, q timeline.VersionQuery) ([]timeline.ObjectVersion, error)
	Records(ctx context.Context, q timeline.Query) iter.Seq2[*timeline.Record, error]
}

// Options say what is bad and good and over which time.
type Options struct {
	Bad, Good    string    // CEL; "" means DefaultBad, DefaultGood
	Since, Until time.Time // zero: unbounded
	// StatesOnly reads the object states and skips the search for bad
	// records: for a caller that judges the records it shows one by one
	// (IsBad), where a search of every record would cost more than it
	// shows. Bad then holds bad states only, and units are not folded.
	StatesOnly bool
	// Last is the store's last evidence (its Bounds), when the caller has
	// read it: zero, Read asks the store (on ClickHouse, a scan of every
	// record's time: 70 ms on the 10 M-line benchmark log).
	Last time.Time
}

// Outcomes is what Read found.
type Outcomes struct {
	// Bad and Good are the observations that matched, oldest first.
	Bad, Good []Observation
	// States are every object state seen in the window (one per change of
	// state), bad or not, oldest first: the records of source "status"
	// that timeline lists beside the stored ones.
	States []Observation
	// Units are the pods, by ref.
	Units []*Unit
	// Idle are the spans in which a scheduler placed and judged no pod
	// while pods waited for it (NotScheduled), oldest first.
	Idle []SchedulerIdle
	// Stalled are the spans in which a controller made no request while
	// changes of its objects waited for it (NotObserved), oldest first.
	Stalled []ControllerIdle
	// BadExpr and GoodExpr are the expressions used.
	BadExpr, GoodExpr string

	bad, good *timeline.Filter
}

// BadRecordIDs is the set of stored records found bad (observations made
// from object states, which are not stored, are not in it): the key set
// a timeline.Query takes as Bad.
func (o *Outcomes) BadRecordIDs() map[int64]bool {
	ids := make(map[int64]bool, len(o.Bad))
	for i := range o.Bad {
		if o.Bad[i].RecordID != 0 {
			ids[o.Bad[i].RecordID] = true
		}
	}
	return ids
}

// BadStates are the bad observations made from object states, oldest
// first.
func (o *Outcomes) BadStates() []Observation {
	var out []Observation
	for _, ob := range o.Bad {
		if ob.RecordID == 0 {
			out = append(out, ob)
		}
	}
	return out
}

// IsBad and IsGood evaluate the expressions on a record.
func (o *Outcomes) IsBad(r *timeline.Record) (bool, error)  { return o.bad.Match(r) }
func (o *Outcomes) IsGood(r *timeline.Record) (bool, error) { return o.good.Match(r) }

// BadNeeds is the set of record fields IsBad reads (timeline.Filter.Needs).
func (o *Outcomes) BadNeeds() timeline.FieldSet {
	if o.bad == nil {
		return 0
	}
	return o.bad.Needs()
}

// Which names one of the two outcome expressions (Options.Bad and
// Options.Good).
type Which string

const (
	Bad  Which = "bad"
	Good Which = "good"
)

// ExprError is an outcome expression that failed. Without a Ref it does
// not compile, which is the user's to fix; with one it failed at run time
// on the observation of Ref at At.
type ExprError struct {
	Which Which
	Ref   string    // the observation it failed on; "" when it does not compile
	At    time.Time // when Ref is set
	Err   error
}

func (e *ExprError) Error() string {
	if e.Ref == "" {
		return fmt.Sprintf("the %s expression: %v", e.Which, e.Err)
	}
	return fmt.Sprintf("the %s expression on %s at %s: %v", e.Which, e.Ref, e.At.Format(time.RFC3339), e.Err)
}

func (e *ExprError) Unwrap() error { return e.Err }

// FilterErrors returns the run-time failures of the bad and good
// expressions so far (1/0, a missing key), each of which counted as no
// match, so that a report resting on them can say so; nil when none failed.
func (o *Outcomes) FilterErrors() []error {
	var errs []error
	for _, f := range []struct {
		flag string
		f    *timeline.Filter
	}{{"--bad", o.bad}, {"--good", o.good}} {
		if f.f == nil {
			continue
		}
		if err := f.f.RuntimeError(); err != nil {
			errs = append(errs, fmt.Errorf("%s %w", f.flag, err))
		}
	}
	return errs
}

// Read gathers the observations and folds them into units.
func Read(ctx context.Context, s Store, opt Options) (*Outcomes, error) {
	out := &Outcomes{BadExpr: opt.Bad, GoodExpr: opt.Good}
	if out.BadExpr == "" {
		out.BadExpr = DefaultBad
	}
	if out.GoodExpr == "" {
		out.GoodExpr = DefaultGood
	}
	bad, err := timeline.CompileFilter(out.BadExpr)
	if err != nil {
		return nil, &ExprError{Which: Bad, Err: err}
	}
	good, err := timeline.CompileFilter(out.GoodExpr)
	if err != nil {
		return nil, &ExprError{Which: Good, Err: err}
	}

	out.bad, out.good = bad, good

	// The bad records are read beside the object states, which they do
	// not depend on: on ClickHouse, the 10 M-line benchmark log's failed
	// requests took 0.55 s of investigate's 1.9 after the states' 0.35.
	var (
		recs    *badRead
		recsErr error
	)
	done := make(chan struct{})
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if opt.StatesOnly {
		close(done)
	} else {
		go func() {
			defer close(done)
			recs, recsErr = readBad(rctx, s, opt, bad)
		}()
	}
	units, err := readObjectStates(ctx, s, opt, out)
	if err != nil {
		cancel()
		<-done // nothing outlives the read
		return nil, err
	}
	<-done
	if opt.StatesOnly {
		sortObs(out.Bad)
		return out, nil
	}
	if recsErr != nil {
		return nil, recsErr
	}
	out.Bad = recs.appendTo(out.Bad)
	sortObs(out.Bad)
	sortObs(out.Good)
	out.Bad = unexcused(out.Bad, out.Good, out.States)
	if out.Units, err = expandUnborn(ctx, s, fold(units, out.Bad, out.Good)); err != nil {
		return nil, err
	}
	if err := readTargets(ctx, s, out, opt); err != nil {
		return nil, err
	}
	return out, nil
}

// readObjectStates reads the objects' states into out, as observations,
// and the pods' units.
func readObjectStates(ctx context.Context, s Store, opt Options, out *Outcomes) ([]*Unit, error) {
	states, units, waits, changes, err := readStates(ctx, s)
	if err != nil {
		return nil, err
	}
	end := evidenceEnd(ctx, s, opt)
	if err := waits.readWork(ctx, s, end); err != nil {
		return nil, err
	}
	unattended, idle := waits.unattended(end)
	states = append(states, unattended...)
	out.Idle = idle
	if end.IsZero() {
		end = waits.last
	}
	unobserved, stalled, err := changes.unobserved(ctx, s, end)
	if err != nil {
		return nil, err
	}
	states = append(states, unobserved...)
	out.Stalled = stalled
	sortObs(states)
	if err := classifyStates(out, states, opt); err != nil {
		return nil, err
	}
	return units, nil
}

// classifyStates judges the object states seen in the window into out:
// each is kept in States, and bad or (if not bad) good as its expressions
// say.
func classifyStates(out *Outcomes, states []Observation, opt Options) error {
	bad, good := out.bad, out.good
	inWindow := func(t time.Time) bool {
		return (opt.Since.IsZero() || !t.Before(opt.Since)) && (opt.Until.IsZero() || t.Before(opt.Until))
	}
	for i := range states {
		o := &states[i]
		if !inWindow(o.Time) {
			continue
		}
		r := o.Record()
		isBad, err := bad.Match(r)
		if err != nil {
			return &ExprError{Which: Bad, Ref: o.Ref(), At: o.Time, Err: err}
		}
		if isBad {
			o.Bad = true
			out.States = append(out.States, *o)
			out.Bad = append(out.Bad, *o)
			continue
		}
		out.States = append(out.States, *o)
		isGood, err := good.Match(r)
		if err != nil {
			return &ExprError{Which: Good, Ref: o.Ref(), At: o.Time, Err: err}
		}
		if isGood {
			out.Good = append(out.Good, *o)
		}
	}
	return nil
}

// readBad reads the records that report trouble, as bad observations
// (badRead.appendTo): the filter runs in SQL where it can (the default's
// halves apart, each on its index).
//
// They are gathered in blocks and copied once into a slice of their
// number: appended one by one, a slice of 88,622 observations (the 10 M-line
// benchmark log) grew by a quarter at a time, through about five times its
// size of fresh memory, a third of investigate's own CPU on ClickHouse.
//
// A store that knows its bounds is read in parts of the window, a few at a
// time (readParts): one query holds one core. A store that plans its
// reads (planner) is read whole.
func readBad(ctx context.Context, s Store, opt Options, bad *timeline.Filter) (*badRead, error) {
	queries, extras := []*timeline.Filter{bad}, []*timeline.FieldsWhere{denialExtra}
	if opt.Bad == "" {
		queries, extras = queries[:0], []*timeline.FieldsWhere{requestsPod, denialExtra, denialExtra}
		for _, part := range []string{defaultBadRequests, defaultBadStates, defaultBadNode} {
			f, err := timeline.CompileFilter(part)
			if err != nil {
				return nil, fmt.Errorf("default bad: %w", err) // a constant: a bug
			}
			queries = append(queries, f)
		}
	}
	parts := [][2]time.Time{{opt.Since, opt.Until}}
	if b, ok := s.(bounder); ok && !plansReads(s) {
		first, last, err := b.Bounds(ctx)
		if err != nil {
			return nil, fmt.Errorf("bad records: %w", err)
		}
		parts = windowParts(opt.Since, opt.Until, first, last, partsPerReader*readers())
	}
	read := func(ctx context.Context, q, p int, g *gather[Observation]) error {
		for r, err := range s.Records(ctx, timeline.Query{Since: parts[p][0], Until: parts[p][1], Where: queries[q],
			Fields: badFields, FieldsWhere: extras[q]}) {
			if err != nil {
				return fmt.Errorf("bad records: %w", err)
			}
			o := Observation{Time: r.FirstSeen(), Source: r.Source, Object: r.Object, Reason: r.Reason,
				Message: r.Message, Code: r.Code, Bad: true, RecordID: r.ID, Evidence: r.Evidence}
			// A refused request is a failure of the client that made it,
			// not of the object it asked for: when the apiserver recorded
			// which pod made it (a bound ServiceAccount token), the refusal
			// is that pod's observation. A denial (401, 403) or a write
			// refused as malformed or invalid (400, 422) does not pass
			// with a retry; a request shed (429) or failed (5xx) may, but
			// the pod saw its work refused all the same, and a client
			// refused now and then before the incident is noise before
			// the boundary, as any bad unit is. The codes are denialExtra's
			// and requestsPod's: the pod is read.
			if byClient(r.Code) {
				if pod := r.Pod(); pod != "" {
					o.By = "Pod/" + pod
				} else {
					o.Target = targetOp(r)
				}
			}
			g.add(o)
		}
		return nil
	}
	got, err := readParts(ctx, len(queries), len(parts), read)
	if err != nil {
		return nil, err
	}
	return &badRead{got: got, queries: len(queries)}, nil
}

// badRead is the bad records readBad read, in the blocks it gathered them
// in, for each query and part of the window.
type badRead struct {
	got     []gather[Observation]
	queries int
}

// appendTo appends the bad records to obs in the order one query per
// filter over the whole window reads them: by filter, then by time. A
// record two filters keep counts once.
func (b *badRead) appendTo(obs []Observation) []Observation {
	n := 0
	for i := range b.got {
		n += b.got[i].n
	}
	obs = slices.Grow(obs, n)
	seen := map[int64]bool{}
	for i := range b.got {
		b.got[i].each(func(o *Observation) {
			if b.queries > 1 {
				if seen[o.RecordID] {
					return
				}
				seen[o.RecordID] = true
			}
			obs = append(obs, *o)
		})
	}
	return obs
}

// partsPerReader is how many parts of the window each reader reads, so
// that a part denser than the others (a storm) does not leave one idle.
const partsPerReader = 4

// readers is how many parts are read at once: two at most, whatever the
// cores. A read holds one of the store's connections while it runs (the
// SQLite store has 4, and the TUI reads beside the investigation), and
// the machines this is measured on have two cores. One core gains
// nothing from a second. (Four readers once deadlocked the SQLite store,
// which took a second connection to look up a string: it has a pool of
// its own for those now, TestReadersOutnumberConnections.)
func readers() int { return min(runtime.GOMAXPROCS(0), 2) }

// planner is a store that plans each read of records with queries of
// its own, on servers that already use every core (ClickHouse: the rows
// a filter keeps counted per bucket of time, the failed requests' copy
// checked by digests). Read in parts, the bad records cost it a plan per
// part and gain no core: on the 10 M-line benchmark log, investigate took
// 4.2-4.5 s in eight parts and 3.7-3.9 s in one (2026-12-06).
type planner interface {
	PlansReads() bool
}

// plansReads reports whether s is a planner that plans its reads.
func plansReads(s Store) bool {
	p, ok := s.(planner)
	return ok && p.PlansReads()
}

// bounder is a store that knows the times of its first and last evidence.
type bounder interface {
	Bounds(ctx context.Context) (first, last time.Time, err error)
}

// windowParts splits [since, until) (zero: unbounded) into n parts at
// even times between the evidence's bounds, first and last. The first part
// keeps since and the last until as they are, so the parts hold what the
// window holds, records with no time included. Where there is no room
// between, the window is one part.
func windowParts(since, until, first, last time.Time, n int) [][2]time.Time {
	lo, hi := first, last.Add(time.Nanosecond)
	if !since.IsZero() && since.After(lo) {
		lo = since
	}
	if !until.IsZero() && until.Before(hi) {
		hi = until
	}
	step := hi.Sub(lo) / time.Duration(max(n, 1))
	if first.IsZero() || last.IsZero() || n <= 1 || step <= 0 {
		return [][2]time.Time{{since, until}}
	}
	parts := make([][2]time.Time, n)
	from := since
	for i := range parts {
		to := until
		if i < n-1 {
			to = lo.Add(step * time.Duration(i+1))
		}
		parts[i] = [2]time.Time{from, to}
		from = to
	}
	return parts
}

// readParts runs read for every query q and part p, on readers()
// goroutines, each into a gather of its own, and returns them by query,
// then part. The first error stops the rest and is the one returned (the
// reads it cut short fail with the cancellation it caused).
func readParts(ctx context.Context, queries, parts int, read func(ctx context.Context, q, p int, g *gather[Observation]) error) ([]gather[Observation], error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	got := make([]gather[Observation], queries*parts)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(readers(), len(got)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if ctx.Err() != nil {
					continue // an error stopped the rest
				}
				if err := read(ctx, j/parts, j%parts, &got[j]); err != nil {
					cancel(err) // the first cause is kept
				}
			}
		}()
	}
	for j := range got {
		select {
		case jobs <- j:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	return got, nil
}

// gather collects values in blocks that double up to 8,192 values, never
// moving one: they are copied once, by each, into a slice grown to hold
// them all.
type gather[T any] struct {
	full [][]T
	cur  []T
	n    int
}

func (g *gather[T]) add(v T) {
	if len(g.cur) == cap(g.cur) {
		if g.cur != nil {
			g.full = append(g.full, g.cur)
		}
		g.cur = make([]T, 0, min(max(2*cap(g.cur), 256), 8192))
	}
	g.cur = append(g.cur, v)
	g.n++
}

// each calls f with each value gathered, in the order added.
func (g *gather[T]) each(f func(*T)) {
	for _, b := range g.full {
		for i := range b {
			f(&b[i])
		}
	}
	for i := range g.cur {
		f(&g.cur[i])
	}
}

// badFields are the fields of a bad record that its observation keeps;
// denialExtra asks for the extra JSON of refused requests (the pod that
// made them, byClient) and of events (when the first of them was), its
// only uses here, which a columnar store would otherwise read for every
// bad record. requestsPod asks the default's requests half, which holds
// no event, for the pod alone (timeline.FieldPod: on ClickHouse, 2.9 MB
// of the failed requests' 36.6 MB of extra on each shard of the 10 M-line
// benchmark log).
var (
	badFields   = timeline.FieldReason | timeline.FieldMessage | timeline.FieldCode
	denialExtra = &timeline.FieldsWhere{Fields: timeline.FieldExtra | targetFields, Where: mustFilter(byClientCodes + ` || source == "event"`)}
	requestsPod = &timeline.FieldsWhere{Fields: timeline.FieldPod | targetFields, Where: mustFilter(byClientCodes)}
	eventsExtra = &timeline.FieldsWhere{Fields: timeline.FieldExtra, Where: mustFilter(`source == "event"`)}
)

// byClientCodes are the codes byClient names.
const byClientCodes = `code in [400, 401, 403, 404, 422, 429] || code >= 500`

// byClient says whether a response code refuses the client rather than
// reports on the object: a denial (401, 403), a write refused as
// malformed or invalid (400, 422), a resource not served (404: the
// default counts it on a collection only, where it says so), a request
// shed (429) or one the apiserver failed (5xx). denialExtra reads the
// extra of these.
func byClient(code int) bool {
	return code == 400 || code == 401 || code == 403 || code == 404 || code == 422 || code == 429 || code >= 500
}

func mustFilter(expr string) *timeline.Filter {
	f, err := timeline.CompileFilter(expr)
	if err != nil {
		panic(err) // a constant: a bug
	}
	return f
}

// fold folds the observations, oldest first, into units: a pod goes bad
// at its first bad observation (its own state, or an event about it), the
// excused ones already left out (unexcused); it was good at its latest
// good one before that. A controller that could not create its pods
// (Unborn) becomes a unit of its own. It returns the units, those new
// ones last.
func fold(units []*Unit, bad, good []Observation) []*Unit {
	byRef := map[string]*Unit{}
	for _, u := range units {
		byRef[u.Ref] = u
	}
	// A pod's own failures first; its Job's word (CountedBy) only for the
	// pods that did not fail of themselves: a Job may list a pod that
	// exited a moment before its own state was written.
	for _, byJob := range []bool{false, true} {
		for i := range bad {
			if o := &bad[i]; (o.CountedBy != "") == byJob {
				units = foldBad(units, byRef, o)
			}
		}
	}
	for _, o := range good {
		u := byRef[o.Ref()]
		if u == nil || (!u.BadAt.IsZero() && !o.Time.Before(u.BadAt)) {
			continue
		}
		if o.Reason == "Succeeded" {
			u.Completed = true
		}
		if o.Time.After(u.LastGood) {
			u.LastGood = o.Time
			if u.BadAt.IsZero() {
				u.Evidence = o.Evidence
			}
		}
	}
	return units
}

// foldBad folds one bad observation into its unit (by Ref in byRef, made
// for a controller that could not create its pods), and returns units
// with any unit it made.
func foldBad(units []*Unit, byRef map[string]*Unit, o *Observation) []*Unit {
	u := byRef[o.Ref()]
	if u == nil && o.By != "" {
		u = byRef[o.By] // the pod's own request failed
	}
	if u == nil && !o.Target.IsZero() {
		// Another client's operation on the pod was refused.
		if u = byRef["Pod/"+o.Object.Namespace+"/"+o.Object.Name]; u != nil {
			if u.BadAt.IsZero() {
				u.Target = o.Target
			}
			if u.Target == o.Target {
				u.Refusals++
			}
		}
	}
	if u == nil && o.Reason == NotObserved {
		// What was never begun: the object's change is the unit.
		u = &Unit{Ref: o.Ref(), Namespace: o.Object.Namespace, Name: o.Object.Name, UID: o.Object.UID,
			Owner: o.Object.Kind + "/" + o.Object.Name}
		units = append(units, u)
		byRef[u.Ref] = u
	}
	if u == nil && unborn(*o) {
		u = &Unit{Ref: o.Ref(), Namespace: o.Object.Namespace, Name: o.Object.Name, UID: o.Object.UID,
			Owner: o.Object.Kind + "/" + o.Object.Name, Unborn: true}
		units = append(units, u)
		byRef[u.Ref] = u
	}
	if u == nil {
		return units
	}
	if !u.BadAt.IsZero() {
		// An event is stamped to the second: the state it reports,
		// seen within that second, says what went wrong (the
		// container's own last words, not "Back-off restarting").
		if o.Source == SourceStatus && o.CountedBy == "" && u.Source == timeline.SourceEvent && o.Time.Sub(u.BadAt) < time.Second {
			u.Reason, u.Message, u.ExitCode, u.Source = o.Reason, o.Message, o.ExitCode, o.Source
		}
		return units
	}
	reason := o.Reason
	if reason == "" && o.Code != 0 {
		reason = fmt.Sprintf("HTTP %d", o.Code)
	}
	u.BadAt, u.Reason, u.Message, u.ExitCode, u.Evidence, u.RecordID, u.Source = o.Time, reason, o.Message, o.ExitCode, o.Evidence, o.RecordID, o.Source
	u.Refused = o.By == u.Ref && (o.Code == 429 || o.Code >= 500)
	u.Killed = o.CountedBy != ""
	return units
}

// excuse knows, of each object, its last good observation and its last
// state: what can show a bad observation to be no failure after all.
type excuse struct {
	lastGood map[string]time.Time
	last     map[string]string
}

func excuses(good, states []Observation) excuse {
	ex := excuse{lastGood: map[string]time.Time{}, last: map[string]string{}}
	for _, o := range good {
		ex.lastGood[o.Ref()] = o.Time // oldest first: the last one stays
	}
	for _, o := range states {
		ex.last[o.Ref()] = o.Reason
	}
	return ex
}

// excused says whether a bad observation was no failure after all:
//   - a pod the scheduler could not place at first (no room yet: a
//     preemption under way, an autoscaler adding nodes, a volume being
//     provisioned), and that then ran: it waited, it did not fail;
//   - a warning that is no failure by itself (a volume slow to mount, a
//     probe failing while the pod warms up) about a pod that was Ready in
//     the end, or completed: it passed.
func (ex excuse) excused(o Observation) bool {
	if o.Reason == "FailedScheduling" && ex.lastGood[o.Ref()].After(o.Time) {
		return true
	}
	return warningOnly(o) && slices.Contains(endedWell, ex.last[o.Ref()])
}

// unexcused keeps the bad observations that were failures, in place in
// bad: what the boundary is found from. An excused one is no more bad
// than a good one.
func unexcused(bad, good, states []Observation) []Observation {
	ex := excuses(good, states)
	return slices.DeleteFunc(bad, ex.excused)
}

func sortObs(obs []Observation) {
	sort.SliceStable(obs, func(i, j int) bool {
		if !obs[i].Time.Equal(obs[j].Time) {
			return obs[i].Time.Before(obs[j].Time)
		}
		return obs[i].Ref() < obs[j].Ref()
	})
}

// Record is the observation as a record of its source ("status" for an
// object state; such records are not stored and have no ID), marked Bad
// as classified.
func (o *Observation) Record() *timeline.Record {
	return &timeline.Record{ID: o.RecordID, Time: o.Time, Source: o.Source, Object: o.Object, Reason: o.Reason,
		Message: o.Message, Code: o.Code, Type: o.Type, Evidence: o.Evidence, Bad: o.Bad}
}

// evidenceEnd is when the evidence ends, for a pod still waiting for a
// scheduler: the window's end, or the store's last evidence; zero when
// the store does not say (then the latest version read).
func evidenceEnd(ctx context.Context, s Store, opt Options) time.Time {
	last := opt.Last
	if last.IsZero() {
		b, ok := s.(bounder)
		if !ok {
			return opt.Until
		}
		var err error
		if _, last, err = b.Bounds(ctx); err != nil {
			return opt.Until
		}
	}
	if last.IsZero() || (!opt.Until.IsZero() && opt.Until.Before(last)) {
		return opt.Until
	}
	return last
}

// readStates turns pod, node and job versions into state observations (one
// per change of state) and pods into units, and follows the pods' waits
// for a scheduler (unattended.go).
func readStates(ctx context.Context, s Store) ([]Observation, []*Unit, *waits, *changes, error) {
	var obs []Observation
	var units []*Unit
	var jobs []timeline.ObjectVersion
	waits, changes := newWaits(), newChanges()
	for _, kind := range []struct{ group, resource, kind string }{
		{"", "pods", "Pod"}, {"", "nodes", "Node"}, {"batch", "jobs", "Job"},
		{"apps", "replicasets", "ReplicaSet"}, {"", "replicationcontrollers", "ReplicationController"},
		{"apps", "deployments", "Deployment"}, {"apps", "statefulsets", "StatefulSet"}, {"apps", "daemonsets", "DaemonSet"},
	} {
		vs, err := s.Versions(ctx, timeline.VersionQuery{Group: kind.group, Resource: kind.resource, History: true})
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("%s versions: %w", kind.resource, err)
		}
		status := statusKinds[kind.group+"/"+kind.resource]
		if kind.kind == "Job" {
			jobs = vs
		}
		var (
			last     string // ns/name of the previous version
			prev     string // its state
			prevSeen time.Time
			current  *Unit
		)
		for i := range vs {
			v := &vs[i]
			key := v.Object.Namespace + "/" + v.Object.Name + "/" + v.Object.UID
			if status {
				var g generations
				if json.Unmarshal(v.Content, &g) == nil {
					changes.version(kind.group, kind.resource, kind.kind, key, v, g)
				}
			}
			if statesOf[kind.kind] == nil {
				waits.saw(v.Time)
				continue // read for its generations alone
			}
			var m map[string]any
			if json.Unmarshal(v.Content, &m) != nil {
				continue
			}
			seen := prevSeen
			prevSeen = v.Time
			waits.saw(v.Time)
			if kind.kind == "Pod" {
				waits.pod(key, v, m)
			}
			if key != last {
				last, prev, seen = key, "", time.Time{}
				if kind.kind == "Pod" {
					current = newUnit(v, m)
					units = append(units, current)
				}
			}
			st := stateOf(kind.kind, m)
			if current != nil && kind.kind == "Pod" && isDeleted(m) && current.Deleted.IsZero() {
				current.Deleted = v.Time
			}
			if st.reason == "" || st.reason == prev {
				continue
			}
			prev = st.reason
			ref := v.Object
			ref.Kind = kind.kind
			t := v.Time
			// An object dumped long after the fact says when it changed,
			// unless an earlier version of it, in another state, says it
			// cannot have (a condition whose transition time was not
			// renewed): then it changed when it was seen so.
			if !st.at.IsZero() && v.Time.Sub(st.at) > 2*time.Second && !st.at.Before(seen) {
				t = st.at
			}
			o := Observation{Time: t, Source: SourceStatus, Object: ref, Reason: st.reason,
				Message: st.message, ExitCode: st.exitCode, Evidence: v.Evidence}
			if st.failed {
				o.Type = "Warning"
			}
			obs = append(obs, o)
		}
	}
	obs = append(obs, countedFailed(jobs, units)...)
	sortObs(obs)
	return obs, units, waits, changes, nil
}

// OnePerWrite is bad with the pods a Job counted as failed in one write
// folded into the first of them: they are one observation of when things
// went bad, not one per pod, and hundreds at one instant would outweigh
// the few that began it (the boundary's change point). Every one of them
// stays bad (timeline, bisect and the histogram count them all). When
// no write counted two, it returns bad itself.
func OnePerWrite(bad []Observation) []Observation {
	type write struct {
		job  string
		time int64
	}
	counted := map[write]bool{}
	again := func(o *Observation) bool {
		if o.CountedBy == "" {
			return false
		}
		k := write{o.CountedBy, o.Time.UnixNano()}
		if counted[k] {
			return true
		}
		counted[k] = true
		return false
	}
	for i := range bad {
		if !again(&bad[i]) {
			continue
		}
		out := make([]Observation, i, len(bad)-1)
		copy(out, bad)
		for j := i + 1; j < len(bad); j++ {
			if !again(&bad[j]) {
				out = append(out, bad[j])
			}
		}
		return out
	}
	return bad
}

// countedFailed are the observations of the pods that their Jobs counted
// as failed (status.uncountedTerminatedPods.failed, the UIDs the Job
// controller has terminated as failed and not yet counted), each at the
// first version that lists it, with the reason of the Job's failure when
// the Job was failing (FailureTarget or Failed: DeadlineExceeded,
// BackoffLimitExceeded) and "Failed" otherwise.
func countedFailed(jobs []timeline.ObjectVersion, units []*Unit) []Observation {
	byUID := make(map[string]*Unit, len(units))
	for _, u := range units {
		if u.UID != "" {
			byUID[u.UID] = u
		}
	}
	seen := map[string]bool{}
	var out []Observation
	for i := range jobs {
		v := &jobs[i]
		var m struct {
			Status struct {
				Conditions []struct {
					Type, Status, Reason, Message string
				}
				UncountedTerminatedPods struct {
					Failed []string
				}
			}
		}
		if json.Unmarshal(v.Content, &m) != nil || len(m.Status.UncountedTerminatedPods.Failed) == 0 {
			continue
		}
		reason, message := "Failed", ""
		for _, c := range m.Status.Conditions {
			if (c.Type == "FailureTarget" || c.Type == "Failed") && c.Status == "True" && c.Reason != "" {
				reason, message = c.Reason, c.Message
				break
			}
		}
		job := "Job/" + v.Object.Namespace + "/" + v.Object.Name
		for _, uid := range m.Status.UncountedTerminatedPods.Failed {
			u := byUID[uid]
			if u == nil || seen[uid] || u.Namespace != v.Object.Namespace {
				continue
			}
			seen[uid] = true
			msg := "counted as failed by " + job
			if message != "" {
				msg += ": " + message
			}
			out = append(out, Observation{Time: v.Time, Source: SourceStatus,
				Object: timeline.ObjectRef{Kind: "Pod", Resource: "pods", Namespace: u.Namespace, Name: u.Name, UID: u.UID},
				Reason: reason, Message: msg, Type: "Warning", Evidence: v.Evidence, CountedBy: job})
		}
	}
	return out
}

func newUnit(v *timeline.ObjectVersion, m map[string]any) *Unit {
	u := &Unit{Ref: "Pod/" + v.Object.Namespace + "/" + v.Object.Name, Namespace: v.Object.Namespace,
		Name: v.Object.Name, UID: v.Object.UID}
	meta, _ := m["metadata"].(map[string]any)
	if t, err := time.Parse(time.RFC3339, str(meta, "creationTimestamp")); err == nil {
		u.Created = t
	}
	for _, x := range slice(meta, "ownerReferences") {
		o, _ := x.(map[string]any)
		if c, _ := o["controller"].(bool); c || u.Owner == "" {
			u.Owner = str(o, "kind") + "/" + str(o, "name")
		}
	}
	return u
}

func isDeleted(m map[string]any) bool {
	meta, _ := m["metadata"].(map[string]any)
	return str(meta, "deletionTimestamp") != ""
}

type state struct {
	reason, message string
	exitCode        int
	failed          bool      // the object says it failed (a pod's phase Failed)
	at              time.Time // when the state began, if the object says
}

// failures are the reasons DefaultBad names: a pod, node or job that
// failed (a test holds the two lists equal). A Warning event of another
// reason says something went wrong that may pass (warningOnly).
var failures = []string{"Failed", "OOMKilled", "Error", "ContainerCannotRun", "CrashLoopBackOff", "BackOff",
	"ErrImagePull", "ImagePullBackOff", "CreateContainerConfigError", "Evicted", "Preempted",
	"FailedScheduling", "FailedCreate", "NodeNotReady", "BackoffLimitExceeded", "DeadlineExceeded", NotObserved}

// endedWell are the states of a pod that did its work: Ready, or done.
var endedWell = []string{"Ready", "Succeeded", "Complete"}

// warningOnly says whether a bad observation is an event about a pod
// whose reason is not a failure by itself.
func warningOnly(o Observation) bool {
	return o.Source == timeline.SourceEvent && o.Object.Kind == "Pod" && !slices.Contains(failures, o.Reason)
}

// badWaiting are the waiting reasons of containers that will not start.
var badWaiting = []string{"CrashLoopBackOff", "ErrImagePull", "ImagePullBackOff", "CreateContainerConfigError",
	"CreateContainerError", "InvalidImageName", "RunContainerError", "ContainerCannotRun"}

// stateOf names an object's state in one word: a failure reason when it
// has failed, else Running/Ready/Succeeded/Complete, else "" (pending,
// nothing to say).
func stateOf(kind string, m map[string]any) state {
	status, _ := m["status"].(map[string]any)
	if f := statesOf[kind]; f != nil {
		return f(status)
	}
	return state{}
}

// statesOf names the state of each kind of object read, from its status.
var statesOf = map[string]func(status map[string]any) state{
	"Pod":                   podState,
	"Node":                  nodeState,
	"Job":                   jobState,
	"ReplicaSet":            replicaSetState,
	"ReplicationController": replicaSetState,
}

// podState is a pod's state, the first that holds of: a container that
// will not start; a disruption; the pod failed; a container that has just
// exited with an error; a container OOM-killed before; unschedulable;
// Succeeded, Ready or Running.
func podState(status map[string]any) state {
	phase := str(status, "phase")
	var cs []map[string]any
	for _, f := range []string{"initContainerStatuses", "containerStatuses"} {
		for _, x := range slice(status, f) {
			if c, ok := x.(map[string]any); ok {
				cs = append(cs, c)
			}
		}
	}
	if s, ok := waitingState(cs); ok {
		return s
	}
	if s, ok := disruptedState(status); ok {
		return s
	}
	if phase == "Failed" {
		return failedState(status, cs)
	}
	if s, ok := exitedState(cs); ok && phase != "Succeeded" {
		return s
	}
	for _, c := range cs {
		if t, ok := mapOf(c, "lastState", "terminated"); ok && str(t, "reason") == "OOMKilled" {
			return state{reason: "OOMKilled", exitCode: num(t, "exitCode"), message: str(t, "message")}
		}
	}
	for _, cond := range slice(status, "conditions") {
		c, _ := cond.(map[string]any)
		if str(c, "type") == "PodScheduled" && str(c, "status") == "False" && str(c, "reason") == "Unschedulable" {
			return state{reason: "FailedScheduling", message: str(c, "message")}
		}
	}
	switch phase {
	case "Succeeded":
		return state{reason: "Succeeded"}
	case "Running":
		for _, cond := range slice(status, "conditions") {
			c, _ := cond.(map[string]any)
			if str(c, "type") == "Ready" && str(c, "status") == "True" {
				return state{reason: "Ready"}
			}
		}
		return state{reason: "Running"}
	}
	return state{}
}

// waitingState is the state of the first container of cs waiting for a
// reason that will not pass (badWaiting), with its last exit.
func waitingState(cs []map[string]any) (state, bool) {
	for _, c := range cs {
		st, _ := c["state"].(map[string]any)
		if w, ok := st["waiting"].(map[string]any); ok && slices.Contains(badWaiting, str(w, "reason")) {
			s := state{reason: str(w, "reason"), message: str(w, "message")}
			if last, ok := mapOf(c, "lastState", "terminated"); ok {
				s.exitCode = num(last, "exitCode")
				if msg := str(last, "message"); msg != "" {
					s.message = msg
				}
			}
			return s, true
		}
	}
	return state{}, false
}

// exitedState is the state of a pod one of whose containers (an init
// container included) has just exited with an error and not yet been
// started again: a kubelet reports that between a crash and its back-off
// (CrashLoopBackOff), and a pod stuck in its init containers may be seen
// only so once its events are gone.
func exitedState(cs []map[string]any) (state, bool) {
	for _, c := range cs {
		t, ok := mapOf(c, "state", "terminated")
		if !ok || num(t, "exitCode") == 0 {
			continue
		}
		reason := str(t, "reason")
		if !slices.Contains(failures, reason) {
			reason = "Error" // Completed with an exit code, or a runtime's own word
		}
		return state{reason: reason, exitCode: num(t, "exitCode"), message: str(t, "message")}, true
	}
	return state{}, false
}

// disruptedState is the state of a pod its node was taken from (a drain,
// a NoExecute taint, a preemption): the control plane marks it with a
// DisruptionTarget condition before it deletes it.
func disruptedState(status map[string]any) (state, bool) {
	for _, cond := range slice(status, "conditions") {
		c, _ := cond.(map[string]any)
		if str(c, "type") == "DisruptionTarget" && str(c, "status") == "True" {
			s := state{reason: "Evicted", message: strings.TrimSpace(str(c, "reason") + " " + str(c, "message"))}
			if strings.HasPrefix(str(c, "reason"), "Preemption") {
				s.reason = "Preempted"
			}
			s.at, _ = time.Parse(time.RFC3339, str(c, "lastTransitionTime"))
			return s, true
		}
	}
	return state{}, false
}

// failedState is the state of a Failed pod: its reason, or that of its
// first container that failed.
func failedState(status map[string]any, cs []map[string]any) state {
	s := state{reason: "Failed", message: str(status, "message"), failed: true}
	if r := str(status, "reason"); r != "" {
		s.reason = r // Evicted, DeadlineExceeded, UnexpectedAdmissionError, OutOfcpu, ...
	}
	for _, c := range cs {
		if t, ok := mapOf(c, "state", "terminated"); ok && (num(t, "exitCode") != 0 || str(t, "reason") == "OOMKilled") {
			s.exitCode = num(t, "exitCode")
			if r := str(t, "reason"); r != "" && s.reason == "Failed" {
				s.reason = r
			}
			if msg := str(t, "message"); msg != "" {
				s.message = msg
			}
			s.at, _ = time.Parse(time.RFC3339, str(t, "finishedAt"))
			break
		}
	}
	return s
}

// nodeState is a node's state: NodeNotReady since its Ready condition
// last changed; else the first other condition that holds (DiskPressure,
// MemoryPressure, PIDPressure, NetworkUnavailable, and the conditions of
// node-problem-detector such as KernelDeadlock: each says a problem is
// present when True), named by its type, since it began; else Ready.
func nodeState(status map[string]any) state {
	var ready, problem state
	for _, cond := range slice(status, "conditions") {
		c, _ := cond.(map[string]any)
		typ := str(c, "type")
		switch {
		case typ == "Ready" && str(c, "status") == "True":
			ready = state{reason: "Ready"}
		case typ == "Ready":
			s := state{reason: "NodeNotReady", message: str(c, "message")}
			s.at, _ = time.Parse(time.RFC3339, str(c, "lastTransitionTime"))
			return s
		case typ != "" && str(c, "status") == "True" && problem.reason == "":
			problem = state{reason: typ, message: str(c, "message")}
			problem.at, _ = time.Parse(time.RFC3339, str(c, "lastTransitionTime"))
		}
	}
	if problem.reason != "" && ready.reason != "" {
		return problem
	}
	return ready
}

// jobState is a job's state: Failed (or its condition's reason) or
// Complete.
// replicaSetState is a ReplicaSet's (or ReplicationController's) state
// when it cannot create its pods: its controller sets the ReplicaFailure
// condition (reason FailedCreate, the apiserver's refusal as its message)
// beside the FailedCreate event, and the condition outlives the event.
// Else it says nothing: its pods say how it fares.
func replicaSetState(status map[string]any) state {
	for _, cond := range slice(status, "conditions") {
		c, _ := cond.(map[string]any)
		if str(c, "type") != "ReplicaFailure" || str(c, "status") != "True" {
			continue
		}
		s := state{reason: "FailedCreate", message: str(c, "message")}
		s.at, _ = time.Parse(time.RFC3339, str(c, "lastTransitionTime"))
		return s
	}
	return state{}
}

func jobState(status map[string]any) state {
	for _, cond := range slice(status, "conditions") {
		c, _ := cond.(map[string]any)
		if str(c, "status") != "True" {
			continue
		}
		switch str(c, "type") {
		case "Failed":
			s := state{reason: "Failed", message: str(c, "message")}
			if r := str(c, "reason"); r != "" {
				s.reason = r
			}
			s.at, _ = time.Parse(time.RFC3339, str(c, "lastTransitionTime"))
			return s
		case "Complete":
			return state{reason: "Complete"}
		}
	}
	return state{}
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func num(m map[string]any, k string) int {
	switch v := m[k].(type) {
	case float64:
		return int(v)
	case string:
		n, _ := strconv.Atoi(v)
		return n
	}
	return 0
}

func slice(m map[string]any, k string) []any {
	s, _ := m[k].([]any)
	return s
}

func mapOf(m map[string]any, keys ...string) (map[string]any, bool) {
	for _, k := range keys {
		next, ok := m[k].(map[string]any)
		if !ok {
			return nil, false
		}
		m = next
	}
	return m, true
}
