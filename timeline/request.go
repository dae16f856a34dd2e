package timeline

import (
	"math"
	"sort"
	"strings"
	"time"
)

// The rules below are also written in SQL, in the migration that backfills
// the request rollup (timeline/sqlite/migrations/0005_request_rollup.sql);
// timeline/sqlite's tests hold the two to the same answers. Change both.

// FoldUser folds the users that come in fleets into one: every kubelet
// ("system:node:X") becomes "system:node:*" and every service account of a
// namespace ("system:serviceaccount:NS:NAME") "system:serviceaccount:NS:*".
// Other users are returned as they are.
func FoldUser(u string) string {
	const node, sa = "system:node:", "system:serviceaccount:"
	if strings.HasPrefix(u, node) {
		return node + "*"
	}
	if rest, ok := strings.CutPrefix(u, sa); ok {
		if i := strings.IndexByte(rest, ':'); i >= 0 {
			return sa + rest[:i+1] + "*"
		}
	}
	return u
}

// FoldUserAgent returns the product token of a user agent: the text before
// the first '/' or ' ' ("trainer/2.3 (linux/amd64) client-go/v0.37.2" is
// "trainer"), so that versions and platforms of one client make one class.
func FoldUserAgent(ua string) string {
	if i := strings.IndexAny(ua, "/ "); i >= 0 {
		return ua[:i]
	}
	return ua
}

// Latency buckets are log-scale, 24 per decade (each about 10% wider than
// the one before) from 100µs: bucket 0 holds latencies up to 100µs, bucket
// b (1 <= b <= 182) those in (upper(b-1), upper(b)] where upper(b) is
// 100µs * 10^(b/24) truncated to the nanosecond, and bucket 183 everything
// above upper(182) (about 1h04m).
const (
	latencyBucketsPerDecade = 24
	latencyBucketFloor      = 100 * time.Microsecond
	latencyBucketCeil       = time.Hour
)

// latencyUppers holds upper(b) for every bounded bucket.
var latencyUppers = func() []time.Duration {
	var out []time.Duration
	for b := 0; ; b++ {
		u := time.Duration(float64(latencyBucketFloor) * math.Pow(10, float64(b)/latencyBucketsPerDecade))
		out = append(out, u)
		if u >= latencyBucketCeil {
			return out
		}
	}
}()

// LatencyBuckets is the number of latency buckets: LatencyBucket returns
// 0 .. LatencyBuckets-1.
var LatencyBuckets = len(latencyUppers) + 1

// LatencyBucket returns the bucket of a latency (see LatencyBucketUpper).
func LatencyBucket(d time.Duration) int {
	return sort.Search(len(latencyUppers), func(i int) bool { return latencyUppers[i] >= d })
}

// LatencyBucketUpper returns the inclusive upper bound of a bucket, for
// percentiles: about 10% above any latency in it. The last bucket's bound
// is the largest Duration.
func LatencyBucketUpper(b int) time.Duration {
	switch {
	case b < 0:
		return 0
	case b < len(latencyUppers):
		return latencyUppers[b]
	}
	return math.MaxInt64
}

// RequestScope returns the scope of a request on an object reference:
// ScopeObject with a name, ScopeNamespace with a namespace, else
// ScopeCluster.
func RequestScope(namespace, name string) string {
	switch {
	case name != "":
		return ScopeObject
	case namespace != "":
		return ScopeNamespace
	}
	return ScopeCluster
}

// ListFromEtcd reports whether a list request with this requestURI asks for
// semantics that read etcd, by the table in the Kubernetes API concepts
// ("Semantics for get and list"):
//
//   - a continue token: Exact (continuation) - etcd;
//   - resourceVersionMatch=Exact: Exact - etcd;
//   - resourceVersionMatch=NotOlderThan: Any or Not older than - watch cache;
//   - resourceVersion unset or "": Most Recent - a quorum read from etcd;
//   - resourceVersion="0": Any - watch cache;
//   - another resourceVersion with a limit: Exact - etcd; without one:
//     Not older than - watch cache.
//
// This counts by what the request asks, not by where a given apiserver
// served it: since Kubernetes 1.31 ConsistentListFromCache serves Most
// Recent from a fresh watch cache, and 1.34 serves Exact and continuations
// from cache snapshots; these remain the requests that force the apiserver
// to read at a given revision. Invalid combinations (rejected with 400)
// follow the same table. Parameters are found by their literal names
// (the first occurrence), as client-go writes them.
func ListFromEtcd(requestURI string) bool {
	q := queryOf(requestURI)
	switch match := queryParam(q, "resourceVersionMatch"); {
	case queryParam(q, "continue") != "":
		return true
	case match == "Exact":
		return true
	case match == "NotOlderThan":
		return false
	}
	switch rv := queryParam(q, "resourceVersion"); rv {
	case "":
		return true
	case "0":
		return false
	}
	return ListHasLimit(requestURI)
}

// ListHasLimit reports whether a requestURI asks for a page: a limit
// parameter whose leading digits are not all zero (limit=0 means no
// limit).
func ListHasLimit(requestURI string) bool {
	v := queryParam(queryOf(requestURI), "limit")
	for i := 0; i < len(v) && v[i] >= '0' && v[i] <= '9'; i++ {
		if v[i] != '0' {
			return true
		}
	}
	return false
}

// queryOf returns "&" + the query of a requestURI + "&".
func queryOf(uri string) string {
	_, q, _ := strings.Cut(uri, "?")
	return "&" + q + "&"
}

// queryParam returns the raw value of the first parameter named k in q (as
// made by queryOf), or "".
func queryParam(q, k string) string {
	i := strings.Index(q, "&"+k+"=")
	if i < 0 {
		return ""
	}
	v := q[i+len(k)+2:]
	return v[:strings.IndexByte(v, '&')]
}
