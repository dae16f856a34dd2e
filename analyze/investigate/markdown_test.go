package investigate

import (
	"bytes"
	"strings"
	"testing"
)

// The postmortem's Summary carries the headline's facts: the verdict, who
// made the leading change and how sure it is, and the command that
// mitigates it.
func TestMarkdownSummary(t *testing.T) {
	rep := &Report{Verdict: VerdictCause, VerdictWhy: "ConfigMap/ml/env configmap/env/LR changed",
		Boundary: &Boundary{FirstBad: at(60), LastGood: at(10)},
		Changes: []Suspect{{Rank: 1, Ref: "ConfigMap/ml/env", Dimension: "configmap/env/LR", From: "0.06", To: "0.6", At: at(5),
			Confidence: 0.95, By: "alice", UserAgent: "kubectl/v1.37.2"}},
		Mitigation: []Action{{Action: "rollback", Target: "ConfigMap/ml/env", To: "0.06",
			Command: "kubectl patch configmap env -n ml --type merge -p '{\"data\":{\"LR\":\"0.06\"}}'",
			Verify:  "kubectl get configmap env -n ml -o 'jsonpath={.data.LR}'"}},
	}
	var b bytes.Buffer
	if err := WriteMarkdown(&b, rep); err != nil {
		t.Fatal(err)
	}
	summary, _, _ := strings.Cut(b.String(), "## Timeline")
	for _, want := range []string{
		"- **Verdict:** cause: ConfigMap/ml/env configmap/env/LR changed.",
		"by alice (kubectl/v1.37.2), confidence 0.95.",
		"- **Mitigation:** `kubectl patch configmap env -n ml --type merge -p '{\"data\":{\"LR\":\"0.06\"}}'` (rollback ConfigMap/ml/env); verify with `kubectl get configmap env -n ml -o 'jsonpath={.data.LR}'`.",
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("the Summary lacks %q:\n%s", want, summary)
		}
	}
	if got := mdCode("a `b` c"); got != "`` a `b` c ``" {
		t.Errorf("mdCode = %s", got)
	}
}
