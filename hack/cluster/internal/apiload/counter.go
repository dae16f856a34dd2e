// Package apiload plays naive API clients against the local control plane:
// workers that each have a ServiceAccount token and a connection of their
// own, as separate pods would, and do a list of operations (GETs of named
// objects, LISTs from etcd or the watch cache, WATCHes that relist when
// they end, as a reflector does). It counts every request and its answer,
// and can fail a worker's pod through kwok's chaos stage when the worker
// gives up. hack/cluster/loadgen and the zoo's control-plane families
// (hack/cluster/zoorec) drive it.
package apiload

import (
	"net/http"
	"sort"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Hit is one request as its client saw it.
type Hit struct {
	Sent time.Time // when the request was sent
	Done time.Time // when its response headers came back, or it failed
	Code int       // the HTTP status; 0 when no response came back
	Verb string    // the HTTP method
	Path string    // the URL's path
}

// Counter counts the requests of a set of workers and keeps each one's
// times and status. It is safe for concurrent use.
type Counter struct {
	mu   sync.Mutex
	hits []Hit
}

func (c *Counter) add(h Hit) {
	c.mu.Lock()
	c.hits = append(c.hits, h)
	c.mu.Unlock()
}

// Requests is how many requests were sent.
func (c *Counter) Requests() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int64(len(c.hits))
}

// Count is how many requests were answered with the status.
func (c *Counter) Count(code int) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, h := range c.hits {
		if h.Code == code {
			n++
		}
	}
	return n
}

// Answered is how many requests got a response.
func (c *Counter) Answered() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, h := range c.hits {
		if h.Code != 0 {
			n++
		}
	}
	return n
}

// FirstError is the earliest answer at or after the instant that is an
// error of the server's (429, 403, 5xx, ...); zero when there is none.
func (c *Counter) FirstError(after time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first time.Time
	for _, h := range c.hits {
		if h.Code >= 400 && !h.Done.Before(after) && (first.IsZero() || h.Done.Before(first)) {
			first = h.Done
		}
	}
	return first
}

// First is the earliest answer with the status that came back at or after
// the instant (zero: any); zero when there is none.
func (c *Counter) First(code int, after time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first time.Time
	for _, h := range c.hits {
		if h.Code == code && !h.Done.Before(after) && (first.IsZero() || h.Done.Before(first)) {
			first = h.Done
		}
	}
	return first
}

// Hits returns the requests so far, by the time they were sent.
func (c *Counter) Hits() []Hit {
	c.mu.Lock()
	out := append([]Hit(nil), c.hits...)
	c.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Sent.Equal(out[j].Sent) {
			return out[i].Sent.Before(out[j].Sent)
		}
		if !out[i].Done.Equal(out[j].Done) {
			return out[i].Done.Before(out[j].Done)
		}
		return out[i].Code < out[j].Code
	})
	return out
}

// Span is the window of the answered requests sent in [from, to): the
// earliest sent and the latest answered. Both are zero when there is none.
func (c *Counter) Span(from, to time.Time) (start, end time.Time) {
	for _, h := range c.Hits() {
		if h.Code == 0 || h.Sent.Before(from) || !h.Sent.Before(to) {
			continue
		}
		if start.IsZero() {
			start = h.Sent
		}
		if h.Done.After(end) {
			end = h.Done
		}
	}
	return start, end
}

// Config is one worker's client: its own token and user agent, a
// connection of its own (a transport of its own rather than client-go's
// shared one), no client-side rate limit, a per-request timeout (client-go
// sends it to the apiserver and gives up on the request, its retries of
// 429s included, when it passes), and every request counted.
func (c *Counter) Config(admin *rest.Config, token, userAgent string, timeout time.Duration) (*rest.Config, error) {
	tlsConfig, err := rest.TLSConfigFor(admin)
	if err != nil {
		return nil, err
	}
	return &rest.Config{
		Host:        admin.Host,
		BearerToken: token,
		UserAgent:   userAgent,
		QPS:         -1, // naive: no client-side rate limit
		Timeout:     timeout,
		Transport: &counting{next: &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 2},
			c: c},
	}, nil
}

type counting struct {
	next http.RoundTripper
	c    *Counter
}

// WrappedRoundTripper lets client-go cancel a request through it.
func (t *counting) WrappedRoundTripper() http.RoundTripper { return t.next }

func (t *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	sent := time.Now().UTC()
	resp, err := t.next.RoundTrip(r)
	h := Hit{Sent: sent, Done: time.Now().UTC(), Verb: r.Method, Path: r.URL.Path}
	if resp != nil {
		h.Code = resp.StatusCode
	}
	t.c.add(h)
	return resp, err
}
