package cli

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
)

// TestIngestWindow: ingest audit --since/--until keeps the window's
// requests, says how many it left out, and sources says the run was
// windowed; a window that misses the file warns, and a bad window is a
// usage error.
func TestIngestWindow(t *testing.T) {
	const sample = "../../../fixtures/sample-audit/audit.log.gz"
	db := filepath.Join(t.TempDir(), "w.db")
	since, until := "2026-05-01T10:02:00Z", "2026-05-01T10:04:00Z"
	code, _, stderr := runCLI(t, "--db", db, "ingest", "audit", "--since", since, "--until", until, sample)
	if code != 0 || !strings.Contains(stderr, " events outside the window") || strings.Contains(stderr, "warning") {
		t.Fatalf("exit %d, stderr %q; want exit 0 and a count of the events outside the window", code, stderr)
	}
	code, stdout, stderr := runCLI(t, "--db", db, "sources")
	want := "WINDOW: run 1 kept only the requests received in [" + since + ", " + until + ")"
	if code != 0 || !strings.Contains(stdout, want) {
		t.Errorf("sources: exit %d, stdout %q, stderr %q; want %q", code, stdout, stderr, want)
	}
	_, stdout, _ = runCLI(t, "--db", db, "sources", "-o", "json")
	var src struct {
		Runs []struct {
			Since, Until     time.Time
			Outside, Records int64
		}
	}
	if err := json.Unmarshal([]byte(stdout), &src); err != nil {
		t.Fatal(err)
	}
	lo, _ := time.Parse(time.RFC3339, since)
	hi, _ := time.Parse(time.RFC3339, until)
	if r := src.Runs; len(r) != 1 || !r[0].Since.Equal(lo) || !r[0].Until.Equal(hi) || r[0].Outside == 0 || r[0].Records == 0 {
		t.Errorf("sources -o json runs: %+v", r)
	}
	_, stdout, _ = runCLI(t, "--db", db, "timeline", "-o", "jsonl", "--limit", "0")
	for l := range strings.SplitSeq(strings.TrimSpace(stdout), "\n") {
		var r struct {
			Source string
			Time   time.Time
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.Source == "audit" && (r.Time.Before(lo) || !r.Time.Before(hi)) {
			t.Fatalf("a record received at %s, outside [%s, %s)", r.Time, since, until)
		}
	}

	code, _, stderr = runCLI(t, "--db", filepath.Join(t.TempDir(), "x.db"), "ingest", "audit", "--since", "2027-01-01T00:00:00Z", sample)
	if code != 0 || !strings.Contains(stderr, "audit.log.gz: none of its 8,000 audit events was received from 2027-01-01T00:00:00Z; nothing of it was stored") {
		t.Errorf("a window past the file: exit %d, stderr %q", code, stderr)
	}

	for _, tt := range []struct {
		args []string
		err  string
	}{
		{[]string{"--since", until, "--until", since}, "--since (" + until + ") must come before --until (" + since + ")"},
		{[]string{"--since", "yesterday"}, `invalid --since "yesterday"`},
		{[]string{"--until", "5"}, `invalid --until "5"`},
	} {
		for _, cmd := range [][]string{{"ingest", "audit", sample}, {"replay", "sample-audit"}} {
			args := append(append([]string{"--db", filepath.Join(t.TempDir(), "u.db")}, cmd...), tt.args...)
			if code, _, stderr := runCLI(t, args...); code != exitUsage || !strings.Contains(stderr, tt.err) {
				t.Errorf("%v: exit %d, stderr %q; want exit %d saying %q", args[2:], code, stderr, exitUsage, tt.err)
			}
		}
	}
}

// TestInvestigateNamesTheWindow: a report over a windowed ingest lists the
// run and what it left out, in JSON, text and the postmortem draft; an
// ingest that started after the calm leaves the investigation unsure, and
// its next steps ask for a wider window, where one that kept the calm and
// the cause finds it and asks for nothing.
func TestInvestigateNamesTheWindow(t *testing.T) {
	const log = "../../../fixtures/thousand-workers/audit.log.gz"
	for _, tt := range []struct {
		since, verdict string
		asks           bool
	}{
		{"2026-11-30T09:19:05Z", "no-confident-cause", true},
		{"2026-11-30T09:17:00Z", "cause", false},
	} {
		t.Run(tt.since, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "w.db")
			if code, _, stderr := runCLI(t, "--db", db, "ingest", "audit", "--since", tt.since, log); code != 0 {
				t.Fatalf("ingest: exit %d: %s", code, stderr)
			}
			code, stdout, stderr := runCLI(t, "--db", db, "investigate", "-o", "json")
			if code != 0 {
				t.Fatalf("investigate: exit %d: %s", code, stderr)
			}
			var rep struct {
				Verdict      string
				Next         []string
				WindowedRuns []struct {
					Run     int64
					Since   time.Time
					Outside int64
				}
			}
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatal(err)
			}
			since, _ := time.Parse(time.RFC3339, tt.since)
			if w := rep.WindowedRuns; rep.Verdict != tt.verdict || len(w) != 1 || w[0].Run != 1 || !w[0].Since.Equal(since) || w[0].Outside == 0 {
				t.Errorf("verdict %q, windowed runs %+v; want %q and run 1 from %s", rep.Verdict, w, tt.verdict, tt.since)
			}
			wants := "received from " + tt.since + " and left "
			asks := slices.ContainsFunc(rep.Next, func(n string) bool { return strings.Contains(n, wants) })
			if asks != tt.asks {
				t.Errorf("next %q: asks for a wider window %v, want %v", rep.Next, asks, tt.asks)
			}
			for _, out := range []string{"text", "markdown"} {
				_, stdout, _ := runCLI(t, "--db", db, "investigate", "-o", out)
				if !strings.Contains(strings.Join(strings.Fields(stdout), " "), "run 1 kept only the requests of ") ||
					!strings.Contains(strings.Join(strings.Fields(stdout), " "), wants) {
					t.Errorf("-o %s does not name the window:\n%s", out, stdout)
				}
			}
		})
	}
}

// TestIngestWindowOnClickHouse: a windowed ingest into ClickHouse holds
// what one into SQLite does, and its run keeps the window and the count.
func TestIngestWindowOnClickHouse(t *testing.T) {
	dsn := clickhousetest.DSN(t)
	db := filepath.Join(t.TempDir(), "w.db")
	const sample = "../../../fixtures/sample-audit/audit.log.gz"
	window := []string{"--since", "2026-05-01T10:02:00Z", "--until", "2026-05-01T10:04:00Z"}
	var out [2]struct{ timeline, runs string }
	for i, store := range [][]string{{"--db", db}, {"--store", dsn}} {
		if code, _, stderr := runCLI(t, append(append(append(store, "ingest", "audit"), window...), sample)...); code != 0 {
			t.Fatalf("%v: ingest: exit %d: %s", store, code, stderr)
		}
		_, stdout, _ := runCLI(t, append(store, "timeline", "-o", "jsonl", "--limit", "0")...)
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		slices.Sort(lines)
		out[i].timeline = strings.Join(lines, "\n")
		_, stdout, _ = runCLI(t, append(store, "sources", "-o", "json")...)
		var src struct {
			Runs []struct {
				Since, Until time.Time
				Outside      int64
			}
		}
		if err := json.Unmarshal([]byte(stdout), &src); err != nil {
			t.Fatalf("%v: sources: %v", store, err)
		}
		b, _ := json.Marshal(src.Runs)
		out[i].runs = string(b)
	}
	if out[0].timeline == "" || out[0].timeline != out[1].timeline {
		t.Errorf("the windowed timelines differ (-SQLite +ClickHouse)\n%s", cmp.Diff(out[0].timeline, out[1].timeline))
	}
	if out[0].runs != out[1].runs || !strings.Contains(out[0].runs, `"Outside":6661`) {
		t.Errorf("runs: SQLite %s, ClickHouse %s", out[0].runs, out[1].runs)
	}
	for _, cmd := range [][]string{{"investigate", "-o", "json"}, {"controlplane", "-o", "json"}} {
		lite := sortedOutput(t, runCLI, append([]string{"--db", db}, cmd...))
		house := sortedOutput(t, runCLI, append([]string{"--store", dsn}, cmd...))
		if lite != house || !strings.Contains(lite, "windowedRuns") && cmd[0] == "investigate" {
			t.Errorf("%s differs: first difference:\n%s", strings.Join(cmd, " "), firstDiff(lite, house))
		}
	}
}
