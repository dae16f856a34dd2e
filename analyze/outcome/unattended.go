package outcome

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/timeline"
)

// Pods no scheduler attends to. A pod is created without a node, and the
// scheduler its spec.schedulerName names either places it (spec.nodeName,
// PodScheduled True) or judges that it cannot be placed yet (PodScheduled
// False: a verdict, which FailedScheduling reports). The kube-scheduler
// tries a pod as soon as it sees it, and one it holds again within 10 s
// at most (podMaxBackoffSeconds' default). So a pod that waits with
// neither, through a span longer than that in which its scheduler placed
// and judged no pod at all, is not being scheduled: its scheduler hangs,
// or none of that name runs. Such a pod is bad from its creation
// (NotScheduled): nothing it runs with was used yet, it waited for a
// scheduler that did not come.
//
// A pod that waits while its scheduler places others is queued behind
// them, not unattended; a pod held back on purpose (spec.schedulingGates)
// waits for whoever lifts its gates, not for a scheduler.

// NotScheduled is the reason of a pod that waited for a scheduler that
// placed and judged nothing meanwhile.
const NotScheduled = "NotScheduled"

// schedulerIdle is the longest a working scheduler leaves a pod that
// waits for it without placing or judging any pod (podMaxBackoffSeconds'
// default: the longest it holds a pod before trying it again).
const schedulerIdle = 10 * time.Second

// waits follows pods' waits for a scheduler through their versions, and
// when each scheduler was seen at work.
type waits struct {
	pods   map[string]*wait
	order  []string
	byName map[string][]*wait     // namespace/name -> its pods, oldest first
	work   map[string][]time.Time // scheduler name -> times it placed or judged a pod
	last   time.Time              // the latest version seen of anything
}

type wait struct {
	ref       timeline.ObjectRef
	scheduler string
	created   time.Time
	ended     time.Time // placed, judged or deleted; zero: still waiting
	gated     bool
	unplaced  bool // seen without a node
	evidence  timeline.Evidence
}

// until is when w's wait ended, or end when it still waits.
func (w *wait) until(end time.Time) time.Time {
	if w.ended.IsZero() {
		return end
	}
	return w.ended
}

func newWaits() *waits {
	return &waits{pods: map[string]*wait{}, byName: map[string][]*wait{}, work: map[string][]time.Time{}}
}

// saw notes one version of anything (the evidence's extent).
func (ws *waits) saw(t time.Time) {
	if t.After(ws.last) {
		ws.last = t
	}
}

// pod notes one version of the pod key (its versions oldest first).
func (ws *waits) pod(key string, v *timeline.ObjectVersion, m map[string]any) {
	spec, _ := m["spec"].(map[string]any)
	meta, _ := m["metadata"].(map[string]any)
	w := ws.pods[key]
	if w == nil {
		w = &wait{ref: v.Object, scheduler: str(spec, "schedulerName"), created: v.Time, evidence: v.Evidence}
		w.ref.Kind = "Pod"
		if w.scheduler == "" {
			w.scheduler = "default-scheduler"
		}
		// A first version seen well after the pod was made (a dump, a
		// window) still says when its wait began.
		if c, err := time.Parse(time.RFC3339, str(meta, "creationTimestamp")); err == nil && v.Time.Sub(c) > 2*time.Second {
			w.created = c
		}
		ws.pods[key] = w
		ws.order = append(ws.order, key)
		n := v.Object.Namespace + "/" + v.Object.Name
		ws.byName[n] = append(ws.byName[n], w)
		if _, ok := ws.work[w.scheduler]; !ok {
			ws.work[w.scheduler] = nil
		}
	}
	if len(slice(spec, "schedulingGates")) > 0 {
		w.gated = true
	}
	if str(meta, "deletionTimestamp") != "" {
		ws.decide(w, v.Time, false) // gone: no longer waiting
	}
	// When its scheduler placed or judged it: the condition's transition
	// time when it has one, else this version's.
	at, decided := time.Time{}, false
	status, _ := m["status"].(map[string]any)
	for _, x := range slice(status, "conditions") {
		c, _ := x.(map[string]any)
		if str(c, "type") == "PodScheduled" && str(c, "status") != "" {
			decided = true
			if t, err := time.Parse(time.RFC3339, str(c, "lastTransitionTime")); err == nil {
				at = t
			}
		}
	}
	// A pod past Pending ran on a node, whatever its version says of it.
	if phase := str(status, "phase"); str(spec, "nodeName") == "" && !decided && (phase == "" || phase == "Pending") {
		w.unplaced = true
		return
	}
	if at.IsZero() || at.After(v.Time) {
		at = v.Time
	}
	// Its first decision seen. A pod made with its node named (static, or
	// placed by hand) was placed by no scheduler.
	if w.ended.IsZero() || at.Before(w.ended) {
		ws.decide(w, at, w.unplaced || decided)
	}
}

// decide notes that w was placed or judged at t, by its scheduler when
// work (else it was found placed: a kubelet wrote of it).
func (ws *waits) decide(w *wait, t time.Time, work bool) {
	if work {
		ws.work[w.scheduler] = append(ws.work[w.scheduler], t)
	}
	if w.ended.IsZero() || t.Before(w.ended) {
		w.ended = t
	}
}

// at is the pod namespace/name that existed at t: the latest made by
// then (names are reused: a StatefulSet's replica made again); nil when
// none the versions show was (an earlier one, whose record is not this
// one's).
func (ws *waits) at(ns, name string, t time.Time) *wait {
	pods := ws.byName[ns+"/"+name]
	for i := len(pods) - 1; i >= 0; i-- {
		if !pods[i].created.After(t.Add(time.Second)) {
			return pods[i]
		}
	}
	return nil
}

func (ws *waits) sortWork() {
	for _, ts := range ws.work {
		slices.SortFunc(ts, time.Time.Compare)
	}
}

// waiting are the pods whose versions show them waiting, through a span
// of more than schedulerIdle, for a scheduler the versions show at no
// work in it, until end.
func (ws *waits) waiting(end time.Time) []*wait {
	ws.sortWork()
	var out []*wait
	for _, key := range ws.order {
		w := ws.pods[key]
		if !w.unplaced || w.gated {
			continue
		}
		if _, _, ok := idleSpan(ws.work[w.scheduler], w.created, w.until(end)); ok {
			out = append(out, w)
		}
	}
	return out
}

// A pod's versions need not show it placed: an audit policy that logs
// pods at Metadata keeps the requests and no bodies. The requests say it
// all the same: each placement is a create of pods/binding by the
// scheduler, which a Scheduled event reports, and each verdict a
// FailedScheduling event; and a node's kubelet writes of no pod but those
// placed on it. So before a wait is judged, readWork reads the records of
// the pods that seem to wait (at most maxNamed of them: more that wait is
// no artefact of missing bodies), then the scheduler's work in the waits
// of those that still do.

const (
	bindings        = `source == "audit" && resource == "pods" && verb == "create" && subresource == "binding" && code >= 200 && code < 300`
	schedulerEvents = `source == "event" && reason in ["Scheduled", "FailedScheduling"] && kind == "Pod"`
	kubeletWrites   = `source == "audit" && resource == "pods" && user.startsWith("system:node:") && code >= 200 && code < 300`
	maxNamed        = 200
)

var workFilter = mustFilter("(" + bindings + ") || (" + schedulerEvents + ")")

// readWork reads, when some pod seems to wait for a scheduler at no work
// until end (zero: the latest version seen), the records that say it was
// placed or judged, and the schedulers' work in its wait. A binding or an
// event of a pod the versions do not show is the work of the scheduler
// whose pods its requester binds, else of every scheduler (whose, the
// evidence does not say, so it makes none idle).
func (ws *waits) readWork(ctx context.Context, s Store, end time.Time) error {
	if end.IsZero() {
		end = ws.last
	}
	waiting := ws.waiting(end)
	if len(waiting) == 0 {
		return nil
	}
	binds := map[string]string{} // requester -> the scheduler whose pods it binds
	// Their own records first: the first of each from its creation says
	// it was placed or judged, and most waits end there.
	var pre preRead
	if len(waiting) <= maxNamed {
		var err error
		if pre, err = ws.readOwn(ctx, s, waiting, end, binds); err != nil {
			return err
		}
		if waiting = ws.waiting(end); len(waiting) == 0 {
			return nil
		}
	}
	// The schedulers' work in the waits: the bindings and the scheduling
	// events, the waiting pods' own among them, in time order. What the
	// reads of their own records held is not read again; the rest of the
	// waits lies after it (it began at the first waiting pod's creation).
	type anon struct {
		user string
		t    time.Time
	}
	var unknown []anon
	note := func(r *timeline.Record) {
		w := ws.at(r.Object.Namespace, r.Object.Name, r.Time)
		if w == nil {
			unknown = append(unknown, anon{r.User, r.Time})
			return
		}
		ws.decide(w, r.Time, true)
		if r.User != "" {
			binds[r.User] = w.scheduler
		}
	}
	within := spans(waiting, end)
	for _, r := range pre.inside(within) {
		note(r)
	}
	if err := ws.eachRecord(ctx, s, workFilter, pre.outside(within), note); err != nil {
		return err
	}
	for _, a := range unknown {
		if sched, ok := binds[a.user]; ok {
			ws.work[sched] = append(ws.work[sched], a.t)
			continue
		}
		for sched := range ws.work {
			ws.work[sched] = append(ws.work[sched], a.t)
		}
	}
	return nil
}

// readOwn reads the records of the waiting pods themselves that say
// they were placed or judged: a binding, a Scheduled or FailedScheduling
// event, a write of their kubelet's. Each pod's first from its creation
// is enough; a store that plans each read is read once for them all,
// another once per pod (its index of objects finds the first at once).
func (ws *waits) readOwn(ctx context.Context, s Store, waiting []*wait, end time.Time, binds map[string]string) (preRead, error) {
	placed := "((" + bindings + ") || (" + schedulerEvents + ") || (" + kubeletWrites + "))"
	note := func(w *wait, r *timeline.Record) {
		if w == nil {
			return
		}
		kubelet := r.Source == timeline.SourceAudit && r.Object.Subresource != "binding"
		ws.decide(w, r.Time, !kubelet)
		if !kubelet && r.User != "" {
			binds[r.User] = w.scheduler
		}
	}
	fields := timeline.FieldVerb | timeline.FieldUser | timeline.FieldCode | timeline.FieldReason
	if plansReads(s) {
		// Each pod's first from its creation, as a read per pod would
		// find it. A store that plans its reads keeps its records in
		// time, not by object, and pays for each read: the pods not yet
		// found are read together in spans from their creation, the
		// first 40 s, each next one eight times as long, so that the
		// reads stay few and each holds little beyond what it finds (on
		// the 10 M-line benchmark log, 40 pods read to the end of the
		// evidence at once took 1.7 s: 54,000 records of their kubelets,
		// of which 40 were wanted).
		first := map[*wait]*timeline.Record{}
		var pre preRead
		left := waiting
		for lo, hi := time.Duration(0), 4*schedulerIdle; len(left) > 0; lo, hi = hi, 8*hi {
			last := true
			span := func(w *wait) (time.Time, time.Time) {
				to := w.created.Add(hi)
				if to.After(end) {
					return w.created.Add(lo), end.Add(time.Nanosecond)
				}
				last = false
				return w.created.Add(lo), to
			}
			// The first read holds the schedulers' work too, which the
			// waits left after it lie in most often: it saves a read.
			var keep *preRead
			if lo == 0 {
				keep = &pre
			}
			if err := ws.readFirst(ctx, s, left, span, placed, first, keep); err != nil {
				return preRead{}, err
			}
			if last {
				break
			}
			left = slices.DeleteFunc(slices.Clone(left), func(w *wait) bool { return first[w] != nil })
		}
		for _, w := range waiting {
			if r := first[w]; r != nil {
				note(w, r)
			}
		}
		return pre, nil
	}
	for _, w := range waiting {
		f, err := timeline.CompileFilter("ns == " + strconv.Quote(w.ref.Namespace) + " && name == " + strconv.Quote(w.ref.Name) + " && " + placed)
		if err != nil {
			return preRead{}, err
		}
		q := timeline.Query{Since: w.created, Until: end.Add(time.Nanosecond), Where: f, Limit: 1, Fields: fields}
		for r, err := range s.Records(ctx, q) {
			if err != nil {
				return preRead{}, err
			}
			note(w, r)
		}
	}
	return preRead{}, nil
}

// readFirst notes in first each pod's first record matching placed in
// its span [from, to), where there is none yet: one read of them all
// over the spans' extent, which names the pods. (The spans themselves
// are left out of the filter: ClickHouse 18.16 does not narrow its read
// to an OR of times, and judges such an OR three times slower than the
// names alone.) With keep, the read holds the schedulers' work over the
// extent too (workFilter), which keep keeps.
func (ws *waits) readFirst(ctx context.Context, s Store, pods []*wait, span func(*wait) (time.Time, time.Time), placed string, first map[*wait]*timeline.Record, keep *preRead) error {
	type window struct{ from, to time.Time }
	spans := map[*wait]window{}
	var since, until time.Time
	byNS := map[string][]string{}
	for _, w := range pods {
		from, to := span(w)
		if !from.Before(to) {
			continue
		}
		spans[w] = window{from, to}
		if since.IsZero() || from.Before(since) {
			since = from
		}
		if to.After(until) {
			until = to
		}
		byNS[w.ref.Namespace] = append(byNS[w.ref.Namespace], strconv.Quote(w.ref.Name))
	}
	if len(spans) == 0 {
		return nil
	}
	var named []string
	for ns, names := range byNS {
		slices.Sort(names)
		named = append(named, "(ns == "+strconv.Quote(ns)+" && name in ["+strings.Join(slices.Compact(names), ", ")+"])")
	}
	slices.Sort(named)
	expr := "(" + strings.Join(named, " || ") + ") && " + placed
	if keep != nil {
		expr = "(" + expr + ") || (" + workFilter.String() + ")"
		keep.from, keep.until = since, until
	}
	f, err := timeline.CompileFilter(expr)
	if err != nil {
		return err
	}
	fields := timeline.FieldVerb | timeline.FieldUser | timeline.FieldCode | timeline.FieldReason
	q := timeline.Query{Since: since, Until: until, Where: f, Fields: fields}
	for r, err := range s.Records(ctx, q) {
		if err != nil {
			return err
		}
		if keep != nil {
			if ok, _ := workFilter.Match(r); ok {
				keep.work = append(keep.work, r)
			}
		}
		w := ws.at(r.Object.Namespace, r.Object.Name, r.Time)
		sp, ok := spans[w]
		if !ok || r.Time.Before(w.created) || r.Time.Before(sp.from) || !r.Time.Before(sp.to) {
			continue
		}
		if f := first[w]; f == nil || r.Time.Before(f.Time) {
			first[w] = r
		}
	}
	return nil
}

// preRead is the schedulers' work a read of the waiting pods' own records
// held, over [from, until).
type preRead struct {
	from, until time.Time
	work        []*timeline.Record
}

// inside is the work held that lies in the spans (closed, oldest first).
func (p preRead) inside(within [][2]time.Time) []*timeline.Record {
	var out []*timeline.Record
	for _, r := range p.work {
		i := sort.Search(len(within), func(i int) bool { return !within[i][1].Before(r.Time) })
		if i < len(within) && !r.Time.Before(within[i][0]) {
			out = append(out, r)
		}
	}
	return out
}

// outside are the parts of the spans (closed, oldest first) that the read
// did not hold.
func (p preRead) outside(within [][2]time.Time) [][2]time.Time {
	if p.from.IsZero() {
		return within
	}
	var out [][2]time.Time
	for _, sp := range within {
		if sp[0].Before(p.from) {
			end := p.from.Add(-time.Nanosecond)
			if sp[1].Before(end) {
				end = sp[1]
			}
			out = append(out, [2]time.Time{sp[0], end})
		}
		if !sp[1].Before(p.until) {
			start := p.until
			if sp[0].After(start) {
				start = sp[0]
			}
			out = append(out, [2]time.Time{start, sp[1]})
		}
	}
	return out
}

// nilPlanner is a store read as one that does not plan its reads.
type nilPlanner struct{ Store }

// spans are the waits of the pods, until end when they still wait,
// merged where they overlap, oldest first.
func spans(waiting []*wait, end time.Time) [][2]time.Time {
	var out [][2]time.Time
	for _, w := range waiting {
		out = append(out, [2]time.Time{w.created, w.until(end)})
	}
	return mergeSpans(out)
}

// mergeSpans merges closed spans where they overlap, oldest first.
func mergeSpans(in [][2]time.Time) [][2]time.Time {
	sort.Slice(in, func(i, j int) bool { return in[i][0].Before(in[j][0]) })
	out := in[:0]
	for _, sp := range in {
		if n := len(out); n > 0 && !sp[0].After(out[n-1][1]) {
			if sp[1].After(out[n-1][1]) {
				out[n-1][1] = sp[1]
			}
			continue
		}
		out = append(out, sp)
	}
	return out
}

// eachRecord hands f's records in the spans to fn. A store that plans
// each read pays for a plan per span: it is read once over them all, and
// what lies between them is left out.
func (ws *waits) eachRecord(ctx context.Context, s Store, f *timeline.Filter, within [][2]time.Time, fn func(*timeline.Record)) error {
	if plansReads(s) && len(within) > 1 {
		inside := func(t time.Time) bool {
			i := sort.Search(len(within), func(i int) bool { return !within[i][1].Before(t) })
			return i < len(within) && !t.Before(within[i][0])
		}
		all := [][2]time.Time{{within[0][0], within[len(within)-1][1]}}
		return ws.eachRecord(ctx, nilPlanner{s}, f, all, func(r *timeline.Record) {
			if inside(r.Time) {
				fn(r)
			}
		})
	}
	for _, sp := range within {
		q := timeline.Query{Since: sp[0], Until: sp[1].Add(time.Nanosecond), Where: f,
			Fields: timeline.FieldVerb | timeline.FieldUser | timeline.FieldCode | timeline.FieldReason}
		for r, err := range s.Records(ctx, q) {
			if err != nil {
				return err
			}
			fn(r)
		}
	}
	return nil
}

// SchedulerIdle is a span in which a scheduler placed and judged no pod
// while pods waited for it longer than a working one leaves them.
type SchedulerIdle struct {
	// Scheduler is the name pods ask for (spec.schedulerName):
	// default-scheduler is the kube-scheduler's.
	Scheduler string `json:"scheduler"`
	// Its work is its placements and verdicts; a wait, a pod's from its
	// creation.
	IdleSpan
	// Pods is how many pods waited through it.
	Pods int `json:"pods"`
}

// IdleSpan is a span in which a component did no work while work waited
// for it (SchedulerIdle, ControllerIdle).
type IdleSpan struct {
	// LastWork is its last work before the span; zero when the evidence
	// shows it at work before the span never.
	LastWork time.Time `json:"lastWork,omitzero"`
	// From is when the first wait through it began, and Until when the
	// span ended: its next work, else the end of the evidence (Ongoing).
	From    time.Time `json:"from"`
	Until   time.Time `json:"until"`
	Ongoing bool      `json:"ongoing,omitempty"`
}

// idleAround is the idle span of the sorted work that holds [from, to),
// bounded by the work around it (around) or, ongoing, by end, for a wait
// that began at since.
func idleAround(work []time.Time, from, to, since, end time.Time) IdleSpan {
	last, until, ongoing := around(work, from, to)
	if ongoing {
		until = end
	}
	return IdleSpan{LastWork: last, From: since, Until: until, Ongoing: ongoing}
}

// waited widens the span to a wait that began at since.
func (sp *IdleSpan) waited(since time.Time) {
	if since.Before(sp.From) {
		sp.From = since
	}
}

// unattended are the NotScheduled observations of the pods that waited,
// through a span of more than schedulerIdle, for a scheduler that placed
// and judged no pod in it, and those spans, one per scheduler and span of
// its work. A pod still waiting waits until end (zero: the latest version
// seen).
func (ws *waits) unattended(end time.Time) ([]Observation, []SchedulerIdle) {
	if end.IsZero() {
		end = ws.last
	}
	type spanKey struct {
		scheduler   string
		last, until time.Time
	}
	spans := map[spanKey]*SchedulerIdle{}
	var out []Observation
	var idle []SchedulerIdle
	var keys []spanKey
	for _, w := range ws.waiting(end) {
		until := w.until(end)
		work := ws.work[w.scheduler]
		from, to, _ := idleSpan(work, w.created, until)
		// The span is bounded by the scheduler's work around it.
		span := idleAround(work, from, to, w.created, end)
		k := spanKey{w.scheduler, span.LastWork, span.Until}
		sp := spans[k]
		if sp == nil {
			sp = &SchedulerIdle{Scheduler: w.scheduler, IdleSpan: span}
			spans[k] = sp
			keys = append(keys, k)
		}
		sp.Pods++
		sp.waited(w.created)
		msg := "no node and no verdict for " + until.Sub(w.created).Round(time.Second).String() + " from " + w.scheduler +
			didNothing("placed and judged no pod", k.last, to)
		if w.ended.IsZero() {
			msg += " (still waiting when the evidence ends)"
		}
		out = append(out, Observation{Time: w.created, Source: SourceStatus, Object: w.ref, Reason: NotScheduled,
			Message: msg, Type: "Warning", Evidence: w.evidence})
	}
	for _, k := range keys {
		idle = append(idle, *spans[k])
	}
	sort.SliceStable(idle, func(i, j int) bool { return idle[i].From.Before(idle[j].From) })
	return out, idle
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// didNothing says of a component that did nothing (did) until to since
// its last work (zero: none in the evidence).
func didNothing(did string, last, to time.Time) string {
	if last.IsZero() {
		return ", which " + did + " in the evidence before " + stamp(to)
	}
	return ", which " + did + " from " + stamp(last) + " to " + stamp(to)
}

// searchTime is the index of the first of ts (sorted) at or after t.
func searchTime(ts []time.Time, t time.Time) int {
	i, _ := slices.BinarySearchFunc(ts, t, time.Time.Compare)
	return i
}

// around is the work that bounds an idle span [from, to] of work
// (sorted): the last before it (from itself when work began it; zero
// when none), and the next after it, or ongoing when none came.
func around(work []time.Time, from, to time.Time) (last, next time.Time, ongoing bool) {
	i := searchTime(work, from)
	if i < len(work) && work[i].Equal(from) {
		last = from
	} else if i > 0 {
		last = work[i-1]
	}
	j := searchTime(work, to)
	if j >= len(work) {
		return last, time.Time{}, true
	}
	return last, work[j], false
}

// idleSpan finds, within [from, to], the longest span in which the
// scheduler did no work (work sorted), and says whether it is longer
// than schedulerIdle.
func idleSpan(work []time.Time, from, to time.Time) (time.Time, time.Time, bool) {
	if !to.After(from) {
		return time.Time{}, time.Time{}, false
	}
	i := searchTime(work, from)
	best0, best1, prev := time.Time{}, time.Time{}, from
	for ; ; i++ {
		next := to
		if i < len(work) && work[i].Before(to) {
			next = work[i]
		}
		if next.Sub(prev) > best1.Sub(best0) {
			best0, best1 = prev, next
		}
		if !next.Before(to) {
			break
		}
		prev = next
	}
	return best0, best1, best1.Sub(best0) > schedulerIdle
}
