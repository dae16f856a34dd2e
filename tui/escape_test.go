package tui

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/internal/termsafe"
	"github.com/faultline/faultline/internal/termsafe/termsafetest"
)

// TestDetailLinesStayLines checks the pieces of the screens that the
// replayed payload log does not reach (no change of identity there): an
// expanded change and the status line stay one line each, escaped.
func TestDetailLinesStayLines(t *testing.T) {
	c := investigate.Suspect{Kind: "image\n", From: termsafetest.Name, To: "x\ny", Why: termsafetest.Message}
	got := changeDetail(c)
	want := []string{
		`image\n at -, score 0.00, 1 object(s) made it`,
		"from " + termsafetest.NameEscaped,
		`to   x\ny`,
		"why  " + termsafetest.MessageEscaped,
		"no evidence line (a difference between units, not a version)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changeDetail (-want +got)\n%s", diff)
	}
	for _, tt := range []struct{ in, want string }{
		{"open a\nb.db: no such file", "open a b.db: no such file"},
		{"filter: " + termsafetest.UserAgent, `filter: ` + termsafetest.UserAgentEscaped},
		{"a\r\nb\rc", `a b\rc`},
	} {
		got := oneLine(tt.in)
		if got != tt.want || strings.Contains(got, "\n") || termsafe.Unsafe(got, false) != "" {
			t.Errorf("oneLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
