package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/faultline/faultline/timeline"
)

// The bisect sessions are few and small: a session's row is rewritten
// (ReplacingMergeTree by updated_ns) when it ends, and its marks are
// numbered in the order they were made.

// A store opened with a shard down (AllowPartial) refuses to write the
// log: the open session may be a row on that shard, unseen, so a new start
// would leave it open and an id taken from the shards that answer may be
// one it holds.

// bisectWritable returns an error naming a shard that is down, or nil.
func (s *Store) bisectWritable() error {
	if len(s.down) > 0 {
		return fmt.Errorf("the bisect log is written on every shard: %w", s.down[0])
	}
	return nil
}

// StartBisect ends the open bisect session, if any, and opens a new one
// holding marks.
func (s *Store) StartBisect(ctx context.Context, at time.Time, marks ...timeline.BisectMark) (int64, error) {
	for _, m := range marks {
		if err := m.Check(); err != nil {
			return 0, fmt.Errorf("start bisect: %w", err)
		}
	}
	if err := s.bisectWritable(); err != nil {
		return 0, fmt.Errorf("start bisect: %w", err)
	}
	if _, err := s.ResetBisect(ctx, at); err != nil {
		return 0, fmt.Errorf("start bisect: %w", err)
	}
	var max int64
	if err := s.conn.QueryRow(ctx, "SELECT toInt64(max(id)) FROM bisect_session").Scan(&max); err != nil {
		return 0, fmt.Errorf("start bisect: %w", s.shardErr(ctx, err))
	}
	id := max + 1
	if err := s.writeSession(ctx, id, wallNS(at), 0); err != nil {
		return 0, fmt.Errorf("start bisect: %w", err)
	}
	for i, m := range marks {
		if err := s.writeMark(ctx, id, int64(i+1), m); err != nil {
			return 0, fmt.Errorf("start bisect: %w", err)
		}
	}
	return id, nil
}

func (s *Store) writeSession(ctx context.Context, id, started, ended int64) error {
	return s.exec(ctx, insert("bisect_session"), id, started, ended, s.stamp())
}

func (s *Store) writeMark(ctx context.Context, session, seq int64, m timeline.BisectMark) error {
	return s.exec(ctx, insert("bisect_mark"), session, seq, string(m.Kind), ns(m.Time), m.Note, wallNS(m.At))
}

// exec inserts one row.
func (s *Store) exec(ctx context.Context, insert string, vals ...any) error {
	b, err := s.conn.PrepareBatch(ctx, insert)
	if err != nil {
		return s.shardErr(ctx, err)
	}
	if err := b.Append(vals...); err != nil {
		return err
	}
	return s.shardErr(ctx, b.Send())
}

// openSession returns the open session's id and start, or 0.
func (s *Store) openSession(ctx context.Context) (id, started int64, err error) {
	rows, err := s.conn.Query(ctx, "SELECT id, started_ns FROM "+final("bisect_session", "ended_ns = 0")+" ORDER BY id DESC LIMIT 1")
	if err != nil {
		return 0, 0, s.shardErr(ctx, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(&id, &started); err != nil {
			return 0, 0, err
		}
	}
	return id, started, rows.Err()
}

// Bisect returns the open bisect session and its marks in the order they
// were made, or nil when none is open.
func (s *Store) Bisect(ctx context.Context) (*timeline.BisectSession, error) {
	id, started, err := s.openSession(ctx)
	if err != nil {
		return nil, fmt.Errorf("read bisect session: %w", err)
	}
	if id == 0 {
		return nil, nil
	}
	b := &timeline.BisectSession{ID: id, Started: fromNS(started)}
	rows, err := s.conn.Query(ctx, "SELECT kind, time_ns, note, at_ns FROM "+final("bisect_mark", "session_id = ?")+" ORDER BY seq", id)
	if err != nil {
		return nil, fmt.Errorf("read bisect marks: %w", s.shardErr(ctx, err))
	}
	defer rows.Close()
	for rows.Next() {
		m := timeline.BisectMark{Session: id}
		var kind string
		var t, at int64
		if err := rows.Scan(&kind, &t, &m.Note, &at); err != nil {
			return nil, fmt.Errorf("read bisect marks: %w", err)
		}
		m.Kind, m.Time, m.At = timeline.BisectKind(kind), time.Unix(0, t).UTC(), fromNS(at)
		b.Marks = append(b.Marks, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read bisect marks: %w", err)
	}
	return b, nil
}

// AddBisectMark adds m to the open session m.Session; ErrNoBisect if that
// session is not open.
func (s *Store) AddBisectMark(ctx context.Context, m timeline.BisectMark) error {
	if err := m.Check(); err != nil {
		return fmt.Errorf("add bisect mark: %w", err)
	}
	if err := s.bisectWritable(); err != nil {
		return fmt.Errorf("add bisect mark: %w", err)
	}
	id, _, err := s.openSession(ctx)
	if err != nil {
		return fmt.Errorf("add bisect mark: %w", err)
	}
	if id == 0 || id != m.Session {
		return timeline.ErrNoBisect
	}
	var n uint64
	if err := s.conn.QueryRow(ctx, "SELECT count() FROM "+final("bisect_mark", "session_id = ?"), id).Scan(&n); err != nil {
		return fmt.Errorf("add bisect mark: %w", s.shardErr(ctx, err))
	}
	if err := s.writeMark(ctx, id, int64(n)+1, m); err != nil {
		return fmt.Errorf("add bisect mark: %w", err)
	}
	return nil
}

// ResetBisect ends the open bisect session, keeping its marks.
func (s *Store) ResetBisect(ctx context.Context, at time.Time) (bool, error) {
	if err := s.bisectWritable(); err != nil {
		return false, fmt.Errorf("reset bisect: %w", err)
	}
	id, started, err := s.openSession(ctx)
	if err != nil {
		return false, fmt.Errorf("reset bisect: %w", err)
	}
	if id == 0 {
		return false, nil
	}
	if err := s.writeSession(ctx, id, started, wallNS(at)); err != nil {
		return false, fmt.Errorf("reset bisect: %w", err)
	}
	return true, nil
}

func wallNS(t time.Time) int64 { return timeline.WallNS(t) }
