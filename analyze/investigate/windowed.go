package investigate

import (
	"context"
	"fmt"

	"github.com/faultline/faultline/timeline"
)

// runLister is a store that lists its ingest runs.
type runLister interface {
	Runs(ctx context.Context) ([]timeline.IngestRun, error)
}

// windowedHint adds to an unsure report's next steps the evidence that a
// windowed ingest (ingest audit --since/--until) read and left out: the
// calm before the trouble, or its cause, may lie outside the window. A
// store that lists no runs, or runs that left nothing out, adds nothing.
func windowedHint(ctx context.Context, s Store, rep *Report) error {
	rl, ok := s.(runLister)
	if !ok || rep.Verdict == VerdictCause {
		return nil
	}
	runs, err := rl.Runs(ctx)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if r.Outside == 0 {
			continue
		}
		rep.Next = append(rep.Next, fmt.Sprintf("run %d kept only the requests of %s received %s and left %d events out:"+
			" ingest it again with a wider window (faultline ingest audit --since EARLIER)", r.ID, r.Path, r.Window(), r.Outside))
	}
	return nil
}
