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

// Changes no controller observes. A workload's spec is written by its
// owner (a rollout, a scale) and carried out by its controller, which
// says it has seen each spec by writing status.observedGeneration: the
// metadata.generation it acted on (the API conventions' contract for
// every object with a spec and a status). A controller acts on a changed
// object as soon as its informer delivers the change (client-go's work
// queue hands an added key to a worker at once; only a failed sync waits
// to be tried again, and that failure was a request). So a change whose
// generation stays ahead of the one observed, through a span longer than
// any component here leaves work waiting (schedulerIdle) in which the
// controller made no request at all, is not being acted on: the
// controller hangs, or none runs. The object is bad from that change
// (NotObserved): what it asked for was never begun.
//
// Its controller is whoever writes the status of its kind (the writes of
// its resource's status subresource): the evidence names it, with no
// list of controllers here. When the evidence shows no such writer, no
// controller is judged silent, and the change is not judged.
//
// A controller that is at work and still leaves one object behind (a
// sync that fails again and again) made requests: that is not this.

// NotObserved is the reason of an object whose change its controller did
// not observe while it made no request at all.
const NotObserved = "NotObserved"

// statusKinds are the kinds read for their changes (group/resource): the
// workloads the controller-manager carries out.
var statusKinds = map[string]bool{"apps/deployments": true, "apps/replicasets": true, "apps/statefulsets": true, "apps/daemonsets": true}

// change is a change of one object not yet observed: the first
// generation its controller had not observed, from when a version first
// showed it, until a version showed it observed (zero: never).
type change struct {
	ref             timeline.ObjectRef
	group, resource string
	gen             int64
	since, observed time.Time
	evidence        timeline.Evidence
}

// until is when p was observed, or end when it never was.
func (p *change) until(end time.Time) time.Time {
	if p.observed.IsZero() {
		return end
	}
	return p.observed
}

// changes follows objects' generations through their versions.
type changes struct {
	all  []*change
	open map[string]*change // object key -> its change not yet observed
	gens map[string][]genAt // object key -> when each generation was first seen
}

type genAt struct {
	gen int64
	at  time.Time
}

func newChanges() *changes {
	return &changes{open: map[string]*change{}, gens: map[string][]genAt{}}
}

// generations are what a version says of its generations: the spec's
// (metadata.generation), the one its controller last observed
// (status.observedGeneration), and whether it is being deleted.
type generations struct {
	Metadata struct {
		Generation        int64  `json:"generation"`
		DeletionTimestamp string `json:"deletionTimestamp"`
	} `json:"metadata"`
	Status struct {
		ObservedGeneration int64 `json:"observedGeneration"`
	} `json:"status"`
}

// version notes one version of an object of a status kind (its versions
// oldest first).
func (cs *changes) version(group, resource, kind, key string, v *timeline.ObjectVersion, g generations) {
	gen, obs, deleted := g.Metadata.Generation, g.Status.ObservedGeneration, g.Metadata.DeletionTimestamp != ""
	if gen == 0 {
		return // not a version that says
	}
	gs := cs.gens[key]
	if n := len(gs); n == 0 || gs[n-1].gen < gen {
		gs = append(gs, genAt{gen, v.Time})
		cs.gens[key] = gs
	}
	p := cs.open[key]
	if p != nil && (obs >= p.gen || deleted) {
		p.observed = v.Time
		delete(cs.open, key)
		p = nil
	}
	if p != nil || gen <= obs || deleted {
		return
	}
	// The first generation not observed, from when it was first seen.
	first := obs + 1
	i := sort.Search(len(gs), func(i int) bool { return gs[i].gen >= first })
	since := v.Time
	if i < len(gs) {
		since = gs[i].at
	}
	ref := v.Object
	ref.Kind = kind
	p = &change{ref: ref, group: group, resource: resource, gen: first, since: since, evidence: v.Evidence}
	cs.open[key] = p
	cs.all = append(cs.all, p)
}

// longer are the changes not observed for longer than schedulerIdle
// until end.
func (cs *changes) longer(end time.Time) []*change {
	var out []*change
	for _, p := range cs.all {
		if p.until(end).Sub(p.since) > schedulerIdle {
			out = append(out, p)
		}
	}
	return out
}

// ControllerIdle is a span in which a controller made no request at all
// while changes of the objects it carries out waited for it.
type ControllerIdle struct {
	// Controller is the user that writes the objects' status: the
	// controller-manager's controllers write each as its own service
	// account (kube-system:deployment-controller).
	Controller string `json:"controller"`
	// Resource is the kind of objects that waited (deployments.apps).
	Resource string `json:"resource"`
	// Its work is any request; a wait, a change's from when it was made.
	IdleSpan
	// Objects is how many objects' changes waited through it.
	Objects int `json:"objects"`
}

// unobserved judges the changes not observed for longer than
// schedulerIdle until end (zero: no end known; then nothing is judged):
// for each resource, its status writers (the controller) are read, then
// their requests in the changes' waits; a change that waited through a
// span of more than schedulerIdle in which they made none is NotObserved.
func (cs *changes) unobserved(ctx context.Context, s Store, end time.Time) ([]Observation, []ControllerIdle, error) {
	if end.IsZero() {
		return nil, nil, nil
	}
	waiting := cs.longer(end)
	if len(waiting) == 0 {
		return nil, nil, nil
	}
	byResource := map[string][]*change{}
	var order []string
	for _, p := range waiting {
		r := p.resource
		if p.group != "" {
			r += "." + p.group
		}
		if byResource[r] == nil {
			order = append(order, r)
		}
		byResource[r] = append(byResource[r], p)
	}
	var obs []Observation
	var idle []ControllerIdle
	for _, r := range order {
		ps := byResource[r]
		writers, err := statusWriters(ctx, s, ps[0].group, ps[0].resource)
		if err != nil {
			return nil, nil, err
		}
		if len(writers) == 0 {
			continue // no controller the evidence names: nothing to judge
		}
		o, sp, err := silentOver(ctx, s, r, writers, ps, end)
		if err != nil {
			return nil, nil, err
		}
		obs, idle = append(obs, o...), append(idle, sp...)
	}
	sort.SliceStable(idle, func(i, j int) bool { return idle[i].From.Before(idle[j].From) })
	return obs, idle, nil
}

// maxWriters bounds the status writes read to learn who writes a kind's
// status: a controller writes many, and one is enough to name it.
const maxWriters = 200

// statusWriters are the users whose writes of a resource's status
// succeeded in the evidence: its controller.
func statusWriters(ctx context.Context, s Store, group, resource string) ([]string, error) {
	f, err := timeline.CompileFilter(`source == "audit" && group == ` + strconv.Quote(group) + ` && resource == ` + strconv.Quote(resource) +
		` && subresource == "status" && verb in ["update", "patch"] && code >= 200 && code < 300`)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var users []string
	for r, err := range s.Records(ctx, timeline.Query{Where: f, Limit: maxWriters, Fields: timeline.FieldUser | timeline.FieldVerb | timeline.FieldCode}) {
		if err != nil {
			return nil, err
		}
		if r.User == "" || seen[r.User] {
			continue
		}
		seen[r.User] = true
		users = append(users, r.User)
	}
	slices.Sort(users)
	return users, nil
}

// silentOver judges the changes ps of resource r by the requests of its
// controller (the users writers) in their waits, until end.
func silentOver(ctx context.Context, s Store, r string, writers []string, ps []*change, end time.Time) ([]Observation, []ControllerIdle, error) {
	quoted := make([]string, len(writers))
	for i, u := range writers {
		quoted[i] = strconv.Quote(u)
	}
	f, err := timeline.CompileFilter("user in [" + strings.Join(quoted, ", ") + "]")
	if err != nil {
		return nil, nil, err
	}
	var within [][2]time.Time
	for _, p := range ps {
		within = append(within, [2]time.Time{p.since, p.until(end)})
	}
	within = mergeSpans(within)
	// Its requests in the waits (thinned: a busy controller makes many),
	// and its last one before the first.
	var work []time.Time
	for _, sp := range within {
		var th thinned
		q := timeline.Query{Since: sp[0], Until: sp[1].Add(time.Nanosecond), Where: f, Fields: timeline.FieldUser}
		for rec, err := range s.Records(ctx, q) {
			if err != nil {
				return nil, nil, err
			}
			th.add(rec.Time)
		}
		work = append(work, th.times()...)
	}
	var before time.Time
	for rec, err := range s.Records(ctx, timeline.Query{Until: within[0][0], Where: f, Limit: 1, Desc: true, Fields: timeline.FieldUser}) {
		if err != nil {
			return nil, nil, err
		}
		before = rec.Time
	}
	if !before.IsZero() {
		work = append(work, before) // before the first wait: it bounds no idle span in one
	}
	slices.SortFunc(work, time.Time.Compare)
	type spanKey struct{ last, until time.Time }
	spans := map[spanKey]*ControllerIdle{}
	var keys []spanKey
	var obs []Observation
	name := strings.Join(writers, ", ")
	for _, p := range ps {
		until := p.until(end)
		from, to, ok := idleSpan(work, p.since, until)
		if !ok {
			continue
		}
		span := idleAround(work, from, to, p.since, end)
		k := spanKey{span.LastWork, span.Until}
		sp := spans[k]
		if sp == nil {
			sp = &ControllerIdle{Controller: name, Resource: r, IdleSpan: span}
			spans[k] = sp
			keys = append(keys, k)
		}
		sp.Objects++
		sp.waited(p.since)
		msg := "generation " + strconv.FormatInt(p.gen, 10) + " not observed for " + until.Sub(p.since).Round(time.Second).String() +
			" by " + name + didNothing("made no request", k.last, to)
		if p.observed.IsZero() {
			msg += " (still not observed when the evidence ends)"
		}
		obs = append(obs, Observation{Time: p.since, Source: SourceStatus, Object: p.ref, Reason: NotObserved,
			Message: msg, Type: "Warning", Evidence: p.evidence})
	}
	var idle []ControllerIdle
	for _, k := range keys {
		idle = append(idle, *spans[k])
	}
	return obs, idle, nil
}

// thinned keeps, of the times of a stream of requests (in time order),
// those that keep every span between them longer than schedulerIdle as
// it is and make none that long where there was none: the first and the
// last, both ends of every such span, and within a busy run a time at
// least every schedulerIdle. So idleSpan and around answer on it as on
// every time, and it holds about two times per schedulerIdle of a busy
// run however many requests it had.
type thinned struct {
	kept           []time.Time
	prev, lastKept time.Time // the last time added, the last kept
	prevKept, seen bool
}

func (t *thinned) keep(at time.Time) {
	t.kept = append(t.kept, at)
	t.lastKept = at
}

func (t *thinned) add(at time.Time) {
	if !t.seen {
		t.seen = true
		t.keep(at)
		t.prev, t.prevKept = at, true
		return
	}
	// An idle span keeps both its ends; a busy run keeps the time before
	// this one where leaving it out would open a span that long between
	// kept times.
	gap := at.Sub(t.prev) > schedulerIdle
	if (gap || at.Sub(t.lastKept) > schedulerIdle) && !t.prevKept {
		t.keep(t.prev)
	}
	t.prev, t.prevKept = at, gap
	if gap {
		t.keep(at)
	}
}

// times are the times kept, the last added among them.
func (t *thinned) times() []time.Time {
	if t.seen && !t.prevKept {
		t.keep(t.prev)
		t.prevKept = true
	}
	return t.kept
}
