package tui

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTableGivesWay(t *testing.T) {
	cols := []column{{title: "#", want: 3, min: 2}, {title: "OBJECT", want: 32, min: 16}, {title: "FROM", want: 21, min: 0},
		{title: "TO", want: 21, min: 21}, {title: "AT", want: 12, min: 12}, {title: "WHY", min: 8, flex: true}}
	tests := []struct {
		name  string
		width int
		want  []int
	}{
		{"room for all: the flex column takes the rest", 140, []int{3, 32, 21, 21, 12, 46}},
		{"OBJECT shrinks first", 100, []int{3, 30, 21, 21, 12, 8}},
		{"then # shrinks, then FROM goes", 80, []int{2, 16, 0, 21, 12, 25}},
		{"TO and AT never give way", 40, []int{2, 16, 0, 21, 12, 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := newTable(tt.width, cols, 1, 0, 2).widths
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("widths at %d (-want +got)\n%s", tt.width, diff)
			}
		})
	}
	tb := newTable(80, cols, 1, 0, 2)
	if got, want := tb.row("1", "ConfigMap/ml/trainer-env", "a", "b\x1b[2J", "08:54:15.181", "x"), "1  ConfigMap/ml/tr… b\\x1b[2J"+strings.Repeat(" ", 21-8)+" 08:54:15.181 x"; !strings.HasPrefix(got, want) {
		t.Errorf("row = %q, want it to start %q (FROM dropped, data escaped)", got, want)
	}
}
