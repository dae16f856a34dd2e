package alerts

import (
	"testing"
	"time"
)

// FuzzParse: an alert file from anyone is refused with an error or
// accepted valid; never a panic, and an accepted file backtests in bounds.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`schemaVersion: 1
interval: 5s
alerts:
  - name: A
    summary: s
    signal: {kind: rate, count: 'code == 429', window: 30s, promql: 'sum(up)'}
    normal: {max: 0.1}
    for: 1m
    severity: page
    owner: {team: ml}
    mitigation: cordon node.pool=h100-b
`))
	f.Add([]byte(`schemaVersion: 1
interval: 1ns
alerts: []`))
	f.Add([]byte(`{"schemaVersion": 1, "interval": "9999h", "alerts": [{"name": "x"}]}`))
	f.Add([]byte("a: &a [*a, *a]\nb: *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			return
		}
		if err := file.Validate(); err != nil {
			t.Fatalf("Parse accepted a file Validate refuses: %v", err)
		}
		start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
		ev := &Evidence{Start: start, End: start.Add(time.Hour)}
		for i := range file.Alerts {
			if _, err := ev.Evaluate(&file.Alerts[i], file.Interval.D()); err != nil {
				return
			}
		}
	})
}
