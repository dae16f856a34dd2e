package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAlertsSuggestDNSStorm: CoreDNS series ingested beside a recorded
// incident, with a storm from client view ml just after its last
// known-good instant, give DNS alerts learned from the series; they export
// over CoreDNS's metric names, and a backtest of the file reads the series
// again and has them fire.
func TestAlertsSuggestDNSStorm(t *testing.T) {
	fl, _ := fixtureDB(t, "digest-drift")
	var plain struct {
		Incident struct {
			LastGood time.Time `json:"lastGood"`
		} `json:"incident"`
	}
	if err := json.Unmarshal([]byte(fl("alerts", "suggest", "-o", "json")), &plain); err != nil {
		t.Fatal(err)
	}
	// The storm (seconds 600 to 660 of the series) starts within a second
	// after the last known-good instant.
	t0 := plain.Incident.LastGood.Truncate(time.Second).Add(time.Second - 600*time.Second)
	dir := t.TempDir()
	qr := filepath.Join(dir, "coredns.json")
	lbl := corednsLabels
	writeQueryRange(t, qr, t0,
		promSeries{lbl("coredns_dns_requests_total", "view", "ml", "type", "A"), counterOf(stormAt(2, 400))},
		promSeries{lbl("coredns_dns_requests_total", "view", "web", "type", "A"), counterOf(constant(5))},
		promSeries{lbl("coredns_dns_responses_total", "view", "ml", "rcode", "NXDOMAIN"), counterOf(stormAt(0, 300))},
		promSeries{lbl("coredns_dns_responses_total", "view", "ml", "rcode", "NOERROR"), counterOf(stormAt(2, 100))},
		promSeries{lbl("coredns_dns_responses_total", "view", "web", "rcode", "NOERROR"), counterOf(constant(5))},
	)
	fl("ingest", "metrics", qr)

	defs := fl("alerts", "suggest")
	for _, want := range []string{"name: CoreDNSRequestRate", "name: CoreDNSViewMlRequestRate", "kind: metricRate",
		"metric: coredns_dns_requests_total", "team: ml", "autopath"} {
		if !strings.Contains(defs, want) {
			t.Errorf("alerts suggest has no %q:\n%s", want, defs)
		}
	}
	file := filepath.Join(dir, "alerts.yaml")
	if err := os.WriteFile(file, []byte(defs), 0o600); err != nil {
		t.Fatal(err)
	}
	rules := fl("alerts", "export", file, "--format", "prometheus")
	for _, want := range []string{`sum(rate(coredns_dns_requests_total[30s]))`, `sum(rate(coredns_dns_requests_total{view="ml"}[30s]))`} {
		if !strings.Contains(rules, want) {
			t.Errorf("exported rules have no %q:\n%s", want, rules)
		}
	}
	var bt struct {
		Alerts []struct {
			Name    string `json:"name"`
			Verdict string `json:"verdict"`
		} `json:"alerts"`
	}
	if err := json.Unmarshal([]byte(fl("alerts", "backtest", file, "-o", "json")), &bt); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, a := range bt.Alerts {
		if strings.HasPrefix(a.Name, "CoreDNS") {
			seen++
			if a.Verdict != "early" && a.Verdict != "in-time" {
				t.Errorf("backtest: %s %s, want early or in-time", a.Name, a.Verdict)
			}
		}
	}
	if seen < 2 {
		t.Errorf("backtest replayed %d CoreDNS alerts, want 2 or more: %+v", seen, bt.Alerts)
	}
}
