package main

import (
	"context"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/faultline/faultline/hack/cluster/internal/resolver"
)

// summary is what dnsload prints.
type summary struct {
	Server   string    `json:"server"`
	Workers  int       `json:"workers"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Lookups  int64     `json:"lookups"`  // names resolved, each one or more queries
	Found    int64     `json:"found"`    // lookups that ended with an address
	Queries  int64     `json:"queries"`  // DNS queries sent
	Answered int64     `json:"answered"` // queries answered
	// Rcodes counts the answers by rcode (NOERROR, NXDOMAIN, SERVFAIL, ...).
	Rcodes        map[string]int64 `json:"rcodes"`
	Timeouts      int64            `json:"timeouts"`
	Errors        int64            `json:"errors"`
	NXDOMAINShare float64          `json:"nxdomainShare"` // of the answered queries
	// Latencies of the answered queries, in seconds.
	LatencyP50 float64 `json:"latencyP50Seconds"`
	LatencyP99 float64 `json:"latencyP99Seconds"`
	LatencyMax float64 `json:"latencyMaxSeconds"`
	FirstError string  `json:"firstError,omitempty"`
}

// tally is one worker's counts, merged at the end.
type tally struct {
	lookups, found, queries, answered, timeouts, errs int64
	rcodes                                            map[dnsmessage.RCode]int64
	latencies                                         []time.Duration
	firstErr                                          error
}

func load(ctx context.Context, o options) (summary, error) {
	// A malformed address fails here, once, not in every worker.
	if _, err := net.ResolveUDPAddr("udp", o.server); err != nil {
		return summary{}, err
	}
	search := resolver.SearchPath(o.clientNS, o.domain)
	starts := plan(o)
	begin := time.Now()
	tallies := make([]tally, o.workers)
	var wg sync.WaitGroup
	for i := range o.workers {
		wg.Go(func() {
			tallies[i] = worker(ctx, o, search, begin.Add(starts[i]), uint64(i))
		})
	}
	wg.Wait()
	s := summary{Server: o.server, Workers: o.workers, Start: begin.UTC(), End: time.Now().UTC(), Rcodes: map[string]int64{}}
	var lat []time.Duration
	for _, t := range tallies {
		s.Lookups += t.lookups
		s.Found += t.found
		s.Queries += t.queries
		s.Answered += t.answered
		s.Timeouts += t.timeouts
		s.Errors += t.errs
		for rc, n := range t.rcodes {
			s.Rcodes[resolver.RcodeName(rc)] += n
		}
		lat = append(lat, t.latencies...)
		if s.FirstError == "" && t.firstErr != nil {
			s.FirstError = t.firstErr.Error()
		}
	}
	if s.Answered > 0 {
		s.NXDOMAINShare = float64(s.Rcodes["NXDOMAIN"]) / float64(s.Answered)
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		s.LatencyP50 = lat[len(lat)*50/100].Seconds()
		s.LatencyP99 = lat[len(lat)*99/100].Seconds()
		s.LatencyMax = lat[len(lat)-1].Seconds()
	}
	return s, nil
}

// worker is one pod: its own socket, -rate lookups a second from start
// until start + duration.
func worker(ctx context.Context, o options, search []string, start time.Time, id uint64) tally {
	t := tally{rcodes: map[dnsmessage.RCode]int64{}}
	fail := func(err error) {
		t.errs++
		if t.firstErr == nil {
			t.firstErr = err
		}
	}
	if !sleepUntil(ctx, start) {
		return t
	}
	conn, err := net.Dial("udp", o.server)
	if err != nil {
		fail(err)
		return t
	}
	defer conn.Close()
	r := rand.New(rand.NewPCG(o.seed, id))
	end := start.Add(o.duration)
	var interval time.Duration
	if o.rate > 0 {
		interval = time.Duration(float64(time.Second) / o.rate)
	}
	types := []dnsmessage.Type{dnsmessage.TypeA}
	if o.aaaa {
		types = append(types, dnsmessage.TypeAAAA)
	}
	buf := make([]byte, 1232)
	for next := start; ctx.Err() == nil && time.Now().Before(end); {
		name := o.names[r.IntN(len(o.names))]
		t.lookups++
		found := false
		for _, cand := range resolver.Candidates(name, search, o.ndots) {
			for _, typ := range types {
				t.queries++
				begin := time.Now()
				rc, answers, err := resolver.Query(conn, buf, cand, typ, uint16(r.Uint32()), o.timeout)
				switch {
				case resolver.Timeout(err):
					t.timeouts++
					continue
				case err != nil:
					fail(err)
					continue
				}
				t.answered++
				t.rcodes[rc]++
				t.latencies = append(t.latencies, time.Since(begin))
				if rc == dnsmessage.RCodeSuccess && answers > 0 {
					found = true
				}
			}
			if found {
				break
			}
		}
		if found {
			t.found++
		}
		if interval > 0 {
			// No backlog: a worker that fell behind starts its next lookup now.
			next = next.Add(interval)
			if now := time.Now(); next.Before(now) {
				next = now
			}
			if !sleepUntil(ctx, next) {
				break
			}
		}
	}
	return t
}

func sleepUntil(ctx context.Context, at time.Time) bool {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
