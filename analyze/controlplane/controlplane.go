// Package controlplane answers the on-call question "who is hammering the
// apiserver, with what, since when, and what would calm it?" from the
// store's rollup of audited requests (timeline.RequestStats) and from pod
// versions:
//
//   - request classes: verb × resource × scope × client × user, with count,
//     rate, peak 1-second rate, latency percentiles and response codes;
//   - list and watch cost: LISTs served from etcd, unpaged cluster-scope
//     LISTs, watch churn, per client;
//   - APF and latency against the Kubernetes SLOs;
//   - bursts: classes whose rate jumps by an order of magnitude within
//     seconds, the population behind them and their amplification;
//   - clients shed (429) with no burst of their own;
//   - fixes, each simulated on the recorded requests: a jittered start, reads
//     from the watch cache, scoped reads, a dedicated APF priority level;
//   - pod start-up latency and scheduler throughput;
//   - telemetry cardinality.
//
// The Report's JSON is a stable contract (docs/controlplane.md).
package controlplane

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/cel-go/cel"

	"github.com/faultline/faultline/timeline"
)

// SchemaVersion is the version of the Report's JSON contract.
const SchemaVersion = 1

// Store is what the analysis reads.
type Store interface {
	RequestSummary(ctx context.Context, since, until time.Time) (*timeline.RequestStats, error)
	SlowRequests(ctx context.Context, since, until time.Time) ([]timeline.SlowRequest, error)
	Versions(ctx context.Context, q timeline.VersionQuery) ([]timeline.ObjectVersion, error)
	Bounds(ctx context.Context) (first, last time.Time, err error)
}

// Options shape the analysis.
type Options struct {
	Since, Until time.Time
	// Jitter is the window a jittered start spreads a burst over (default 60 s).
	Jitter time.Duration
	// Where keeps only the classes it accepts (nil: all). Slowness is the
	// server's, read over every client: with Where, Slow stays empty.
	Where func(c *Class) bool
	// NoSlow leaves Slow empty, for a caller that reads none of it: the
	// slow requests are read one by one.
	NoSlow bool
}

// Report is the analysis.
type Report struct {
	SchemaVersion int          `json:"schemaVersion"`
	Window        Window       `json:"window"`
	Requests      int64        `json:"requests"`
	Classes       []Class      `json:"classes"`
	Bursts        []Burst      `json:"bursts"`
	Shed          []Shed       `json:"shed"`
	Slow          []Slow       `json:"slow"`
	Clients       []ClientCost `json:"clients"`
	SLO           []SLOBreach  `json:"slo"`
	PodStartup    *PodStartup  `json:"podStartup"`
	Scheduler     *Scheduler   `json:"scheduler"`
	Cardinality   Cardinality  `json:"cardinality"`
}

// Window is the span analysed.
type Window struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Class is one request class.
type Class struct {
	Verb        string           `json:"verb"`
	Group       string           `json:"group,omitempty"`
	Resource    string           `json:"resource"`
	Subresource string           `json:"subresource"`
	Scope       string           `json:"scope"`
	Client      string           `json:"client"`
	User        string           `json:"user"`
	Count       int64            `json:"count"`
	Rate        float64          `json:"rate"`
	PeakRps     float64          `json:"peakRps"`
	PeakAt      time.Time        `json:"peakAt"`
	P50Ms       float64          `json:"p50Ms"`
	P99Ms       float64          `json:"p99Ms"`
	MaxMs       float64          `json:"maxMs"`
	Codes       map[string]int64 `json:"codes"`
	EtcdLists   int64            `json:"etcdLists"`
	Unpaged     int64            `json:"unpagedLists"`
	APFWaitMs   float64          `json:"apfQueueWaitMaxMs"`

	ids     []int64             // store classes folded into it
	etcdRan int64               // etcd LISTs not refused before their handler ran
	series  []SecondCount       // requests per second, oldest first
	prefix  []int64             // prefix[i]: requests in series[:i]
	buckets map[int]int64       // latency bucket -> requests
	users   map[string][2]int64 // raw user -> first and last minute seen
}

// Key names the class in one line.
func (c *Class) Key() string {
	res := c.Resource
	if c.Subresource != "" {
		res += "/" + c.Subresource
	}
	return fmt.Sprintf("%s %s (%s) by %s [%s]", strings.ToUpper(c.Verb), res, c.Scope, dash(c.Client), c.User)
}

// Burst is a class whose rate jumped by an order of magnitude.
type Burst struct {
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	PeakRps     float64   `json:"peakRps"`
	BaselineRps float64   `json:"baselineRps"`
	Requests    int64     `json:"requests"`
	Class       Class     `json:"class"`
	Clients     int       `json:"clients"`
	// Amplification is requests per pod started around the burst (or per
	// client when no pod started).
	Amplification float64 `json:"amplification"`
	AmplifiedBy   string  `json:"amplifiedBy"` // "pod" or "client"
	Fixes         []Fix   `json:"fixes"`
	FanOut        string  `json:"fanOut"`
	// Load is what the burst put on the apiserver and etcd: bursts are
	// ranked by it.
	Load Load `json:"load"`
	// ShedAfter is the rank (from 1) of the first burst of the episode of
	// shedding this one arrived into, another client's: the priority level
	// was full when it began, and it ranks after that one whatever its
	// load (rank). 0 for any other burst.
	ShedAfter int `json:"shedAfter,omitempty"`
}

// Load is what a burst put on the apiserver and etcd (see load): bursts
// are ranked by Score, then by ApiserverSeconds.
type Load struct {
	// Score is Requests + etcdReadWeight (10) × EtcdReads.
	Score int64 `json:"score"`
	// Requests are those the apiserver received, admitted or shed; for a
	// long-running class (WATCH), its openings.
	Requests int64 `json:"requests"`
	// EtcdReads are the LISTs among them that read etcd (the class's share
	// of its requests that did and were not refused).
	EtcdReads int64 `json:"etcdReads"`
	// Throttled are the 429s among them (the class's share): shed load,
	// counted as requests, never as etcd reads.
	Throttled int64 `json:"throttled"`
	// LongRunning is set for a class whose requests stay open as long as the
	// client wants (WATCH, exec, logs): how long is not load.
	LongRunning bool `json:"longRunning"`
	// ApiserverSeconds is Requests × the class's mean latency (0 when long
	// running): a tie-break only.
	ApiserverSeconds float64 `json:"apiserverSeconds"`
}

// Fix is one way to smooth a burst, with its effect simulated on the
// recorded requests.
type Fix struct {
	Kind             string  `json:"kind"` // jitter, watch-cache, scope, apf
	Detail           string  `json:"detail"`
	SimulatedPeakRps float64 `json:"simulatedPeakRps"`
	Tradeoff         string  `json:"tradeoff"`
}

// ClientCost is what one client's reads cost.
type ClientCost struct {
	Client        string  `json:"client"`
	User          string  `json:"user"`
	Requests      int64   `json:"requests"`
	EtcdLists     int64   `json:"etcdLists"`
	UnpagedLists  int64   `json:"unpagedClusterLists"`
	Watches       int64   `json:"watches"`
	WatchesPerMin float64 `json:"watchOpensPerMinute"`
	Throttled     int64   `json:"throttled"`
}

// SLOBreach is a class whose p99 latency exceeds its Kubernetes SLO.
type SLOBreach struct {
	Class string  `json:"class"`
	P99Ms float64 `json:"p99Ms"`
	SLOMs float64 `json:"sloMs"`
	Kind  string  `json:"kind"` // mutating, read-object, read-namespace, read-cluster
}

// PodStartup is pod creation -> scheduled -> running, against the SLO
// (p99 ≤ 5 s from creation to running).
type PodStartup struct {
	Pods       int        `json:"pods"`
	P50Ms      float64    `json:"p50Ms"`
	P99Ms      float64    `json:"p99Ms"`
	SchedP99Ms float64    `json:"scheduledP99Ms"`
	SLOMet     bool       `json:"sloMet"`
	PerOwner   []OwnerP99 `json:"perOwner"`
}

// OwnerP99 is start-up latency per owner (job).
type OwnerP99 struct {
	Owner string  `json:"owner"`
	Pods  int     `json:"pods"`
	P50Ms float64 `json:"p50Ms"`
	P99Ms float64 `json:"p99Ms"`
}

// Scheduler is bind throughput.
type Scheduler struct {
	Binds       int64     `json:"binds"`
	PeakPerSec  float64   `json:"peakBindsPerSecond"`
	PeakAt      time.Time `json:"peakAt"`
	MeanPerSec  float64   `json:"meanBindsPerSecond"`
	ActiveSpanS float64   `json:"activeSeconds"`
}

// Cardinality is how many distinct values each dimension of the evidence
// takes, and whether it keeps growing.
type Cardinality struct {
	Users      int    `json:"users"`
	UserAgents int    `json:"userAgents"`
	Classes    int    `json:"classes"`
	UsersFirst int    `json:"usersFirstHalf"`
	UsersLast  int    `json:"usersNewInSecondHalf"`
	Warning    string `json:"warning,omitempty"`
}

// Analyze runs the analysis.
func Analyze(ctx context.Context, s Store, opt Options) (*Report, error) {
	if opt.Jitter <= 0 {
		opt.Jitter = time.Minute
	}
	first, last, err := s.Bounds(ctx)
	if err != nil {
		return nil, err
	}
	if !opt.Since.IsZero() {
		first = opt.Since
	}
	if !opt.Until.IsZero() {
		last = opt.Until
	}
	// Slowness is the server's: it is read over every client. The slow
	// requests are read beside the rollup (two readers of the store at
	// once: on the 10 M-line benchmark log, each takes a second or more).
	type slowRead struct {
		reqs []timeline.SlowRequest
		err  error
	}
	var slowDone chan slowRead
	if opt.Where == nil && !opt.NoSlow {
		slowDone = make(chan slowRead, 1)
		go func() {
			reqs, err := s.SlowRequests(ctx, opt.Since, opt.Until)
			slowDone <- slowRead{reqs, err}
		}()
	}
	st, err := s.RequestSummary(ctx, opt.Since, opt.Until)
	if err != nil {
		return nil, err
	}
	rep := &Report{SchemaVersion: SchemaVersion, Window: Window{first, last}, Classes: []Class{}, Bursts: []Burst{},
		Shed: []Shed{}, Slow: []Slow{}, Clients: []ClientCost{}, SLO: []SLOBreach{}}
	classes := fold(st)
	var kept []*Class
	for _, c := range classes {
		if opt.Where == nil || opt.Where(c) {
			kept = append(kept, c)
		}
	}
	span := last.Sub(first).Seconds()
	if span < 1 {
		span = 1
	}
	for _, c := range kept {
		c.Rate = math.Round(float64(c.Count)/span*1e4) / 1e4
		rep.Requests += c.Count
	}
	sort.SliceStable(kept, func(i, j int) bool {
		if kept[i].Count != kept[j].Count {
			return kept[i].Count > kept[j].Count
		}
		return kept[i].Key() < kept[j].Key()
	})

	pods, err := s.Versions(ctx, timeline.VersionQuery{Resource: "pods", History: true})
	if err != nil {
		return nil, fmt.Errorf("pod versions: %w", err)
	}
	starts := podStarts(pods)
	rep.Bursts = bursts(kept, starts, opt.Jitter, first.Unix())
	rep.Clients = clientCosts(kept, span)
	rep.Shed = shedClients(kept, rep.Bursts)
	if slowDone != nil {
		rd := <-slowDone
		if rd.err != nil {
			return nil, fmt.Errorf("slow requests: %w", rd.err)
		}
		rep.Slow = append(rep.Slow, slowEpisodes(rd.reqs, kept, rep.Bursts)...)
	}
	rep.SLO = sloBreaches(kept)
	rep.PodStartup = podStartup(starts)
	rep.Scheduler = scheduler(kept)
	rep.Cardinality = cardinality(kept, st, first, last)
	for _, c := range kept {
		rep.Classes = append(rep.Classes, *c)
	}
	return rep, nil
}

// fold merges the store's classes that share a folded identity, and sums
// their seconds and minutes.
func fold(st *timeline.RequestStats) []*Class {
	byKey, byID := foldClasses(st.Classes)
	foldSeconds(byID, st.Seconds)
	foldStats(byID, st.Stats)
	foldUsers(byID, st.Clients)
	out := make([]*Class, 0, len(byKey))
	for _, c := range byKey {
		c.summarize()
		out = append(out, c)
	}
	return out
}

// foldClasses gives each folded identity one Class, and maps every store
// class to the Class it folds into.
func foldClasses(rcs []timeline.RequestClass) (byKey map[string]*Class, byID map[int64]*Class) {
	byKey, byID = map[string]*Class{}, map[int64]*Class{}
	for _, rc := range rcs {
		c := &Class{Verb: rc.Verb, Group: rc.Group, Resource: rc.Resource, Subresource: rc.Subresource, Scope: rc.Scope,
			Client: rc.UserAgent, User: rc.User}
		k := c.Key() + "\x00" + c.Group
		if have := byKey[k]; have != nil {
			c = have
		} else {
			c.Codes, c.buckets, c.users = map[string]int64{}, map[int]int64{}, map[string][2]int64{}
			byKey[k] = c
		}
		c.ids = append(c.ids, rc.ID)
		byID[rc.ID] = c
	}
	return byKey, byID
}

// foldSeconds appends each second to its Class's series; a Class that
// several store classes fold into has its series sorted and its equal
// seconds summed.
func foldSeconds(byID map[int64]*Class, secs []timeline.RequestSecond) {
	// Each series is sized once: the seconds run to millions (1.9 M on
	// the 10 M-line benchmark log), and a series grown by append is
	// copied, in fresh pages, at each growth. The store gives them by
	// class, so a class's seconds are counted run by run.
	need := map[*Class]int{}
	for i := 0; i < len(secs); {
		j := i + 1
		for j < len(secs) && secs[j].Class == secs[i].Class {
			j++
		}
		if c := byID[secs[i].Class]; c != nil {
			need[c] += j - i
		}
		i = j
	}
	for c, n := range need {
		c.series = slices.Grow(c.series, n)
	}
	merged := map[*Class]bool{} // classes that several store classes fold into
	for _, sec := range secs {
		if c := byID[sec.Class]; c != nil {
			if len(c.ids) > 1 {
				merged[c] = true
			}
			c.series = append(c.series, SecondCount{Sec: sec.Sec, Count: sec.Count})
		}
	}
	for c := range merged {
		sort.Slice(c.series, func(i, j int) bool { return c.series[i].Sec < c.series[j].Sec })
		out := c.series[:0]
		for _, x := range c.series {
			if n := len(out); n > 0 && out[n-1].Sec == x.Sec {
				out[n-1].Count += x.Count
				continue
			}
			out = append(out, x)
		}
		c.series = out
	}
}

// foldStats adds the store's counts, codes, etcd LISTs and latencies to
// their Classes.
func foldStats(byID map[int64]*Class, stats []timeline.RequestStat) {
	for _, x := range stats {
		c := byID[x.Class]
		if c == nil {
			continue
		}
		c.Count += x.Count
		c.Codes[strconv.Itoa(x.Code)] += x.Count
		c.EtcdLists += x.EtcdLists
		if !refusedBeforeHandler(x.Code) {
			c.etcdRan += x.EtcdLists
		}
		c.Unpaged += x.UnpagedLists
		c.buckets[x.LatencyBucket] += x.Count
		c.MaxMs = math.Max(c.MaxMs, float64(x.LatencyMaxNs)/1e6)
		c.APFWaitMs = math.Max(c.APFWaitMs, float64(x.APFQueueWaitMaxNs)/1e6)
	}
}

// foldUsers widens each raw user's span of minutes on its Class.
func foldUsers(byID map[int64]*Class, clients []timeline.RequestClient) {
	for _, cl := range clients {
		if c := byID[cl.Class]; c != nil {
			last := max(cl.LastMinute, cl.Minute)
			if span, ok := c.users[cl.User]; ok {
				cl.Minute, last = min(cl.Minute, span[0]), max(last, span[1])
			}
			c.users[cl.User] = [2]int64{cl.Minute, last}
		}
	}
}

// summarize computes a folded Class's prefix sums, peak second and
// latency percentiles (capped at the largest latency seen).
func (c *Class) summarize() {
	c.prefix = make([]int64, len(c.series)+1)
	for i, x := range c.series {
		c.prefix[i+1] = c.prefix[i] + x.Count
		if r := float64(x.Count); r > c.PeakRps {
			c.PeakRps, c.PeakAt = r, time.Unix(x.Sec, 0).UTC()
		}
	}
	c.P50Ms = percentile(c.buckets, c.Count, 0.50)
	c.P99Ms = percentile(c.buckets, c.Count, 0.99)
	if c.P99Ms > c.MaxMs && c.MaxMs > 0 {
		c.P99Ms = c.MaxMs // a bucket's upper bound can pass the true max
	}
	if c.P50Ms > c.MaxMs && c.MaxMs > 0 {
		c.P50Ms = c.MaxMs
	}
}

// percentile reads a quantile off latency buckets (their upper bounds).
func percentile(b map[int]int64, n int64, q float64) float64 {
	if n == 0 {
		return 0
	}
	keys := make([]int, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	target := int64(math.Ceil(q * float64(n)))
	var acc int64
	for _, k := range keys {
		acc += b[k]
		if acc >= target {
			return float64(timeline.LatencyBucketUpper(k)) / 1e6
		}
	}
	return float64(timeline.LatencyBucketUpper(keys[len(keys)-1])) / 1e6
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WhereError is a class filter (Options.Where) that does not compile: the
// user's to fix.
type WhereError struct {
	Expr string
	Err  error
}

func (e *WhereError) Error() string { return fmt.Sprintf("class filter %q: %v", e.Expr, e.Err) }
func (e *WhereError) Unwrap() error { return e.Err }

// CompileWhere compiles a CEL expression over a class's fields into a
// filter for Options.Where: verb, group, resource, subresource, scope,
// client, user (strings), count, etcdLists (ints), peakRps, p50Ms, p99Ms
// (doubles) and codes (map of code to count, e.g. codes["429"] > 0).
func CompileWhere(expr string) (func(*Class) bool, error) {
	env, err := cel.NewEnv(
		cel.Variable("verb", cel.StringType), cel.Variable("group", cel.StringType),
		cel.Variable("resource", cel.StringType), cel.Variable("subresource", cel.StringType),
		cel.Variable("scope", cel.StringType), cel.Variable("client", cel.StringType), cel.Variable("user", cel.StringType),
		cel.Variable("count", cel.IntType), cel.Variable("etcdLists", cel.IntType),
		cel.Variable("peakRps", cel.DoubleType), cel.Variable("p50Ms", cel.DoubleType), cel.Variable("p99Ms", cel.DoubleType),
		cel.Variable("codes", cel.MapType(cel.StringType, cel.IntType)),
	)
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, &WhereError{Expr: expr, Err: iss.Err()}
	}
	if ast.OutputType() != cel.BoolType {
		return nil, &WhereError{Expr: expr, Err: fmt.Errorf("is a %s, want a condition (true or false)", ast.OutputType())}
	}
	prg, err := env.Program(ast)
	if err != nil {
		return nil, &WhereError{Expr: expr, Err: err}
	}
	return func(c *Class) bool {
		codes := map[string]int64{}
		for k, v := range c.Codes {
			codes[k] = v
		}
		out, _, err := prg.Eval(map[string]any{
			"verb": c.Verb, "group": c.Group, "resource": c.Resource, "subresource": c.Subresource, "scope": c.Scope,
			"client": c.Client, "user": c.User, "count": c.Count, "etcdLists": c.EtcdLists,
			"peakRps": c.PeakRps, "p50Ms": c.P50Ms, "p99Ms": c.P99Ms, "codes": codes,
		})
		if err != nil {
			return false // a missing map key, say: the class does not match
		}
		b, _ := out.Value().(bool)
		return b
	}, nil
}

// at returns the class's requests in second t.
func (c *Class) at(t int64) int64 {
	i := sort.Search(len(c.series), func(i int) bool { return c.series[i].Sec >= t })
	if i < len(c.series) && c.series[i].Sec == t {
		return c.series[i].Count
	}
	return 0
}

// sum returns the class's requests in seconds [from, to].
func (c *Class) sum(from, to int64) int64 {
	i := sort.Search(len(c.series), func(i int) bool { return c.series[i].Sec >= from })
	j := sort.Search(len(c.series), func(i int) bool { return c.series[i].Sec > to })
	return c.prefix[j] - c.prefix[i]
}
