package controlplane

import (
	"fmt"
	"math"

	"github.com/faultline/faultline/timeline"
)

// etcdReadWeight is what a LIST that reads etcd counts on top of its
// request. The audit log does not say how many objects a LIST returned
// (reads are audited at the Metadata level, without the response), so the
// read is priced as API Priority and Fairness prices a large LIST: its
// default work estimator gives a LIST one seat per 100 objects it must
// process, from 1 up to 10 seats, where a GET or a watch's opening takes
// one. A LIST that reads etcd has etcd read the collection (a page of it,
// when paged) at a revision, and the apiserver decode it, rather than
// filter a copy it already holds; it is given that ceiling: ten
// single-object requests' worth.
const etcdReadWeight = 10

// load is what a burst of n requests of class c put on the apiserver and
// etcd, the key bursts are ranked by:
//
//   - every request counts one, admitted or not: the apiserver read it,
//     authenticated it and classified it for APF before it handled or shed
//     it;
//   - a long-running request (a WATCH) counts its opening, and that alone:
//     its latency is how long the client kept it open, not work done; the
//     events sent to it while open are caused, and charged by APF's
//     estimator, to the writes. A watch storm is a storm of openings; the
//     relists that follow them are LISTs, of a class of their own;
//   - a LIST that read etcd counts etcdReadWeight more;
//   - a request the apiserver refused before its handler ran (429: shed by
//     APF; 401, 403) counts as a request and never as an etcd read, whatever
//     its parameters asked for.
//
// APF seats would be the apiserver's own measure, but the audit log does
// not record them (only the queue wait), so the score is built from what it
// does record. The rollup keeps codes and etcd reads per class over the
// window, not per second, so the burst is given its class's share of them:
// whether a LIST reads etcd is decided by the parameters the client's code
// writes (resourceVersion, limit, continue), the same for all of a class's
// requests. 429s, which cluster where the burst is, are understated by
// their share; they add nothing beyond their requests, and lower the etcd
// reads.
//
// The apiserver time of the requests (n × the class's mean latency, none
// for long-running requests) is kept as a tie-break only: a slow request
// may be slow because something else saturated the apiserver.
func load(c *Class, n int64) Load {
	l := Load{Requests: n, LongRunning: longRunning(c)}
	if c.Count > 0 {
		l.EtcdReads = share(n, c.etcdRan, c.Count)
		l.Throttled = share(n, c.Codes["429"], c.Count)
	}
	l.Score = l.Requests + etcdReadWeight*l.EtcdReads
	if !l.LongRunning {
		l.ApiserverSeconds = round(float64(n) * meanLatency(c))
	}
	return l
}

// share is n × part / whole, rounded.
func share(n, part, whole int64) int64 {
	return int64(math.Round(float64(n) * float64(part) / float64(whole)))
}

// longRunning says whether a class's requests stay open for as long as the
// client wants, by the apiserver's own list of long-running requests (those
// its request timeout does not cut): the verbs watch and proxy, and the
// subresources attach, exec, log, portforward and proxy.
func longRunning(c *Class) bool {
	switch c.Verb {
	case "watch", "proxy":
		return true
	}
	switch c.Subresource {
	case "attach", "exec", "log", "portforward", "proxy":
		return true
	}
	return false
}

// refusedBeforeHandler says whether a response code is one the apiserver's
// filters answer before a request reaches its handler, and so storage: 401
// (authentication), 403 (authorization) and 429 (APF shed it).
func refusedBeforeHandler(code int) bool {
	return code == 401 || code == 403 || code == 429
}

// String says how the score is made, in one line.
func (l Load) String() string {
	what := "requests"
	if l.LongRunning {
		what = "openings"
	}
	s := fmt.Sprintf("load %d = %d %s", l.Score, l.Requests, what)
	if l.EtcdReads > 0 {
		s += fmt.Sprintf(" + %d × %d etcd reads", etcdReadWeight, l.EtcdReads)
	}
	if l.Throttled > 0 {
		s += fmt.Sprintf("; %d shed (429)", l.Throttled)
	}
	if l.LongRunning {
		s += "; how long they stayed open is not load"
	}
	return s
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
