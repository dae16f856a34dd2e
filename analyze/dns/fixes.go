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
	slices.SortStableFunc(out, func(x, y Fix) int {
		return cmp.Or(cmp.Compare(share(y.RemovesShare), share(x.RemovesShare)), cmp.Compare(x.Kind, y.Kind))
	})
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

// nodeLocal: a cache on each node answers the queries CoreDNS's own cache
// answered (repeats of a name within its TTL); only its misses still reach
// CoreDNS. The share it removes is CoreDNS's cache hit ratio.
func nodeLocal(hits *float64, from string) Fix {
	return Fix{Kind: "nodelocaldns",
		Detail: "run NodeLocal DNSCache (a caching agent on every node, pods pointed at its link-local address): " +
			"repeated names are answered on the node, only its misses reach CoreDNS",
		Evidence:     "cache hit ratio " + percent(hits) + from + ": the repeats a node's cache would answer",
		RemovesShare: hits,
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
