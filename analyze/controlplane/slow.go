package controlplane

import (
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
// slowWrite, ten times that, waited on something. One client's slow
// request may be its own doing (a large object, a webhook its kind calls,
// a surge of its own). A minute is the server's doing when the slow
// requests of slowClients or more unrelated clients (folded users), each
// in a class whose rate did not rise (steady: at most twice the rate it
// had over the seconds it was active the minute before: a lease renewed
// every few seconds is such a class, and every control-plane component
// and every node keeps one), jump over the window's normal by the rule
// that finds bursts (rises): the normal is the share of slow requests in
// the calmest minute before it, what the server does when nothing weighs
// on it. Where they waited is in the evidence:
//
//   - in API Priority and Fairness's queues, when the slow requests
//     waited there a second or more: the load of the moment (a burst) is
//     the cause ("queue");
//   - in the apiserver itself, when its reads from the watch cache, which
//     touch neither etcd nor the queues' limits, were slow too (more than
//     slowShare of them: "apiserver": its CPU, memory, garbage
//     collection);
//   - in etcd, when they were not and there were enough of them to tell
//     (minCacheReads: "etcd": its disk's fsync and commit latency, a
//     defragmentation, a compaction), which no burst explains when none
//     ran;
//   - else it cannot tell ("server").
//
// The rollup keeps latency by minute: an episode is whole minutes.

// Slow is an episode of slow requests to etcd from several clients at
// once.
type Slow struct {
	Start time.Time `json:"start"` // the first minute's start
	End   time.Time `json:"end"`   // the last minute's end
	// Where the requests waited: "etcd", "apiserver", "queue", or "server"
	// when the evidence cannot tell etcd from the apiserver.
	Where string `json:"where"`
	// Clients are the folded users with a slow write in a steady class.
	Clients int `json:"clients"`
	// Requests are all the requests to etcd (writes, lists from etcd)
	// over slowWrite in those minutes; MaxMs the slowest of the steady
	// classes'; Share the part of the steady classes' requests over
	// slowWrite, in the worst minute.
	Requests int64   `json:"requests"`
	Share    float64 `json:"share"`
	MaxMs    float64 `json:"maxMs"`
	// QueueWaitMaxMs is the longest APF queue wait among them.
	QueueWaitMaxMs float64 `json:"queueWaitMaxMs"`
	// CacheReads are the reads served from the watch cache in those
	// minutes (lists that do not read etcd), CacheSlow those of them over
	// slowWrite.
	CacheReads int64 `json:"cacheReads"`
	CacheSlow  int64 `json:"cacheSlow"`
	// Bursts are the bursts that ran in those minutes (by class key).
	Bursts []string `json:"bursts"`
	// Classes are the steady classes with slow requests to etcd, the most slow
	// first (at most five).
	Classes []string `json:"classes"`
}

const (
	slowWrite   = 250 * time.Millisecond
	slowClients = 2
	// slowShare is the share of the watch cache's reads over slowWrite that
	// says they slowed too: the SLO lets 1 % of calls run long.
	slowShare = 0.01
	// queued is a queue wait that makes a request slow by itself.
	queued = time.Second
	// minCacheReads are the reads from the watch cache it takes to say
	// they did not slow: with fewer, a slowdown of one in ten goes unseen.
	minCacheReads = 10
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

// slowEpisodes finds the minutes of [since, until) in which requests to
// etcd of slowClients or more steady clients took over slowWrite, as a
// jump over the window's normal, merges consecutive ones, and says where
// they waited. classes are the window's (folded)
// classes, for the reads the watch cache served; bursts its bursts.
func slowEpisodes(ctx context.Context, s Store, since, until time.Time, classes []*Class, bursts []Burst) ([]Slow, error) {
	st, err := s.SlowRequests(ctx, since, until, slowWrite)
	if err != nil {
		return nil, err
	}
	byID := map[int64]timeline.RequestClass{}
	for _, c := range st.Classes {
		byID[c.ID] = c
	}
	byKey := map[string]*Class{}
	for _, c := range classes {
		byKey[c.Key()+"\x00"+c.Group] = c
	}
	type minute struct {
		clients        map[string]bool
		slowSteady     int64 // slow requests to etcd of steady classes
		slow           int64 // of every class
		maxNs, queueNs int64
		cacheSlow      int64
		classes        map[string]int64
	}
	// The etcd-bound classes' requests per minute.
	perMin := map[*Class]*minutes{}
	var first int64 = math.MaxInt64
	for _, c := range classes {
		if etcdBound(c, c.EtcdLists, c.Count) {
			perMin[c] = perMinute(c)
			first = min(first, perMin[c].first)
		}
	}
	mins := map[int64]*minute{}
	for _, r := range st.Stats {
		c, ok := byID[r.Class]
		if !ok || r.Count <= 0 {
			continue
		}
		m := mins[r.Minute]
		if m == nil {
			m = &minute{clients: map[string]bool{}, classes: map[string]int64{}}
			mins[r.Minute] = m
		}
		k := &Class{Verb: c.Verb, Group: c.Group, Resource: c.Resource, Subresource: c.Subresource, Scope: c.Scope, Client: c.UserAgent, User: c.User}
		switch {
		case isWrite(k) || k.Verb == "list" && r.EtcdLists > 0:
			n := r.Count
			if !isWrite(k) {
				n = r.EtcdLists
			}
			m.slow += n
			fc := byKey[k.Key()+"\x00"+k.Group]
			if perMin[fc] == nil || !perMin[fc].steady(r.Minute) {
				continue // a surge's own, or a class some of whose lists the cache served (not counted)
			}
			m.slowSteady += n
			m.clients[c.User] = true
			m.maxNs, m.queueNs = max(m.maxNs, r.LatencyMaxNs), max(m.queueNs, r.APFQueueWaitMaxNs)
			m.classes[k.Key()] += n
		case cacheRead(c.Verb, r.EtcdLists):
			m.cacheSlow += r.Count
		}
	}
	// The steady etcd-bound classes' requests per minute, and of them the
	// slow ones, against the window's normal: the share of slow requests to etcd in its
	// calmest minute before (what the server does when nothing weighs on
	// it), by the rule that finds bursts (an order of magnitude over it,
	// significant, at least burst.MinRate).
	steadyWrites := func(at int64) int64 {
		var n int64
		for c, pm := range perMin {
			if pm.steady(at) {
				n += perMin[c].n[at]
			}
		}
		return n
	}
	last := int64(math.MinInt64) // the last minute with a slow request
	for at := range mins {
		last = max(last, at)
	}
	writesAt := func(at int64) int64 {
		var n int64
		for _, pm := range perMin {
			n += pm.n[at]
		}
		return n
	}
	var starts []int64
	share := map[int64]float64{}
	normal := math.Inf(1) // the calmest minute before's share of slow requests to etcd
	// Minute by minute, in order: the episodes' minutes come out sorted.
	for at := first; at <= last; at += 60 {
		m := mins[at]
		if all := steadyWrites(at); m != nil && all > 0 {
			share[at] = float64(m.slowSteady) / float64(all)
			// No minute before it, no normal (+Inf): the start of the
			// evidence is not a jump.
			if len(m.clients) >= slowClients && rises(m.slowSteady, float64(all)*normal) {
				starts = append(starts, at)
			}
		}
		if w := writesAt(at); w > 0 {
			var slow int64
			if m != nil {
				slow = m.slow
			}
			// None slow counts as one, as a burst's baseline does.
			normal = min(normal, float64(max(slow, 1))/float64(w))
		}
	}
	var out []Slow
	for i := 0; i < len(starts); {
		j := i
		for j+1 < len(starts) && starts[j+1] == starts[j]+60 {
			j++
		}
		ep := Slow{Start: time.Unix(starts[i], 0).UTC(), End: time.Unix(starts[j]+60, 0).UTC(), Bursts: []string{}}
		clients, perClass := map[string]bool{}, map[string]int64{}
		var maxNs, queueNs int64
		for _, at := range starts[i : j+1] {
			m := mins[at]
			for u := range m.clients {
				clients[u] = true
			}
			for k, n := range m.classes {
				perClass[k] += n
			}
			ep.Requests += m.slow
			ep.Share = max(ep.Share, round(share[at]))
			ep.CacheSlow += m.cacheSlow
			maxNs, queueNs = max(maxNs, m.maxNs), max(queueNs, m.queueNs)
		}
		ep.Clients, ep.MaxMs, ep.QueueWaitMaxMs = len(clients), round(float64(maxNs)/1e6), round(float64(queueNs)/1e6)
		ep.CacheReads = cacheReads(classes, ep.Start, ep.End)
		ep.Classes = topKeys(perClass, 5)
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
		case time.Duration(queueNs) >= queued:
			ep.Where = "queue"
		case ep.CacheSlow > 0 && cacheShare > slowShare:
			ep.Where = "apiserver"
		case ep.CacheReads >= minCacheReads:
			ep.Where = "etcd"
		default:
			ep.Where = "server" // too few reads from the cache to tell
		}
		out = append(out, ep)
		i = j + 1
	}
	return out, nil
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
	first     int64
}

func perMinute(c *Class) *minutes {
	m := &minutes{n: map[int64]int64{}, active: map[int64]int64{}, first: math.MaxInt64}
	for _, x := range c.series {
		at := x.Sec - x.Sec%60
		m.n[at] += x.Count
		m.active[at]++
		m.first = min(m.first, at)
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

// SlowAt is the episode of slow requests to etcd under way at at, read from the
// minutes around it (slowAround before, a minute after), or nil: what an
// investigation asks of the moment its units first failed.
func SlowAt(ctx context.Context, s Store, at time.Time) (*Slow, error) {
	since, until := at.Truncate(time.Minute).Add(-slowAround), at.Truncate(time.Minute).Add(2*time.Minute)
	st, err := s.RequestSummary(ctx, since, until)
	if err != nil {
		return nil, err
	}
	eps, err := slowEpisodes(ctx, s, since, until, fold(st), nil)
	if err != nil {
		return nil, err
	}
	for i, ep := range eps {
		if !at.Before(ep.Start) && at.Before(ep.End) {
			return &eps[i], nil
		}
	}
	return nil, nil
}

// slowAround is how far before a moment SlowAt reads: a class is steady
// against the minute before its own.
const slowAround = 3 * time.Minute
