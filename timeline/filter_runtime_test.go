package timeline

import (
	"errors"
	"strings"
	"testing"
)

// TestFilterRuntimeErrorsAreReported: evaluations that fail at run time
// (1/0) count as no match, and are reported once, counted, with the first
// error. They used to vanish.
func TestFilterRuntimeErrorsAreReported(t *testing.T) {
	recs := []*Record{{Code: 200}, {Code: 404}, {Code: 500}}
	for _, tc := range []struct {
		expr  string
		count int64
		first string
	}{
		{`code / 0 == 1`, 3, "division by zero"},
		{`code == 404 || code / (code - 200) == 0`, 1, "division by zero"}, // 200 fails; 404 matches first; 500 is false
		{`annotations["x"] == "y"`, 3, "no such key"},
		{`code == 404`, 0, ""},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			f, err := CompileFilter(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				f.Match(r)
			}
			err = f.RuntimeError()
			var fe *FilterRuntimeError
			switch {
			case tc.count == 0 && err != nil:
				t.Errorf("RuntimeError = %v, want nil", err)
			case tc.count > 0 && (!errors.As(err, &fe) || fe.Count != tc.count || !strings.Contains(fe.First.Error(), tc.first)):
				t.Errorf("RuntimeError = %v, want %d failures, the first %q", err, tc.count, tc.first)
			}
		})
	}
}

func TestFilterUses(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want bool
	}{
		{`bad`, true},
		{`bad && code == 500`, true},
		{`!bad || verb == "get"`, true},
		{`reason == "bad"`, false},
		{`code >= 500`, false},
	} {
		f, err := CompileFilter(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Uses("bad"); got != tc.want {
			t.Errorf("%s: Uses(bad) = %v, want %v", tc.expr, got, tc.want)
		}
	}
}
