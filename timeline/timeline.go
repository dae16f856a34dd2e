// Package timeline holds faultline's domain: records of what happened at a
// time, the versions of objects seen, and the ingest runs that brought them in.
// It declares the roles of the store that keeps them (Appender, Reader,
// IngestState, BisectLog, Rollup, SeriesReader; Store is them all);
// timeline/sqlite and timeline/clickhouse implement them. Prometheus
// samples are series and samples (metrics.go), not records.
//
// The package imports only the standard library and cel-go (filters are CEL
// expressions over records).
package timeline

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"time"
)

// SourceKind says which kind of evidence a record or ingest run came from.
type SourceKind string

// Evidence kinds known to faultline.
const (
	SourceAudit    SourceKind = "audit"    // kube-apiserver audit log
	SourceEvent    SourceKind = "event"    // core/v1 or events.k8s.io/v1 Event
	SourceObject   SourceKind = "object"   // object snapshot (LIST/WATCH or dump)
	SourceVersions SourceKind = "versions" // artifact versions and job runs
	// SourceNode is a node's own log (kernel, kubelet, containerd, a job's
	// NCCL/MPI output): a GPU Xid, an OOM kill, a PLEG stall, a link flap,
	// as one record on the Node (ingest/nodelogs).
	SourceNode SourceKind = "node"
	// SourceMetrics is an ingest run of Prometheus samples (ingest/metrics):
	// its samples are series, not records.
	SourceMetrics SourceKind = "metrics"
)

// A job run, as a versions ingest records it: a record of SourceVersions
// with verb VerbRun on the resource JobRunResource, named by its job. The
// readers of runs name all three, so that a store can find them by its
// index of resource and verb instead of reading every record.
const (
	VerbRun        = "run"
	JobRunResource = "jobruns"
)

// ObjectRef names the Kubernetes object a record concerns.
type ObjectRef struct {
	Group       string `json:"group,omitempty"`
	Version     string `json:"version,omitempty"`
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	Kind        string `json:"kind,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	UID         string `json:"uid,omitempty"`
}

// Stage is a set of audit stages, as bits: the stages of one request that
// arrive as separate audit lines are joined into one record.
type Stage uint8

// Audit stages in the order the apiserver emits them.
const (
	StageRequestReceived Stage = 1 << iota
	StageResponseStarted
	StageResponseComplete
	StagePanic
)

var stageNames = []struct {
	s    Stage
	name string
}{
	{StageRequestReceived, "RequestReceived"},
	{StageResponseStarted, "ResponseStarted"},
	{StageResponseComplete, "ResponseComplete"},
	{StagePanic, "Panic"},
}

// ParseStage returns the stage bit for an audit stage name, or 0.
func ParseStage(name string) Stage {
	for _, s := range stageNames {
		if s.name == name {
			return s.s
		}
	}
	return 0
}

// Last returns the name of the latest stage in the set, or "".
func (s Stage) Last() string {
	for i := len(stageNames) - 1; i >= 0; i-- {
		if s&stageNames[i].s != 0 {
			return stageNames[i].name
		}
	}
	return ""
}

// Evidence points at the place a record or version was read from: the ingest
// run and the line (or item) number within its source.
type Evidence struct {
	Run  int64 `json:"run"`
	Line int64 `json:"line"`
}

// Record is one thing that happened at a time: an API request, an Event, an
// artifact version. Empty strings and zero numbers mean "not known".
type Record struct {
	ID        int64         `json:"id"`
	Key       string        `json:"-"` // natural key: equal keys are the same record
	Time      time.Time     `json:"time"`
	Source    SourceKind    `json:"source"`
	Object    ObjectRef     `json:"object"`
	Verb      string        `json:"verb,omitempty"`
	Reason    string        `json:"reason,omitempty"`
	User      string        `json:"user,omitempty"`
	UserAgent string        `json:"userAgent,omitempty"`
	SourceIP  string        `json:"sourceIP,omitempty"`
	Code      int           `json:"code,omitempty"` // HTTP status
	Type      string        `json:"type,omitempty"` // event type (Normal, Warning)
	Level     string        `json:"level,omitempty"`
	Latency   time.Duration `json:"latency,omitempty"`
	Stages    Stage         `json:"-"`
	AuditID   string        `json:"auditID,omitempty"`
	URI       string        `json:"requestURI,omitempty"`
	Message   string        `json:"message,omitempty"`
	// Extra holds the rest of the source record as a JSON object
	// (annotations, groups, status details). Never object contents.
	Extra    json.RawMessage `json:"extra,omitempty"`
	Evidence Evidence        `json:"evidence"`
	// Bad is the outcome classifier's verdict (analyze/outcome), set only
	// where the caller handed the store the bad set (Query.Bad): the store
	// never decides it. The filter field bad reads it.
	Bad bool `json:"bad,omitempty"`
}

// Stage returns the name of the latest stage joined into the record.
func (r *Record) Stage() string { return r.Stages.Last() }

// ObjectVersion is one observed version of an object, redacted: Secret values
// are never kept and ConfigMap values are replaced by per-key hashes.
type ObjectVersion struct {
	Key             string          `json:"-"` // natural key; see VersionKey
	Object          ObjectRef       `json:"object"`
	ResourceVersion string          `json:"resourceVersion,omitempty"`
	Time            time.Time       `json:"time"`
	Hash            string          `json:"hash"` // sha256 of Content
	Content         json.RawMessage `json:"content"`
	Evidence        Evidence        `json:"evidence"`
	// Seen says how Time was learned. One version seen twice keeps the
	// best sighting, then the earliest, whatever order they came in.
	Seen Sighting `json:"-"`
	// Prepared holds what a store did to the version ahead of AddVersion
	// (its redaction and hash, on the ingester's decoding goroutines):
	// opaque to all but the store that set it, which ignores anything it
	// did not set.
	Prepared any `json:"-"`
}

// Sighting is how a version's time was learned, best first.
type Sighting int8

const (
	// SeenWritten: the write that made the version (an audited create,
	// update or patch): its time is exact.
	SeenWritten Sighting = iota
	// SeenRead: a read returned it: it existed by then.
	SeenRead
	// SeenInferred: from its own metadata (a dump): the latest of its
	// creation, deletion and managed-field times, which a write that
	// touches no new field does not move.
	SeenInferred
)

// VersionKey is the natural key of an object version: the uid and
// resourceVersion where both are known, else the object's name and content.
func VersionKey(v *ObjectVersion) string {
	o := v.Object
	if o.UID != "" && v.ResourceVersion != "" {
		return "uid\x00" + o.UID + "\x00" + v.ResourceVersion
	}
	return "ref\x00" + o.Group + "\x00" + o.Resource + "\x00" + o.Namespace + "\x00" + o.Name + "\x00" + v.Hash
}

// RunStatus is the state of an ingest run.
type RunStatus string

// Ingest run states. A run left "running" by a killed process stays so; the
// rerun that completes its source is a separate, "done" run.
const (
	RunRunning RunStatus = "running"
	RunDone    RunStatus = "done"
	RunFailed  RunStatus = "failed"
)

// IngestRun describes one pass over one source: what was read, from where,
// and what came of it. Every record points at the run that brought it.
type IngestRun struct {
	ID         int64      `json:"id"`
	Source     SourceKind `json:"source"`
	Path       string     `json:"path"`
	Size       int64      `json:"size"`
	SHA256     string     `json:"sha256,omitempty"`
	Started    time.Time  `json:"started"`
	Finished   time.Time  `json:"finished,omitzero"`
	First      time.Time  `json:"first,omitzero"`
	Last       time.Time  `json:"last,omitzero"`
	Lines      int64      `json:"lines"`
	Records    int64      `json:"records"`
	Merged     int64      `json:"merged"` // audit stages joined into an existing record
	Duplicates int64      `json:"duplicates"`
	// Conflicts counts records kept beside another with the same natural
	// key and different content (see Conflict); they count in Records too.
	Conflicts int64     `json:"conflicts,omitempty"`
	Versions  int64     `json:"versions"`
	BadLines  int64     `json:"badLines"`
	Status    RunStatus `json:"status"`
	Error     string    `json:"error,omitempty"`
	// Since and Until are the window the run kept records of (a zero
	// bound is open), and Outside counts the events (audit events: lines,
	// mostly) it read outside it: read and counted, not stored.
	Since   time.Time `json:"since,omitzero"`
	Until   time.Time `json:"until,omitzero"`
	Outside int64     `json:"outside,omitempty"`
}

// Window is the span of request times the run kept records of.
func (r *IngestRun) Window() Span { return Span{Since: r.Since, Until: r.Until} }

// AddResult says what became of one record handed to a Batch.
type AddResult int

// Outcomes of Batch.AddRecord.
const (
	Added     AddResult = iota // a new record
	Merged                     // a new stage joined to an existing record
	Duplicate                  // already held: nothing changed
	// Conflict is a record whose natural key is held by a record with
	// other content (another user, verb, object or code under one audit
	// ID, time and stage). It is evidence, not a duplicate: the store
	// keeps it as its own record.
	Conflict
)

// Tally counts one outcome of Batch.AddRecord in the run.
func (r *IngestRun) Tally(res AddResult) {
	switch res {
	case Added:
		r.Records++
	case Merged:
		r.Merged++
	case Duplicate:
		r.Duplicates++
	case Conflict:
		r.Records++
		r.Conflicts++
	}
}

// Batch is a unit of writing: everything added to it commits together or
// not at all. A batch is used by one goroutine.
type Batch interface {
	// AddRecord stores a record (redacting it in place). The batch may
	// keep r's strings and byte slices (Extra) until it commits or rolls
	// back: the caller does not change them.
	AddRecord(ctx context.Context, r *Record) (AddResult, error)
	// AddVersion stores an object version; it reports false for a version
	// already held.
	AddVersion(ctx context.Context, v *ObjectVersion) (bool, error)
	// SetCursor records where a watch stands, committed with the batch.
	SetCursor(ctx context.Context, name, resourceVersion string) error
	// SampleBatch takes a metrics run's samples (metrics.go).
	SampleBatch
	// Commit writes the batch and the run's progress in one transaction.
	Commit(ctx context.Context, progress *IngestRun) error
	// Rollback abandons the batch.
	Rollback() error
}

// Query selects records. Zero values mean unbounded.
type Query struct {
	Since, Until time.Time // Since inclusive, Until exclusive
	Where        *Filter
	Limit        int
	Desc         bool // newest first
	// Bad is the set of record IDs the outcome classifier found bad
	// (outcome.Outcomes.BadRecordIDs): the records yielded carry Bad, and
	// the filter field bad reads it. Nil: no record is bad.
	Bad map[int64]bool
	// Fields are the fields the caller uses (see FieldSet): the others may
	// be left unread and read as zero. Zero: every field.
	Fields FieldSet
	// FieldsWhere, with Fields, fills more fields on the records that
	// match its filter, and leaves them zero on the others: a wide field
	// that the caller needs of a few records (a denial's extra JSON) is
	// then read for those only where the store can tell them apart.
	FieldsWhere *FieldsWhere
}

// VersionQuery selects object versions. Empty strings match anything.
type VersionQuery struct {
	Group, Resource, Namespace, Name, UID string
	// At selects, per object, its latest version at or before At (zero:
	// the latest held). Ignored with History.
	At time.Time
	// History returns every version of the matching objects, oldest first.
	History bool
	// OrFirstAfter, with At, also returns the first version of objects that
	// have none at or before At (the caller decides whether it stands then,
	// e.g. from the object's creationTimestamp).
	OrFirstAfter bool
	// Since and Until keep only the versions seen in [Since, Until) (zero:
	// unbounded); At and History choose among those.
	Since, Until time.Time
	// ByTime orders the versions by time alone, oldest first (the order
	// they were stored in breaks ties), instead of by object then time:
	// the changes of a span as they happened.
	ByTime bool
	// Limit, with ByTime, keeps the first Limit versions (0: all).
	Limit int
	// NoContent leaves Content out (Hash is still set), for listing
	// versions without reading their bodies.
	NoContent bool
}

// ChangesBetween selects the versions seen in [since, until) (zero:
// unbounded), oldest first, without their contents, at most limit of them
// (0: all): what changed in a span, as a bisect window lists it.
func ChangesBetween(since, until time.Time, limit int) VersionQuery {
	return VersionQuery{Since: since, Until: until, History: true, ByTime: true, Limit: limit, NoContent: true}
}

// Gap is a span of time, inside the data of one source kind, in which no
// record arrived.
type Gap struct {
	Source     SourceKind `json:"source"`
	Start, End time.Time
}

// BisectKind is what a user said about an instant while bisecting.
type BisectKind string

// Bisect mark kinds, in git bisect's words.
const (
	BisectGood BisectKind = "good" // the incident had not begun at this instant
	BisectBad  BisectKind = "bad"  // the incident was under way at this instant
	BisectSkip BisectKind = "skip" // this instant cannot be judged
)

// BisectMark is one instant a user marked in a bisect session.
type BisectMark struct {
	Session int64      `json:"session"`
	Kind    BisectKind `json:"kind"`
	Time    time.Time  `json:"time"` // the instant marked, in the data's time
	Note    string     `json:"note,omitempty"`
	At      time.Time  `json:"at"` // wall-clock time the mark was made
}

// BisectSession is the open bisect session: the search, by hand, for the
// earliest known-bad instant of an incident. One session is open at a time.
type BisectSession struct {
	ID      int64        `json:"session"`
	Started time.Time    `json:"started"` // wall clock
	Marks   []BisectMark `json:"marks"`   // in the order they were made
}

// ErrNoBisect is returned for a bisect mark when no session is open.
var ErrNoBisect = errors.New("no bisect session")

// RequestClass is the shape of API requests as the apiserver saw them: the
// unit the control-plane rollup counts by. Users and user agents are folded
// (FoldUser, FoldUserAgent) so that a thousand kubelets or the workers of one
// job make one class; RequestClient keeps the raw users behind it.
type RequestClass struct {
	ID                                 int64
	Verb, Group, Resource, Subresource string
	// Scope is "cluster" (no namespace, no name), "namespace" (a
	// namespace, no name) or "object" (a name).
	Scope     string
	User      string // folded: FoldUser
	UserAgent string // folded: FoldUserAgent
}

// SlowLatency is the latency from which a request is kept one by one for
// SlowRequests (the stores index such records apart: SQLite's partial index
// names it as a literal). It is ten times etcd's guidance for a commit
// (25 ms at the 99th percentile): such a request waited on something.
const SlowLatency = 250 * time.Millisecond

// SlowVerbs are the verbs SlowRequests returns: the writes, which wait for
// etcd to commit them, and lists, which read etcd or the watch cache (a
// get's source is not in its record, and a watch runs as long as it is
// served).
var SlowVerbs = []string{"create", "delete", "deletecollection", "list", "patch", "update"}

// SlowRequest is one request that took SlowLatency or longer.
type SlowRequest struct {
	Class    RequestClass // its class (ID left 0: the fields name it)
	Received time.Time    // requestReceivedTimestamp
	Latency  time.Duration
	APFWait  time.Duration // its API Priority and Fairness queue wait
	Code     int
	Etcd     bool // a list whose semantics read etcd (ListFromEtcd)
}

// CompareSlow orders slow requests as SlowRequests returns them.
func CompareSlow(a, b SlowRequest) int {
	x, y := &a.Class, &b.Class
	return cmp.Or(a.Received.Compare(b.Received), strings.Compare(x.Verb, y.Verb), strings.Compare(x.Group, y.Group),
		strings.Compare(x.Resource, y.Resource), strings.Compare(x.Subresource, y.Subresource),
		strings.Compare(x.Scope, y.Scope), strings.Compare(x.User, y.User), strings.Compare(x.UserAgent, y.UserAgent),
		cmp.Compare(a.Latency, b.Latency), cmp.Compare(a.Code, b.Code), cmp.Compare(a.APFWait, b.APFWait),
		compareBool(a.Etcd, b.Etcd))
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// Request scopes.
const (
	ScopeCluster   = "cluster"
	ScopeNamespace = "namespace"
	ScopeObject    = "object"
)

// RequestSecond counts a class's requests received in one second: those
// whose record carries a response stage (ResponseStarted, ResponseComplete
// or Panic), so a watch counts from the moment it is served.
type RequestSecond struct {
	Class int64
	Sec   int64 // Unix seconds of requestReceivedTimestamp
	Count int64
}

// RequestStat aggregates a class's completed requests (ResponseComplete or
// Panic) received in one minute with one response code and one latency
// bucket. Code, latency and annotations are those of the request's latest
// stage, as on its record.
type RequestStat struct {
	Class         int64
	Minute        int64 // Unix seconds, a multiple of 60
	Code          int   // HTTP status; 0 if none
	LatencyBucket int   // LatencyBucket of the latency
	Count         int64
	// EtcdLists counts lists whose semantics read etcd (ListFromEtcd);
	// UnpagedLists counts cluster-scope lists without a limit.
	EtcdLists, UnpagedLists int64
	LatencySumNs            int64
	LatencyMaxNs            int64
	// APFQueueWaitMaxNs is the largest API Priority and Fairness queue wait
	// (annotation apiserver.latency.k8s.io/apf-queue-wait); 0 if none.
	APFQueueWaitMaxNs int64
}

// RequestClient counts the requests of one raw (unfolded) user behind a
// class in one minute: the population behind a burst. It counts as
// RequestSecond does.
type RequestClient struct {
	Class  int64
	Minute int64 // Unix seconds, a multiple of 60
	User   string
	Count  int64
	// LastMinute is set by RequestSummary only: the user's last minute in
	// the window (Minute is then its first).
	LastMinute int64
}

// RequestStats is the control-plane rollup over a window: the classes the
// rows refer to (by ID), per-second counts ordered by (Class, Sec), and
// per-minute stats and clients ordered by (Minute, Class, ...).
type RequestStats struct {
	Classes []RequestClass
	Seconds []RequestSecond
	Stats   []RequestStat
	Clients []RequestClient
}

// HistogramQuery asks how many records fell in each of Buckets equal spans
// of [Since, Until): all those matching Where (nil: every record), and those
// matching both Where and Bad (nil: none are counted bad).
type HistogramQuery struct {
	Since, Until time.Time // both required; Until after Since
	Buckets      int       // at least 1
	Where, Bad   *Filter
}

// Bucket counts the records of one span of a histogram.
type Bucket struct {
	Start, End time.Time // [Start, End)
	All, Bad   int64
}

// The store is read and written through roles, in the manner of
// Prometheus's storage.Appendable and storage.Queryable: each consumer takes
// (or declares, narrower still) the one it uses, and Store is them all, for
// whoever opens a store. timeline/sqlite implements Store.

// Appender writes the evidence: an ingest run, and the batches that bring
// its records and versions in.
type Appender interface {
	// BeginRun records the start of an ingest run and returns its id.
	BeginRun(ctx context.Context, run *IngestRun) error
	// FinishRun records the run's final state.
	FinishRun(ctx context.Context, run *IngestRun) error
	// Batch opens a write batch for the run.
	Batch(ctx context.Context, run int64) (Batch, error)
}

// Reader reads the evidence: records, object versions, and the runs that
// brought them in.
type Reader interface {
	// Records yields the records matching q, in time order.
	Records(ctx context.Context, q Query) iter.Seq2[*Record, error]
	// Bounds returns the times of the first and last evidence held.
	Bounds(ctx context.Context) (first, last time.Time, err error)
	// Runs lists the ingest runs, oldest first.
	Runs(ctx context.Context) ([]IngestRun, error)
	// Versions returns the object versions q selects with their (redacted)
	// contents, ordered by object then time, or by time (q.ByTime).
	Versions(ctx context.Context, q VersionQuery) ([]ObjectVersion, error)
	// Gaps lists spans of at least min with no records, per source kind.
	Gaps(ctx context.Context, min time.Duration) ([]Gap, error)
	// CountRecords counts the records in [since, until) (zero: unbounded)
	// per source kind.
	CountRecords(ctx context.Context, since, until time.Time) (map[SourceKind]int64, error)
	// Histogram counts the records in equal spans of time (see
	// HistogramQuery), for a timeline drawn at a glance. Its cost is that
	// of counting the matching entries of the time index, not of reading
	// the records.
	Histogram(ctx context.Context, q HistogramQuery) ([]Bucket, error)
}

// IngestState is what an ingester reads back of what earlier runs
// committed: where a watch stands, and which objects were last seen alive
// (so that a relist can tell which were deleted meanwhile).
type IngestState interface {
	// Cursor returns the resourceVersion a watch last committed, or "".
	Cursor(ctx context.Context, name string) (string, error)
	// LiveObjects lists the objects of a resource (in one namespace, or all
	// for "") that have versions and no recorded deletion.
	LiveObjects(ctx context.Context, group, resource, namespace string) ([]ObjectRef, error)
}

// BisectLog keeps the bisect sessions and their marks: the user's
// judgements of instants, not evidence.
type BisectLog interface {
	// StartBisect opens a bisect session at wall-clock time at holding
	// marks (their Session is ignored), ending the open one if any, in one
	// transaction, and returns the new session's id.
	StartBisect(ctx context.Context, at time.Time, marks ...BisectMark) (int64, error)
	// Bisect returns the open bisect session with its marks, or nil.
	Bisect(ctx context.Context) (*BisectSession, error)
	// AddBisectMark adds a mark to the open session, which must be
	// m.Session; else it returns ErrNoBisect. Whether the mark contradicts
	// the others is the caller's to judge.
	AddBisectMark(ctx context.Context, m BisectMark) error
	// ResetBisect ends the open bisect session at wall-clock time at (its
	// marks are kept, no longer open); it reports whether one was open.
	ResetBisect(ctx context.Context, at time.Time) (bool, error)
}

// Rollup reads the control-plane rollup of API requests (see
// RequestClass), which the store keeps as records are written, so it
// answers in time proportional to the rows returned.
type Rollup interface {
	// RequestSummary returns the rollup of the requests whose second or
	// minute lies in [since, until) (zero: unbounded), folded over the
	// window for analyses of long spans: Seconds per (Class, Sec); Stats
	// summed per (Class, Code, LatencyBucket) with Minute 0; Clients one
	// per (Class, User), with the user's first and last minute; and the
	// classes those rows refer to, by ID. Each list is ordered by the
	// fields named (users by name), so two stores holding the same
	// evidence answer alike.
	RequestSummary(ctx context.Context, since, until time.Time) (*RequestStats, error)
	// SlowRequests returns the requests received in [since, until)
	// (zero: unbounded) that took SlowLatency or longer, as their final
	// stage left them, of the verbs in SlowVerbs: each with its second,
	// where the rollup keeps latency by minute. Ordered by (Received,
	// Class fields, Latency, Code, APFWait, Etcd), so two stores holding
	// the same evidence answer alike.
	SlowRequests(ctx context.Context, since, until time.Time) ([]SlowRequest, error)
}

// Store is every role of the timeline, for whoever opens one (and closes
// it).
type Store interface {
	Appender
	Reader
	IngestState
	BisectLog
	Rollup
	SeriesReader
	Close() error
}
