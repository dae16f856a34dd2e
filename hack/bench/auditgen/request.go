package main

import "time"

// Requests.

// target is the object a request addresses.
type target struct {
	group, resource, sub, ns, name string
}

func (t target) version() string { return groupVersion[t.group] }

func (t target) key() string { return t.resource + "/" + t.ns + "/" + t.name }

// qualified is the resource as API errors name it: "pods", "leases.coordination.k8s.io".
func (t target) qualified() string {
	if t.group == "" {
		return t.resource
	}
	return t.resource + "." + t.group
}

type request struct {
	verb  string
	at    int64
	actor actor
	imp   *userInfo
	t     target
	query string
	path  string // non-resource requests only

	nameInRef    bool   // list/watch with fieldSelector metadata.name: objectRef.name is set
	generateName string // create with metadata.generateName: no name until the response
	longRunning  bool
	watchTimeout int // seconds
	timeout      time.Duration

	median    time.Duration
	sigma     float64
	cached    bool // served from the watch cache: no etcd latency
	pNotFound float64
	pConflict float64
	pForbid   float64
	forbidWhy string // authorizer reason on a forbid (Node authorizer)
	untracked bool   // object name is not from the bounded pool: do not remember its resourceVersion

	// body inputs
	pod      *pod
	node     int
	job      *trainJob
	patch    func(g *generator, r *request) any // built only when the level logs bodies
	delOpts  any
	evReason string
	podSec   string
}

// request draws and schedules one request; it returns the number of lines
// scheduled, never more than budget.
func (g *generator) request(budget int) int {
	r := g.draw()
	for budget < 2 && r.longRunning { // a long-running request needs ResponseStarted too
		r = g.draw()
	}
	return g.emit(r, budget)
}

func (g *generator) draw() *request {
	t := g.base
	if g.inBurst(g.now) && g.rng.Float64() < 1-1/g.opts.burst.mult {
		t = g.fanout
	}
	a := t.pick(g.rng.Float64())
	r := &request{verb: a.verb, at: g.now, node: -1, timeout: time.Minute}
	switch a.verb {
	case "get":
		r.median, r.sigma = 2500*time.Microsecond, 0.8
	case "list":
		r.median, r.sigma = 30*time.Millisecond, 1.0
	case "create":
		r.median, r.sigma = 9*time.Millisecond, 0.6
	case "update":
		r.median, r.sigma = 6*time.Millisecond, 0.6
	case "patch":
		r.median, r.sigma = 8*time.Millisecond, 0.7
	case "delete":
		r.median, r.sigma = 10*time.Millisecond, 0.7
	case "watch":
		r.longRunning = true
	}
	a.fill(g, r)
	return r
}
