package bisect

import (
	"context"
	"time"

	"github.com/faultline/faultline/timeline"
)

// Sessions is what the model needs of the store: the bisect log.
type Sessions interface {
	// Bisect returns the open session with its marks, or nil.
	Bisect(ctx context.Context) (*timeline.BisectSession, error)
	// StartBisect ends the open session, if any, and opens a new one
	// holding marks, in one transaction.
	StartBisect(ctx context.Context, at time.Time, marks ...timeline.BisectMark) (int64, error)
}

// Start opens a session at wall-clock time at with marks (checked by the
// caller with Check), replacing the open one, in one transaction: a
// failure leaves the open session as it was. It returns the new session
// and the one it replaced (nil if none was open).
func Start(ctx context.Context, s Sessions, at time.Time, marks []timeline.BisectMark) (started, replaced *timeline.BisectSession, err error) {
	if replaced, err = s.Bisect(ctx); err != nil {
		return nil, nil, err
	}
	id, err := s.StartBisect(ctx, at, marks...)
	if err != nil {
		return nil, nil, err
	}
	started = &timeline.BisectSession{ID: id, Started: at, Marks: make([]timeline.BisectMark, len(marks))}
	for i, m := range marks {
		m.Session = id
		started.Marks[i] = m
	}
	return started, replaced, nil
}
