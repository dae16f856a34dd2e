package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// busyTimeout is how long one attempt waits in SQLite's busy handler for
// another connection's lock before the store tries again. SQLite allows one
// writer at a time; a second ingest must wait for the first, not fail with
// "database is locked". A single long busy timeout would not do: an ingest
// commits batch after batch, and a waiter that sleeps through the brief
// gaps between them times out however long it waits. So each attempt is
// short, the store retries for as long as ctx allows, and the first retry
// logs why the command seems stuck.
const busyTimeout = time.Second

// isBusy reports whether err is SQLite's "database is locked" or "database
// table is locked": another connection holds the lock wanted.
func isBusy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

// retry runs fn until it returns anything but a busy error, or ctx ends.
// After the first busy attempt (busyTimeout into the wait) it notes, once,
// that it waits for another writer.
func (s *Store) retry(ctx context.Context, fn func() error) error {
	noted := false
	for {
		err := fn()
		if !isBusy(err) {
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return errors.Join(cerr, err)
		}
		if !noted {
			s.log.Warn("waiting for another ingest to finish writing " + s.path)
			noted = true
		}
	}
}

// beginWrite begins a write transaction (BEGIN IMMEDIATE, from _txlock in
// the DSN: the write lock is taken at BEGIN, so a transaction never fails
// half way for want of it), waiting for other writers. The transaction
// itself ignores ctx: it ends only by Commit or Rollback.
func (s *Store) beginWrite(ctx context.Context) (*sql.Tx, error) {
	var tx *sql.Tx
	err := s.retry(ctx, func() error {
		var err error
		tx, err = s.db.BeginTx(context.WithoutCancel(ctx), nil)
		return err
	})
	return tx, err
}

// exec runs one writing statement, waiting for other writers.
func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := s.retry(ctx, func() error {
		var err error
		res, err = s.db.ExecContext(ctx, query, args...)
		return err
	})
	return res, err
}
