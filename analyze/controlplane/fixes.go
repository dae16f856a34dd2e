package controlplane

import (
	"fmt"
	"math"
	"strings"
	"time"
)

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
