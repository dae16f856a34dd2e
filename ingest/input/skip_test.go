package input

import (
	"errors"
	"io"
	"testing"
)

// TestSkipError: a Skip says where and why in the words each ingester's
// warnings used before they shared the type, so no warning changed.
func TestSkipError(t *testing.T) {
	why := errors.New("why")
	for _, tt := range []struct {
		name string
		skip Skip
		want string
	}{
		{"line", Skip{Path: "audit.log", Line: 12, Err: why}, "audit.log:12: why"},
		{"document", Skip{Path: "dump.yaml", Doc: 3, Err: why}, "dump.yaml: document 3: why"},
		{"no file", Skip{Err: why}, "why"},
		{"line unknown", Skip{Path: "versions.jsonl", Err: why}, "versions.jsonl:0: why"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.skip.Error(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if !errors.Is(&tt.skip, why) {
				t.Error("the reason does not unwrap")
			}
		})
	}
}

func TestOnSkipReport(t *testing.T) {
	var nothing OnSkip
	nothing.Report(&Skip{Err: io.EOF}) // a nil OnSkip hears nothing, and does not panic
	var got []*Skip
	on := OnSkip(func(s *Skip) { got = append(got, s) })
	s := &Skip{Err: io.EOF}
	on.Report(s)
	if len(got) != 1 || got[0] != s {
		t.Errorf("heard %v, want the one skip", got)
	}
}
