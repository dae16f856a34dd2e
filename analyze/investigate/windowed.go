package investigate

import (
	"context"
	"fmt"
	"time"

	"github.com/faultline/faultline/timeline"
)

// WindowedRun is an ingest run that kept only the requests received in a
// window of its log and left the others out.
type WindowedRun struct {
	Run     int64     `json:"run"`
	Path    string    `json:"path"`
	Since   time.Time `json:"since,omitzero"`
	Until   time.Time `json:"until,omitzero"`
	Outside int64     `json:"outside"` // events read outside the window, not stored
}

// Text says what the run kept and left out.
func (w WindowedRun) Text() string { return w.describe(w.source()) }

// describe is Text with the run's source named as source.
func (w WindowedRun) describe(source string) string {
	win := timeline.Span{Since: w.Since, Until: w.Until}
	return fmt.Sprintf("run %d kept only the requests of %s received %s and left %d events out", w.Run, source, win, w.Outside)
}

// source names what the run read: its path, or standard input ("-").
func (w WindowedRun) source() string {
	if w.Path == "-" {
		return "standard input"
	}
	return w.Path
}

// runLister is a store that lists its ingest runs.
type runLister interface {
	Runs(ctx context.Context) ([]timeline.IngestRun, error)
}

// windowedRuns are the runs of s that left events out of their window; a
// store that lists no runs has none.
func windowedRuns(ctx context.Context, s Store) ([]WindowedRun, error) {
	rl, ok := s.(runLister)
	if !ok {
		return nil, nil
	}
	runs, err := rl.Runs(ctx)
	if err != nil {
		return nil, err
	}
	var out []WindowedRun
	for _, r := range runs {
		if r.Outside > 0 {
			out = append(out, WindowedRun{Run: r.ID, Path: r.Path, Since: r.Since, Until: r.Until, Outside: r.Outside})
		}
	}
	return out, nil
}

// windowedHint adds to an unsure report's next steps the evidence that a
// windowed ingest read and left out: the calm before the trouble, or its
// cause, may lie outside the window.
func windowedHint(rep *Report) {
	if rep.Verdict == VerdictCause {
		return
	}
	for _, w := range rep.WindowedRuns {
		rep.Next = append(rep.Next, w.Text()+": ingest it again with a wider window (faultline ingest audit --since EARLIER)")
	}
}
