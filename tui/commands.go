package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/faultline/faultline/analyze/bisect"
	"github.com/faultline/faultline/analyze/controlplane"
	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/internal/incidentplot"
	"github.com/faultline/faultline/internal/termsafe"
	"github.com/faultline/faultline/timeline"
)

// Messages: each carries the id of the op it answers.
type (
	boundsMsg struct {
		id          int
		first, last time.Time
		err         error
	}
	// histMsg brings the counts of buckets [from, from+len(counts)):
	// of all records, or of the bad ones.
	histMsg struct {
		id     int
		from   int
		bad    bool
		counts []int64
		err    error
	}
	rowsMsg struct {
		id   int
		rows []*timeline.Record
		err  error
	}
	reportMsg struct {
		id  int
		rep *investigate.Report
		err error
	}
	cpMsg struct {
		id  int
		rep *controlplane.Report
		err error
	}
	sessionMsg struct {
		id      int
		session *timeline.BisectSession
		note    string
		err     error
	}
	exportMsg struct {
		id   int
		path string
		err  error
	}
)

// histChunk is how many buckets one histogram query counts: the columns
// fill from the left while the rest is counted, so a large timeline shows
// its first columns at once.
const histChunk = 8

func (m *Model) boundsCmd(ctx context.Context, id int) tea.Cmd {
	return func() tea.Msg {
		first, last, err := m.store.Bounds(ctx)
		return boundsMsg{id: id, first: first, last: last, err: err}
	}
}

// histogramCmd counts buckets [from, from+histChunk) of the span shown:
// all the records the filter keeps, or (bad) those of them that are bad.
// All are counted first, over the time index alone, so the columns appear
// at once; the bad, which may read the records, follow in a second pass.
func (m *Model) histogramCmd(from int, bad bool) func(ctx context.Context, id int) tea.Cmd {
	buckets := m.buckets
	where, userWhere := m.where, m.where
	if bad {
		where = m.badWhere
	}
	return func(ctx context.Context, id int) tea.Cmd {
		return func() tea.Msg {
			to := min(from+histChunk, len(buckets))
			if from >= to || where == nil && bad {
				return histMsg{id: id, from: from, bad: bad}
			}
			got, err := m.store.Histogram(ctx, timeline.HistogramQuery{Since: buckets[from].Start, Until: buckets[to-1].End,
				Buckets: to - from, Where: where})
			counts := make([]int64, len(got))
			for i := range got {
				counts[i] = got[i].All
			}
			if bad && err == nil {
				// The bad object states, which are no stored records.
				var states []outcome.Observation
				if states, err = m.states.get(ctx, m.store, m.opt.Bad); err == nil {
					for i := range states {
						if userWhere != nil {
							if ok, _ := userWhere.Match(states[i].Record()); !ok {
								continue
							}
						}
						if j := bucketOf(buckets[from:to], states[i].Time); j >= 0 && j < len(counts) {
							counts[j]++
						}
					}
				}
			}
			return histMsg{id: id, from: from, bad: bad, counts: counts, err: err}
		}
	}
}

// badStates holds the bad object states, read once by the classifier.
type badStates struct {
	mu     sync.Mutex
	states []outcome.Observation
	read   bool
}

// get returns the bad object states, reading them on first use (a failed
// or cancelled read is tried again next time).
func (b *badStates) get(ctx context.Context, s Store, bad string) ([]outcome.Observation, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.read {
		return b.states, nil
	}
	out, err := outcome.Read(ctx, s, outcome.Options{Bad: bad})
	if err != nil {
		return nil, err
	}
	b.states, b.read = out.BadStates(), true
	return b.states, nil
}

// rowsCmd fetches n records of the selected bucket from anchor on (from
// the bucket's start without one).
func (m *Model) rowsCmd(n int) func(ctx context.Context, id int) tea.Cmd {
	if m.cursor >= len(m.buckets) || n <= 0 {
		return func(context.Context, int) tea.Cmd { return nil }
	}
	b := m.buckets[m.cursor]
	where, anchor := m.where, m.anchor
	return func(ctx context.Context, id int) tea.Cmd {
		return func() tea.Msg {
			rows, err := fetchRows(ctx, m.store, b, where, anchor, n)
			return rowsMsg{id: id, rows: rows, err: err}
		}
	}
}

// fetchRows reads n records of bucket b in time order, from anchor on
// (inclusive; records at the anchor's instant with a smaller id come
// before it and are skipped).
func fetchRows(ctx context.Context, s Store, b timeline.Bucket, where *timeline.Filter, anchor *timeline.Record, n int) ([]*timeline.Record, error) {
	q := timeline.Query{Since: b.Start, Until: b.End, Where: where, Limit: n}
	if anchor != nil {
		q.Since = anchor.Time
	}
	for {
		var out []*timeline.Record
		read := 0
		for r, err := range s.Records(ctx, q) {
			if err != nil {
				return nil, err
			}
			read++
			if anchor != nil && r.Time.Equal(anchor.Time) && r.ID < anchor.ID {
				continue
			}
			out = append(out, r)
		}
		if len(out) >= n || read < q.Limit {
			return out[:min(n, len(out))], nil
		}
		q.Limit *= 2 // ties at the anchor's instant took the room
	}
}

func (m *Model) investigateCmd(ctx context.Context, id int) tea.Cmd {
	since, until := m.window()
	opt := investigate.Options{Bad: m.opt.Bad, Since: since, Until: until}
	heavy := m.heavy
	return func() tea.Msg {
		heavy.Lock()
		defer heavy.Unlock()
		rep, err := investigate.Run(ctx, m.store, opt)
		return reportMsg{id: id, rep: rep, err: err}
	}
}

func (m *Model) controlPlaneCmd(ctx context.Context, id int) tea.Cmd {
	heavy := m.heavy
	return func() tea.Msg {
		heavy.Lock()
		defer heavy.Unlock()
		rep, err := controlplane.Analyze(ctx, m.store, controlplane.Options{})
		return cpMsg{id: id, rep: rep, err: err}
	}
}

func (m *Model) sessionCmd(ctx context.Context, id int) tea.Cmd {
	return func() tea.Msg {
		s, err := m.store.Bisect(ctx)
		return sessionMsg{id: id, session: s, err: err}
	}
}

// markCmd stores a bisect mark, opening a session first if none is open,
// and returns the session as stored.
func (m *Model) markCmd(kind timeline.BisectKind, at time.Time) func(ctx context.Context, id int) tea.Cmd {
	now := m.opt.Now()
	return func(ctx context.Context, id int) tea.Cmd {
		return func() tea.Msg {
			sess, err := m.store.Bisect(ctx)
			if err != nil {
				return sessionMsg{id: id, err: err}
			}
			mark := timeline.BisectMark{Kind: kind, Time: at, At: now, Note: "faultline tui"}
			if sess == nil {
				// The first mark opens the session, in the same transaction.
				if sess, _, err = bisect.Start(ctx, m.store, now, []timeline.BisectMark{mark}); err != nil {
					return sessionMsg{id: id, err: err}
				}
				mark.Session = sess.ID
			} else {
				mark.Session = sess.ID
				if err := checkMark(sess.Marks, mark); err != nil {
					return sessionMsg{id: id, session: sess, err: err}
				}
				if err := m.store.AddBisectMark(ctx, mark); err != nil {
					if errors.Is(err, timeline.ErrNoBisect) {
						err = errors.New("the bisect session was reset meanwhile: mark again")
					}
					return sessionMsg{id: id, err: err}
				}
			}
			sess, err = m.store.Bisect(ctx)
			return sessionMsg{id: id, session: sess, err: err,
				note: fmt.Sprintf("marked %s %s (session %d)", kind, at.UTC().Format(time.RFC3339Nano), mark.Session)}
		}
	}
}

// exportCmd writes the investigation as a Markdown postmortem draft, with
// its timeline plot (a PNG of the same name) beside it and linked.
func (m *Model) exportCmd(ctx context.Context, id int) tea.Cmd {
	rep, dir, partial := m.rep, m.opt.ExportDir, m.opt.Partial
	return func() tea.Msg {
		if rep == nil {
			return exportMsg{id: id, err: errors.New("no investigation to export yet")}
		}
		name := "postmortem"
		if rep.Boundary != nil {
			name = "postmortem-" + rep.Boundary.FirstBad.UTC().Format("20060102T150405Z")
		}
		if err := incidentplot.WriteFile(ctx, m.store, rep, incidentplot.Options{}, filepath.Join(dir, name+".png")); err != nil {
			return exportMsg{id: id, err: err}
		}
		path := filepath.Join(dir, name+".md")
		f, err := os.Create(path)
		if err != nil {
			return exportMsg{id: id, err: err}
		}
		if partial != "" {
			_, err = fmt.Fprintf(f, "> **Partial answer:** %s.\n\n", termsafe.Field(partial))
		}
		if err == nil {
			err = investigate.WriteMarkdownPlot(f, rep, name+".png")
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = ctx.Err()
		}
		return exportMsg{id: id, path: path, err: err}
	}
}

// BadCounted returns the bad observations the histogram counted over the
// span shown, and whether every bucket's bad is counted yet: the same
// number as investigate's badObservations over that span.
func (m *Model) BadCounted() (n int64, done bool) {
	for _, b := range m.buckets {
		n += b.Bad
	}
	return n, len(m.buckets) > 0 && m.badLoaded >= len(m.buckets)
}
