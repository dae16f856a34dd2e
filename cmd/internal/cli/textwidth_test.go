package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/investigate"
)

func TestWrapWords(t *testing.T) {
	tests := []struct {
		name  string
		s     string
		width int
		hang  int
		cut   bool
		want  []string
	}{
		{"fits", "a b c", 10, 2, false, []string{"a b c"}},
		{"wraps with a hanging indent", "  one two three four", 12, 4, false, []string{"  one two", "    three", "    four"}},
		{"a long word stays whole on a pipe", "x sha256:0123456789abcdef y", 10, 2, false, []string{"x", "  sha256:0123456789abcdef", "  y"}},
		{"a long word is cut on a terminal", "x sha256:0123456789abcdef y", 10, 2, true, []string{"x", "  sha256:…"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, wrapWords(tt.s, tt.width, tt.hang, tt.cut)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// A command is wrapped with the shell's continuation, never inside its
// quotes, and a paste of the lines gives the command back.
func TestWrapCommand(t *testing.T) {
	cmd := `kubectl patch configmap trainer-env -n ml --type merge -p '{"data":{"LR":"it'\''s a long value"}}'`
	got := wrapCommand("FIX  "+cmd, 50, 7)
	want := []string{
		"FIX  kubectl patch configmap trainer-env -n ml \\",
		"       --type merge -p \\",
		`       '{"data":{"LR":"it'\''s a long value"}}'`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	joined := strings.Join(got, "\n")
	joined = strings.ReplaceAll(joined, " \\\n", " ")
	if strings.Join(strings.Fields(joined), " ") != "FIX "+strings.Join(strings.Fields(cmd), " ") {
		t.Errorf("the lines do not join back into the command:\n%s", joined)
	}
}

// On a terminal the headline gives the first bad in local time, then in
// UTC; a row too long is cut with "…"; the actor of a change no audit
// record wrote is said to be unknown.
func TestReportOnTerminal(t *testing.T) {
	firstBad := time.Date(2026, 11, 30, 8, 55, 0, 371e6, time.UTC)
	rep := &investigate.Report{
		Verdict: investigate.VerdictCause, VerdictWhy: "ConfigMap/ml/env configmap/env/LR changed",
		Window: investigate.Window{Start: firstBad.Add(-time.Hour), End: firstBad.Add(time.Minute)},
		Boundary: &investigate.Boundary{FirstBad: firstBad, LastGood: firstBad.Add(-45 * time.Second),
			Evidence: []investigate.Evidence{{Side: "bad", Time: firstBad, Ref: "Pod/ml/train-0", What: "Error: " + strings.Repeat("very long message ", 10), Run: 1, Line: 9}}},
		Slice: &investigate.Slice{Where: map[string]string{"owner/Job": "train"}, Bad: 18, Total: 18, Precision: 1, Coverage: 1},
		Units: investigate.UnitCounts{Bad: 18, Good: 107},
		Changes: []investigate.Suspect{
			{Rank: 1, Ref: "ConfigMap/ml/env", Dimension: "configmap/env/LR", From: "0.06", To: "0.6", At: firstBad.Add(-45 * time.Second),
				Confidence: 0.95, By: "alice", UserAgent: "kubectl/v1.37.2 (linux/amd64)", Kind: "change"},
			{Rank: 2, Ref: "Deployment/web/api", Dimension: "image.digest/server", From: "sha256:a", To: "sha256:b", Kind: "difference"},
		},
		Mitigation: []investigate.Action{{Action: "rollback", Target: "ConfigMap/ml/env", To: "0.06",
			Command: `kubectl patch configmap env -n ml --type merge -p '{"data":{"LR":"0.06"}}'`,
			Verify:  `kubectl get configmap env -n ml -o 'jsonpath={.data.LR}'`}},
	}
	var out bytes.Buffer
	if err := writeReport(&out, rep, textLayout{Width: reportWidth, TTY: true, Loc: time.FixedZone("CET", 3600)}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	checkReportLayout(t, got)
	for _, want := range []string{
		"BROKE    owner/Job=train: 18 of 18 units bad; 18 of 125 in scope\n",
		"SINCE    Mon 30 Nov 09:55:00 CET (2026-11-30T08:55:00.371Z) (first bad; last known-good 45s before)\n",
		"CAUSE    ConfigMap/ml/env key LR: 0.06 -> 0.6\n         by alice via kubectl, 45s earlier, confidence 0.95\n",
		"FIX      kubectl patch configmap env -n ml --type merge -p '{\"data\":{\"LR\":\"0.06\"}}'\n",
		"very long message very lo…\n",
		"     by alice (kubectl/v1.37.2 (linux/amd64))\n",
		"     actor unknown (no audit record)\n",
		"     run:    kubectl patch configmap env -n ml --type merge -p '{\"data\":{\"LR\":\"0.06\"}}'\n",
		"     verify: kubectl get configmap env -n ml -o 'jsonpath={.data.LR}'\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
}

// Nothing bad is a headline too, and says what to do next.
func TestReportNothingBad(t *testing.T) {
	rep := &investigate.Report{Verdict: investigate.VerdictNoCause, Bad: `reason == "OOMKilled"`,
		Next: []string{"widen the window (--since) or say what bad means (--bad)", "ingest more evidence (faultline sources)"}}
	var out bytes.Buffer
	if err := writeReport(&out, rep, textLayout{Width: reportWidth}); err != nil {
		t.Fatal(err)
	}
	checkReportLayout(t, out.String())
	if want := "NOTHING  went bad in the evidence (bad = reason == \"OOMKilled\")\nNEXT     widen the window"; !strings.HasPrefix(out.String(), want) {
		t.Errorf("got\n%s\nwant it to open with\n%s", out.String(), want)
	}
}
