package investigate

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

// runsOnly is a Store that lists runs and holds nothing else.
type runsOnly struct{ runs []timeline.IngestRun }

func (runsOnly) Versions(context.Context, timeline.VersionQuery) ([]timeline.ObjectVersion, error) {
	return nil, nil
}
func (runsOnly) Records(context.Context, timeline.Query) iter.Seq2[*timeline.Record, error] {
	return func(func(*timeline.Record, error) bool) {}
}
func (runsOnly) Bounds(context.Context) (time.Time, time.Time, error) {
	return time.Time{}, time.Time{}, nil
}
func (r runsOnly) Runs(context.Context) ([]timeline.IngestRun, error) { return r.runs, nil }

// TestWindowedHint: the report lists each run that left events out of its
// window, and an unsure one asks for a wider window; a confident one, or
// runs that left nothing out, do not.
func TestWindowedHint(t *testing.T) {
	since := time.Date(2026, 11, 30, 9, 19, 5, 0, time.UTC)
	windowed := timeline.IngestRun{ID: 2, Path: "/var/log/audit.log", Since: since, Outside: 15646}
	whole := timeline.IngestRun{ID: 1, Path: "/var/log/audit-old.log"}
	listed := []WindowedRun{{Run: 2, Path: "/var/log/audit.log", Since: since, Outside: 15646}}
	tests := []struct {
		name     string
		verdict  string
		runs     []timeline.IngestRun
		windowed []WindowedRun
		next     []string
	}{
		{"unsure, a windowed run", VerdictNoCause, []timeline.IngestRun{whole, windowed}, listed, []string{
			"run 2 kept only the requests of /var/log/audit.log received from 2026-11-30T09:19:05Z and left 15646 events out:" +
				" ingest it again with a wider window (faultline ingest audit --since EARLIER)"}},
		{"unsure, a window that left nothing out", VerdictNoCause, []timeline.IngestRun{{ID: 3, Since: since}}, nil, nil},
		{"unsure, no window", VerdictNoCause, []timeline.IngestRun{whole}, nil, nil},
		{"unsure, standard input windowed", VerdictNoCause, []timeline.IngestRun{{ID: 4, Path: "-", Until: since, Outside: 7}},
			[]WindowedRun{{Run: 4, Path: "-", Until: since, Outside: 7}}, []string{
				"run 4 kept only the requests of standard input received before 2026-11-30T09:19:05Z and left 7 events out:" +
					" ingest it again with a wider window (faultline ingest audit --since EARLIER)"}},
		{"a confident cause", VerdictCause, []timeline.IngestRun{windowed}, listed, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, err := windowedRuns(context.Background(), runsOnly{tt.runs})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.windowed, ws); diff != "" {
				t.Errorf("windowed runs (-want +got)\n%s", diff)
			}
			rep := &Report{Verdict: tt.verdict, WindowedRuns: ws}
			windowedHint(rep)
			if diff := cmp.Diff(tt.next, rep.Next); diff != "" {
				t.Errorf("next (-want +got)\n%s", diff)
			}
		})
	}
}
