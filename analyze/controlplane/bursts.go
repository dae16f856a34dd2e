package controlplane

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/timeline"
)

// baselineWindow is how far back a second's baseline rate is taken from.
const baselineWindow = 300 // seconds

// bursts finds, per class, the seconds whose count jumps an order of
// magnitude over the class's own rate in the five minutes before, and is
// significant under it (Poisson, p < 1e-6); a burst runs while the rate
// stays that high (gaps of up to five seconds bridged). Bursts are ranked
// by the load they put on the apiserver and etcd (see load).
func bursts(classes []*Class, starts []podStart, jitter time.Duration, dataStart int64) []Burst {
	out := []Burst{}
	for _, c := range classes {
		secs := make([]int64, len(c.series))
		for i, x := range c.series {
			secs[i] = x.Sec
		}
		prefix := c.prefix
		for i := 0; i < len(secs); i++ {
			t := secs[i]
			n := c.series[i].Count
			if t-dataStart < minHistory {
				continue // no baseline yet: the start of the evidence is not a jump
			}
			base := baseline(secs, prefix, i, dataStart)
			thr := burstRatio * base
			if float64(n) < burstMinRate || float64(n) < thr || poissonSF(n, base) >= burstPValue {
				continue
			}
			// Extend while the rate stays an order of magnitude up, bridging
			// dips of up to five seconds.
			end, sum, peak, peakAt := t, n, n, t
			j := i + 1
			for ; j < len(secs) && secs[j]-end <= 5; j++ {
				m := c.series[j].Count
				if float64(m) < thr {
					continue
				}
				end, sum = secs[j], sum+m
				if m > peak {
					peak, peakAt = m, secs[j]
				}
			}
			for j < len(secs) && secs[j] <= end {
				j++
			}
			b := Burst{Start: time.Unix(t, 0).UTC(), End: time.Unix(end+1, 0).UTC(), PeakRps: float64(peak),
				BaselineRps: base, Requests: sum, Class: *c}
			b.Class.PeakRps, b.Class.PeakAt = float64(peak), time.Unix(peakAt, 0).UTC()
			b.Clients = clientsIn(c, t, end)
			b.Amplification, b.AmplifiedBy = amplification(sum, b.Clients, starts, t, end)
			b.Fixes = fixes(c, classes, t, end, jitter, starts)
			b.Load = load(c, sum)
			b.FanOut = fanOut(&b)
			out = append(out, b)
			i = j - 1
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return heavier(&out[i], &out[j]) })
	return out
}

// heavier orders bursts by load, then by apiserver time, then by start.
func heavier(a, b *Burst) bool {
	switch {
	case a.Load.Score != b.Load.Score:
		return a.Load.Score > b.Load.Score
	case a.Load.ApiserverSeconds != b.Load.ApiserverSeconds:
		return a.Load.ApiserverSeconds > b.Load.ApiserverSeconds
	}
	return a.Start.Before(b.Start)
}

func meanLatency(c *Class) float64 {
	var n int64
	var sum float64
	for b, k := range c.buckets {
		sum += float64(timeline.LatencyBucketUpper(b)) / 1e9 * float64(k)
		n += k
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// minHistory is how much evidence must precede a second before it can be
// judged a jump: at the start of the evidence every class "appears".
const minHistory = 60 // seconds

// baseline is the class's rate over the five minutes before secs[i] (or
// the evidence before it, when there is less), with a floor of one request
// per window (nothing seen is not "zero forever").
func baseline(secs, prefix []int64, i int, dataStart int64) float64 {
	t := secs[i]
	window := min(int64(baselineWindow), t-dataStart)
	k := sort.Search(i, func(k int) bool { return secs[k] >= t-window })
	n := prefix[i] - prefix[k]
	return math.Max(float64(n), 1) / float64(window)
}

// poissonSF is P(X >= n) for X ~ Poisson(lambda).
func poissonSF(n int64, lambda float64) float64 {
	if n <= 0 {
		return 1
	}
	// 1 - CDF(n-1), summed in log space for stability.
	term := math.Exp(-lambda)
	cdf := term
	for k := int64(1); k < n; k++ {
		term *= lambda / float64(k)
		cdf += term
		if term < 1e-300 {
			break
		}
	}
	return math.Max(0, 1-cdf)
}

func clientsIn(c *Class, from, to int64) int {
	n := 0
	for _, span := range c.users {
		if span[1]+60 > from && span[0] <= to {
			n++
		}
	}
	return n
}

func amplification(requests int64, clients int, starts []podStart, from, to int64) (float64, string) {
	pods := 0
	for _, s := range starts {
		if t := s.created.Unix(); t >= from-120 && t <= to {
			pods++
		}
	}
	switch {
	case pods > 0:
		return float64(requests) / float64(pods), "pod"
	case clients > 0:
		return float64(requests) / float64(clients), "client"
	}
	return 0, ""
}

// fixes simulates, on the recorded seconds, what each smoothing fix would
// have done to the burst.
func fixes(c *Class, classes []*Class, from, to int64, jitter time.Duration, starts []podStart) []Fix {
	var out []Fix
	if system(c.User) {
		// A controller or kubelet reacting to the cluster: its start cannot be
		// jittered nor its reads rescoped by the user; only isolating it can.
		return append(out, apfFix(c, classes, from, to))
	}
	w := int64(jitter.Seconds())
	// Jitter: each request of the burst moves by a uniform delay in [0, W).
	spread := map[int64]float64{}
	for t := from; t <= to; t++ {
		n := float64(c.at(t))
		for d := int64(0); d < w; d++ {
			spread[t+d] += n / float64(w)
		}
	}
	peak := 0.0
	for _, v := range spread {
		peak = math.Max(peak, v)
	}
	out = append(out, Fix{Kind: "jitter",
		Detail: fmt.Sprintf("start the %s clients over %s (a random delay of 0..%s before the first request, or a rate-limited start)",
			c.Client, jitter, jitter),
		SimulatedPeakRps: round(peak),
		Tradeoff:         fmt.Sprintf("the last client starts up to %s later: the job's start-up takes that much longer", jitter)})

	read := c.Verb == "get" || c.Verb == "list"
	if read {
		detail := "read from the watch cache: LIST with resourceVersion=0, or a shared informer (LIST once, then WATCH)"
		if c.Verb == "get" {
			detail = fmt.Sprintf("read %s once and cache it: mount it as a volume or env (the kubelet reads it), or a shared informer", c.Resource)
		}
		// Simulated: none of the burst's reads reach etcd (the cache or the
		// kubelet serves them).
		out = append(out, Fix{Kind: "watch-cache", Detail: detail, SimulatedPeakRps: 0,
			Tradeoff: "reads from the cache may be a little stale (resourceVersion=0 is any recent version); an informer holds the objects in memory"})
	}
	if (c.Verb == "list" || c.Verb == "watch") && c.Scope == "cluster" {
		ns := strings.TrimSuffix(strings.TrimPrefix(c.User, "system:serviceaccount:"), ":*")
		all, scoped := podsAround(starts, from, ns)
		if all > 0 && scoped > 0 && strings.HasPrefix(c.User, "system:serviceaccount:") {
			out = append(out, Fix{Kind: "scope",
				Detail: fmt.Sprintf("scope the %s to namespace %s and the job's label selector: about %d of %d pods per response",
					strings.ToUpper(c.Verb), ns, scoped, all),
				SimulatedPeakRps: round(float64(c.at(peakSecond(c, from, to))) * float64(scoped) / float64(all)),
				Tradeoff:         "the client sees only its own namespace's pods (in full-list equivalents per second: the rate stays, each response shrinks)"})
		} else {
			out = append(out, Fix{Kind: "scope", Detail: "scope the " + strings.ToUpper(c.Verb) + " to a namespace and a label or field selector",
				SimulatedPeakRps: float64(c.at(peakSecond(c, from, to))),
				Tradeoff:         "needs the client to know its namespace and labels; the request rate stays, each response shrinks"})
		}
	}
	return append(out, apfFix(c, classes, from, to))
}

// system says whether a user is a control-plane component or a node.
func system(user string) bool {
	return strings.HasPrefix(user, "system:serviceaccount:kube-system:") || strings.HasPrefix(user, "system:node:") ||
		strings.HasPrefix(user, "system:kube-") || user == "system:apiserver"
}

func apfFix(c *Class, classes []*Class, from, to int64) Fix {
	var others int64
	for _, o := range classes {
		if o.Client != c.Client || o.User != c.User {
			others += o.sum(from, to)
		}
	}
	return Fix{Kind: "apf",
		Detail:           fmt.Sprintf("a FlowSchema matching %s to a PriorityLevel of its own (limited seats, queuing)", c.User),
		SimulatedPeakRps: float64(c.at(peakSecond(c, from, to))),
		Tradeoff: fmt.Sprintf("the burst is shed or queued within its own level: the %d other requests in the window keep their seats, but the burst's own clients wait longer",
			others)}
}

func peakSecond(c *Class, from, to int64) int64 {
	best, at := int64(-1), from
	for t := from; t <= to; t++ {
		if n := c.at(t); n > best {
			best, at = n, t
		}
	}
	return at
}

func round(f float64) float64 { return math.Round(f*100) / 100 }

// podsAround counts the pods that existed at the burst, in all namespaces
// and in ns.
func podsAround(starts []podStart, at int64, ns string) (all, inNS int) {
	for _, s := range starts {
		if s.created.Unix() > at || (!s.deleted.IsZero() && s.deleted.Unix() < at) {
			continue
		}
		all++
		if s.namespace == ns {
			inNS++
		}
	}
	return all, inNS
}

// fanOut draws the burst's way from its clients to etcd; the LISTs that
// reach etcd are the burst's own (Load.EtcdReads), not its class's.
func fanOut(b *Burst) string {
	c := &b.Class
	etcd := ""
	if b.Load.EtcdReads > 0 {
		etcd = fmt.Sprintf(" -> etcd (%d LISTs not served from the watch cache)", b.Load.EtcdReads)
	}
	return fmt.Sprintf("%d clients (%s, %s) -> apiserver %s %s/%s at %.0f/s peak (baseline %.2f/s)%s",
		b.Clients, dash(c.Client), c.User, strings.ToUpper(c.Verb), c.Scope, resourceName(c), b.PeakRps, b.BaselineRps, etcd)
}

func resourceName(c *Class) string {
	if c.Subresource != "" {
		return c.Resource + "/" + c.Subresource
	}
	return c.Resource
}

func clientCosts(classes []*Class, span float64) []ClientCost {
	by := map[string]*ClientCost{}
	for _, c := range classes {
		k := c.Client + "\x00" + c.User
		cc := by[k]
		if cc == nil {
			cc = &ClientCost{Client: c.Client, User: c.User}
			by[k] = cc
		}
		cc.Requests += c.Count
		cc.EtcdLists += c.EtcdLists
		if c.Scope == "cluster" {
			cc.UnpagedLists += c.Unpaged
		}
		if c.Verb == "watch" {
			cc.Watches += c.Count
		}
		cc.Throttled += c.Codes["429"]
	}
	out := make([]ClientCost, 0, len(by))
	for _, cc := range by {
		cc.WatchesPerMin = round(float64(cc.Watches) / (span / 60))
		out = append(out, *cc)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].EtcdLists != out[j].EtcdLists {
			return out[i].EtcdLists > out[j].EtcdLists
		}
		if out[i].Requests != out[j].Requests {
			return out[i].Requests > out[j].Requests
		}
		return out[i].Client+out[i].User < out[j].Client+out[j].User
	})
	return out
}

// sloBreaches checks each class's p99 against the Kubernetes API call
// latency SLOs: 1 s for mutating calls and single-object reads, 5 s for
// namespace-scope and 30 s for cluster-scope LISTs. WATCHes are long-running
// and have none. Classes of fewer than 20 requests have no meaningful p99.
func sloBreaches(classes []*Class) []SLOBreach {
	out := []SLOBreach{}
	for _, c := range classes {
		if c.Count < 20 || c.Verb == "watch" {
			continue
		}
		kind, slo := "", 0.0
		switch {
		case c.Verb == "create" || c.Verb == "update" || c.Verb == "patch" || c.Verb == "delete" || c.Verb == "deletecollection":
			kind, slo = "mutating", 1000
		case c.Verb == "get" || c.Scope == "object":
			kind, slo = "read-object", 1000
		case c.Verb == "list" && c.Scope == "namespace":
			kind, slo = "read-namespace", 5000
		case c.Verb == "list":
			kind, slo = "read-cluster", 30000
		default:
			continue
		}
		if c.P99Ms > slo {
			out = append(out, SLOBreach{Class: c.Key(), P99Ms: c.P99Ms, SLOMs: slo, Kind: kind})
		}
	}
	return out
}

func scheduler(classes []*Class) *Scheduler {
	secs := map[int64]int64{}
	for _, c := range classes {
		if c.Verb == "create" && c.Resource == "pods" && c.Subresource == "binding" {
			for _, x := range c.series {
				secs[x.Sec] += x.Count
			}
		}
	}
	if len(secs) == 0 {
		return nil
	}
	s := &Scheduler{}
	for t, n := range secs {
		s.Binds += n
		if float64(n) > s.PeakPerSec || (float64(n) == s.PeakPerSec && time.Unix(t, 0).Before(s.PeakAt)) {
			s.PeakPerSec, s.PeakAt = float64(n), time.Unix(t, 0).UTC()
		}
	}
	s.ActiveSpanS = float64(len(secs))
	s.MeanPerSec = round(float64(s.Binds) / s.ActiveSpanS)
	return s
}

func cardinality(classes []*Class, st *timeline.RequestStats, first, last time.Time) Cardinality {
	mid := first.Add(last.Sub(first) / 2).Unix()
	firstSeen := map[string]int64{}
	for _, cl := range st.Clients {
		if t, ok := firstSeen[cl.User]; !ok || cl.Minute < t {
			firstSeen[cl.User] = cl.Minute
		}
	}
	uas := map[string]bool{}
	for _, c := range classes {
		uas[c.Client] = true
	}
	card := Cardinality{Users: len(firstSeen), UserAgents: len(uas), Classes: len(classes)}
	for _, t := range firstSeen {
		if t < mid {
			card.UsersFirst++
		} else {
			card.UsersLast++
		}
	}
	if card.UsersLast > 100 && card.UsersLast > card.UsersFirst/2 {
		card.Warning = fmt.Sprintf("%d users first seen in the second half of the window (%d in the first): an identity per pod or per run grows without bound; label telemetry by class (system:serviceaccount:NS:*), not by user",
			card.UsersLast, card.UsersFirst)
	}
	return card
}

// podStart is one pod's way from creation to running.
type podStart struct {
	namespace, owner   string
	created, scheduled time.Time
	running, deleted   time.Time
}

// podStarts reads, per pod, when it was created, scheduled (bound to a
// node) and running, from its versions.
func podStarts(vs []timeline.ObjectVersion) []podStart {
	by := map[string]*podStart{}
	var order []string
	for i := range vs {
		v := &vs[i]
		k := v.Object.UID
		if k == "" {
			k = v.Object.Namespace + "/" + v.Object.Name
		}
		var m struct {
			Metadata struct {
				CreationTimestamp time.Time  `json:"creationTimestamp"`
				DeletionTimestamp *time.Time `json:"deletionTimestamp"`
				OwnerReferences   []struct {
					Kind, Name string
				} `json:"ownerReferences"`
			} `json:"metadata"`
			Spec struct {
				NodeName string `json:"nodeName"`
			} `json:"spec"`
			Status struct {
				Phase      string `json:"phase"`
				Conditions []struct {
					Type, Status       string
					LastTransitionTime time.Time `json:"lastTransitionTime"`
				} `json:"conditions"`
			} `json:"status"`
		}
		if json.Unmarshal(v.Content, &m) != nil {
			continue
		}
		p := by[k]
		if p == nil {
			p = &podStart{namespace: v.Object.Namespace, created: m.Metadata.CreationTimestamp}
			if len(m.Metadata.OwnerReferences) > 0 {
				p.owner = m.Metadata.OwnerReferences[0].Kind + "/" + v.Object.Namespace + "/" + m.Metadata.OwnerReferences[0].Name
			}
			by[k] = p
			order = append(order, k)
		}
		if p.created.IsZero() {
			p.created = m.Metadata.CreationTimestamp
		}
		if p.scheduled.IsZero() && m.Spec.NodeName != "" {
			p.scheduled = v.Time
			for _, c := range m.Status.Conditions {
				if c.Type == "PodScheduled" && c.Status == "True" && !c.LastTransitionTime.IsZero() && c.LastTransitionTime.Before(p.scheduled) {
					p.scheduled = c.LastTransitionTime
				}
			}
		}
		if p.running.IsZero() && m.Status.Phase == "Running" {
			p.running = v.Time
		}
		if p.deleted.IsZero() && m.Metadata.DeletionTimestamp != nil {
			p.deleted = *m.Metadata.DeletionTimestamp
		}
	}
	out := make([]podStart, 0, len(order))
	for _, k := range order {
		out = append(out, *by[k])
	}
	return out
}

// podStartup is creation -> running latency, against the SLO: p99 ≤ 5 s.
func podStartup(starts []podStart) *PodStartup {
	var all, sched []float64
	byOwner := map[string][]float64{}
	for _, s := range starts {
		if s.created.IsZero() || s.running.IsZero() {
			continue
		}
		ms := float64(s.running.Sub(s.created)) / 1e6
		if ms < 0 {
			continue
		}
		all = append(all, ms)
		if !s.scheduled.IsZero() {
			sched = append(sched, float64(s.scheduled.Sub(s.created))/1e6)
		}
		byOwner[s.owner] = append(byOwner[s.owner], ms)
	}
	if len(all) == 0 {
		return nil
	}
	p := &PodStartup{Pods: len(all), P50Ms: quantile(all, 0.5), P99Ms: quantile(all, 0.99), SchedP99Ms: quantile(sched, 0.99)}
	p.SLOMet = p.P99Ms <= 5000
	for o, v := range byOwner {
		if o == "" || len(v) < 2 {
			continue
		}
		p.PerOwner = append(p.PerOwner, OwnerP99{Owner: o, Pods: len(v), P50Ms: quantile(v, 0.5), P99Ms: quantile(v, 0.99)})
	}
	sort.Slice(p.PerOwner, func(i, j int) bool {
		if p.PerOwner[i].P99Ms != p.PerOwner[j].P99Ms {
			return p.PerOwner[i].P99Ms > p.PerOwner[j].P99Ms
		}
		return p.PerOwner[i].Owner < p.PerOwner[j].Owner
	})
	return p
}

func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return round(s[max(0, min(i, len(s)-1))])
}
