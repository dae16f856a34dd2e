// Package rollup is the store-neutral part of the request rollup (the
// timeline.Rollup role): how a record becomes a request class, and what a
// batch of records adds to the per-second, per-minute and per-client
// counts. Each store keeps the sums in tables of its own
// (timeline/sqlite/SCHEMA.md, timeline/clickhouse/SCHEMA.md), so the rules
// exist once and both stores answer alike.
//
// The rules:
//
//   - Audit records with a resource count; non-resource requests
//     (/healthz, /metrics) and records without a stage (audit lines with
//     no auditID, whose stages cannot be joined) do not.
//   - A request counts in the per-second and per-client counts once, when
//     its record first carries a response stage (ResponseStarted,
//     ResponseComplete or Panic). One seen only at RequestReceived does not
//     count.
//   - It counts in the per-minute stats once, when its record first
//     carries a final stage (ResponseComplete or Panic), with the record's
//     code, latency and annotations then: those of its latest stage. A
//     long-running request (a watch) is thus in the stats from its end,
//     with its whole duration as latency. Were a Panic to join a record
//     that already has ResponseComplete (the apiserver writes one or the
//     other), the request moves to its Panic values; the counts and sums of
//     the cell it leaves stay exact, but that cell's maxima may then
//     overstate.
//   - The class, time and URI are the record's (those of the stage first
//     written), not those of a later stage.
//
// Every quantity is then a function of the records held, whatever the
// order and batching of the stages: re-ingesting a file changes nothing.
package rollup

import (
	"bytes"
	"cmp"
	"encoding/json"
	"math"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/internal/extrajson"
	"github.com/tidwall/gjson"
)

// Stages that matter to the rollup.
const (
	// ResponseStages are those that make a request count: it was served.
	ResponseStages = timeline.StageResponseStarted | timeline.StageResponseComplete | timeline.StagePanic
	// FinalStages end a request: it counts in the stats.
	FinalStages = timeline.StageResponseComplete | timeline.StagePanic
)

const apfAnnotation = "apiserver.latency.k8s.io/apf-queue-wait"

// Class is a request class by its strings, the user and user agent folded
// (timeline.RequestClass without its id).
type Class struct {
	Verb, Group, Resource, Subresource, Scope, User, UserAgent string
}

// Compare orders classes by their fields in turn: the order in which a
// batch's new classes get their ids.
func (a Class) Compare(b Class) int {
	return cmp.Or(strings.Compare(a.Verb, b.Verb), strings.Compare(a.Group, b.Group),
		strings.Compare(a.Resource, b.Resource), strings.Compare(a.Subresource, b.Subresource),
		strings.Compare(a.Scope, b.Scope), strings.Compare(a.User, b.User), strings.Compare(a.UserAgent, b.UserAgent))
}

// Clone returns q with its strings copied, in one allocation, out of
// whatever they point into. A record's strings share its decoded line's
// buffer, so a copy kept past the batch (a cache of classes, or of open
// requests) would otherwise keep every such line whole.
func (q Request) Clone() Request {
	c := &q.Class
	fields := [...]*string{&c.Verb, &c.Group, &c.Resource, &c.Subresource, &c.Scope, &c.User, &c.UserAgent, &q.User}
	cloneAll(fields[:])
	return q
}

// Clone returns a with its strings copied, as Request.Clone.
func (a Class) Clone() Class {
	fields := [...]*string{&a.Verb, &a.Group, &a.Resource, &a.Subresource, &a.Scope, &a.User, &a.UserAgent}
	cloneAll(fields[:])
	return a
}

// cloneAll points each string at a copy of its bytes in one new string.
func cloneAll(fields []*string) {
	n := 0
	for _, f := range fields {
		n += len(*f)
	}
	var b strings.Builder
	b.Grow(n)
	for _, f := range fields {
		b.WriteString(*f)
	}
	all := b.String()
	for _, f := range fields {
		m := len(*f)
		*f, all = all[:m], all[m:]
	}
}

// Request is what the rollup needs of a record's fixed fields.
type Request struct {
	Class   Class
	TimeNS  int64  // requestReceivedTimestamp, Unix ns
	User    string // raw
	Etcd    bool   // a list whose semantics read etcd
	Unpaged bool   // a cluster-scope list without a limit
}

// Values are the fields of a request's record that a later stage may
// change.
type Values struct {
	Code    int
	Latency int64 // ns
	APF     int64 // APF queue wait, ns
}

// NewRequest classes a request by its record's fields (t: its time, Unix
// ns).
func NewRequest(verb, group, resource, subresource, namespace, name, user, userAgent, uri string, t int64) Request {
	scope := timeline.RequestScope(namespace, name)
	rq := Request{
		Class: Class{Verb: verb, Group: group, Resource: resource, Subresource: subresource, Scope: scope,
			User: timeline.FoldUser(user), UserAgent: timeline.FoldUserAgent(userAgent)},
		TimeNS: t,
		User:   user,
	}
	if verb == "list" {
		rq.Etcd = timeline.ListFromEtcd(uri)
		rq.Unpaged = scope == timeline.ScopeCluster && !timeline.ListHasLimit(uri)
	}
	return rq
}

// RequestOf classes a record; ok is false for a record the rollup does
// not count (not audit, or without a resource).
func RequestOf(r *timeline.Record) (rq Request, ok bool) {
	o := &r.Object
	if r.Source != timeline.SourceAudit || o.Resource == "" {
		return Request{}, false
	}
	return NewRequest(r.Verb, o.Group, o.Resource, o.Subresource, o.Namespace, o.Name, r.User, r.UserAgent, r.URI,
		timeline.UnixNS(r.Time)), true
}

// ValuesOf returns a record's values as its latest stage left them.
func ValuesOf(r *timeline.Record) Values {
	return Values{Code: r.Code, Latency: int64(r.Latency), APF: APFQueueWait(r.Extra)}
}

// Joined returns the values of a record whose stages were old, held, after
// the record in joins it: a later stage's values win.
func Joined(old timeline.Stage, held Values, in *timeline.Record) Values {
	if in.Stages > old {
		return ValuesOf(in)
	}
	return held
}

// Replaces reports whether stage in, joining a record whose stages are
// old, replaces the values the stats counted: a final stage after another.
// Only then does Count read the held values' APF wait.
func Replaces(old, in timeline.Stage) bool {
	return old&FinalStages != 0 && in > old && in&FinalStages != 0
}

// APFQueueWait reads the APF queue wait annotation from a record's extra
// JSON. The value is a Go duration as Duration.String writes it (always
// ending in "s"); anything else is 0. It answers as decoding extra with
// encoding/json into a struct with an Annotations map would (apfWaitStd),
// and reads the common form, one "annotations" object of strings, without
// building the map: that decode was 3.6 % of a ClickHouse ingest's CPU on
// the 10 M-line benchmark log, on the writer's path.
func APFQueueWait(extra []byte) int64 {
	if !bytes.Contains(extra, []byte("apf-queue-wait")) {
		return 0
	}
	if v, ok := apfWaitFast(extra); ok {
		return parseAPFWait(v)
	}
	return apfWaitStd(extra)
}

// apfWaitFast reads the annotation from valid JSON whose top-level object
// has exactly one key that encoding/json would match to "annotations",
// spelled so, whose value is an object of strings only. ok is false for
// anything else (other forms, where encoding/json merges maps, resets them
// on null or fails on a number it cannot hold, or nesting deeper than it
// allows): apfWaitStd reads those.
func apfWaitFast(extra []byte) (v any, ok bool) {
	if !extrajson.Valid(extra) {
		return nil, false
	}
	// The value found points into extra, and is parsed before extra can
	// change.
	annots, n, exact, ok := extrajson.Last(extra, "annotations")
	if !ok || n != 1 || !exact || !annots.IsObject() {
		return nil, false
	}
	annots.ForEach(func(k, val gjson.Result) bool {
		if val.Type != gjson.String {
			ok = false
			return false
		}
		if k.String() == apfAnnotation {
			v = val.String() // the last one wins, as in a map
		}
		return true
	})
	if !ok {
		return nil, false
	}
	return v, true
}

// apfWaitStd is APFQueueWait by encoding/json.
func apfWaitStd(extra []byte) int64 {
	var x struct {
		Annotations map[string]any `json:"annotations"`
	}
	if json.Unmarshal(extra, &x) != nil {
		return 0
	}
	return parseAPFWait(x.Annotations[apfAnnotation])
}

func parseAPFWait(v any) int64 {
	s, ok := v.(string)
	if !ok || !strings.HasSuffix(s, "s") {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0
	}
	return int64(d)
}

type (
	// The keys name a class by its index in Delta.classes: hashing one
	// int, not seven strings, per request and map.
	secKey struct {
		class int32
		sec   int64
	}
	statKey struct {
		class        int32
		minute       int64
		code, bucket int
	}
	clientKey struct {
		class  int32
		minute int64
		user   string
	}
)

// Agg is what a batch changes in one per-minute cell (class, minute, code,
// latency bucket).
type Agg struct {
	N, Etcd, Unpaged, LatSum int64
	// LatMax and APFMax are the maxima of the requests added; math.MinInt64
	// when none was (the batch only took requests back), so that a store
	// taking the max with them leaves its own unchanged.
	LatMax, APFMax int64
	// Retracted: N was decremented, and the cell may now hold nothing.
	Retracted bool
}

// Delta is what one batch adds to the rollup.
type Delta struct {
	classes []Class         // the batch's classes, by index
	index   map[Class]int32 // and their indexes
	secs    map[secKey]int64
	stats   map[statKey]*Agg
	clients map[clientKey]int64
}

// Empty reports whether the batch changed nothing.
func (d *Delta) Empty() bool { return len(d.secs) == 0 && len(d.stats) == 0 }

// classIndex returns the batch's index of a class, adding it if new.
func (d *Delta) classIndex(k Class) int32 {
	i, ok := d.index[k]
	if !ok {
		i = int32(len(d.classes))
		d.classes = append(d.classes, k)
		d.index[k] = i
	}
	return i
}

// Add counts a record newly held (no stages before it).
func (d *Delta) Add(rq *Request, r *timeline.Record) {
	d.Count(rq, 0, r.Stages, ValuesOf(r), Values{})
}

// Join counts stage in joining a held record whose stages were old and
// values ov (ov.APF need only be read when Replaces(old, in.Stages)).
func (d *Delta) Join(rq *Request, old timeline.Stage, in *timeline.Record, ov Values) {
	if (old|in.Stages)&ResponseStages == 0 {
		return
	}
	d.Count(rq, old, in.Stages, Joined(old, ov, in), ov)
}

// Count adds what a record's change from stages old to old|in does to the
// rollup: nv are its values after the change, ov before.
func (d *Delta) Count(rq *Request, old, in timeline.Stage, nv, ov Values) {
	now := old | in
	sec := rq.TimeNS / int64(time.Second)
	minute := sec / 60 * 60
	if d.secs == nil {
		d.secs, d.clients, d.stats = map[secKey]int64{}, map[clientKey]int64{}, map[statKey]*Agg{}
		d.index = map[Class]int32{}
	}
	counts := old&ResponseStages == 0 && now&ResponseStages != 0
	stats := now&FinalStages != 0 && (old&FinalStages == 0 || in > old)
	if !counts && !stats {
		return
	}
	class := d.classIndex(rq.Class)
	if counts {
		d.secs[secKey{class, sec}]++
		d.clients[clientKey{class, minute, rq.User}]++
	}
	switch {
	case !stats:
	case old&FinalStages == 0:
		d.stat(rq, class, minute, nv, 1)
	default: // a later final stage replaces the values counted
		d.stat(rq, class, minute, ov, -1)
		d.stat(rq, class, minute, nv, 1)
	}
}

func (d *Delta) stat(rq *Request, class int32, minute int64, v Values, sign int64) {
	k := statKey{class, minute, v.Code, timeline.LatencyBucket(time.Duration(v.Latency))}
	a := d.stats[k]
	if a == nil {
		a = &Agg{LatMax: math.MinInt64, APFMax: math.MinInt64}
		d.stats[k] = a
	}
	a.N += sign
	a.LatSum = SatAdd(a.LatSum, sign*v.Latency)
	if rq.Etcd {
		a.Etcd += sign
	}
	if rq.Unpaged {
		a.Unpaged += sign
	}
	if sign < 0 {
		a.Retracted = true
		return
	}
	a.LatMax = max(a.LatMax, v.Latency)
	a.APFMax = max(a.APFMax, v.APF)
}

// IDs returns the store's id of each class of the batch, by the batch's
// index. id is asked for the classes in Compare order, so that a store
// that numbers new classes as it is asked gives the same input the same
// ids.
func (d *Delta) IDs(id func(Class) (int64, error)) ([]int64, error) {
	classes := slices.Clone(d.classes)
	slices.SortFunc(classes, Class.Compare)
	byClass := make(map[Class]int64, len(classes))
	for _, k := range classes {
		n, err := id(k)
		if err != nil {
			return nil, err
		}
		byClass[k] = n
	}
	ids := make([]int64, len(d.classes))
	for i, k := range d.classes {
		ids[i] = byClass[k]
	}
	return ids, nil
}

// Second is a per-second count of a class (by its store id).
type Second struct{ Class, Sec, N int64 }

// Seconds returns the batch's per-second counts, ids by the batch's index
// (IDs), ordered by class and second.
func (d *Delta) Seconds(ids []int64) []Second {
	out := make([]Second, 0, len(d.secs))
	for k, n := range d.secs {
		out = append(out, Second{ids[k.class], k.sec, n})
	}
	slices.SortFunc(out, func(a, b Second) int { return cmp.Or(cmp.Compare(a.Class, b.Class), cmp.Compare(a.Sec, b.Sec)) })
	return out
}

// Client is a per-minute count of one raw user behind a class.
type Client struct {
	Minute, Class int64
	User          string
	N             int64
}

// Clients returns the batch's per-minute counts of raw users, ordered by
// minute, class and user.
func (d *Delta) Clients(ids []int64) []Client {
	out := make([]Client, 0, len(d.clients))
	for k, n := range d.clients {
		out = append(out, Client{k.minute, ids[k.class], k.user, n})
	}
	slices.SortFunc(out, func(a, b Client) int {
		return cmp.Or(cmp.Compare(a.Minute, b.Minute), cmp.Compare(a.Class, b.Class), strings.Compare(a.User, b.User))
	})
	return out
}

// Stat is what the batch changes in one per-minute cell.
type Stat struct {
	Minute, Class int64
	Code, Bucket  int
	*Agg
}

// Stats returns the batch's per-minute cells, ordered by minute, class,
// code and bucket.
func (d *Delta) Stats(ids []int64) []Stat {
	out := make([]Stat, 0, len(d.stats))
	for k, a := range d.stats {
		out = append(out, Stat{k.minute, ids[k.class], k.code, k.bucket, a})
	}
	slices.SortFunc(out, func(a, b Stat) int {
		return cmp.Or(cmp.Compare(a.Minute, b.Minute), cmp.Compare(a.Class, b.Class), cmp.Compare(a.Code, b.Code),
			cmp.Compare(a.Bucket, b.Bucket))
	})
	return out
}

// Window returns the seconds [lo, hi) (Unix) of the rows a read of
// [since, until) takes: those whose second (or minute's start) is in the
// window. An unbounded side is math.MinInt64 or math.MaxInt64.
func Window(since, until time.Time) (lo, hi int64) {
	lo, hi = math.MinInt64, math.MaxInt64
	if !since.IsZero() {
		lo = since.Unix()
		if since.Nanosecond() != 0 {
			lo++ // the first whole second at or after since
		}
	}
	if !until.IsZero() {
		hi = until.Unix()
		if until.Nanosecond() != 0 {
			hi++ // a second starting before until
		}
	}
	return lo, hi
}

// SatAdd is a + b, saturated at the ends of int64: a latency sum that
// cannot be held says "at least this much" rather than wrapping negative.
func SatAdd(a, b int64) int64 {
	c := a + b
	switch {
	case a > 0 && b > 0 && c < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && c >= 0:
		return math.MinInt64
	}
	return c
}

// SplitSum returns a latency sum's high and low 32 bits (v >> 32 and v &
// 0xffffffff), which a store sums apart: the parts cannot overflow for
// fewer than 2^31 rows (JoinSum).
func SplitSum(v int64) (hi, lo int64) { return v >> 32, v & 0xffffffff }

// JoinSum joins latency sums read as their high and low 32 bits (summed
// SplitSum parts), saturating at the ends of int64.
func JoinSum(hi, lo int64) int64 {
	v := new(big.Int).Lsh(big.NewInt(hi), 32)
	v.Add(v, big.NewInt(lo))
	switch {
	case v.IsInt64():
		return v.Int64()
	case v.Sign() > 0:
		return math.MaxInt64
	}
	return math.MinInt64
}

// Slow returns a record as a slow request (timeline.SlowRequests): ok is
// false for one the rollup does not count, one with no final stage, one
// faster than timeline.SlowLatency, or one of a verb not in
// timeline.SlowVerbs. Both stores read the candidates their own way and
// keep what Slow keeps.
func Slow(r *timeline.Record) (timeline.SlowRequest, bool) {
	rq, ok := RequestOf(r)
	if !ok {
		return timeline.SlowRequest{}, false
	}
	return SlowOf(&rq, r.Stages, ValuesOf(r))
}

// SlowOf is Slow of a request already classed, with its record's stages
// and values.
func SlowOf(rq *Request, stages timeline.Stage, v Values) (timeline.SlowRequest, bool) {
	c := &rq.Class
	if stages&FinalStages == 0 || time.Duration(v.Latency) < timeline.SlowLatency || !slices.Contains(timeline.SlowVerbs, c.Verb) {
		return timeline.SlowRequest{}, false
	}
	return timeline.SlowRequest{
		Class: timeline.RequestClass{Verb: c.Verb, Group: c.Group, Resource: c.Resource, Subresource: c.Subresource,
			Scope: c.Scope, User: c.User, UserAgent: c.UserAgent},
		Received: time.Unix(0, rq.TimeNS).UTC(),
		Latency:  time.Duration(v.Latency),
		APFWait:  time.Duration(v.APF),
		Code:     v.Code,
		Etcd:     rq.Etcd,
	}, true
}
