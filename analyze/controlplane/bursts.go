package controlplane

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/burst"
)

// bursts finds, per class, the seconds whose count jumps an order of
// magnitude over the class's own rate in the five minutes before, and is
// significant under it (analyze/burst: the rule DNS storms are found by
// too). Bursts are ranked by the load they put on the apiserver and etcd
// (see load), those the apiserver shed by episode (rank).
func bursts(classes []*Class, starts []podStart, jitter time.Duration, dataStart int64) []Burst {
	out := []Burst{}
	for _, c := range classes {
		for _, sp := range burst.Detect(c.series, dataStart) {
			t, end := sp.Start, sp.End
			b := Burst{Start: time.Unix(t, 0).UTC(), End: time.Unix(end+1, 0).UTC(), PeakRps: float64(sp.Peak),
				BaselineRps: sp.Baseline, Requests: sp.Sum, Class: *c}
			b.Class.PeakRps, b.Class.PeakAt = float64(sp.Peak), time.Unix(sp.PeakAt, 0).UTC()
			b.Clients = clientsIn(c, t, end)
			b.Amplification, b.AmplifiedBy = amplification(sp.Sum, b.Clients, starts, t, end)
			b.Fixes = fixes(c, classes, t, end, jitter, starts)
			b.Load = load(c, sp.Sum)
			b.FanOut = fanOut(&b)
			out = append(out, b)
		}
	}
	return rank(out)
}

// rank orders bursts by what the apiserver did with them. API Priority
// and Fairness sheds a request (429) only when its priority level has no
// free seat and no room in its queues: the level was full already. Of the
// bursts it shed that overlap in time (an episode of overload), the first
// to begin is the load that filled the level; those that began while it
// ran arrived into a full level (the Job controller deleting the pods
// that failed, the failed clients' retries), whatever their own size.
// A client's bursts in one episode are one storm of its own (a job's
// workers starting: their GETs, LISTs and WATCHes at once). So within an
// episode the clients rank by the start of their first burst, and a
// client's bursts by load; an episode as a whole ranks by its load (the
// sum of its bursts'), beside the bursts the apiserver served in full,
// each of which stands alone and ranks by its own load. With nothing
// shed, this is the order of load alone.
func rank(bs []Burst) []Burst {
	sort.SliceStable(bs, func(i, j int) bool { return heavier(&bs[i], &bs[j]) })
	// Each burst's episode: its own index, or the first shed burst of the
	// run of overlapping shed bursts it belongs to.
	// An episode's load is kept at its first's index.
	episode, load, order := make([]int, len(bs)), make([]int64, len(bs)), make([]int, len(bs))
	var shed []int
	for i := range bs {
		episode[i], load[i], order[i] = i, bs[i].Load.Score, i
		if bs[i].Load.Throttled > 0 {
			shed = append(shed, i)
		}
	}
	sort.SliceStable(shed, func(a, b int) bool { return bs[shed[a]].Start.Before(bs[shed[b]].Start) })
	var end time.Time
	head := -1
	for _, i := range shed {
		if head < 0 || !bs[i].Start.Before(end) {
			head, end = i, bs[i].End // a new episode
			continue
		}
		episode[i] = head
		load[head] += bs[i].Load.Score
		if bs[i].End.After(end) {
			end = bs[i].End
		}
	}
	// When each episode's clients began.
	type client struct {
		episode    int
		agent, who string
	}
	began := map[client]time.Time{}
	clientOf := func(i int) client { return client{episode[i], bs[i].Class.Client, bs[i].Class.User} }
	for i := range bs {
		if t, ok := began[clientOf(i)]; !ok || bs[i].Start.Before(t) {
			began[clientOf(i)] = bs[i].Start
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		i, j := order[a], order[b]
		ei, ej := episode[i], episode[j]
		if ei != ej {
			if load[ei] != load[ej] {
				return load[ei] > load[ej]
			}
			return ei < ej // heavier's order of the episodes' first bursts
		}
		ci, cj := clientOf(i), clientOf(j)
		if ci != cj {
			return began[ci].Before(began[cj]) // of equal starts, heavier's order (a stable sort)
		}
		return false // heavier's order
	})
	out := make([]Burst, len(bs))
	firstOf := map[int]int{} // an episode's first burst, by rank
	for k, i := range order {
		out[k] = bs[i]
		f, ok := firstOf[episode[i]]
		if !ok {
			firstOf[episode[i]] = k
			continue
		}
		if clientOf(order[f]) != clientOf(i) {
			out[k].ShedAfter = f + 1
		}
	}
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
