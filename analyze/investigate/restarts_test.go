package investigate

import (
	"testing"

	"github.com/faultline/faultline/analyze/controlplane"
	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
)

// A Job arrives at 0 s and runs; the apiserver is away from 60 s to 70 s.
// Whether the restart or the arrival leads depends on how the units failed
// and when.
func TestRestartTrigger(t *testing.T) {
	tests := []struct {
		name     string
		badAt    float64
		message  string
		wantTop  string // "" when no suspect is confident
		wantTrig bool   // the restart is among the suspects
	}{
		{"throttled right after the apiserver came back: the restart", 71, "429 Too Many Requests", "kube-apiserver", true},
		{"the same failures a minute after it: nobody is sure", 130, "429 Too Many Requests", "", true},
		{"failures that are not load's: no restart suspect", 71, "invalid learning rate", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var units []*outcome.Unit
			var ids []map[string]identity.Dimension
			for i := range 8 {
				u := badUnit("ml", "agent-"+string(rune('a'+i)), 1, tt.badAt)
				u.Message = tt.message
				units, ids = append(units, u), append(ids, idOf("owner/Job", "agent"))
			}
			for i := range 8 {
				units, ids = append(units, goodUnit("ml", "other-"+string(rune('a'+i)), 1, 200)), append(ids, idOf("owner/Job", "other"))
			}
			restart := &Suspect{Ref: "kube-apiserver", Dimension: "restart", To: "restarted", At: at(60), Kind: "change",
				restart: &controlplane.Restart{Component: "kube-apiserver", LastServed: at(60), Up: at(70)}, reached: map[*outcome.Unit]bool{}}
			for _, u := range units {
				restart.reached[u] = true
			}
			created := &Suspect{Ref: "Job/ml/agent", Dimension: "created", To: "Job", At: at(0), Kind: "change"}
			sps := scoreSuspects([]*Suspect{created, restart}, scoring{units: units, ids: ids, pop: populationOf(units, "ml"), owners: map[string]bool{"Job/agent": true}, firstBad: at(tt.badAt)})
			trig := false
			for _, sp := range sps {
				trig = trig || sp.Dimension == "restart"
			}
			if trig != tt.wantTrig {
				t.Errorf("restart among the suspects = %v, want %v: %+v", trig, tt.wantTrig, sps)
			}
			top := ""
			if len(sps) > 0 && sps[0].Confidence >= Confident {
				top = sps[0].Ref
			}
			if top != tt.wantTop {
				t.Errorf("confident top = %q, want %q: %+v", top, tt.wantTop, sps)
			}
		})
	}
}
