package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/faultline/faultline/timeline"
)

// StartBisect ends the open bisect session, if any, and opens a new one
// holding marks, in one transaction.
func (s *Store) StartBisect(ctx context.Context, at time.Time, marks ...timeline.BisectMark) (int64, error) {
	for _, m := range marks {
		if err := m.Check(); err != nil {
			return 0, fmt.Errorf("start bisect: %w", err)
		}
	}
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return 0, fmt.Errorf("start bisect: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "UPDATE bisect_session SET ended_ns = ? WHERE ended_ns = 0", wallNS(at)); err != nil {
		return 0, fmt.Errorf("start bisect: %w", err)
	}
	res, err := tx.ExecContext(ctx, "INSERT INTO bisect_session (started_ns) VALUES (?)", wallNS(at))
	if err != nil {
		return 0, fmt.Errorf("start bisect: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("start bisect: %w", err)
	}
	for _, m := range marks {
		if _, err := tx.ExecContext(ctx, `INSERT INTO bisect_mark (session_id, kind, time_ns, note, created_ns)
			VALUES (?, ?, ?, ?, ?)`, id, string(m.Kind), ns(m.Time), m.Note, wallNS(m.At)); err != nil {
			return 0, fmt.Errorf("start bisect: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("start bisect: %w", err)
	}
	return id, nil
}

// Bisect returns the open bisect session and its marks in the order they
// were made, or nil when none is open.
func (s *Store) Bisect(ctx context.Context) (*timeline.BisectSession, error) {
	var (
		b       timeline.BisectSession
		started int64
	)
	err := s.db.QueryRowContext(ctx, "SELECT id, started_ns FROM bisect_session WHERE ended_ns = 0").Scan(&b.ID, &started)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read bisect session: %w", err)
	}
	b.Started = fromNS(started)
	rows, err := s.db.QueryContext(ctx,
		"SELECT kind, time_ns, note, created_ns FROM bisect_mark WHERE session_id = ? ORDER BY id", b.ID)
	if err != nil {
		return nil, fmt.Errorf("read bisect marks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		m := timeline.BisectMark{Session: b.ID}
		var kind string
		var t, created int64
		if err := rows.Scan(&kind, &t, &m.Note, &created); err != nil {
			return nil, fmt.Errorf("read bisect marks: %w", err)
		}
		m.Kind, m.Time, m.At = timeline.BisectKind(kind), time.Unix(0, t).UTC(), fromNS(created)
		b.Marks = append(b.Marks, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read bisect marks: %w", err)
	}
	return &b, nil
}

// AddBisectMark adds m to the open session m.Session; ErrNoBisect if that
// session is not open (never started, reset, or replaced).
func (s *Store) AddBisectMark(ctx context.Context, m timeline.BisectMark) error {
	if err := m.Check(); err != nil {
		return fmt.Errorf("add bisect mark: %w", err)
	}
	res, err := s.exec(ctx, `INSERT INTO bisect_mark (session_id, kind, time_ns, note, created_ns)
		SELECT id, ?, ?, ?, ? FROM bisect_session WHERE id = ? AND ended_ns = 0`,
		string(m.Kind), ns(m.Time), m.Note, wallNS(m.At), m.Session)
	if err != nil {
		return fmt.Errorf("add bisect mark: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("add bisect mark: %w", err)
	} else if n == 0 {
		return timeline.ErrNoBisect
	}
	return nil
}

// ResetBisect ends the open bisect session, keeping its marks.
func (s *Store) ResetBisect(ctx context.Context, at time.Time) (bool, error) {
	res, err := s.exec(ctx, "UPDATE bisect_session SET ended_ns = ? WHERE ended_ns = 0", wallNS(at))
	if err != nil {
		return false, fmt.Errorf("reset bisect: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("reset bisect: %w", err)
	}
	return n > 0, nil
}

func wallNS(t time.Time) int64 { return timeline.WallNS(t) }

// CountRecords counts the records in [since, until) per source kind.
func (s *Store) CountRecords(ctx context.Context, since, until time.Time) (map[timeline.SourceKind]int64, error) {
	lo, hi := int64(-1<<63), int64(1<<63-1)
	if !since.IsZero() {
		lo = boundNS(since)
	}
	if !until.IsZero() {
		hi = boundNS(until)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT (SELECT s FROM strs WHERE id = r.source), count(*) FROM record r
		WHERE r.time_ns >= ? AND r.time_ns < ? GROUP BY r.source`, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("count records: %w", err)
	}
	defer rows.Close()
	out := map[timeline.SourceKind]int64{}
	for rows.Next() {
		var src string
		var n int64
		if err := rows.Scan(&src, &n); err != nil {
			return nil, fmt.Errorf("count records: %w", err)
		}
		out[timeline.SourceKind(src)] += n
	}
	return out, rows.Err()
}
