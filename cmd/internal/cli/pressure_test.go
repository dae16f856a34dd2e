package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// promSeries is one series of a query_range answer: its labels and its
// value at second s, scraped every 15 s for 20 minutes.
type promSeries struct {
	labels map[string]string
	value  func(s int) float64
}

// counterOf is a counter from 1000 rising by rate(x) in each second x.
func counterOf(rate func(s int) float64) func(int) float64 {
	return func(s int) float64 {
		v := 1000.0
		for x := 0; x < s; x++ {
			v += rate(x)
		}
		return v
	}
}

func constant(v float64) func(int) float64 { return func(int) float64 { return v } }

// writeQueryRange writes the series as /api/v1/query_range JSON.
func writeQueryRange(t *testing.T, path string, t0 time.Time, series ...promSeries) {
	t.Helper()
	var result []any
	for _, s := range series {
		var values [][2]any
		for sec := 0; sec <= 1200; sec += 15 {
			values = append(values, [2]any{t0.Unix() + int64(sec), strconv.FormatFloat(s.value(sec), 'f', -1, 64)})
		}
		result = append(result, map[string]any{"metric": s.labels, "values": values})
	}
	b, err := json.Marshal(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": result}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// stormAt is base a second, and peak in [600, 660).
func stormAt(base, peak float64) func(int) float64 {
	return func(s int) float64 {
		if s >= 600 && s < 660 {
			return peak
		}
		return base
	}
}

// runOK runs faultline and fails the test unless it exits 0.
func runOK(t *testing.T, dir string, args ...string) string {
	t.Helper()
	code, out, errOut := runIn(t, dir, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errOut)
	}
	return out
}

// noSeries ingests a series of up alone and runs cmd, which must fail
// (exit 1) saying each of want.
func noSeries(t *testing.T, dir, db string, t0 time.Time, cmd string, want ...string) {
	t.Helper()
	up := filepath.Join(dir, "up.json")
	writeQueryRange(t, up, t0, promSeries{map[string]string{"__name__": "up", "job": "apiserver"}, constant(1)})
	runOK(t, dir, "--db", db, "ingest", "metrics", up)
	code, _, errOut := runIn(t, dir, "--db", db, cmd)
	if code != 1 {
		t.Errorf("%s without its series: exit %d, want 1: %s", cmd, code, errOut)
	}
	for _, w := range want {
		if !strings.Contains(errOut, w) {
			t.Errorf("%s without its series: stderr has no %q:\n%s", cmd, w, errOut)
		}
	}
}

// corednsLabels are the labels of a CoreDNS series: its metric, then name,
// value pairs.
func corednsLabels(kv ...string) map[string]string {
	m := map[string]string{"__name__": kv[0], "server": "dns://:53", "zone": "."}
	for i := 1; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestDNSCommand(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	lbl := corednsLabels
	qr := filepath.Join(dir, "coredns.json")
	writeQueryRange(t, qr, t0,
		promSeries{lbl("coredns_dns_requests_total", "view", "ml", "type", "A"), counterOf(stormAt(2, 400))},
		promSeries{lbl("coredns_dns_requests_total", "view", "web\x1b]0;PWNED\x07x", "type", "A"), counterOf(stormAt(5, 5))},
		promSeries{lbl("coredns_dns_responses_total", "view", "ml", "rcode", "NXDOMAIN"), counterOf(stormAt(0, 300))},
		promSeries{lbl("coredns_dns_responses_total", "view", "ml", "rcode", "NOERROR"), counterOf(stormAt(2, 100))},
	)
	// No CoreDNS series yet: the error says how to ingest them.
	noSeries(t, dir, db, t0, "dns", "no series of coredns_dns_requests_total", "Try: faultline ingest metrics --prometheus")
	runOK(t, dir, "--db", db, "ingest", "metrics", qr)

	table := runOK(t, dir, "--db", db, "dns")
	if strings.Contains(table, "\x1b") {
		t.Errorf("dns table holds an escape from a label value:\n%q", table)
	}
	for _, want := range []string{"CLIENTS (by view)", "client ml", "fix ndots", "NXDOMAIN 75.0%", "Not ingested: coredns_dns_request_duration_seconds_bucket", `web\x1b]0;PWNED\x07x`} {
		if !strings.Contains(table, want) {
			t.Errorf("dns table has no %q:\n%s", want, table)
		}
	}
	var rep struct {
		Bursts []struct {
			Client   string `json:"client"`
			Requests int64  `json:"requests"`
			Fixes    []struct {
				Kind         string   `json:"kind"`
				RemovesShare *float64 `json:"removesShare"`
			} `json:"fixes"`
		} `json:"bursts"`
	}
	if err := json.Unmarshal([]byte(runOK(t, dir, "--db", db, "dns", "-o", "json")), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Bursts) != 1 || rep.Bursts[0].Client != "ml" || rep.Bursts[0].Requests != 24000 || len(rep.Bursts[0].Fixes) != 3 {
		t.Fatalf("bursts = %+v, want ml's 24,000 queries with three fixes", rep.Bursts)
	}
	if f := rep.Bursts[0].Fixes[0]; f.Kind != "autopath" || f.RemovesShare == nil || *f.RemovesShare != 0.75 {
		t.Errorf("first fix = %s removing %v, want autopath removing 0.75", f.Kind, f.RemovesShare)
	}
	if y := runOK(t, dir, "--db", db, "dns", "-o", "yaml"); !strings.Contains(y, "bursts:") || !strings.Contains(y, "client: ml") {
		t.Errorf("dns -o yaml has no bursts of client ml:\n%s", y)
	}
	if code, _, errOut := runIn(t, dir, "--db", db, "dns", "-o", "csv"); code != 2 || !strings.Contains(errOut, "want table, json or yaml") {
		t.Errorf("dns -o csv: exit %d: %s", code, errOut)
	}
}

func TestNetworkCommand(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	noSeries(t, dir, db, t0, "network", "network pressure: no series", "faultline ingest nodelogs")
	qr := filepath.Join(dir, "node.json")
	writeQueryRange(t, qr, t0,
		promSeries{map[string]string{"__name__": "node_nf_conntrack_entries", "instance": "gpu-a:9100"}, constant(250000)},
		promSeries{map[string]string{"__name__": "node_nf_conntrack_entries_limit", "instance": "gpu-a:9100"}, constant(262144)},
		promSeries{map[string]string{"__name__": "node_network_carrier_changes_total", "instance": "gpu-b:9100", "device": "eth0"}, counterOf(stormAt(0, 0.1))},
	)
	runOK(t, dir, "--db", db, "ingest", "metrics", qr)
	table := runOK(t, dir, "--db", db, "network")
	for _, want := range []string{"gpu-a", "95.4% (250,000 of 262,144)", "conntrack at 95% of its limit", "link eth0 flapped 3 times"} {
		if !strings.Contains(table, want) {
			t.Errorf("network table has no %q:\n%s", want, table)
		}
	}
	var rep struct {
		Nodes []struct {
			Name     string   `json:"name"`
			Findings []string `json:"findings"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(runOK(t, dir, "--db", db, "network", "-o", "json")), &rep); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range rep.Nodes {
		names = append(names, n.Name)
	}
	if diff := cmp.Diff([]string{"gpu-a", "gpu-b"}, names); diff != "" {
		t.Errorf("nodes (-want +got)\n%s", diff)
	}
}

// A real CoreDNS /metrics snapshot holds one sample a series: no rate, and
// the error says to ingest a range.
func TestDNSOnASnapshot(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	runOK(t, dir, "--db", db, "ingest", "metrics", "--time", "2026-05-01T10:00:00Z", filepath.Join("..", "..", "..", "ingest", "metrics", "testdata", "coredns.prom"))
	code, _, errOut := runIn(t, dir, "--db", db, "dns")
	if code != 1 || !strings.Contains(errOut, "has a single sample in the window") || !strings.Contains(errOut, "ingest a range") {
		t.Errorf("dns on a snapshot: exit %d:\n%s", code, errOut)
	}
}
