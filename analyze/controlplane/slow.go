package controlplane

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/burst"
	"github.com/faultline/faultline/timeline"
)

// Slow answers. Every write the apiserver accepts goes to etcd and waits
// for it to commit (a Raft round and an fsync), and so does a list that
// asks for what only etcd holds (etcdBound). etcd's own guidance is a
// commit under 25 ms at the 99th percentile; such a request over
// timeline.SlowLatency, ten times that, waited on something. One client's
// slow request may be its own doing (a large object, a webhook its kind
// calls, a surge of its own). A stretch of seconds is the server's doing
// when the slow requests of slowClients or more unrelated clients (folded
// users), each in a class whose rate did not rise (steady: at most twice
// the rate it had over the seconds it was active the minute before: a
// lease renewed every few seconds is such a class, and every
// control-plane component and every node keeps one), jump over the
// normal by the rule that finds bursts (rises). The normal is the share
// of those classes' requests that were slow over the five minutes before
// (burst.BaselineWindow), as a burst's baseline is the rate before it: a
// class that rose (a job's start, a cluster's set-up) is left out of both,
// so its load's own slowness does not raise the normal.
//
// The stretch is read by the second, not by the minute: a client waiting
// on a stalled server sends nothing more until it answers, so a stall's
// slow requests are as many as the requests in flight when it began, and
// the client catches up as soon as it ends. A half-minute of stalls in a
// minute of catching up is diluted below the order of magnitude. The
// seconds that hold slow requests at an order of magnitude over the
// normal make a run, gaps of up to burst.Bridge seconds bridged (as a
// burst runs), and the run as a whole must rise: a stall's seconds rarely
// hold burst.MinRate slow requests each.
//
// Where they waited is in the evidence:
//
//   - in API Priority and Fairness's queues, when the slow requests
//     waited there a second or more: the load of the moment (a burst) is
//     the cause ("queue");
//   - in the apiserver itself, when its reads from the watch cache, which
//     touch neither etcd nor the queues' limits, were slow too (more than
//     slowShare of them, in the minutes of the episode, by the time they
//     took less their own queue wait, which the apiserver tells of the
//     requests over breakdownOver: "apiserver": its CPU, memory, garbage
//     collection);
//   - in etcd, when they were not and there were enough of them to tell
//     (minCacheReads: "etcd": its disk's fsync and commit latency, a
//     defragmentation, a compaction), which no burst explains when none
//     ran;
//   - else it cannot tell ("server").

// Slow is an episode of slow requests to etcd from several clients at
// once.
type Slow struct {
	Start time.Time `json:"start"` // the first second's start
	End   time.Time `json:"end"`   // the last second's end
	// Where the requests waited: "etcd", "apiserver", "queue", or "server"
	// when the evidence cannot tell etcd from the apiserver.
	Where string `json:"where"`
	// Clients are the folded users with a slow request to etcd in a
	// steady class.
	Clients int `json:"clients"`
	// Requests are all the requests to etcd (writes, lists from etcd)
	// over timeline.SlowLatency received in the episode; MaxMs the
	// slowest of the steady classes'; Share the part of the steady
	// classes' requests to etcd over it.
	Requests int64   `json:"requests"`
	Share    float64 `json:"share"`
	MaxMs    float64 `json:"maxMs"`
	// QueueWaitMaxMs is the longest APF queue wait among them.
	QueueWaitMaxMs float64 `json:"queueWaitMaxMs"`
	// CacheReads are the reads served from the watch cache in the
	// episode's minutes (lists that do not read etcd), CacheSlow those of
	// them over timeline.SlowLatency.
	CacheReads int64 `json:"cacheReads"`
	CacheSlow  int64 `json:"cacheSlow"`
	// Bursts are the bursts that ran in the episode (by class key).
	Bursts []string `json:"bursts"`
	// Classes are the steady classes with slow requests to etcd, the most
	// slow first (at most five).
	Classes []string `json:"classes"`
}

const (
	slowClients = 2
	// slowShare is the share of the watch cache's reads over
	// timeline.SlowLatency that says they slowed too: the SLO lets 1 % of
	// calls run long.
	slowShare = 0.01
	// queued is a queue wait that makes a request slow by itself.
	queued = time.Second
	// minCacheReads are the reads from the watch cache it takes to say
	// they did not slow: with fewer, a slowdown of one in ten goes unseen.
	minCacheReads = 10
	// breakdownOver: the apiserver writes where a request's time went
	// (the apiserver.latency.k8s.io/* annotations, the APF queue wait
	// among them) only for requests that took longer (k8s.io/apiserver,
	// filters/audit.go: writeLatencyToAnnotation).
	breakdownOver = 500 * time.Millisecond
)

// writeVerbs are the verbs that commit to etcd; connecting subresources
// (exec, attach, port-forward, proxy) run as long as their session does.
var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}

func isWrite(c *Class) bool { return slices.Contains(writeVerbs, c.Verb) && !longRunning(c) }

// etcdBound says whether all of a class's requests reach etcd: its writes,
// and lists that ask for what only etcd holds (etcdLists of count).
func etcdBound(c *Class, etcdLists, count int64) bool {
	return isWrite(c) || c.Verb == "list" && etcdLists > 0 && etcdLists == count
}

// ident is what tells a folded class from another (Class.Key leaves
// out the group).
type ident struct{ verb, group, resource, subresource, scope, client, user string }

func (c *Class) ident() ident {
	return ident{c.Verb, c.Group, c.Resource, c.Subresource, c.Scope, c.Client, c.User}
}

// second is what one second holds of the requests to etcd.
type second struct {
	sec        int64
	steady     int64 // requests to etcd of steady classes received
	slowSteady int64 // of them over timeline.SlowLatency
	slowAll    int64 // requests to etcd over it, of every class
}

// slowSteadyReq is a slow request to etcd of a steady class.
type slowSteadyReq struct {
	sec   int64
	class *Class
	req   *timeline.SlowRequest
}

// slowEpisodes finds the runs of seconds in which requests to etcd of
// slowClients or more steady clients took timeline.SlowLatency or more
// (reqs: the window's slow requests), as a jump over the normal, and says
// where they waited. classes are the window's (folded) classes, for the
// requests per second and the reads the watch cache served; bursts its
// bursts.
func slowEpisodes(reqs []timeline.SlowRequest, classes []*Class, bursts []Burst) []Slow {
	byKey := map[ident]*Class{}
	for _, c := range classes {
		byKey[c.ident()] = c
	}
	// The etcd-bound classes' requests per minute, for their steadiness,
	// and per second (only the seconds that hold any: the evidence may
	// have gaps of months).
	perMin := map[*Class]*minutes{}
	bySec := map[int64]*second{}
	at := func(sec int64) *second {
		sc := bySec[sec]
		if sc == nil {
			sc = &second{sec: sec}
			bySec[sec] = sc
		}
		return sc
	}
	for _, c := range classes {
		if !etcdBound(c, c.EtcdLists, c.Count) {
			continue
		}
		pm := perMinute(c)
		perMin[c] = pm
		for _, x := range c.series {
			sc := at(x.Sec)
			if pm.steady(x.Sec - x.Sec%60) {
				sc.steady += x.Count
			}
		}
	}
	var steadySlow []slowSteadyReq
	cacheSlow := map[int64]int64{} // slow reads from the watch cache, by minute
	for i := range reqs {
		r := &reqs[i]
		rc := r.Class
		k := &Class{Verb: rc.Verb, Group: rc.Group, Resource: rc.Resource, Subresource: rc.Subresource, Scope: rc.Scope,
			Client: rc.UserAgent, User: rc.User}
		sec := r.Received.Unix()
		fc := byKey[k.ident()]
		switch {
		case isWrite(k) || k.Verb == "list" && r.Etcd:
			sc := bySec[sec]
			if sc == nil {
				continue // a class the window's rollup does not hold
			}
			sc.slowAll++
			if pm := perMin[fc]; pm != nil && pm.steady(sec-sec%60) {
				sc.slowSteady++
				steadySlow = append(steadySlow, slowSteadyReq{sec, fc, r})
			}
		case k.Verb == "list" && r.Latency > breakdownOver && r.Latency-r.APFWait >= timeline.SlowLatency:
			// The watch cache's own time: a read that waited in the APF
			// queues waited for seats (held, maybe, by requests waiting
			// on etcd), not for the apiserver to serve it. The wait is
			// known of the reads the apiserver wrote its breakdown for;
			// of the others, not whether they were slow in it. Counted as
			// cacheReads counts: the classes whose every list it served.
			if fc != nil && cacheRead(fc.Verb, fc.EtcdLists) {
				cacheSlow[sec-sec%60]++
			}
		}
	}
	secs := make([]second, 0, len(bySec))
	for _, sc := range bySec {
		secs = append(secs, *sc)
	}
	slices.SortFunc(secs, func(a, b second) int { return cmp.Compare(a.sec, b.sec) })
	var out []Slow
	var base baseline
	next := 0 // the first of steadySlow not yet passed
	for i := 0; i < len(secs); i++ {
		normal := base.at(secs, i)
		if !hot(&secs[i], normal) {
			continue
		}
		j := i // the run: hot seconds, gaps of up to burst.Bridge
		for k := i + 1; k < len(secs) && secs[k].sec-secs[j].sec <= burst.Bridge; k++ {
			if hot(&secs[k], normal) {
				j = k
			}
		}
		var n, all int64
		for _, sc := range secs[i : j+1] {
			n, all = n+sc.slowSteady, all+sc.steady
		}
		for next < len(steadySlow) && steadySlow[next].sec < secs[i].sec {
			next++
		}
		end := next
		for end < len(steadySlow) && steadySlow[end].sec <= secs[j].sec {
			end++
		}
		if ep, ok := episode(secs[i:j+1], n, all, normal, steadySlow[next:end], classes, cacheSlow, bursts); ok {
			out = append(out, ep)
			i = j
		}
	}
	return out
}

// hot says whether a second's slow requests of steady classes are an
// order of magnitude over what the normal expects of its requests.
func hot(sc *second, normal float64) bool {
	return sc.slowSteady > 0 && float64(sc.slowSteady) >= burst.Ratio*normal*float64(sc.steady)
}

// baseline is the normal as the seconds go by: the share of the steady
// classes' requests to etcd that were slow over the burst.BaselineWindow
// seconds before a second, as a burst's baseline is the rate before it
// (none slow counts as one, as there).
type baseline struct {
	lo, hi       int   // secs[lo:hi] are the seconds summed
	steady, slow int64 // their requests, and the slow ones
}

// at returns the normal at secs[i] (+Inf with no requests before it:
// nothing to compare with). Calls come in order of i.
func (b *baseline) at(secs []second, i int) float64 {
	t := secs[i].sec
	for ; b.hi < i; b.hi++ {
		b.steady, b.slow = b.steady+secs[b.hi].steady, b.slow+secs[b.hi].slowSteady
	}
	for ; b.lo < b.hi && secs[b.lo].sec < t-burst.BaselineWindow; b.lo++ {
		b.steady, b.slow = b.steady-secs[b.lo].steady, b.slow-secs[b.lo].slowSteady
	}
	if b.steady == 0 {
		return math.Inf(1)
	}
	return float64(max(b.slow, 1)) / float64(b.steady)
}

// episode tests the run of seconds secs, n slow requests of steady
// classes among their all, against the normal, and describes it: run are
// its slow requests of steady classes.
func episode(secs []second, n, all int64, normal float64, run []slowSteadyReq, classes []*Class,
	cacheSlow map[int64]int64, bursts []Burst) (Slow, bool) {
	if !rises(n, normal*float64(all)) {
		return Slow{}, false
	}
	start, end := secs[0].sec, secs[len(secs)-1].sec
	clients, byClass := map[string]bool{}, map[*Class]int64{}
	var maxLat, queue time.Duration
	for _, r := range run {
		clients[r.class.User] = true
		byClass[r.class]++
		maxLat, queue = max(maxLat, r.req.Latency), max(queue, r.req.APFWait)
	}
	if len(clients) < slowClients {
		return Slow{}, false
	}
	perClass := make(map[string]int64, len(byClass))
	for c, n := range byClass {
		perClass[c.Key()] += n
	}
	ep := Slow{Start: time.Unix(start, 0).UTC(), End: time.Unix(end+1, 0).UTC(), Bursts: []string{},
		Clients: len(clients), Share: round(float64(n) / float64(all)), MaxMs: round(float64(maxLat) / 1e6),
		QueueWaitMaxMs: round(float64(queue) / 1e6), Classes: topKeys(perClass, 5)}
	for _, sc := range secs {
		ep.Requests += sc.slowAll
	}
	// The watch cache's reads of the episode's minutes: their latency is
	// what tells the apiserver's slowness from etcd's.
	from, to := start-start%60, end-end%60+60
	ep.CacheReads = cacheReads(classes, time.Unix(from, 0), time.Unix(to, 0))
	for m := from; m < to; m += 60 {
		ep.CacheSlow += cacheSlow[m]
	}
	for _, b := range bursts {
		if b.Start.Before(ep.End) && !b.End.Before(ep.Start) {
			ep.Bursts = append(ep.Bursts, b.Class.Key())
		}
	}
	cacheShare := 0.0
	if ep.CacheReads > 0 {
		cacheShare = float64(ep.CacheSlow) / float64(ep.CacheReads)
	}
	switch {
	case queue >= queued:
		ep.Where = "queue"
	case ep.CacheSlow > 0 && cacheShare > slowShare:
		ep.Where = "apiserver"
	case ep.CacheReads >= minCacheReads:
		ep.Where = "etcd"
	default:
		ep.Where = "server" // too few reads from the cache to tell
	}
	return ep, true
}

// rises says whether n slow requests to etcd, where the window's normal expects
// expected, are a jump by the rule that finds bursts: at least
// burst.MinRate, an order of magnitude over it, and significant.
func rises(n int64, expected float64) bool {
	return float64(n) >= burst.MinRate && float64(n) >= burst.Ratio*expected && burst.PoissonSF(n, expected) < burst.PValue
}

// minutes are a class's requests per minute (by the minute's start), and
// the seconds of each minute it made any.
type minutes struct {
	n, active map[int64]int64
}

func perMinute(c *Class) *minutes {
	m := &minutes{n: map[int64]int64{}, active: map[int64]int64{}}
	for _, x := range c.series {
		at := x.Sec - x.Sec%60
		m.n[at] += x.Count
		m.active[at]++
	}
	return m
}

// steady says whether a class's rate in the minute starting at at did not
// rise: it made requests in the minute before, and its rate now is at most
// twice the rate it had over the seconds it was active then (a client
// that started late in the minute before is steady at the rate it started
// at; one that surged from nothing is not).
func (m *minutes) steady(at int64) bool {
	active := m.active[at-60]
	return active > 0 && float64(m.n[at])/60 <= 2*float64(m.n[at-60])/float64(active)
}

// cacheRead says whether a class's requests were served from the watch
// cache: lists that read no etcd (etcdLists is how many did). A get's
// source is not in the rollup (one without a resourceVersion reads etcd).
func cacheRead(verb string, etcdLists int64) bool {
	return verb == "list" && etcdLists == 0
}

// cacheReads counts the requests of the cache-served classes received in
// [start, end).
func cacheReads(classes []*Class, start, end time.Time) int64 {
	var n int64
	for _, c := range classes {
		if !cacheRead(c.Verb, c.EtcdLists) {
			continue
		}
		n += c.sum(start.Unix(), end.Unix()-1)
	}
	return n
}

// topKeys are the n keys of the largest counts, ties by key.
func topKeys(m map[string]int64, n int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	if len(keys) > n {
		keys = keys[:n]
	}
	return keys
}

// String says where an episode's requests waited, in a few words.
func (s Slow) String() string {
	var b strings.Builder
	switch s.Where {
	case "queue":
		b.WriteString("queued in API Priority and Fairness: the load of the moment")
	case "apiserver":
		b.WriteString("the apiserver itself: its reads from the watch cache slowed too")
	case "etcd":
		b.WriteString("etcd: its reads from the watch cache did not slow")
	default:
		b.WriteString("etcd or the apiserver: too few reads from the watch cache to tell")
	}
	return b.String()
}

// SlowAt is the episode of slow requests to etcd under way at at, read
// from the minutes around it (slowAround before, a minute after), or nil:
// what an investigation asks of the moment its units first failed. An
// episode is under way from burst.Bridge seconds before its first second
// (the gap a run bridges: a unit's own slow request that near the run is
// at its edge, though its client, not steady, is not counted in it) until
// slowAfter past its last (a unit fails after the request that failed
// it: its timeout, its retries, its kubelet's report).
func SlowAt(ctx context.Context, s Store, at time.Time) (*Slow, error) {
	since, until := at.Add(-slowAround), at.Add(time.Minute)
	st, err := s.RequestSummary(ctx, since, until)
	if err != nil {
		return nil, err
	}
	reqs, err := s.SlowRequests(ctx, since, until)
	if err != nil {
		return nil, err
	}
	eps := slowEpisodes(reqs, fold(st), nil)
	var found *Slow
	for i, ep := range eps {
		if !at.Before(ep.Start.Add(-burst.Bridge*time.Second)) && at.Before(ep.End.Add(slowAfter)) {
			found = &eps[i] // the latest under way
		}
	}
	return found, nil
}

const (
	// slowAround is how far before a moment SlowAt reads: a class is
	// steady against the minute before its own, and the normal is read
	// over what comes before a run (up to burst.BaselineWindow). Each
	// minute costs a read of its slow requests, a storm's many.
	slowAround = 2 * time.Minute
	// slowAfter is how long after an episode's last second a failure may
	// still be its.
	slowAfter = time.Minute
)
