package investigate_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

// A timeline without records is nothing to investigate; one that holds
// metric series says so, for the series are read elsewhere (faultline dns,
// network, cardinality), not that it is empty.
func TestNoRecords(t *testing.T) {
	ctx := context.Background()
	s := sqlitetest.New(t)
	if _, err := investigate.Run(ctx, s, investigate.Options{}); !errors.Is(err, investigate.ErrNoEvidence) || errors.Is(err, investigate.ErrOnlySeries) {
		t.Fatalf("empty timeline: %v, want ErrNoEvidence", err)
	}
	run := &timeline.IngestRun{Source: timeline.SourceMetrics, Path: "coredns.json"}
	if err := s.BeginRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	b, err := s.Batch(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	sr := timeline.NewSeries("coredns_dns_requests_total", timeline.NewLabels(map[string]string{"job": "coredns"}))
	if _, err := b.AddSamples(ctx, sr, []timeline.Sample{{Time: time.Unix(1e9, 0), Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(ctx, run); err != nil {
		t.Fatal(err)
	}
	_, err = investigate.Run(ctx, s, investigate.Options{})
	if !errors.Is(err, investigate.ErrOnlySeries) || !errors.Is(err, investigate.ErrNoEvidence) {
		t.Fatalf("a timeline of series only: %v, want ErrOnlySeries (an ErrNoEvidence)", err)
	}
}
