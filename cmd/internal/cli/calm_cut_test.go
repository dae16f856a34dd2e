package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/fixtures"
	"github.com/faultline/faultline/internal/testenv"
)

// TestCutEvidenceNamesNoWrongCause: evidence cut short must not make
// faultline name a wrong cause with confidence. An engineer who ingests
// the audit log from the first symptom on (ingest audit --since) leaves
// the investigation no calm to compare with; one who investigates while
// the incident is under way has only its first seconds. Over the zoo's
// train incidents, replayed with the audit log cut at the true first bad
// instant, or 10 s after it (replay --since/--until: the object dumps and
// versions whole), a confident cause may still be found, but it must name
// an injected fault (Expected.NamesInjected): with part of the evidence
// gone, faultline says it is unsure rather than name something else.
func TestCutEvidenceNamesNoWrongCause(t *testing.T) {
	if testing.Short() {
		t.Skip("replays every train incident of the zoo twice")
	}
	dirs, err := fixtures.FindIncidents("../../../fixtures/zoo")
	if err != nil {
		t.Fatal(err)
	}
	run := runCLI
	if testenv.RaceEnabled {
		// The answers are the race detector's to slow, not to change: a
		// binary built without it replays, as in TestStoreParity (the
		// windowed ingest runs in-process under -race in
		// TestWindowKeepsWhatAFullIngestHoldsInIt and
		// TestInvestigateNamesTheWindow).
		run = plainBinary(t)
	}
	for _, cut := range []struct {
		name   string
		window func(firstBad time.Time) (since, until time.Time)
	}{
		{"the calm cut off", func(fb time.Time) (time.Time, time.Time) { return fb, time.Time{} }},
		{"10 s after the first bad", func(fb time.Time) (time.Time, time.Time) { return time.Time{}, fb.Add(10 * time.Second) }},
	} {
		var confident, incidents atomic.Int32
		t.Run(cut.name, func(t *testing.T) {
			scheduled := 0
			defer func() {
				if scheduled == 0 && !t.Failed() {
					t.Fatal("no train incident in fixtures/zoo")
				}
			}()
			for _, dir := range dirs {
				e, err := fixtures.LoadExpected(os.DirFS(dir))
				if err != nil {
					t.Fatal(err)
				}
				if fixtures.SplitOf(e.Seed) != "train" || e.Control {
					continue // a quiet control has no first bad instant
				}
				scheduled++
				t.Run(strings.TrimPrefix(dir, "../../../fixtures/zoo/"), func(t *testing.T) {
					t.Parallel()
					incidents.Add(1)
					since, until := cut.window(e.Boundary.FirstBad)
					rep := replayWindow(t, run, dir, since, until)
					if len(rep.WindowedRuns) == 0 {
						t.Fatal("the audit log was not cut: no run left events out")
					}
					if rep.Verdict != investigate.VerdictCause || len(rep.Changes) == 0 || rep.Changes[0].Confidence < investigate.Confident {
						return // unsure, or a gang's first death: no change named
					}
					confident.Add(1)
					if top := rep.Changes[0]; !e.NamesInjected(top) {
						t.Errorf("a confident cause that is no injected fault: %s %s (%.2f: %s)",
							top.Ref, top.Dimension, top.Confidence, top.ConfidenceWhy)
					}
				})
			}
		})
		if incidents.Load() > 0 {
			t.Logf("%s: %d of %d train incidents named a confident cause", cut.name, confident.Load(), incidents.Load())
		}
	}
}

// replayWindow replays the incident in dir into a fresh timeline, its
// audit log cut to [since, until) (replay --since/--until), and
// investigates it.
func replayWindow(t *testing.T, run cliRunner, dir string, since, until time.Time) *investigate.Report {
	t.Helper()
	db := filepath.Join(t.TempDir(), "cut.db")
	args := []string{"--db", db, "replay", dir}
	if !since.IsZero() {
		args = append(args, "--since", since.Format(time.RFC3339Nano))
	}
	if !until.IsZero() {
		args = append(args, "--until", until.Format(time.RFC3339Nano))
	}
	if code, _, stderr := run(t, args...); code != 0 {
		t.Fatalf("replay: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := run(t, "--db", db, "investigate", "-o", "json")
	if code != 0 {
		t.Fatalf("investigate: exit %d: %s", code, stderr)
	}
	var rep investigate.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	return &rep
}
