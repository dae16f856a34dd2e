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

// TestAlertsFromSeriesOnly: a timeline of CoreDNS's series alone (the
// zoo's dns-storm, recorded from a real CoreDNS) has no records to find
// the boundary in. alerts suggest says so and asks for it; given the
// recorded boundary it learns the DNS alerts from the series, and the
// backtest, given it too, has them fire in time, with no false positive.
func TestAlertsFromSeriesOnly(t *testing.T) {
	const seed = "../../../fixtures/zoo/dns-storm/seed-1"
	raw, err := os.ReadFile(filepath.Join(seed, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Boundary struct{ LastGood, FirstBad time.Time }
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "t.db")
	if code, _, stderr := runCLI(t, "--db", db, "ingest", "metrics", filepath.Join(seed, "metrics", "coredns.json.gz")); code != 0 {
		t.Fatalf("ingest metrics: exit %d\n%s", code, stderr)
	}
	code, _, stderr := runCLI(t, "--db", db, "alerts", "suggest")
	if code != 2 || !strings.Contains(stderr, "only metric series") || !strings.Contains(stderr, "--first-bad") {
		t.Fatalf("suggest without a boundary: exit %d\n%s\nwant 2, saying the timeline holds series only and asking for --first-bad", code, stderr)
	}
	boundary := []string{"--first-bad", want.Boundary.FirstBad.Format(time.RFC3339Nano), "--last-good", want.Boundary.LastGood.Format(time.RFC3339Nano)}
	code, defs, stderr := runCLI(t, append([]string{"--db", db, "alerts", "suggest"}, boundary...)...)
	if code != 0 || !strings.Contains(defs, "name: CoreDNSRequestRate") {
		t.Fatalf("suggest with the boundary: exit %d, no CoreDNSRequestRate\n%s\n%s", code, defs, stderr)
	}
	file := filepath.Join(t.TempDir(), "alerts.yaml")
	if err := os.WriteFile(file, []byte(defs), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, append([]string{"--db", db, "alerts", "backtest", file, "-o", "json"}, boundary...)...)
	if code != 0 {
		t.Fatalf("backtest: exit %d\n%s", code, stderr)
	}
	var bt struct {
		Alerts []struct {
			Name           string `json:"name"`
			Verdict        string `json:"verdict"`
			FalsePositives []any  `json:"falsePositives"`
		} `json:"alerts"`
	}
	if err := json.Unmarshal([]byte(out), &bt); err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, a := range bt.Alerts {
		if a.Name != "CoreDNSRequestRate" {
			continue
		}
		seen = true
		if a.Verdict != "early" && a.Verdict != "in-time" || len(a.FalsePositives) > 0 {
			t.Errorf("backtest: %s %s with %d false positives, want early or in-time with none", a.Name, a.Verdict, len(a.FalsePositives))
		}
	}
	if !seen {
		t.Errorf("backtest did not replay CoreDNSRequestRate: %+v", bt.Alerts)
	}
	// A boundary outside the evidence, or backwards, is refused.
	for _, args := range [][]string{
		{"--first-bad", "2030-01-01T00:00:00Z"},
		{"--first-bad", want.Boundary.LastGood.Format(time.RFC3339Nano), "--last-good", want.Boundary.FirstBad.Format(time.RFC3339Nano)},
		{"--last-good", want.Boundary.LastGood.Format(time.RFC3339Nano)},
		{"--first-bad", "after lunch"},
	} {
		if code, _, stderr := runCLI(t, append([]string{"--db", db, "alerts", "suggest"}, args...)...); code == 0 || stderr == "" {
			t.Errorf("suggest %v: exit %d, want an error\n%s", args, code, stderr)
		}
	}
}
