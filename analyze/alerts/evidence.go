package alerts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/controlplane"
	"github.com/faultline/faultline/analyze/dns"
	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/analyze/network"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/analyze/prom"
	"github.com/faultline/faultline/timeline"
)

// Store is what alerts read: what an investigation and the control-plane
// analysis read, and the metric series (faultline ingest metrics).
type Store interface {
	investigate.Store
	controlplane.Store
	prom.Reader
	Runs(ctx context.Context) ([]timeline.IngestRun, error)
}

// Evidence is an investigated incident, held for replaying signals: the
// records of the timeline and the object states as records of source
// "status" (as outcome offers them to --bad), in time order.
type Evidence struct {
	Start, End time.Time
	// LastGood and FirstBad are the investigation's boundary; the
	// known-good window is [Start, LastGood].
	LastGood, FirstBad, IncidentEnd time.Time
	// Noticed is when a human could first have noticed, where the
	// evidence shows it: the first Warning event or failed Job from the
	// last known-good instant on (zero if none).
	Noticed   time.Time
	NoticedBy string

	Investigation *investigate.Report
	ControlPlane  *controlplane.Report

	// DNS is the DNS pressure over the evidence's span, where CoreDNS's
	// series were ingested (nil otherwise): its bursts and fixes.
	DNS *dns.Report

	records []*timeline.Record
	units   map[string]*outcome.Unit // "ns/name" of pods
	pools   map[string]string        // node name -> pool
	poolKey string                   // the label the pools were read from
	series  map[string][]prom.Loaded // by metric: the series read (ReadSeries)
	nodes   *network.Nodes           // which node a series is
}

// statusResource maps the kinds outcome reads states of to resources.
var statusResource = map[string]string{"Pod": "pods", "Node": "nodes", "Job": "jobs"}

// Load investigates the timeline (analyze/investigate with its defaults,
// analyze/controlplane) and reads its records and object states.
func Load(ctx context.Context, s Store) (*Evidence, error) { return LoadWith(ctx, s, LoadOptions{}) }

// LoadOptions give the boundary when the investigator knows it better
// than the evidence shows, or the evidence has no records to show it (a
// timeline of metric series only): the known-good window ends at LastGood
// (default: FirstBad), and the backtests count from FirstBad.
type LoadOptions struct {
	FirstBad, LastGood time.Time
}

// LoadWith is Load with the boundary of opt, where it is given.
func LoadWith(ctx context.Context, s Store, opt LoadOptions) (*Evidence, error) {
	if opt.FirstBad.IsZero() && !opt.LastGood.IsZero() {
		return nil, fmt.Errorf("a last known-good instant needs the first bad one")
	}
	if opt.LastGood.IsZero() {
		opt.LastGood = opt.FirstBad
	}
	if opt.LastGood.After(opt.FirstBad) {
		return nil, fmt.Errorf("the last known-good instant %s is after the first bad one %s",
			opt.LastGood.Format(time.RFC3339Nano), opt.FirstBad.Format(time.RFC3339Nano))
	}
	inv, err := investigate.Run(ctx, s, investigate.Options{})
	if errors.Is(err, investigate.ErrOnlySeries) && !opt.FirstBad.IsZero() {
		inv, err = seriesOnly(ctx, s)
	}
	if err != nil {
		return nil, err
	}
	ev := &Evidence{Start: inv.Window.Start, End: inv.Window.End, Investigation: inv, units: map[string]*outcome.Unit{}}
	switch {
	case !opt.FirstBad.IsZero():
		ev.LastGood, ev.FirstBad, ev.IncidentEnd = opt.LastGood, opt.FirstBad, ev.End
		if inv.Boundary != nil && inv.Boundary.IncidentEnd.After(opt.FirstBad) {
			ev.IncidentEnd = inv.Boundary.IncidentEnd
		}
		if !ev.Start.Before(ev.LastGood) || ev.FirstBad.After(ev.End) {
			return nil, fmt.Errorf("the boundary given, %s .. %s, is not inside the evidence, %s .. %s",
				ev.LastGood.Format(time.RFC3339), ev.FirstBad.Format(time.RFC3339), ev.Start.Format(time.RFC3339), ev.End.Format(time.RFC3339))
		}
	case inv.Boundary == nil:
		return nil, fmt.Errorf("the investigation found no bad observation: nothing to learn alerts from (give the first bad instant if you know it)")
	case inv.Boundary.LastGood.IsZero():
		return nil, fmt.Errorf("the investigation found no known-good instant before the boundary (%s): no normal range to learn",
			inv.Boundary.FirstBad.Format(time.RFC3339Nano))
	default:
		ev.LastGood, ev.FirstBad, ev.IncidentEnd = knownGoodEnd(inv), inv.Boundary.FirstBad, inv.Boundary.IncidentEnd
	}
	if err := ev.read(ctx, s); err != nil {
		return nil, err
	}
	return ev, nil
}

// seriesOnly stands for the investigation of a timeline that holds metric
// series only: no finding, over the span the series' ingests covered.
func seriesOnly(ctx context.Context, s Store) (*investigate.Report, error) {
	runs, err := s.Runs(ctx)
	if err != nil {
		return nil, err
	}
	inv := &investigate.Report{Verdict: investigate.VerdictNoCause}
	for _, r := range runs {
		if r.First.IsZero() {
			continue
		}
		if inv.Window.Start.IsZero() || r.First.Before(inv.Window.Start) {
			inv.Window.Start = r.First
		}
		if r.Last.After(inv.Window.End) {
			inv.Window.End = r.Last
		}
	}
	return inv, nil
}

// read reads the control plane's report, the records, object states,
// pools and series of the evidence's span.
func (ev *Evidence) read(ctx context.Context, s Store) error {
	cp, err := controlplane.Analyze(ctx, s, controlplane.Options{})
	if err != nil {
		return fmt.Errorf("control plane: %w", err)
	}
	ev.ControlPlane = cp
	status, err := ev.statusRecords(ctx, s)
	if err != nil {
		return err
	}
	stored, err := ev.storedRecords(ctx, s)
	if err != nil {
		return err
	}
	ev.records = merge(stored, status)
	if err := ev.readPools(ctx, s); err != nil {
		return err
	}
	return ev.ReadSeries(ctx, s)
}

// knownGoodEnd is where the known-good window ends. Normal ranges are what
// the system did before the cause arrived: with a confident cause that came
// before the last known-good instant (a workload whose load took a while to
// build), the known-good window ends at the cause, not at the first bad
// request.
func knownGoodEnd(inv *investigate.Report) time.Time {
	lastGood := inv.Boundary.LastGood
	if inv.Verdict == investigate.VerdictCause && len(inv.Changes) > 0 {
		if at := inv.Changes[0].At; inv.Changes[0].Confidence >= investigate.Confident && !at.IsZero() && at.Before(lastGood) && at.After(inv.Window.Start) {
			lastGood = at
		}
	}
	return lastGood
}

// statusRecords reads every object state, as a record of source "status",
// and the units (pods) they belong to. A pod's first Running or Ready
// carries its start-up latency; a failed Job from the last known-good
// instant on is noticed.
func (ev *Evidence) statusRecords(ctx context.Context, s Store) ([]*timeline.Record, error) {
	states, err := outcome.Read(ctx, s, outcome.Options{Bad: `source == "status"`, Good: "false"})
	if err != nil {
		return nil, err
	}
	for _, u := range states.Units {
		ev.units[u.Namespace+"/"+u.Name] = u
	}
	started := map[string]bool{}
	var status []*timeline.Record
	for _, o := range states.Bad {
		r := &timeline.Record{Time: o.Time, Source: outcome.SourceStatus, Object: o.Object, Reason: o.Reason,
			Message: o.Message, Code: o.Code, Evidence: o.Evidence}
		r.Object.Resource = statusResource[o.Object.Kind]
		if o.Object.Kind == "Pod" && (o.Reason == "Running" || o.Reason == "Ready") {
			k := o.Object.Namespace + "/" + o.Object.Name
			if u := ev.units[k]; u != nil && !started[k] && !u.Created.IsZero() && o.Time.After(u.Created) {
				r.Latency = o.Time.Sub(u.Created)
			}
			started[k] = true
		}
		status = append(status, r)
		if o.Object.Kind == "Job" && o.Reason != "Complete" {
			ev.notice(o.Time, fmt.Sprintf("Job/%s/%s %s", o.Object.Namespace, o.Object.Name, o.Reason))
		}
	}
	return status, nil
}

// storedRecords reads the timeline's records; a Warning event from the
// last known-good instant on is noticed.
func (ev *Evidence) storedRecords(ctx context.Context, s Store) ([]*timeline.Record, error) {
	var stored []*timeline.Record
	for r, err := range s.Records(ctx, timeline.Query{}) {
		if err != nil {
			return nil, err
		}
		stored = append(stored, r)
		if r.Source == timeline.SourceEvent && r.Type == "Warning" {
			ev.notice(r.Time, fmt.Sprintf("Warning event %s on %s/%s", r.Reason, r.Object.Kind, r.Object.Name))
		}
	}
	return stored, nil
}

// notice makes t, seen through by, when a human could first have noticed,
// if it is from the last known-good instant on and earlier than what was
// noticed so far.
func (ev *Evidence) notice(t time.Time, by string) {
	if !t.Before(ev.LastGood) && (ev.Noticed.IsZero() || t.Before(ev.Noticed)) {
		ev.Noticed, ev.NoticedBy = t, by
	}
}

// readPools reads the pool of every node, and the label it was read from
// (the first node's with one).
func (ev *Evidence) readPools(ctx context.Context, s versionReader) error {
	ev.pools = map[string]string{}
	nodes, err := s.Versions(ctx, timeline.VersionQuery{Resource: "nodes"})
	if err != nil {
		return fmt.Errorf("node versions: %w", err)
	}
	for _, n := range nodes {
		if k, p := poolOf(n.Content); p != "" {
			ev.pools[n.Object.Name] = p
			if ev.poolKey == "" {
				ev.poolKey = k
			}
		}
	}
	return nil
}

// merge joins two time-ordered record lists, stored records first on ties.
func merge(a, b []*timeline.Record) []*timeline.Record {
	sort.SliceStable(b, func(i, j int) bool { return b[i].Time.Before(b[j].Time) })
	out := make([]*timeline.Record, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if j == len(b) || (i < len(a) && !b[j].Time.Before(a[i].Time)) {
			out = append(out, a[i])
			i++
		} else {
			out = append(out, b[j])
			j++
		}
	}
	return out
}

// PoolLabels name a node's pool, as analyze/identity reads them; the
// exported rules read the first through kube_node_labels.
var PoolLabels = []string{"cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup", "kubernetes.azure.com/agentpool",
	"karpenter.sh/nodepool", "node.kubernetes.io/pool", "pool"}

func poolOf(content json.RawMessage) (key, value string) {
	var m struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if json.Unmarshal(content, &m) != nil {
		return "", ""
	}
	for _, l := range PoolLabels {
		if v := m.Metadata.Labels[l]; v != "" {
			return l, v
		}
	}
	return "", ""
}

// Slice keys with a meaning of their own; any other key is an identity
// dimension of a pod (analyze/identity: image.digest/C, node.label/K...),
// resolved through the investigation.
var recordKeys = []string{"namespace", "owner", "pool", "verb", "resource", "subresource", "scope", "code"}

// sliceMatcher returns whether a record lies in the slice.
func (ev *Evidence) sliceMatcher(slice map[string]string) func(r *timeline.Record) bool {
	identityDims := map[string]string{}
	for k, v := range slice {
		if !slices.Contains(recordKeys, k) {
			identityDims[k] = v
		}
	}
	var refs map[string]bool
	if len(identityDims) > 0 {
		refs = map[string]bool{}
		matched, _ := ev.Investigation.Matching(identityDims)
		for _, r := range matched {
			refs[r] = true
		}
	}
	isPod := func(r *timeline.Record) bool {
		return r.Object.Kind == "Pod" || (r.Object.Resource == "pods" && r.Object.Name != "")
	}
	return func(r *timeline.Record) bool {
		for k, v := range slice {
			ok := true
			switch k {
			case "namespace":
				ok = r.Object.Namespace == v
			case "owner":
				u := ev.units[r.Object.Namespace+"/"+r.Object.Name]
				ok = isPod(r) && u != nil && StableOwner(u.Owner) == v
			case "pool":
				ok = (r.Object.Kind == "Node" || r.Object.Resource == "nodes") && ev.pools[r.Object.Name] == v
			case "verb":
				ok = strings.EqualFold(r.Verb, v)
			case "resource":
				ok = r.Object.Resource == v
			case "subresource":
				ok = r.Object.Subresource == v
			case "scope":
				ok = metricScope(r.Object.Namespace, r.Object.Name) == v
			case "code":
				ok = strconv.Itoa(r.Code) == v
			default:
				continue // identity: below
			}
			if !ok {
				return false
			}
		}
		if refs != nil {
			return isPod(r) && refs["Pod/"+r.Object.Namespace+"/"+r.Object.Name]
		}
		return true
	}
}

// metricScope is the apiserver metrics' scope label: cluster, namespace
// or resource.
func metricScope(ns, name string) string {
	switch timeline.RequestScope(ns, name) {
	case timeline.ScopeObject:
		return "resource"
	case timeline.ScopeNamespace:
		return "namespace"
	}
	return "cluster"
}

// Grid returns the evaluation times: multiples of step from the start of
// the evidence to its end.
func (ev *Evidence) Grid(step time.Duration) ([]time.Time, error) {
	if step <= 0 {
		return nil, fmt.Errorf("interval: want a positive duration, got %s", step)
	}
	// The evidence's span over the step bounds the work and the memory: a
	// nanosecond step, or one record stamped in year 9999, would ask for
	// more evaluations than any backtest needs.
	if n := ev.End.Sub(ev.Start) / step; n > MaxEvaluations || ev.End.Sub(ev.Start) < 0 {
		return nil, fmt.Errorf("interval %s over the evidence from %s to %s is %d evaluations (at most %d): use a longer interval, or narrow the evidence with --since and --until",
			step, ev.Start.UTC().Format(time.RFC3339), ev.End.UTC().Format(time.RFC3339), int64(n), MaxEvaluations)
	}
	var out []time.Time
	t := ev.Start.Truncate(step)
	if t.Before(ev.Start) {
		t = t.Add(step)
	}
	for ; !t.After(ev.End.Add(step)); t = t.Add(step) {
		out = append(out, t)
	}
	return out, nil
}

// MaxEvaluations bounds the evaluation times of one alert (Grid): a
// million steps cover eleven days at one a second.
const MaxEvaluations = 1_000_000

// Evaluate computes a definition's signal at every evaluation time.
func (ev *Evidence) Evaluate(d *Definition, step time.Duration) ([]Point, error) {
	if d.Signal.IsMetric() {
		return ev.evaluateMetric(d, step)
	}
	count, err := timeline.CompileFilter(d.Signal.Count)
	if err != nil {
		return nil, fmt.Errorf("%s: signal.count: %w", d.Name, err)
	}
	var of *timeline.Filter
	if d.Signal.Kind == KindRatio {
		if of, err = timeline.CompileFilter(d.Signal.Of); err != nil {
			return nil, fmt.Errorf("%s: signal.of: %w", d.Name, err)
		}
	}
	in := ev.sliceMatcher(d.Slice)
	type hit struct {
		t   time.Time
		lat time.Duration
	}
	var num, den []hit
	for _, r := range ev.records {
		if !in(r) {
			continue
		}
		if ok, _ := count.Match(r); ok { // a runtime error (a missing key) is no match
			num = append(num, hit{r.Time, r.Latency})
		}
		if of != nil {
			if ok, _ := of.Match(r); ok {
				den = append(den, hit{r.Time, r.Latency})
			}
		}
	}
	w := d.Signal.Window.D()
	grid, err := ev.Grid(step)
	if err != nil {
		return nil, err
	}
	out := make([]Point, len(grid))
	// Windows (t-w, t] slide forward: two cursors per list.
	var nLo, nHi, dLo, dHi int
	for i, t := range grid {
		for nHi < len(num) && !num[nHi].t.After(t) {
			nHi++
		}
		for nLo < nHi && !num[nLo].t.After(t.Add(-w)) {
			nLo++
		}
		for dHi < len(den) && !den[dHi].t.After(t) {
			dHi++
		}
		for dLo < dHi && !den[dLo].t.After(t.Add(-w)) {
			dLo++
		}
		p := Point{T: t}
		switch d.Signal.Kind {
		case KindRate:
			p.V, p.OK = float64(nHi-nLo)/w.Seconds(), true
		case KindRatio:
			if dHi > dLo {
				p.V, p.OK = float64(nHi-nLo)/float64(dHi-dLo), true
			}
		case KindQuantile:
			if nHi > nLo {
				lat := make([]float64, 0, nHi-nLo)
				for _, h := range num[nLo:nHi] {
					lat = append(lat, h.lat.Seconds())
				}
				sort.Float64s(lat)
				p.V, p.OK = quantile(lat, d.Signal.Quantile), true
			}
		}
		out[i] = p
	}
	return out, nil
}
