package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/rollup"
)

// The request rollup (tables req_*, migration 0005) is kept by the batch
// writer: each batch adds up what its records change in memory
// (timeline/rollup, whose rules the migration's backfill writes again in
// SQL) and writes the sums with upserts at Commit, in the batch's
// transaction, so it commits or rolls back with the records.

const finalStages = rollup.FinalStages

// classCache maps classes to their req_class ids.
type classCache struct {
	mu sync.Mutex
	m  map[rollup.Class]int64
}

// classID returns the id of a class, adding it if new.
func (b *batch) classID(ctx context.Context, k rollup.Class) (int64, error) {
	c := &b.s.classes
	c.mu.Lock()
	id, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return id, nil
	}
	ids, err := b.internAll(ctx, k.Verb, k.Group, k.Resource, k.Subresource, k.User, k.UserAgent)
	if err != nil {
		return 0, err
	}
	args := []any{ids[0], ids[1], ids[2], ids[3], k.Scope, ids[4], ids[5]}
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
	c.m[k.Clone()] = id // not the batch's records' strings (rollup.Request.Clone)
	c.mu.Unlock()
	return id, nil
}

// flushRollup writes the batch's rollup into its transaction.
func (b *batch) flushRollup(ctx context.Context) error {
	u := &b.roll
	if u.Empty() {
		return nil
	}
	// New classes get ids in a fixed order, so the same input gives the
	// same ids.
	ids, err := u.IDs(func(k rollup.Class) (int64, error) { return b.classID(ctx, k) })
	if err != nil {
		return err
	}
	if err := b.flushSeconds(ctx, u.Seconds(ids)); err != nil {
		return err
	}
	if err := b.flushClients(ctx, u.Clients(ids)); err != nil {
		return err
	}
	if err := b.flushStats(ctx, u.Stats(ids)); err != nil {
		return err
	}
	b.roll = rollup.Delta{}
	return nil
}

// flushSeconds writes the per-second counts, in key order.
func (b *batch) flushSeconds(ctx context.Context, secs []rollup.Second) error {
	st, err := b.stmt(ctx, &b.putSec, `INSERT INTO req_second (class, sec, n) VALUES (?, ?, ?)
		ON CONFLICT (class, sec) DO UPDATE SET n = n + excluded.n`)
	if err != nil {
		return err
	}
	for _, r := range secs {
		if _, err := st.ExecContext(ctx, r.Class, r.Sec, r.N); err != nil {
			return fmt.Errorf("write req_second: %w", err)
		}
	}
	return nil
}

// flushClients writes the per-minute counts of each raw user, in key order.
func (b *batch) flushClients(ctx context.Context, clients []rollup.Client) error {
	type clientRow struct{ minute, class, user, n int64 }
	rows := make([]clientRow, 0, len(clients))
	for _, c := range clients {
		uid, err := b.intern(ctx, c.User)
		if err != nil {
			return err
		}
		rows = append(rows, clientRow{c.Minute, c.Class, uid, c.N})
	}
	slices.SortFunc(rows, func(a, b clientRow) int {
		return cmp.Or(cmp.Compare(a.minute, b.minute), cmp.Compare(a.class, b.class), cmp.Compare(a.user, b.user))
	})
	st, err := b.stmt(ctx, &b.putClient, `INSERT INTO req_client (minute, class, user, n) VALUES (?, ?, ?, ?)
		ON CONFLICT (minute, class, user) DO UPDATE SET n = n + excluded.n`)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if _, err := st.ExecContext(ctx, r.minute, r.class, r.user, r.n); err != nil {
			return fmt.Errorf("write req_client: %w", err)
		}
	}
	return nil
}

// flushStats writes the per-minute aggregates, in key order, and removes
// those the batch took back to nothing.
func (b *batch) flushStats(ctx context.Context, stats []rollup.Stat) error {
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
		// A cell the batch only took requests back from has maxima of
		// math.MinInt64: max() leaves the row's as they are.
		if _, err := st.ExecContext(ctx, r.Minute, r.Class, r.Code, r.Bucket, r.N, r.Etcd, r.Unpaged,
			r.LatSum, r.LatMax, r.APFMax); err != nil {
			return fmt.Errorf("write req_stat: %w", err)
		}
		if r.Retracted {
			if _, err := b.tx.ExecContext(ctx, `DELETE FROM req_stat WHERE minute = ? AND class = ? AND code = ?
				AND bucket = ? AND n <= 0`, r.Minute, r.Class, r.Code, r.Bucket); err != nil {
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

// present stands for an interned string that is there (id not 0) where
// only its presence counts: RequestScope asks no more of a namespace or a
// name.
func present(id int64) string {
	if id == 0 {
		return ""
	}
	return "\x00"
}

// uriOf rebuilds a request URI (decodeURI), reading the namespace and
// the name only where the template holds them.
func (s *Store) uriOf(ctx context.Context, tpl, namespace, name int64, rest string) (string, error) {
	if tpl == 0 {
		return rest, nil
	}
	path, err := s.strOf(ctx, tpl)
	if err != nil {
		return "", err
	}
	var ns, nm string
	if strings.IndexByte(path, 1) >= 0 {
		if ns, err = s.strOf(ctx, namespace); err != nil {
			return "", err
		}
	}
	if strings.IndexByte(path, 2) >= 0 {
		if nm, err = s.strOf(ctx, name); err != nil {
			return "", err
		}
	}
	return decodeURI(path, ns, nm, rest), nil
}

// RequestSummary is RequestStats folded over the window (see timeline.Rollup):
// SQLite sums the minutes, so a long window costs one row per class, code
// and bucket, and one per class and user.
func (s *Store) RequestSummary(ctx context.Context, since, until time.Time) (*timeline.RequestStats, error) {
	return s.requestStats(ctx, since, until, true)
}

func (s *Store) requestStats(ctx context.Context, since, until time.Time, summary bool) (*timeline.RequestStats, error) {
	lo, hi := rollup.Window(since, until)
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

// secondsFrom is the rows of req_second in [?, ?): one range of the
// primary key per class, in class order (no sort).
const secondsFrom = `FROM req_class c CROSS JOIN req_second q ON q.class = c.id AND q.sec >= ? AND q.sec < ?`

// secondsRead reads those rows, and secondsCount counts them.
const (
	secondsRead  = `SELECT q.class, q.sec, q.n ` + secondsFrom + ` ORDER BY c.id, q.sec`
	secondsCount = `SELECT count(*) ` + secondsFrom
)

// seconds reads the per-second counts.
func (rd *rollupRead) seconds(ctx context.Context) error {
	s, out, used, lo, hi := rd.s, rd.out, rd.used, rd.lo, rd.hi
	// The seconds run to millions (1.9 M on the 10 M-line benchmark log):
	// the slice is sized once, from a count of them (by the same ranges),
	// where append grew it through copies of itself, each in fresh pages
	// that the kernel faulted in (a third of controlplane's CPU went to
	// system time).
	var n int
	if err := s.db.QueryRowContext(ctx, secondsCount, lo, hi).Scan(&n); err != nil {
		return fmt.Errorf("request stats: %w", err)
	}
	out.Seconds = slices.Grow(out.Seconds, n)
	rows, err := s.db.QueryContext(ctx, secondsRead, lo, hi)
	if err != nil {
		return fmt.Errorf("request stats: %w", err)
	}
	var r timeline.RequestSecond // one for every row: Scan's pointers make it escape
	for rows.Next() {
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
		lat_max, apf_wait_max FROM req_stat WHERE minute >= ? AND minute < ?
		ORDER BY minute, class, code, bucket`
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
			hi, lo int64 // the latency sum's high and low 32 bits, summed apart (see rollup.JoinSum)
		)
		if err := rows.Scan(&r.Class, &r.Minute, &r.Code, &r.LatencyBucket, &r.Count, &r.EtcdLists, &r.UnpagedLists,
			&hi, &lo, &r.LatencyMaxNs, &r.APFQueueWaitMaxNs); err != nil {
			rows.Close()
			return fmt.Errorf("request stats: %w", err)
		}
		r.LatencySumNs = rollup.JoinSum(hi, lo)
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
	if summary {
		// The rows come by the users' string ids, which tell the order
		// they were first written in: a summary orders them by name
		// instead, as any store can (timeline.Rollup).
		slices.SortFunc(out.Clients, func(a, b timeline.RequestClient) int {
			return cmp.Or(cmp.Compare(a.Class, b.Class), strings.Compare(a.User, b.User))
		})
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
