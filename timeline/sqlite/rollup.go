package sqlite

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/timeline"
)

// The request rollup (tables req_*, migration 0005) is kept by the batch
// writer: each batch adds up what its records change in memory and writes
// the sums with upserts at Commit, in the batch's transaction, so it
// commits or rolls back with the records. The rules, which the migration's
// backfill writes again in SQL:
//
//   - Audit records with a resource count; non-resource requests
//     (/healthz, /metrics) and records without a stage (audit lines with
//     no auditID, whose stages cannot be joined) do not.
//   - A request counts in req_second and req_client once, when its record
//     first carries a response stage (ResponseStarted, ResponseComplete or
//     Panic). One seen only at RequestReceived does not count.
//   - It counts in req_stat once, when its record first carries a final
//     stage (ResponseComplete or Panic), with the record's code, latency
//     and annotations then: those of its latest stage. A long-running
//     request (a watch) is thus in req_stat from its end, with its whole
//     duration as latency. Were a Panic to join a record that already has
//     ResponseComplete (the apiserver writes one or the other), the request
//     moves to its Panic values; the counts and sums of the cell it leaves
//     stay exact, but that cell's maxima may then overstate.
//   - The class, time and URI are the record's (those of the stage first
//     written), not those of a later stage.
//
// Every quantity is then a function of the records held, whatever the
// order and batching of the stages: re-ingesting a file changes nothing,
// and the backfill of a database written before 0005 gives the same rows.

const (
	responseStages = timeline.StageResponseStarted | timeline.StageResponseComplete | timeline.StagePanic
	finalStages    = timeline.StageResponseComplete | timeline.StagePanic
	apfAnnotation  = "apiserver.latency.k8s.io/apf-queue-wait"
)

// classKey is a request class by its (folded) strings.
type classKey struct {
	verb, group, resource, subresource, scope, user, userAgent string
}

func (a classKey) compare(b classKey) int {
	return cmp.Or(strings.Compare(a.verb, b.verb), strings.Compare(a.group, b.group),
		strings.Compare(a.resource, b.resource), strings.Compare(a.subresource, b.subresource),
		strings.Compare(a.scope, b.scope), strings.Compare(a.user, b.user), strings.Compare(a.userAgent, b.userAgent))
}

// classCache maps classes to their req_class ids.
type classCache struct {
	mu sync.Mutex
	m  map[classKey]int64
}

type (
	// The keys name a class by its index in rollup.classes: hashing one
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
	statAgg struct {
		n, etcd, unpaged, latSum, latMax, apfMax int64
		retracted                                bool // n was decremented: the row may reach 0
		added                                    bool // latMax and apfMax hold values
	}
	clientKey struct {
		class  int32
		minute int64
		user   string
	}
)

// rollup is what one batch adds to the req_* tables.
type rollup struct {
	classes []classKey         // the batch's classes, by index
	index   map[classKey]int32 // and their indexes
	secs    map[secKey]int64
	stats   map[statKey]*statAgg
	clients map[clientKey]int64
}

// classIndex returns the batch's index of a class, adding it if new.
func (u *rollup) classIndex(k classKey) int32 {
	i, ok := u.index[k]
	if !ok {
		i = int32(len(u.classes))
		u.classes = append(u.classes, k)
		u.index[k] = i
	}
	return i
}

// request is what the rollup needs of a record's fixed fields.
type request struct {
	class  classKey
	timeNS int64
	user   string // raw
	etcd   bool   // a list whose semantics read etcd
	unpag  bool   // a cluster-scope list without a limit
}

// reqValues are the fields a later stage may change.
type reqValues struct {
	code    int
	latency int64
	apf     int64
}

func newRequest(verb, group, resource, subresource, namespace, name, user, userAgent, uri string, t int64) request {
	scope := timeline.RequestScope(namespace, name)
	rq := request{
		class: classKey{verb: verb, group: group, resource: resource, subresource: subresource, scope: scope,
			user: timeline.FoldUser(user), userAgent: timeline.FoldUserAgent(userAgent)},
		timeNS: t,
		user:   user,
	}
	if verb == "list" {
		rq.etcd = timeline.ListFromEtcd(uri)
		rq.unpag = scope == timeline.ScopeCluster && !timeline.ListHasLimit(uri)
	}
	return rq
}

// apfQueueWait reads the APF queue wait annotation from a record's extra
// JSON. The value is a Go duration as Duration.String writes it (always
// ending in "s"); anything else is 0.
func apfQueueWait(extra []byte) int64 {
	if !bytes.Contains(extra, []byte("apf-queue-wait")) {
		return 0
	}
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

// count adds what a record's change from stages old to old|in does to the
// rollup: nv are its values after the change, ov before.
func (u *rollup) count(rq *request, old, in timeline.Stage, nv, ov reqValues) {
	now := old | in
	sec := rq.timeNS / int64(time.Second)
	minute := sec / 60 * 60
	if u.secs == nil {
		u.secs, u.clients, u.stats = map[secKey]int64{}, map[clientKey]int64{}, map[statKey]*statAgg{}
		u.index = map[classKey]int32{}
	}
	counts := old&responseStages == 0 && now&responseStages != 0
	stats := now&finalStages != 0 && (old&finalStages == 0 || in > old)
	if !counts && !stats {
		return
	}
	class := u.classIndex(rq.class)
	if counts {
		u.secs[secKey{class, sec}]++
		u.clients[clientKey{class, minute, rq.user}]++
	}
	switch {
	case !stats:
	case old&finalStages == 0:
		u.stat(rq, class, minute, nv, 1)
	default: // a later final stage replaces the values counted
		u.stat(rq, class, minute, ov, -1)
		u.stat(rq, class, minute, nv, 1)
	}
}

func (u *rollup) stat(rq *request, class int32, minute int64, v reqValues, sign int64) {
	k := statKey{class, minute, v.code, timeline.LatencyBucket(time.Duration(v.latency))}
	a := u.stats[k]
	if a == nil {
		a = &statAgg{}
		u.stats[k] = a
	}
	a.n += sign
	a.latSum = satAdd(a.latSum, sign*v.latency)
	if rq.etcd {
		a.etcd += sign
	}
	if rq.unpag {
		a.unpaged += sign
	}
	if sign < 0 {
		a.retracted = true
		return
	}
	if !a.added {
		a.added, a.latMax, a.apfMax = true, v.latency, v.apf
	}
	a.latMax = max(a.latMax, v.latency)
	a.apfMax = max(a.apfMax, v.apf)
}

// classID returns the id of a class, adding it if new.
func (b *batch) classID(ctx context.Context, k classKey) (int64, error) {
	c := &b.s.classes
	c.mu.Lock()
	id, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return id, nil
	}
	ids, err := b.internAll(ctx, k.verb, k.group, k.resource, k.subresource, k.user, k.userAgent)
	if err != nil {
		return 0, err
	}
	args := []any{ids[0], ids[1], ids[2], ids[3], k.scope, ids[4], ids[5]}
	get, err := b.stmt(ctx, &b.getClass, `SELECT id FROM req_class WHERE verb = ? AND api_group = ? AND resource = ?
		AND subresource = ? AND scope = ? AND user = ? AND user_agent = ?`)
	if err != nil {
		return 0, err
	}
	err = get.QueryRowContext(ctx, args...).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		put, perr := b.stmt(ctx, &b.putClass, `INSERT INTO req_class (verb, api_group, resource, subresource, scope,
			user, user_agent) VALUES (?, ?, ?, ?, ?, ?, ?)`)
		if perr != nil {
			return 0, perr
		}
		res, perr := put.ExecContext(ctx, args...)
		if perr != nil {
			return 0, perr
		}
		id, err = res.LastInsertId()
		b.newClasses = append(b.newClasses, k)
	}
	if err != nil {
		return 0, fmt.Errorf("request class: %w", err)
	}
	c.mu.Lock()
	if len(c.m) >= maxCachedStrs {
		clear(c.m)
	}
	c.m[k] = id
	c.mu.Unlock()
	return id, nil
}

// flushRollup writes the batch's rollup into its transaction.
func (b *batch) flushRollup(ctx context.Context) error {
	u := &b.roll
	if len(u.secs) == 0 && len(u.stats) == 0 {
		return nil
	}
	ids, err := b.rollupClassIDs(ctx)
	if err != nil {
		return err
	}
	if err := b.flushSeconds(ctx, ids); err != nil {
		return err
	}
	if err := b.flushClients(ctx, ids); err != nil {
		return err
	}
	if err := b.flushStats(ctx, ids); err != nil {
		return err
	}
	b.roll = rollup{}
	return nil
}

// rollupClassIDs returns the stored id of each class of the batch's rollup,
// by the batch's index, storing the new ones.
func (b *batch) rollupClassIDs(ctx context.Context) ([]int64, error) {
	u := &b.roll
	// New classes get ids in a fixed order, so the same input gives the
	// same ids.
	classes := slices.Clone(u.classes)
	slices.SortFunc(classes, classKey.compare)
	byKey := make(map[classKey]int64, len(classes))
	for _, k := range classes {
		id, err := b.classID(ctx, k)
		if err != nil {
			return nil, err
		}
		byKey[k] = id
	}
	ids := make([]int64, len(u.classes)) // by the batch's index
	for i, k := range u.classes {
		ids[i] = byKey[k]
	}
	return ids, nil
}

// flushSeconds writes the per-second counts, in key order.
func (b *batch) flushSeconds(ctx context.Context, ids []int64) error {
	u := &b.roll
	type secRow struct{ class, sec, n int64 }
	secs := make([]secRow, 0, len(u.secs))
	for k, n := range u.secs {
		secs = append(secs, secRow{ids[k.class], k.sec, n})
	}
	slices.SortFunc(secs, func(a, b secRow) int { return cmp.Or(cmp.Compare(a.class, b.class), cmp.Compare(a.sec, b.sec)) })
	st, err := b.stmt(ctx, &b.putSec, `INSERT INTO req_second (class, sec, n) VALUES (?, ?, ?)
		ON CONFLICT (class, sec) DO UPDATE SET n = n + excluded.n`)
	if err != nil {
		return err
	}
	for _, r := range secs {
		if _, err := st.ExecContext(ctx, r.class, r.sec, r.n); err != nil {
			return fmt.Errorf("write req_second: %w", err)
		}
	}
	return nil
}

// flushClients writes the per-minute counts of each raw user, in key order.
func (b *batch) flushClients(ctx context.Context, ids []int64) error {
	u := &b.roll
	type clientRow struct{ minute, class, user, n int64 }
	clients := make([]clientRow, 0, len(u.clients))
	for k, n := range u.clients {
		uid, err := b.intern(ctx, k.user)
		if err != nil {
			return err
		}
		clients = append(clients, clientRow{k.minute, ids[k.class], uid, n})
	}
	slices.SortFunc(clients, func(a, b clientRow) int {
		return cmp.Or(cmp.Compare(a.minute, b.minute), cmp.Compare(a.class, b.class), cmp.Compare(a.user, b.user))
	})
	st, err := b.stmt(ctx, &b.putClient, `INSERT INTO req_client (minute, class, user, n) VALUES (?, ?, ?, ?)
		ON CONFLICT (minute, class, user) DO UPDATE SET n = n + excluded.n`)
	if err != nil {
		return err
	}
	for _, r := range clients {
		if _, err := st.ExecContext(ctx, r.minute, r.class, r.user, r.n); err != nil {
			return fmt.Errorf("write req_client: %w", err)
		}
	}
	return nil
}

// flushStats writes the per-minute aggregates, in key order, and removes
// those the batch took back to nothing.
func (b *batch) flushStats(ctx context.Context, ids []int64) error {
	u := &b.roll
	type statRow struct {
		minute, class int64
		code, bucket  int
		a             *statAgg
	}
	stats := make([]statRow, 0, len(u.stats))
	for k, a := range u.stats {
		stats = append(stats, statRow{k.minute, ids[k.class], k.code, k.bucket, a})
	}
	slices.SortFunc(stats, func(a, b statRow) int {
		return cmp.Or(cmp.Compare(a.minute, b.minute), cmp.Compare(a.class, b.class), cmp.Compare(a.code, b.code),
			cmp.Compare(a.bucket, b.bucket))
	})
	st, err := b.stmt(ctx, &b.putStat, `INSERT INTO req_stat (minute, class, code, bucket, n, etcd_lists, unpaged_lists,
		lat_sum, lat_max, apf_wait_max) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (minute, class, code, bucket) DO UPDATE SET n = n + excluded.n,
		etcd_lists = etcd_lists + excluded.etcd_lists, unpaged_lists = unpaged_lists + excluded.unpaged_lists,
		lat_sum = CAST(lat_sum + excluded.lat_sum AS INTEGER), lat_max = max(lat_max, excluded.lat_max),
		apf_wait_max = max(apf_wait_max, excluded.apf_wait_max)`)
	if err != nil {
		return err
	}
	for _, r := range stats {
		a := r.a
		if !a.added { // only taken back: leave the maxima as they are
			a.latMax, a.apfMax = math.MinInt64, math.MinInt64
		}
		if _, err := st.ExecContext(ctx, r.minute, r.class, r.code, r.bucket, a.n, a.etcd, a.unpaged,
			a.latSum, a.latMax, a.apfMax); err != nil {
			return fmt.Errorf("write req_stat: %w", err)
		}
		if a.retracted {
			if _, err := b.tx.ExecContext(ctx, `DELETE FROM req_stat WHERE minute = ? AND class = ? AND code = ?
				AND bucket = ? AND n <= 0`, r.minute, r.class, r.code, r.bucket); err != nil {
				return fmt.Errorf("write req_stat: %w", err)
			}
		}
	}
	return nil
}

// RequestStats returns the request rollup in [since, until) unfolded:
// per-second rows by second, per-minute rows by the minute's start. No
// analysis reads the rollup unfolded (they read RequestSummary, the
// timeline.Rollup role), so it is not part of timeline.Store: the rollup's
// own tests and benchmark read the rows as written through it.
func (s *Store) RequestStats(ctx context.Context, since, until time.Time) (*timeline.RequestStats, error) {
	return s.requestStats(ctx, since, until, false)
}

// RequestSummary is RequestStats folded over the window (see timeline.Rollup):
// SQLite sums the minutes, so a long window costs one row per class, code
// and bucket, and one per class and user.
func (s *Store) RequestSummary(ctx context.Context, since, until time.Time) (*timeline.RequestStats, error) {
	return s.requestStats(ctx, since, until, true)
}

func (s *Store) requestStats(ctx context.Context, since, until time.Time, summary bool) (*timeline.RequestStats, error) {
	lo, hi := int64(-1<<63), int64(1<<63-1)
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
	rd := &rollupRead{s: s, lo: lo, hi: hi, summary: summary, all: since.IsZero() && until.IsZero(),
		out: &timeline.RequestStats{}, used: map[int64]bool{}}
	for _, read := range []func(context.Context) error{rd.seconds, rd.stats, rd.clients, rd.classes} {
		if err := read(ctx); err != nil {
			return nil, err
		}
	}
	return rd.out, nil
}

// rollupRead is one read of the rollup: the rows of [lo, hi) (Unix
// seconds), folded over it or not, and the classes they refer to.
type rollupRead struct {
	s       *Store
	lo, hi  int64
	summary bool
	// all: over all the evidence, the summaries read the covering indexes
	// by class in order (no sort); over a window, the minutes' key range.
	all  bool
	out  *timeline.RequestStats
	used map[int64]bool // the classes the rows refer to
}

// seconds reads the per-second counts.
func (rd *rollupRead) seconds(ctx context.Context) error {
	s, out, used, lo, hi := rd.s, rd.out, rd.used, rd.lo, rd.hi
	// One range of the primary key per class, in class order: no sort.
	rows, err := s.db.QueryContext(ctx, `SELECT q.class, q.sec, q.n FROM req_class c CROSS JOIN req_second q
		ON q.class = c.id AND q.sec >= ? AND q.sec < ? ORDER BY c.id, q.sec`, lo, hi)
	if err != nil {
		return fmt.Errorf("request stats: %w", err)
	}
	for rows.Next() {
		var r timeline.RequestSecond
		if err := rows.Scan(&r.Class, &r.Sec, &r.Count); err != nil {
			rows.Close()
			return fmt.Errorf("request stats: %w", err)
		}
		used[r.Class] = true
		out.Seconds = append(out.Seconds, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("request stats: %w", err)
	}
	return nil
}

// stats reads the per-minute aggregates, or their sums over the window.
func (rd *rollupRead) stats(ctx context.Context) error {
	s, out, used, lo, hi, summary, all := rd.s, rd.out, rd.used, rd.lo, rd.hi, rd.summary, rd.all
	statQuery := `SELECT class, minute, code, bucket, n, etcd_lists, unpaged_lists, lat_sum >> 32, lat_sum & 4294967295,
		lat_max, apf_wait_max FROM req_stat WHERE minute >= ? AND minute < ? ORDER BY minute, class, code, bucket`
	if summary {
		statQuery = `SELECT class, 0, code, bucket, sum(n), sum(etcd_lists), sum(unpaged_lists), sum(lat_sum >> 32), sum(lat_sum & 4294967295),
		max(lat_max), max(apf_wait_max) FROM req_stat WHERE minute >= ? AND minute < ? GROUP BY class, code, bucket
		ORDER BY class, code, bucket`
		if all {
			statQuery = strings.Replace(statQuery, "WHERE minute >= ? AND minute < ?", "WHERE ? < ?", 1)
		}
	}
	rows, err := s.db.QueryContext(ctx, statQuery, lo, hi)
	if err != nil {
		return fmt.Errorf("request stats: %w", err)
	}
	for rows.Next() {
		var (
			r      timeline.RequestStat
			hi, lo int64 // the latency sum's high and low 32 bits, summed apart (see joinSum)
		)
		if err := rows.Scan(&r.Class, &r.Minute, &r.Code, &r.LatencyBucket, &r.Count, &r.EtcdLists, &r.UnpagedLists,
			&hi, &lo, &r.LatencyMaxNs, &r.APFQueueWaitMaxNs); err != nil {
			rows.Close()
			return fmt.Errorf("request stats: %w", err)
		}
		r.LatencySumNs = joinSum(hi, lo)
		used[r.Class] = true
		out.Stats = append(out.Stats, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("request stats: %w", err)
	}
	return nil
}

// clients reads the per-minute counts of raw users, or their sums over
// the window with each user's first and last minute.
func (rd *rollupRead) clients(ctx context.Context) error {
	s, out, used, lo, hi, summary, all := rd.s, rd.out, rd.used, rd.lo, rd.hi, rd.summary, rd.all
	clientQuery := `SELECT q.class, q.minute, q.user, q.n, 0 FROM req_client q
		WHERE q.minute >= ? AND q.minute < ? ORDER BY q.minute, q.class, q.user`
	if summary {
		clientQuery = `SELECT q.class, min(q.minute), q.user, sum(q.n), max(q.minute) FROM req_client q
		WHERE q.minute >= ? AND q.minute < ? GROUP BY q.class, q.user ORDER BY q.class, q.user`
		if all {
			clientQuery = strings.Replace(clientQuery, "WHERE q.minute >= ? AND q.minute < ?", "WHERE ? < ?", 1)
		}
	}
	rows, err := s.db.QueryContext(ctx, clientQuery, lo, hi)
	if err != nil {
		return fmt.Errorf("request stats: %w", err)
	}
	for rows.Next() {
		var (
			r    timeline.RequestClient
			user int64
		)
		if err := rows.Scan(&r.Class, &r.Minute, &user, &r.Count, &r.LastMinute); err != nil {
			rows.Close()
			return fmt.Errorf("request stats: %w", err)
		}
		if r.User, err = s.strOf(ctx, user); err != nil {
			rows.Close()
			return fmt.Errorf("request stats: %w", err)
		}
		used[r.Class] = true
		out.Clients = append(out.Clients, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("request stats: %w", err)
	}
	return nil
}

// classes reads the classes the rows refer to.
func (rd *rollupRead) classes(ctx context.Context) error {
	s, out, used := rd.s, rd.out, rd.used
	rows, err := s.db.QueryContext(ctx, `SELECT id, verb, api_group, resource, subresource, scope, user, user_agent
		FROM req_class ORDER BY id`)
	if err != nil {
		return fmt.Errorf("request classes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			c   timeline.RequestClass
			ids [6]int64
		)
		if err := rows.Scan(&c.ID, &ids[0], &ids[1], &ids[2], &ids[3], &c.Scope, &ids[4], &ids[5]); err != nil {
			return fmt.Errorf("request classes: %w", err)
		}
		if !used[c.ID] {
			continue
		}
		for i, dst := range []*string{&c.Verb, &c.Group, &c.Resource, &c.Subresource, &c.User, &c.UserAgent} {
			if *dst, err = s.strOf(ctx, ids[i]); err != nil {
				return fmt.Errorf("request classes: %w", err)
			}
		}
		out.Classes = append(out.Classes, c)
	}
	return rows.Err()
}

// satAdd is a + b, saturated at the ends of int64: a latency sum that
// cannot be held says "at least this much" rather than wrapping negative.
func satAdd(a, b int64) int64 {
	c := a + b
	switch {
	case a > 0 && b > 0 && c < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && c >= 0:
		return math.MinInt64
	}
	return c
}

// joinSum joins latency sums read as their high and low 32 bits (lat_sum >>
// 32 and lat_sum & 0xffffffff), saturating. SQLite's sum() fails with
// "integer overflow" where sums of int64 overflow, and total() loses the
// low digits; the parts cannot overflow for fewer than 2^31 rows. The
// writer saturates each row's lat_sum likewise (CAST of the REAL an
// overflowing + gives).
func joinSum(hi, lo int64) int64 {
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
