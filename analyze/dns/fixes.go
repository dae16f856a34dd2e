package dns

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/faultline/faultline/analyze/prom"
)

// fixes offers the three ways to take queries off CoreDNS over [a, b), each
// with the share of the span's queries the evidence says it would remove,
// the most first. g's figures are the client's; where it lacks the cache
// metrics (they seldom carry the client's label), all's stand in, and the
// evidence says so. A share is unrounded until it is shown.
func fixes(g, all *group, a, b time.Time, peak float64) []Fix {
	requests := g.requests.Over(a, b)
	nx, hits := g.raw(a, b)
	cacheFrom := ""
	if hits == nil && g != all {
		_, hits = all.raw(a, b)
		cacheFrom = " (of all clients: the cache metrics do not name the client)"
	}
	out := []Fix{nodeLocal(hits, cacheFrom), ndots(nx), autopath(nx)}
	for i := range out {
		f := &out[i]
		f.SimulatedPeakRps = peak
		if raw := f.RemovesShare; raw != nil {
			f.RemovesShare = f64(prom.Round(*raw, 4))
			f.RemovesQueries = int64(requests**raw + 0.5)
			f.SimulatedPeakRps = prom.Round(peak*(1-*raw), 2)
		}
	}
	sortFixes(out)
	return out
}

// raw are g's NXDOMAIN share and cache hit ratio over [a, b), unrounded
// (nil: unknown).
func (g *group) raw(a, b time.Time) (nx, hits *float64) {
	if r := g.responses.Over(a, b); !g.responses.Empty() && r > 0 {
		nx = f64(g.nxdomain.Over(a, b) / r)
	}
	if h, m := g.hits.Over(a, b), g.misses.Over(a, b); h+m > 0 {
		hits = f64(h / (h + m))
	}
	return nx, hits
}

func f64(v float64) *float64 { return &v }

// sortFixes puts the fixes that remove most first, a measured share
// before a bound: what the evidence says a fix does comes before what it
// says a fix may do at most.
func sortFixes(fixes []Fix) {
	slices.SortStableFunc(fixes, func(x, y Fix) int {
		return cmp.Or(cmp.Compare(rank(y), rank(x)), cmp.Compare(share(y.RemovesShare), share(x.RemovesShare)), cmp.Compare(x.Kind, y.Kind))
	})
}

// rank orders fixes: a measured share (2), a bound (1), none known (0).
func rank(f Fix) int {
	switch {
	case f.RemovesShare == nil:
		return 0
	case f.UpperBound:
		return 1
	}
	return 2
}

// share is a share, -1 for an unknown one (last).
func share(p *float64) float64 {
	if p == nil {
		return -1
	}
	return *p
}

func percent(p *float64) string {
	if p == nil {
		return "unknown"
	}
	return fmt.Sprintf("%.1f%%", *p*100)
}

// nodeLocal: a cache on each node answers a node's repeats of a name
// within its TTL; only its misses still reach CoreDNS. CoreDNS's cache hit
// ratio counts the repeats of the whole cluster, and a node's cache sees
// only its own node's: the share it removes is at most that ratio (all of
// it when one node asks every repeat, little when each name comes once
// from each node), and CoreDNS's series do not say which.
func nodeLocal(hits *float64, from string) Fix {
	return Fix{Kind: "nodelocaldns",
		Detail: "run NodeLocal DNSCache (a caching agent on every node, pods pointed at its link-local address): " +
			"repeated names are answered on the node, only its misses reach CoreDNS",
		Evidence: "cache hit ratio " + percent(hits) + from + ": the cluster's repeats, of which a node's cache answers " +
			"only its own node's: at most that share",
		RemovesShare: hits,
		UpperBound:   hits != nil,
		Tradeoff: "a DaemonSet on every node (memory per node, one more thing to upgrade); a node's DNS fails with its cache " +
			"unless it falls back; in return its queries skip conntrack (no UDP insert races, no conntrack entries)"}
}

// ndots: a name with fewer dots than ndots (5 in a pod's default
// resolv.conf) is tried in each search domain first; the NXDOMAIN answers
// are those tries.
func ndots(nx *float64) Fix {
	return Fix{Kind: "ndots",
		Detail: "lower ndots in the pods' dnsConfig (options: ndots \"1\" or \"2\"), or query external names as FQDNs " +
			"with a trailing dot: a name is then tried as given before the search path",
		Evidence:     "NXDOMAIN share " + percent(nx) + ": the search-path expansions tried before the name itself",
		RemovesShare: nx,
		Tradeoff: "set per pod (every workload's spec changes); a short in-cluster name with a dot (svc.ns) is tried as " +
			"given first and costs one failed query before its search-path expansion"}
}

// autopath: CoreDNS follows the search path itself and answers the
// first query, so the client's NXDOMAIN tries are never sent.
func autopath(nx *float64) Fix {
	return Fix{Kind: "autopath",
		Detail: "enable CoreDNS autopath (autopath @kubernetes, with pods verified in the kubernetes plugin): " +
			"CoreDNS walks the search path on the first query and answers it",
		Evidence:     "NXDOMAIN share " + percent(nx) + ": the client-side tries it answers at once",
		RemovesShare: nx,
		Tradeoff: "pods verified makes CoreDNS watch every pod (memory, and a watch on the apiserver); it answers " +
			"with a CNAME for a name the client did not ask, and only for pods with the default search path"}
}
