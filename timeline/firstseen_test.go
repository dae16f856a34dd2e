package timeline

import (
	"testing"
	"time"
)

func TestFirstSeen(t *testing.T) {
	at := time.Date(2026, 5, 1, 10, 0, 50, 0, time.UTC)
	tests := []struct {
		name   string
		source SourceKind
		extra  string
		want   time.Time
	}{
		{"a repeated event, from its first", SourceEvent, `{"count":3,"firstTimestamp":"2026-05-01T10:00:20Z"}`, at.Add(-30 * time.Second)},
		{"a first after the record: the record", SourceEvent, `{"firstTimestamp":"2026-05-01T10:01:20Z"}`, at},
		{"no first", SourceEvent, `{"count":1}`, at},
		{"a bad extra", SourceEvent, `{"firstTimestamp":7}`, at},
		{"not an event", SourceAudit, `{"firstTimestamp":"2026-05-01T10:00:20Z"}`, at},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Record{Time: at, Source: tt.source, Extra: []byte(tt.extra)}
			if got := r.FirstSeen(); !got.Equal(tt.want) {
				t.Errorf("FirstSeen = %s, want %s", got, tt.want)
			}
		})
	}
}
