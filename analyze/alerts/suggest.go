package alerts

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/faultline/faultline/analyze/controlplane"
	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/timeline"
)

// RunbookBase is where the suggested definitions' runbook links point: the
// section of docs/alerts.md that explains the signal.
const RunbookBase = "https://github.com/faultline/faultline/blob/main/docs/alerts.md#"

// SuggestOptions shape suggestions.
type SuggestOptions struct {
	Interval time.Duration // default DefaultInterval
	Window   time.Duration // default DefaultWindow
	Fit      Fit           // Quantile, Margin, MaxFor; Floor and Step are set per signal
}

// Dropped is a candidate that was not suggested, and why.
type Dropped struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Failure states of pods, as outcome names them.
var podFailureStates = []string{"Failed", "OOMKilled", "Error", "ContainerCannotRun", "CrashLoopBackOff", "ErrImagePull",
	"ImagePullBackOff", "CreateContainerConfigError", "CreateContainerError", "Evicted", "DeadlineExceeded"}

// Suggest proposes a definition for each signal of the incident: the
// slice's pod failures, the rate and latency of the request class of the
// top control-plane burst, 429s per request class (APF priority levels
// are not in the audit evidence), pod start-up p99, nodes going NotReady
// and node faults per pool, and, where their series were ingested, DNS
// pressure (CoreDNS's rate, p99, SERVFAIL share) and network pressure per
// pool (conntrack fill and drops, TCP retransmits, link flaps). Each is learned on the known-good window, replayed,
// and kept only if it fires early or in time with no false positive and
// passes Guard; the others are returned as Dropped, with the reason.
func (ev *Evidence) Suggest(opt SuggestOptions) (*File, []Dropped, error) {
	if opt.Interval <= 0 {
		opt.Interval = DefaultInterval
	}
	if opt.Window <= 0 {
		opt.Window = DefaultWindow
	}
	f := &File{SchemaVersion: SchemaVersion, Interval: Duration(opt.Interval),
		Incident: &Incident{LastGood: ev.LastGood, FirstBad: ev.FirstBad}, Alerts: []Definition{}}
	var dropped []Dropped
	names := map[string]int{}
	for _, c := range ev.candidates(opt.Window) {
		d := c.def
		names[d.Name]++
		if n := names[d.Name]; n > 1 {
			d.Name += strconv.Itoa(n)
		}
		if err := Guard(&d); err != nil {
			dropped = append(dropped, Dropped{d.Name, "refused: " + err.Error()})
			continue
		}
		pts, err := ev.Evaluate(&d, opt.Interval)
		if err != nil {
			return nil, nil, err
		}
		var good []Point
		for _, p := range pts {
			if !p.T.After(ev.LastGood) {
				good = append(good, p)
			}
		}
		fit := opt.Fit
		fit.Floor, fit.Step = c.floor, opt.Interval
		normal, persist, ok := Learn(good, fit)
		if !ok {
			dropped = append(dropped, Dropped{d.Name, "no value in the known-good window to learn a normal range from"})
			continue
		}
		d.Normal, d.For = normal, Duration(persist)
		o := ev.outcome(&d, pts, opt.Interval)
		if !o.OK() {
			dropped = append(dropped, Dropped{d.Name, describe(&o)})
			continue
		}
		f.Alerts = append(f.Alerts, d)
	}
	return f, dropped, nil
}

func describe(o *AlertOutcome) string {
	switch {
	case len(o.FalsePositives) > 0:
		return fmt.Sprintf("%d false positive(s) in the known-good window", len(o.FalsePositives))
	case o.Verdict == VerdictMissed:
		return fmt.Sprintf("would not have fired (peak %s after the boundary, normal up to %s)", num(o.PeakAfter), num(o.Max))
	}
	return fmt.Sprintf("would have fired %s after the first bad: later than one persistence", num(-*o.Lead)+"s")
}

type candidate struct {
	def   Definition
	floor float64 // least abnormal distance above the normal quantile
}

// candidates builds the definitions before learning.
func (ev *Evidence) candidates(w time.Duration) []candidate {
	inv := ev.Investigation
	perWindow := 1 / w.Seconds() // one record more per window, as a rate
	burst := ev.blamedBurst()
	workloadFix := strings.Join(actions(inv.Mitigation), "; then ")
	loadFix := workloadFix
	if burst != nil {
		if fx := bestFix(burst); fx != "" {
			loadFix = fx
		}
	}
	// In order: the slice's pod failures, the blamed burst's class, the
	// most throttled classes, pod start-up, the pools going NotReady, the
	// node faults; then, where their series were ingested, DNS and network
	// pressure.
	var out []candidate
	out = append(out, ev.podFailureCandidates(w, perWindow, workloadFix)...)
	out = append(out, burstCandidates(burst, w, perWindow, loadFix)...)
	out = append(out, ev.throttledCandidates(w, perWindow, loadFix)...)
	out = append(out, podStartupCandidate(w, loadFix))
	out = append(out, ev.notReadyCandidates(w, perWindow)...)
	out = append(out, ev.nodeFaultCandidates(w, perWindow)...)
	return preferMetric(out, append(ev.dnsCandidates(w, perWindow), ev.networkCandidates(w, perWindow)...))
}

// nodeFault is a kind of node fault with a metric that counts it where
// it is scraped: the node's own log says it (ingest/nodelogs), the
// exporter's metric says it live.
type nodeFault struct {
	reason  string // timeline.Node*
	name    string // in the alert's name
	summary string
	promql  func(poolLabel, pool string, w time.Duration) string
}

// nodeFaults are the kinds of node fault an alert is learned for: those a
// standard exporter counts (NVIDIA's dcgm-exporter, node_exporter). The
// others (a PLEG stall, NCCL errors) have no standard metric.
var nodeFaults = []nodeFault{
	{timeline.NodeXid, "GPUXidErrors", "GPU Xid errors (NVIDIA driver) on nodes of pool %s per second", GPUXidPromQL},
	{timeline.NodeOOMKill, "OOMKills", "kernel OOM kills on nodes of pool %s per second", NodeCounterPromQL("node_vmstat_oom_kill")},
	{timeline.NodeConntrackFull, "ConntrackDrops", "packets dropped with the conntrack table full on nodes of pool %s per second", NodeCounterPromQL("node_nf_conntrack_stat_drop")},
	{timeline.NodeLinkDown, "LinkDowns", "network links going down on nodes of pool %s per second", NodeCounterPromQL("node_network_carrier_down_changes_total")},
}

// nodeFaultCandidates are candidates 6: for each pool and kind of node
// fault its nodes logged in the incident (ingest/nodelogs), the rate of
// that fault in the pool: an error budget, learned like the others.
func (ev *Evidence) nodeFaultCandidates(w time.Duration, perWindow float64) []candidate {
	var steps []investigate.Action
	for _, a := range ev.Investigation.Mitigation {
		if a.Action == "cordon" || a.Action == "repair" {
			steps = append(steps, a)
		}
	}
	fix := strings.Join(actions(steps), "; then ")
	var out []candidate
	for _, nf := range nodeFaults {
		for _, pool := range ev.faultPools(nf.reason) {
			mit := fix
			if mit == "" {
				mit = "cordon the node that logged it, drain it, and repair it (for a GPU: the Xid catalog's action)"
			}
			out = append(out, candidate{floor: perWindow, def: Definition{
				Name:    "Pool" + pascal(pool) + nf.name,
				Summary: fmt.Sprintf(nf.summary, pool),
				Signal: Signal{Kind: KindRate, Window: Duration(w), PromQL: nf.promql(ev.poolLabel(), pool, w),
					Count: fmt.Sprintf(`source == "node" && reason == %q && type == "Warning"`, nf.reason)},
				Slice: map[string]string{"pool": pool}, Severity: "page", Owner: owner("platform"), Mitigation: mit,
				Runbook: RunbookBase + "node-faults",
			}})
		}
	}
	return out
}

// faultPools are the pools whose nodes logged a fault of reason in the
// incident (from the last known-good to its end).
func (ev *Evidence) faultPools(reason string) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range ev.records {
		if r.Source == timeline.SourceNode && r.Reason == reason && r.Type == "Warning" &&
			!r.Time.Before(ev.LastGood) && !r.Time.After(ev.IncidentEnd) {
			if p := ev.pools[r.Object.Name]; p != "" && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// blamedBurst is the burst the control plane blames: the heaviest one that
// overlaps the incident (from the last good to the incident's end); nil if
// none does.
func (ev *Evidence) blamedBurst() *controlplane.Burst {
	cp := ev.ControlPlane
	for i := range cp.Bursts {
		b := &cp.Bursts[i]
		if !b.Start.After(ev.IncidentEnd) && !b.End.Before(ev.LastGood) {
			return b
		}
	}
	return nil
}

// podFailureCandidates is candidate 1: the slice's pod failures (none when
// the investigation found no slice, or the slice has no workload).
func (ev *Evidence) podFailureCandidates(w time.Duration, perWindow float64, workloadFix string) []candidate {
	inv := ev.Investigation
	if inv.Slice == nil {
		return nil
	}
	slice, cause := ev.workloadSlice(inv)
	if len(slice) == 0 {
		return nil
	}
	q, _ := PodFailuresPromQL(slice, w)
	team := slice["namespace"]
	if team == "" {
		team = "platform"
	}
	name := pascal(slice["namespace"], ownerName(slice["owner"])) + "PodFailures"
	return []candidate{{floor: perWindow, def: Definition{
		Name:    name,
		Summary: fmt.Sprintf("pods of %s entering a failure state", describeSlice(slice)),
		Signal: Signal{Kind: KindRate, Window: Duration(w), PromQL: q,
			Count: `source == "status" && kind == "Pod" && reason in ` + celList(podFailureStates)},
		Slice: slice, Severity: "page", Owner: owner(team),
		Mitigation: orDefault(workloadFix, "roll back the change the investigation blames (faultline investigate)"),
		Runbook:    RunbookBase + "pod-failures", Cause: cause,
	}}}
}

// burstCandidates are candidates 2: the request class of the blamed burst,
// its rate and (but for a WATCH) its latency; none without a burst.
func burstCandidates(burst *controlplane.Burst, w time.Duration, perWindow float64, loadFix string) []candidate {
	if burst == nil {
		return nil
	}
	c := burst.Class
	slice := map[string]string{"verb": c.Verb, "resource": c.Resource, "subresource": c.Subresource, "scope": metricScopeOf(c.Scope)}
	cls := pascal(c.Verb, c.Resource, c.Subresource, metricScopeOf(c.Scope))
	team := teamOfUser(c.User)
	cause := fmt.Sprintf("%s (client %s as %s)", burst.FanOut, c.Client, c.User)
	out := []candidate{{floor: perWindow, def: Definition{
		Name:    "Apiserver" + cls + "Rate",
		Summary: fmt.Sprintf("%s requests per second", c.Key()),
		Signal: Signal{Kind: KindRate, Window: Duration(w), PromQL: RequestRatePromQL(slice, w),
			Count: `source == "audit" && stage != "RequestReceived"`},
		Slice: slice, Severity: "page", Owner: owner(team), Mitigation: loadFix,
		Runbook: RunbookBase + "request-rate", Cause: cause,
	}}}
	if c.Verb != "watch" {
		out = append(out, candidate{floor: 0.1, def: Definition{
			Name:    "Apiserver" + cls + "LatencyP99",
			Summary: fmt.Sprintf("%s p99 latency in seconds", c.Key()),
			Signal: Signal{Kind: KindQuantile, Quantile: 0.99, Window: Duration(w), PromQL: RequestLatencyPromQL(0.99, slice, w),
				Count: `source == "audit" && stage == "ResponseComplete"`},
			Slice: slice, Severity: "ticket", Owner: owner(team), Mitigation: loadFix,
			Runbook: RunbookBase + "request-latency", Cause: cause,
		}})
	}
	return out
}

// throttledCandidates are candidates 3: 429s per request class, the classes
// most throttled in the incident.
func (ev *Evidence) throttledCandidates(w time.Duration, perWindow float64, loadFix string) []candidate {
	var out []candidate
	for _, t := range ev.throttled(3) {
		slice := map[string]string{"verb": t.verb, "resource": t.resource, "subresource": t.subresource, "scope": t.scope, "code": "429"}
		out = append(out, candidate{floor: perWindow, def: Definition{
			Name:    "Apiserver" + pascal(t.verb, t.resource, t.subresource, t.scope) + "Throttled",
			Summary: fmt.Sprintf("%s %s (%s) requests rejected with 429 per second (per request class: APF priority levels are not in the evidence)", strings.ToUpper(t.verb), resourceOf(t.resource, t.subresource), t.scope),
			Signal: Signal{Kind: KindRate, Window: Duration(w), PromQL: RequestRatePromQL(slice, w),
				Count: `source == "audit" && stage != "RequestReceived"`},
			Slice: slice, Severity: "page", Owner: owner("platform"), Mitigation: loadFix,
			Runbook: RunbookBase + "throttling-429",
		}})
	}
	return out
}

// podStartupCandidate is candidate 4: pod start-up p99 over the cluster
// (the kubelet's histogram).
func podStartupCandidate(w time.Duration, loadFix string) candidate {
	return candidate{floor: 1, def: Definition{
		Name:    "PodStartupP99",
		Summary: "p99 seconds from pod creation to running",
		Signal: Signal{Kind: KindQuantile, Quantile: 0.99, Window: Duration(w), PromQL: PodStartupPromQL(0.99, w),
			Count: `source == "status" && kind == "Pod" && latency > duration("0s")`},
		Severity: "ticket", Owner: owner("platform"), Mitigation: loadFix, Runbook: RunbookBase + "pod-startup",
	}}
}

// notReadyCandidates are candidates 5: nodes going NotReady, per pool that
// did in the incident.
func (ev *Evidence) notReadyCandidates(w time.Duration, perWindow float64) []candidate {
	var out []candidate
	for _, pool := range ev.notReadyPools() {
		fix := "cordon node.pool=" + pool + " and move its work to a healthy pool"
		for _, a := range ev.Investigation.Mitigation {
			if a.Action == "cordon" {
				fix = actions([]investigate.Action{a})[0]
			}
		}
		out = append(out, candidate{floor: perWindow, def: Definition{
			Name:    "Pool" + pascal(pool) + "NodesNotReady",
			Summary: "nodes of pool " + pool + " becoming NotReady per second",
			Signal: Signal{Kind: KindRate, Window: Duration(w), PromQL: NodeNotReadyPromQL(ev.poolLabel(), pool, w),
				Count: `source == "status" && kind == "Node" && reason == "NodeNotReady"`},
			Slice: map[string]string{"pool": pool}, Severity: "page", Owner: owner("platform"), Mitigation: fix,
			Runbook: RunbookBase + "node-notready",
		}})
	}
	return out
}

// workloadSlice is the slice of the failure alert: the namespace and
// owner the slice's bad pods share, and the investigation's node labels
// (kube_node_labels can say them). Content hashes (a ConfigMap's, an image
// digest) become the cause: they would not recur.
func (ev *Evidence) workloadSlice(inv *investigate.Report) (map[string]string, string) {
	failed := map[string]bool{} // pods that entered a failure state from the first bad on
	for _, r := range ev.records {
		if r.Source == "status" && r.Object.Kind == "Pod" && !r.Time.Before(ev.FirstBad) && slices.Contains(podFailureStates, r.Reason) {
			failed["Pod/"+r.Object.Namespace+"/"+r.Object.Name] = true
		}
	}
	refs, _ := inv.Matching(inv.Slice.Where)
	nsSet, ownerSet := map[string]bool{}, map[string]bool{}
	for _, ref := range refs {
		parts := strings.SplitN(ref, "/", 3)
		if len(parts) != 3 || !failed[ref] {
			continue
		}
		u := ev.units[parts[1]+"/"+parts[2]]
		if u == nil {
			continue
		}
		nsSet[u.Namespace] = true
		ownerSet[StableOwner(u.Owner)] = true
	}
	slice := map[string]string{}
	if len(nsSet) == 1 {
		for ns := range nsSet {
			slice["namespace"] = ns
		}
	}
	if len(ownerSet) == 1 {
		for o := range ownerSet {
			if o != "" {
				slice["owner"] = o
			}
		}
	}
	var cause []string
	keys := make([]string, 0, len(inv.Slice.Where))
	for k := range inv.Slice.Where {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := inv.Slice.Where[k]
		// A node label (a driver major version) names where it recurs; a
		// content hash (a ConfigMap's, an image digest) is this incident's
		// alone: the next bad rollout has another.
		if strings.HasPrefix(k, "node.label/") {
			slice[k] = v
		} else {
			cause = append(cause, k+"="+v)
		}
	}
	return slice, strings.Join(cause, ", ")
}

type throttledClass struct {
	verb, resource, subresource, scope string
	n                                  int
}

// throttled returns the request classes (metric labels) with the most
// 429s from the first bad on to the end of the incident, at least 5 each.
func (ev *Evidence) throttled(top int) []throttledClass {
	by := map[throttledClass]int{}
	for _, r := range ev.records {
		if r.Source != timeline.SourceAudit || r.Code != 429 || r.Time.Before(ev.FirstBad) || r.Time.After(ev.IncidentEnd) || r.Object.Resource == "" {
			continue
		}
		by[throttledClass{verb: r.Verb, resource: r.Object.Resource, subresource: r.Object.Subresource,
			scope: metricScope(r.Object.Namespace, r.Object.Name)}]++
	}
	var out []throttledClass
	for k, n := range by {
		if n >= 5 {
			k.n = n
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.n != b.n {
			return a.n > b.n
		}
		return a.verb+a.resource+a.subresource+a.scope < b.verb+b.resource+b.subresource+b.scope
	})
	return out[:min(top, len(out))]
}

// notReadyPools lists the pools with a node gone NotReady from the last
// known-good instant to the end of the incident.
func (ev *Evidence) notReadyPools() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range ev.records {
		if r.Source == "status" && r.Object.Kind == "Node" && r.Reason == "NodeNotReady" &&
			!r.Time.Before(ev.LastGood) && !r.Time.After(ev.IncidentEnd) {
			if p := ev.pools[r.Object.Name]; p != "" && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// poolLabel is the node label the pools were read from.
func (ev *Evidence) poolLabel() string {
	if ev.poolKey != "" {
		return ev.poolKey
	}
	return PoolLabels[len(PoolLabels)-1]
}

// actions writes mitigation steps as exact actions.
func actions(as []investigate.Action) []string {
	var out []string
	for _, a := range as {
		switch a.Action {
		case "rollback":
			out = append(out, fmt.Sprintf("roll back %s to %s", a.Target, a.To))
		case "cordon":
			out = append(out, "cordon "+a.Target)
		default:
			s := a.Action + " " + a.Target
			if a.To != "" {
				s += " to " + a.To
			}
			out = append(out, s)
		}
	}
	return out
}

// bestFix is the burst's fix with the lowest simulated peak (the first on
// ties), as an action.
func bestFix(b *controlplane.Burst) string {
	best := -1
	for i, fx := range b.Fixes {
		if best < 0 || fx.SimulatedPeakRps < b.Fixes[best].SimulatedPeakRps {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	fx := b.Fixes[best]
	return fmt.Sprintf("%s (%s fix: simulated peak %s/s instead of %s/s)", fx.Detail, fx.Kind, num(fx.SimulatedPeakRps), num(b.PeakRps))
}

func owner(team string) Owner { return Owner{Team: team, Rotation: team + "-oncall"} }

// teamOfUser is the namespace of a (folded) service account, else the
// platform team.
func teamOfUser(u string) string {
	if rest, ok := strings.CutPrefix(u, "system:serviceaccount:"); ok {
		if ns, _, ok := strings.Cut(rest, ":"); ok && ns != "kube-system" {
			return ns
		}
	}
	return "platform"
}

func metricScopeOf(s string) string {
	if s == timeline.ScopeObject {
		return "resource"
	}
	return s
}

func resourceOf(res, sub string) string {
	if sub != "" {
		return res + "/" + sub
	}
	return res
}

func ownerName(o string) string {
	_, name, _ := strings.Cut(o, "/")
	return name
}

func describeSlice(s map[string]string) string {
	if len(s) == 0 {
		return "the cluster"
	}
	return SliceString(s)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func celList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// pascal joins words into an alert name: "ml", "vision-train" ->
// "MlVisionTrain".
func pascal(words ...string) string {
	var b strings.Builder
	for _, w := range words {
		up := true
		for _, r := range w {
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) || r > unicode.MaxASCII {
				up = true
				continue
			}
			if up {
				r = unicode.ToUpper(r)
				up = false
			}
			b.WriteRune(r)
		}
	}
	s := b.String()
	if s != "" && unicode.IsDigit(rune(s[0])) {
		s = "X" + s
	}
	return s
}

// podTemplateHash is the suffix a Deployment gives its ReplicaSets
// (pod-template-hash: rand.SafeEncodeString's alphabet).
const podTemplateHash = "[bcdfghjklmnpqrstvwxz2456789]{6,10}"

var rsName = regexp.MustCompile(`^(.+)-` + podTemplateHash + `$`)

// StableOwner names a pod's owner by what survives a rollout: a
// Deployment's ReplicaSet "ReplicaSet/api-74bd57fdc" is "Deployment/api"
// (a new ReplicaSet comes with every rollout); other owners stay.
func StableOwner(o string) string {
	if name, ok := strings.CutPrefix(o, "ReplicaSet/"); ok {
		if m := rsName.FindStringSubmatch(name); m != nil {
			return "Deployment/" + m[1]
		}
	}
	return o
}
