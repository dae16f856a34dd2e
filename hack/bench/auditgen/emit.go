package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Turning a request into audit lines.

// emit decides the request's outcome and schedules its lines; it returns the
// number of lines scheduled.
func (g *generator) emit(r *request, budget int) int {
	out := g.outcome(r, g.inBurst(r.at))
	ev := g.responseComplete(r, out, g.level())
	cur, next, sentRV := g.moveRV(r, out)
	g.refFromBody(ev, r, out, sentRV)
	if ev.Level != "Metadata" && r.path == "" && !r.longRunning && out.code != 403 && out.code != 429 {
		ev.RequestObject = g.requestBody(r, sentRV)
	}
	if ev.Level == "RequestResponse" && r.path == "" && !r.longRunning && out.code != 429 {
		ev.ResponseObject = g.responseBody(r, out, cur, next)
	}
	g.annotate(ev, r, out)
	return g.scheduleStages(ev, r, out, budget)
}

// level picks the request's audit level: -rr of them at RequestResponse,
// requestLevelShare at Request, the rest at Metadata.
func (g *generator) level() string {
	if u := g.rng.Float64(); u < g.opts.rr {
		return "RequestResponse"
	} else if u < g.opts.rr+requestLevelShare {
		return "Request"
	}
	return "Metadata"
}

// responseComplete is the request's ResponseComplete line, without bodies
// or annotations.
func (g *generator) responseComplete(r *request, out outcome, level string) *event {
	ev := &event{
		Kind: "Event", APIVersion: "audit.k8s.io/v1",
		Level:                    level,
		AuditID:                  g.uuid(),
		Stage:                    "ResponseComplete",
		RequestURI:               g.requestURI(r),
		Verb:                     r.verb,
		User:                     r.actor.user,
		ImpersonatedUser:         r.imp,
		SourceIPs:                r.actor.ips,
		UserAgent:                r.actor.ua,
		ResponseStatus:           out.status,
		RequestReceivedTimestamp: microTime(r.at),
		StageTimestamp:           microTime(r.at + out.latency),
	}
	if r.path == "" {
		ev.ObjectRef = g.objectRef(r)
	}
	return ev
}

// moveRV moves the cluster's resourceVersion on for a write. It returns the
// object's resourceVersion before the request (cur), after it (next, 0 when
// the request wrote nothing) and the one the client sent (sentRV: stale on
// a 409 update).
func (g *generator) moveRV(r *request, out outcome) (cur, next, sentRV uint64) {
	cur = g.currentRV(r)
	mutating := r.verb == "create" || r.verb == "update" || r.verb == "patch" || r.verb == "delete"
	if mutating && out.code < 300 {
		g.rv += 1 + g.rng.Uint64N(4)
		next = g.rv
		if !r.untracked && r.t.sub != "binding" {
			// Kept on delete too: pool objects come back under the same name,
			// and their resourceVersions must keep increasing.
			g.lastRV[r.t.key()] = next
		}
	} else if mutating {
		g.rv += g.rng.Uint64N(3) // other writers
	}
	sentRV = cur
	if out.code == 409 && r.verb == "update" {
		sentRV = cur - 1 - g.rng.Uint64N(50) // the client's copy was stale
	}
	return cur, next, sentRV
}

// refFromBody fills in what the apiserver takes into the objectRef from the
// body of a create or update (logged at Metadata level too): uid and
// resourceVersion, and the name of a create.
func (g *generator) refFromBody(ev *event, r *request, out outcome, sentRV uint64) {
	hasBody := (r.verb == "create" || r.verb == "update") && out.code != 403 && out.code != 429
	if !hasBody || ev.ObjectRef == nil {
		return
	}
	if r.verb == "update" {
		ev.ObjectRef.UID = g.uid(r.t.resource, r.t.ns, r.t.name)
		ev.ObjectRef.ResourceVersion = strconv.FormatUint(sentRV, 10)
	}
	if r.t.sub == "binding" {
		ev.ObjectRef.UID = g.uid("pods", r.t.ns, r.t.name)
	}
	if r.verb == "create" && r.generateName == "" {
		ev.ObjectRef.Name = r.t.name
	}
}

// annotate sets the line's annotations: the authorization decision, the
// pod-security policy enforced, and the latency trackers of a slow request.
func (g *generator) annotate(ev *event, r *request, out outcome) {
	ev.Annotations = map[string]string{"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": r.actor.reason}
	if out.code == 403 {
		ev.Annotations["authorization.k8s.io/decision"] = "forbid"
		ev.Annotations["authorization.k8s.io/reason"] = r.forbidWhy
	}
	if r.podSec != "" && out.code < 300 {
		ev.Annotations["pod-security.kubernetes.io/enforce-policy"] = r.podSec
	}
	if out.latency > int64(500*time.Millisecond) {
		g.latencyAnnotations(r, out, ev.Annotations)
	}
}

// scheduleStages schedules the request's lines: RequestReceived (for
// -stages of them, budget allowing), ResponseStarted (long-running requests)
// and ev, the ResponseComplete; it returns how many.
func (g *generator) scheduleStages(ev *event, r *request, out outcome, budget int) int {
	lines := 1
	received := budget > 1+btoi(r.longRunning) && g.rng.Float64() < g.opts.stages
	if received {
		g.schedule(r.at, requestReceived(ev, r))
		lines++
	}
	if r.longRunning {
		rs := *ev
		rs.Stage = "ResponseStarted"
		rs.ResponseStatus = codeStatus(out.code)
		started := min(out.latency, g.lognormal(2*time.Millisecond, 0.6))
		if r.t.sub == "log" {
			started = min(out.latency, g.lognormal(30*time.Millisecond, 0.6))
		}
		rs.StageTimestamp = microTime(r.at + started)
		rs.Annotations = map[string]string{"authorization.k8s.io/decision": ev.Annotations["authorization.k8s.io/decision"], "authorization.k8s.io/reason": ev.Annotations["authorization.k8s.io/reason"]}
		g.schedule(r.at+started, &rs)
		lines++
	}
	g.schedule(r.at+out.latency, ev)
	return lines
}

// requestReceived is ev's RequestReceived line: logged before the body is
// read, so with no status, bodies, annotations, nor what the body gives the
// objectRef.
func requestReceived(ev *event, r *request) *event {
	rr := *ev
	rr.Stage = "RequestReceived"
	rr.StageTimestamp = rr.RequestReceivedTimestamp
	rr.ResponseStatus, rr.RequestObject, rr.ResponseObject, rr.Annotations = nil, nil, nil, nil
	if ev.ObjectRef != nil { // logged before the body is read
		ref := *ev.ObjectRef
		ref.UID, ref.ResourceVersion = "", ""
		if r.verb == "create" && r.t.sub == "" {
			ref.Name = ""
		}
		rr.ObjectRef = &ref
	}
	return &rr
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// outcome is what became of a request.
type outcome struct {
	code    int
	status  *status
	latency int64 // ns
	apfWait int64 // ns
	etcd    bool  // the request reached storage
}

// outcome decides what becomes of the request: its code and status, how
// long it takes, how long it waited in APF and whether it reached etcd.
func (g *generator) outcome(r *request, burst bool) outcome {
	o := outcome{code: 200, etcd: !r.cached && r.path == "" && !r.longRunning}
	if r.verb == "create" {
		o.code = 201
	}
	if !g.apfExempt(r) {
		o.apfWait = g.lognormal(25*time.Microsecond, 0.8)
		if burst {
			o.apfWait = g.lognormal(120*time.Millisecond, 1.2)
		}
	}

	if g.serverFailure(r, burst, &o) || g.clientFailure(r, &o) {
		return o
	}
	g.served(r, burst, &o)
	return o
}

// apfExempt says whether the request skips APF's queues: system:masters
// (the apiserver itself) is exempt, and pods/log is not queued.
func (g *generator) apfExempt(r *request) bool {
	return r.actor.user == g.actors.apiserver.user || (r.t.sub == "log")
}

// serverFailure decides whether the request fails on the server's side
// (429, 500, 503, 504, each more likely in a burst) and sets o if so.
func (g *generator) serverFailure(r *request, burst bool, o *outcome) bool {
	fr := baseFailures
	if burst {
		fr = burstFailures
	}
	u := g.rng.Float64()
	switch {
	case !g.apfExempt(r) && u < fr.tooMany:
		o.code, o.status, o.etcd = 429, codeStatus(429), false
		if g.rng.IntN(2) == 0 { // queues full: rejected at once
			o.apfWait = 0
			o.latency = g.lognormal(700*time.Microsecond, 0.5)
		} else { // timed out in the queue after a quarter of the 60 s request timeout
			o.apfWait = int64(15*time.Second) + g.lognormal(2*time.Millisecond, 0.5)
			o.latency = o.apfWait + g.lognormal(300*time.Microsecond, 0.5)
		}
		return true
	case r.path == "" && r.verb != "watch" && u < fr.tooMany+fr.internal: // watch errors travel inside a 200 stream
		o.code = 500
		o.latency = o.apfWait + g.lognormal(1500*time.Millisecond, 0.6)
		switch g.rng.IntN(5) {
		case 0, 1:
			o.status = &status{Status: "Failure", Message: "etcdserver: leader changed", Code: 500}
		case 2, 3:
			o.status = &status{Status: "Failure", Message: "etcdserver: request timed out", Code: 500}
			o.latency = o.apfWait + int64(7*time.Second) + g.lognormal(20*time.Millisecond, 0.5)
		default:
			o.status = &status{Status: "Failure", Reason: "ServerTimeout", Code: 500,
				Message: fmt.Sprintf("The %s operation against %s could not be completed at this time, please try again.", r.verb, r.t.qualified()),
				Details: &statusDetails{Name: r.verb, Kind: r.t.qualified(), RetryAfterSeconds: 2}}
		}
		return true
	case u < fr.tooMany+fr.internal+fr.unavailable:
		o.code, o.etcd = 503, false
		o.status = &status{Status: "Failure", Message: "service unavailable", Reason: "ServiceUnavailable", Code: 503}
		o.latency = o.apfWait + g.lognormal(2*time.Millisecond, 0.5)
		return true
	case !r.longRunning && u < fr.tooMany+fr.internal+fr.unavailable+fr.timeout:
		o.code, o.status = 504, timeoutStatus()
		o.latency = int64(r.timeout) + g.lognormal(3*time.Millisecond, 0.5)
		return true
	}
	return false
}

// clientFailure decides whether the request is refused (403), or addresses
// a missing object (404) or a stale or taken one (409), and sets o's code
// and status if so; only a 403 is final: it returns true for it.
func (g *generator) clientFailure(r *request, o *outcome) bool {
	u := g.rng.Float64()
	name := r.t.name
	switch {
	case u < r.pForbid:
		o.code, o.etcd = 403, false
		o.status = g.forbidden(r)
		o.latency = o.apfWait + g.lognormal(400*time.Microsecond, 0.5)
		return true
	case u < r.pForbid+r.pNotFound && r.verb != "create":
		o.code = 404
		o.status = &status{Status: "Failure", Reason: "NotFound", Code: 404,
			Message: fmt.Sprintf("%s %q not found", r.t.qualified(), name),
			Details: &statusDetails{Name: name, Group: r.t.group, Kind: r.t.resource}}
	case u < r.pForbid+r.pNotFound+r.pConflict:
		o.code = 409
		switch {
		case r.t.sub == "binding":
			other := g.nodes[g.anyNode()].name
			o.status = &status{Status: "Failure", Reason: "Conflict", Code: 409,
				Message: fmt.Sprintf("Operation cannot be fulfilled on pods/binding %q: pod %s is already assigned to node %q", name, name, other),
				Details: &statusDetails{Name: name, Kind: "pods/binding"}}
		case r.verb == "create":
			o.status = &status{Status: "Failure", Reason: "AlreadyExists", Code: 409,
				Message: fmt.Sprintf("%s %q already exists", r.t.qualified(), name),
				Details: &statusDetails{Name: name, Group: r.t.group, Kind: r.t.resource}}
		default:
			o.status = &status{Status: "Failure", Reason: "Conflict", Code: 409,
				Message: fmt.Sprintf("Operation cannot be fulfilled on %s %q: the object has been modified; please apply your changes to the latest version and try again", r.t.qualified(), name),
				Details: &statusDetails{Name: name, Group: r.t.group, Kind: r.t.resource}}
		}
	}
	return false
}

// served sets o's latency (and a status when none is set yet): a watch is
// open until its timeout or until the client goes away; any other request
// takes a log-normal time, three times more in a burst, sometimes stalls,
// and past its timeout becomes a 504.
func (g *generator) served(r *request, burst bool, o *outcome) {
	if r.verb == "watch" {
		o.etcd = false
		if o.code == 200 {
			if g.rng.IntN(10) == 0 { // the client went away early
				o.latency = int64(time.Second) + g.rng.Int64N(int64(r.watchTimeout)*int64(time.Second))
			} else {
				o.latency = int64(r.watchTimeout)*int64(time.Second) + g.lognormal(3*time.Millisecond, 0.6)
			}
			o.status = codeStatus(200)
			return
		}
	}
	lat := g.lognormal(r.median, r.sigma)
	if burst {
		lat = lat*3 + g.lognormal(r.median, r.sigma)
	}
	if g.rng.IntN(500) == 0 { // an etcd fsync stall or a slow webhook
		lat *= 40
	}
	o.latency = o.apfWait + lat
	switch {
	case r.longRunning: // kubectl logs -f: until someone presses ^C
		o.latency = min(o.latency, int64(30*time.Minute)+lat%int64(time.Minute))
	case o.latency > int64(r.timeout):
		o.code, o.status = 504, timeoutStatus()
		o.latency = int64(r.timeout) + g.lognormal(3*time.Millisecond, 0.5)
	}
	if o.status == nil {
		o.status = g.successStatus(r, o.code)
	}
}

// timeoutStatus is what the apiserver's request finisher returns when the
// request context expires.
func timeoutStatus() *status {
	return &status{Status: "Failure", Reason: "Timeout", Details: &statusDetails{}, Code: 504,
		Message: "Timeout: request did not complete within requested timeout - context deadline exceeded"}
}

func (g *generator) successStatus(r *request, code int) *status {
	switch {
	case r.t.sub == "binding":
		return &status{Status: "Success", Code: 201}
	case r.verb == "delete" && r.t.resource != "pods":
		return &status{Status: "Success", Code: 200,
			Details: &statusDetails{Name: r.t.name, Group: r.t.group, Kind: r.t.resource, UID: g.uid(r.t.resource, r.t.ns, r.t.name)}}
	}
	return codeStatus(code)
}

// Statuses that carry only a code are shared; nothing modifies a status
// once it is made.
var (
	status200 = &status{Code: 200}
	status201 = &status{Code: 201}
)

func codeStatus(code int) *status {
	switch code {
	case 200:
		return status200
	case 201:
		return status201
	}
	return &status{Code: code}
}

func (g *generator) forbidden(r *request) *status {
	u := r.actor.user.Username
	if r.imp != nil {
		u = r.imp.Username
	}
	res := r.t.resource
	if r.t.sub != "" {
		res += "/" + r.t.sub
	}
	var msg string
	if r.t.name != "" && r.verb != "list" && r.verb != "watch" {
		msg = fmt.Sprintf("%s %q is forbidden: ", r.t.qualified(), r.t.name)
	} else {
		msg = r.t.qualified() + " is forbidden: "
	}
	msg += fmt.Sprintf("User %q cannot %s resource %q in API group %q", u, r.verb, res, r.t.group)
	if r.t.ns != "" {
		msg += fmt.Sprintf(" in the namespace %q", r.t.ns)
	} else {
		msg += " at the cluster scope"
	}
	if r.forbidWhy != "" {
		msg += ": " + r.forbidWhy
	}
	return &status{Status: "Failure", Message: msg, Reason: "Forbidden", Code: 403,
		Details: &statusDetails{Name: r.t.name, Group: r.t.group, Kind: r.t.resource}}
}

// latencyAnnotations adds what kube-apiserver's latency trackers write for a
// request slower than 500 ms.
func (g *generator) latencyAnnotations(r *request, o outcome, ann map[string]string) {
	d := func(ns int64) string { return time.Duration(ns).String() }
	ann["apiserver.latency.k8s.io/total"] = d(o.latency)
	authn := g.lognormal(15*time.Microsecond, 0.6)
	if r.actor.token {
		authn = g.lognormal(60*time.Microsecond, 0.8)
	}
	ann["apiserver.latency.k8s.io/authentication"] = d(authn)
	ann["apiserver.latency.k8s.io/authorization"] = d(g.lognormal(12*time.Microsecond, 0.7))
	if o.apfWait > 0 {
		ann["apiserver.latency.k8s.io/apf-queue-wait"] = d(o.apfWait)
	}
	if o.code == 429 || o.code == 403 || o.code == 503 {
		return
	}
	work := float64(o.latency - o.apfWait)
	switch {
	case r.verb == "watch" || r.t.sub == "log":
		ann["apiserver.latency.k8s.io/serialize-response-object"] = d(int64(work * (0.002 + 0.01*g.rng.Float64())))
		ann["apiserver.latency.k8s.io/response-write"] = d(int64(work * (0.001 + 0.005*g.rng.Float64())))
		return
	case o.etcd:
		ann["apiserver.latency.k8s.io/etcd"] = d(int64(work * (0.55 + 0.4*g.rng.Float64())))
	}
	if r.verb == "get" || r.verb == "list" {
		if o.etcd {
			ann["apiserver.latency.k8s.io/decode-response-object"] = d(int64(work * (0.005 + 0.03*g.rng.Float64())))
		}
		ann["apiserver.latency.k8s.io/transform-response-object"] = d(g.lognormal(3*time.Microsecond, 0.6))
	}
	ser, wr := g.lognormal(120*time.Microsecond, 0.8), g.lognormal(4*time.Microsecond, 0.8)
	if r.verb == "list" {
		ser, wr = int64(work*(0.02+0.15*g.rng.Float64())), int64(work*(0.005+0.05*g.rng.Float64()))
	}
	ann["apiserver.latency.k8s.io/serialize-response-object"] = d(ser)
	ann["apiserver.latency.k8s.io/response-write"] = d(wr)
	if r.t.resource == "pods" && r.t.sub == "" && (r.verb == "create" || r.verb == "update" || r.verb == "patch") {
		ann["apiserver.latency.k8s.io/mutating-webhook"] = d(g.lognormal(4*time.Millisecond, 0.6))
	}
}

func (g *generator) requestURI(r *request) string {
	if r.path != "" {
		return r.path
	}
	var b strings.Builder
	if r.t.group == "" {
		b.WriteString("/api/v1")
	} else {
		b.WriteString("/apis/" + r.t.group + "/" + r.t.version())
	}
	if r.t.ns != "" {
		b.WriteString("/namespaces/" + r.t.ns)
	}
	b.WriteString("/" + r.t.resource)
	named := r.verb != "list" && r.verb != "watch" && (r.verb != "create" || r.t.sub != "")
	if named && r.t.name != "" {
		b.WriteString("/" + r.t.name)
		if r.t.sub != "" {
			b.WriteString("/" + r.t.sub)
		}
	}
	if r.query != "" {
		b.WriteString("?" + r.query)
	}
	return b.String()
}

// objectRef is the reference of the ResponseComplete line.
func (g *generator) objectRef(r *request) *objectRef {
	ref := &objectRef{Resource: r.t.resource, Namespace: r.t.ns, APIGroup: r.t.group, APIVersion: r.t.version(), Subresource: r.t.sub}
	switch {
	case r.verb == "list" || r.verb == "watch":
		if r.nameInRef {
			ref.Name = r.t.name
		}
	case r.verb == "create" && r.t.sub == "":
		// filled from the body in emit
	default:
		ref.Name = r.t.name
	}
	return ref
}

// currentRV is the resourceVersion an object has now.
func (g *generator) currentRV(r *request) uint64 {
	if v, ok := g.lastRV[r.t.key()]; ok {
		return v
	}
	// last written before the log starts
	return g.rv0 - 1 - g.hash("rv", r.t.resource, r.t.ns, r.t.name)%5_000_000
}
