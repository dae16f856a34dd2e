package investigate

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/dns"
	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
)

// A Job arrives at 0 s; its pods fail at 50 s with a message that names no
// load (a resolver's EAI_AGAIN). Its arrival is a cause only when a
// CoreDNS storm began after it and ran into the failures.
func TestDNSStormMakesAnArrivalACause(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	storm := func(from, to float64) dns.Burst {
		return dns.Burst{Start: at(from), End: at(to), PeakRps: 9000, BaselineRps: 80,
			Stats: dns.Stats{NxdomainShare: f(0.5)},
			Fixes: []dns.Fix{{Kind: "ndots", RemovesShare: f(0.5), Evidence: "NXDOMAIN share 50%"}, {Kind: "autopath"}}}
	}
	tests := []struct {
		name      string
		storms    []dns.Burst
		confident bool
	}{
		{"no series: no sign of load", nil, false},
		{"a storm from 40 s to 70 s", []dns.Burst{storm(40, 70)}, true},
		{"a storm that began a minute before the arrival", []dns.Burst{storm(-60, 70)}, false},
		{"a storm only after the failures", []dns.Burst{storm(200, 210)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var units []*outcome.Unit
			var ids []map[string]identity.Dimension
			for i := range 8 {
				u := badUnit("ml", "loader-"+string(rune('a'+i)), 1, 50)
				u.Message = "socket.gaierror: [Errno -3] Temporary failure in name resolution"
				units, ids = append(units, u), append(ids, idOf("owner/Job", "loader"))
			}
			for i := range 8 {
				units, ids = append(units, goodUnit("ml", "other-"+string(rune('a'+i)), 1, 200)), append(ids, idOf("owner/Job", "other"))
			}
			created := &Suspect{Ref: "Job/ml/loader", Dimension: "created", To: "Job", At: at(0), Kind: "change"}
			storms := &dnsStorms{bursts: tt.storms, detail: "faultline dns"}
			sps := scoreSuspects([]*Suspect{created}, scoring{units: units, ids: ids, pop: populationOf(units, "ml"),
				owners: map[string]bool{"Job/loader": true}, firstBad: at(50), storms: storms})
			if len(sps) != 1 {
				t.Fatalf("suspects: %+v", sps)
			}
			if got := sps[0].Confidence >= Confident; got != tt.confident {
				t.Fatalf("confident = %v (%.2f: %s), want %v", got, sps[0].Confidence, sps[0].ConfidenceWhy, tt.confident)
			}
			rep := &Report{Changes: sps, Boundary: &Boundary{FirstBad: at(50)}, storms: storms}
			dnsEvidence(rep)
			if !tt.confident {
				if rep.Changes[0].DNS != nil {
					t.Errorf("DNS evidence attached: %+v", rep.Changes[0].DNS)
				}
				return
			}
			d := rep.Changes[0].DNS
			if d == nil || d.Client != "Job/ml/loader" || d.Attributed != "timing" || !d.Start.Equal(at(40)) {
				t.Fatalf("DNS evidence: %+v", d)
			}
			var got []string
			for _, a := range undo(rep, rep.Changes[0]) {
				got = append(got, a.Action+" "+a.Target)
			}
			if diff := cmp.Diff([]string{"set Job/ml/loader dnsConfig", "set Job/ml/loader start"}, got); diff != "" {
				t.Errorf("mitigation (-want +got):\n%s", diff)
			}
		})
	}
}

// A storm's detected start may lie up to dnsSmear before the change (a
// counter's rate spreads a jump over its scrape interval), no more.
func TestDNSStormAfter(t *testing.T) {
	d := &dnsStorms{bursts: []dns.Burst{{Start: at(100), End: at(130)}}}
	for _, tt := range []struct {
		change, firstBad float64
		want             bool
	}{
		{90, 120, true},
		{100 + dnsSmear.Seconds(), 120, true},
		{100 + dnsSmear.Seconds() + 1, 140, false},
		{90, 95, false},                            // the failures came first
		{90, 130 + dnsWindow.Seconds() + 1, false}, // over before the failures
	} {
		if got := d.after(at(tt.change), at(tt.firstBad), "") != nil; got != tt.want {
			t.Errorf("change at %v s, first bad at %v s: a storm = %v, want %v", tt.change, tt.firstBad, got, tt.want)
		}
	}
	var none *dnsStorms
	if none.after(at(0), at(10), "") != nil {
		t.Error("no storms: got one")
	}
}

// Beside a change of content, a storm is a coincidence: it is attached
// only to a cause of load.
func TestDNSEvidenceOnlyForLoad(t *testing.T) {
	storms := &dnsStorms{bursts: []dns.Burst{{Start: at(40), End: at(70)}}}
	for dim, want := range map[string]bool{"created": true, "restart": true, "configmap/app/LOG_LEVEL": false, "image.tag/app": false} {
		rep := &Report{Changes: []Suspect{{Ref: "X", Dimension: dim, At: at(0), Confidence: 0.9}}, Boundary: &Boundary{FirstBad: at(50)}, storms: storms}
		dnsEvidence(rep)
		if got := rep.Changes[0].DNS != nil; got != want {
			t.Errorf("%s: DNS evidence attached = %v, want %v", dim, got, want)
		}
	}
}

// A storm CoreDNS labelled with a client is that client's queries: it is
// credited to the arrival of a workload it names (by namespace, name or
// both), never to another's because of its timing alone. A restart makes
// every client resolve again, whoever is labelled.
func TestLabelledStormIsItsClients(t *testing.T) {
	for _, tt := range []struct {
		client, ref, dim string
		want             bool
	}{
		{"", "Job/ml/loader", "created", true}, // unlabelled: timing
		{"ml", "Job/ml/loader", "created", true},
		{"loader", "Job/ml/loader", "created", true},
		{"ml/loader", "Job/ml/loader", "created", true},
		{"batch", "Job/ml/loader", "created", false},
		{"ml/other", "Job/ml/loader", "created", false},
		{"ml", "Node/ml-1", "created", false},
		{"gpu-1", "Node/gpu-1", "created", true},
		{"batch", "apiserver", "restart", true},
	} {
		storms := &dnsStorms{bursts: []dns.Burst{{Start: at(40), End: at(70), Client: tt.client}}}
		rep := &Report{Changes: []Suspect{{Ref: tt.ref, Dimension: tt.dim, At: at(0), Confidence: 0.9}}, Boundary: &Boundary{FirstBad: at(50)}, storms: storms}
		dnsEvidence(rep)
		if got := rep.Changes[0].DNS != nil; got != tt.want {
			t.Errorf("storm of %q, %s %s: credited = %v, want %v", tt.client, tt.dim, tt.ref, got, tt.want)
		}
		if tt.dim == "created" {
			if got := storms.after(at(0), at(50), tt.ref) != nil; got != tt.want {
				t.Errorf("storm of %q after the arrival of %s = %v, want %v", tt.client, tt.ref, got, tt.want)
			}
		}
	}
}
