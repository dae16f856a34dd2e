package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/timeline"
)

// TestDetailNamesTheRunsWindow: a record read by a windowed ingest says,
// under its evidence, which requests its run kept; one read whole says
// nothing of a window.
func TestDetailNamesTheRunsWindow(t *testing.T) {
	since := time.Date(2026, 5, 1, 10, 2, 0, 0, time.UTC)
	for _, tt := range []struct {
		run  timeline.IngestRun
		want string
	}{
		{timeline.IngestRun{ID: 1, Source: timeline.SourceAudit, Path: "/var/log/audit.log", Since: since, Outside: 6661},
			"window      the run kept only the requests received from 2026-05-01T10:02:00Z (6661 events left out)"},
		{timeline.IngestRun{ID: 1, Source: timeline.SourceAudit, Path: "/var/log/audit.log"}, ""},
	} {
		m := &Model{detail: &detail{rec: &timeline.Record{}, loaded: true, run: &tt.run}}
		text := &detailText{width: 120}
		m.detailEvidence(text)
		got := strings.Join(text.out, "\n")
		if tt.want == "" && strings.Contains(got, "window") || tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("evidence:\n%s\nwant %q", got, tt.want)
		}
	}
}
