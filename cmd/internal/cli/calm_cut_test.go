package cli

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/fixtures"
	"github.com/faultline/faultline/ingest/audit"
)

// TestCalmCutOffNamesNoWrongCause: an engineer who ingests the audit log
// from the first symptom on (ingest audit --since) leaves the
// investigation no calm to compare with. Over the zoo's train incidents,
// ingested so from their true first bad instant (the object dumps and
// versions whole), a confident cause may still be found, but it must name
// a fault that was injected (its object or scope, in any episode): with
// half its evidence gone, faultline says it is unsure rather than name
// something else.
func TestCalmCutOffNamesNoWrongCause(t *testing.T) {
	if testing.Short() {
		t.Skip("replays every train incident of the zoo")
	}
	dirs, err := fixtures.FindIncidents("../../../fixtures/zoo")
	if err != nil {
		t.Fatal(err)
	}
	var confident, incidents atomic.Int32
	t.Run("train", func(t *testing.T) {
		for _, dir := range dirs {
			e, err := fixtures.LoadExpected(os.DirFS(dir))
			if err != nil {
				t.Fatal(err)
			}
			if fixtures.SplitOf(e.Seed) != "train" || e.Control {
				continue // a quiet control has no first bad instant
			}
			t.Run(strings.TrimPrefix(dir, "../../../fixtures/zoo/"), func(t *testing.T) {
				t.Parallel()
				incidents.Add(1)
				rep := investigateFrom(t, dir, e.Boundary.FirstBad)
				if len(rep.WindowedRuns) == 0 {
					t.Fatal("the audit log was not cut: no run left events out")
				}
				if rep.Verdict != investigate.VerdictCause || len(rep.Changes) == 0 || rep.Changes[0].Confidence < investigate.Confident {
					return // unsure, or a gang's first death: no change named
				}
				confident.Add(1)
				if top := rep.Changes[0]; !e.NamesInjected(top) {
					t.Errorf("with the calm cut off at %s, a confident cause that is no injected fault: %s %s (%.2f: %s)",
						e.Boundary.FirstBad.Format(time.RFC3339Nano), top.Ref, top.Dimension, top.Confidence, top.ConfidenceWhy)
				}
			})
		}
	})
	if incidents.Load() == 0 {
		t.Fatal("no train incident in fixtures/zoo")
	}
	t.Logf("%d of %d train incidents named a confident cause with the calm cut off", confident.Load(), incidents.Load())
}

// investigateFrom replays the incident in dir into a fresh timeline as
// replay does, but its audit log from since on, and investigates it.
func investigateFrom(t *testing.T, dir string, since time.Time) *investigate.Report {
	t.Helper()
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "cut.db")
	load := incidentLoader{logger: slog.New(slog.DiscardHandler), now: time.Now, warnf: func(string, ...any) {},
		auditWindow: audit.Window{Since: since}}
	if _, err := load.ingest(ctx, os.DirFS(dir), dir, load.sqliteAt(db)); err != nil {
		t.Fatal(err)
	}
	rep, _, err := analyzeIncident(ctx, sqliteReadOnly(db, nil))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
