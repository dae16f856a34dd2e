package alerts_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/alerts"
	"github.com/faultline/faultline/ingest/evidence"
	"github.com/faultline/faultline/timeline/sqlite"

	"github.com/faultline/faultline/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite golden files")

// incidents are the recorded fixtures. A fixture still being recorded
// (no expected.json in fixtures/NAME) is read from its second recording
// in fixtures/holdout/NAME.
var incidents = []string{"bad-config-rollout", "driver-upgrade-pool", "digest-drift", "thousand-workers", "mpi-rank-death"}

func fixtureDir(t *testing.T, name string) string {
	t.Helper()
	for _, dir := range []string{filepath.Join("..", "..", "fixtures", name), filepath.Join("..", "..", "fixtures", "holdout", name)} {
		if _, err := os.Stat(filepath.Join(dir, "expected.json")); err == nil {
			return dir
		}
	}
	testenv.Missing(t, "fixture %s is not recorded yet (no expected.json in fixtures/%s or fixtures/holdout/%s)", name, name, name)
	return ""
}

var (
	evMu   sync.Mutex
	loaded = map[string]*alerts.Evidence{}
)

// replay ingests a fixture folder into a fresh timeline with the loader
// faultline replay uses, and loads the investigated evidence (once per test binary).
func replay(t *testing.T, name string) *alerts.Evidence {
	t.Helper()
	dir := fixtureDir(t, name)
	evMu.Lock()
	defer evMu.Unlock()
	if ev := loaded[name]; ev != nil {
		return ev
	}
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "t.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := (evidence.Loader{Dir: dir}).Load(ctx, store, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if err := store.Analyze(ctx); err != nil {
		t.Fatal(err)
	}
	ev, err := alerts.Load(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	loaded[name] = ev
	return ev
}

// TestSuggestFiresInTimeOnEveryFixture is the promise: on each
// recorded incident the suggested definitions fire before the first bad
// observation or within one persistence after it, with no false positive
// in the known-good window, and a file written and read back replays the
// same.
func TestSuggestFiresInTimeOnEveryFixture(t *testing.T) {
	for _, name := range incidents {
		t.Run(name, func(t *testing.T) {
			ev := replay(t, name)
			f, dropped, err := ev.Suggest(alerts.SuggestOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range dropped {
				t.Logf("not suggested: %s: %s", d.Name, d.Reason)
			}
			if len(f.Alerts) == 0 {
				t.Fatalf("no definition suggested")
			}
			bt := replayWritten(t, ev, f)
			for _, a := range bt.Alerts {
				lead, noticed := "-", "-"
				if a.Lead != nil {
					lead = fmt.Sprintf("%+.1fs", *a.Lead)
				}
				if a.LeadNoticed != nil {
					noticed = fmt.Sprintf("%+.1fs", *a.LeadNoticed)
				}
				t.Logf("%-40s for %-4s max %-8g lead %-12s before noticed %-8s FP %d %s", a.Name,
					alerts.FormatDuration(a.For.D()), a.Max, lead, noticed, len(a.FalsePositives), a.Verdict)
				if !a.OK() {
					t.Errorf("%s: verdict %s with %d false positive(s)", a.Name, a.Verdict, len(a.FalsePositives))
				}
			}
			if len(bt.Alerts) != len(f.Alerts) {
				t.Errorf("backtest replayed %d alerts, want %d", len(bt.Alerts), len(f.Alerts))
			}
		})
	}
}

// replayWritten writes the file, reads it back and backtests it.
func replayWritten(t *testing.T, ev *alerts.Evidence, f *alerts.File) *alerts.Backtest {
	t.Helper()
	y, err := f.YAML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := alerts.Parse(y)
	if err != nil {
		t.Fatalf("suggested file does not parse back: %v\n%s", err, y)
	}
	bt, err := ev.Run(back)
	if err != nil {
		t.Fatal(err)
	}
	return bt
}

// TestExportThousandWorkers holds the exported rule file of the
// thousand-workers incident to a golden file, and has promtool check it.
func TestExportThousandWorkers(t *testing.T) {
	ev := replay(t, "thousand-workers")
	f, _, err := ev.Suggest(alerts.SuggestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkRulesGolden(t, f, "faultline-thousand-workers", filepath.Join("testdata", t.Name(), "thousand-workers.golden"))
}

// checkRulesGolden holds the rules exported from f to a golden file
// (-update rewrites it), and has promtool check them.
func checkRulesGolden(t *testing.T, f *alerts.File, group, golden string) {
	t.Helper()
	rules, err := alerts.Prometheus(f, group)
	if err != nil {
		t.Fatal(err)
	}
	got, err := alerts.YAML(rules)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("exported rules (-want +got)\n%s", diff)
	}
	promtoolCheck(t, got)
}

// TestExportedRulesPassPromtool exports every fixture's suggestions and
// has promtool check them.
func TestExportedRulesPassPromtool(t *testing.T) {
	promtool(t)
	for _, name := range incidents {
		t.Run(name, func(t *testing.T) {
			ev := replay(t, name)
			f, _, err := ev.Suggest(alerts.SuggestOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rules, err := alerts.Prometheus(f, "faultline-"+name)
			if err != nil {
				t.Fatal(err)
			}
			y, err := alerts.YAML(rules)
			if err != nil {
				t.Fatal(err)
			}
			promtoolCheck(t, y)
		})
	}
}

// promtool returns the promtool binary: $FAULTLINE_PROMTOOL, else the one
// hack/promtool/build caches. The test is skipped without one.
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("FAULTLINE_PROMTOOL"); p != "" {
		return p
	}
	home, _ := os.UserHomeDir()
	matches, _ := filepath.Glob(filepath.Join(home, ".cache", "faultline", "promtool", "*", "promtool"))
	if len(matches) == 0 {
		testenv.Missing(t, "promtool not built: run bash hack/promtool/build (or set FAULTLINE_PROMTOOL=/path/to/promtool)")
	}
	return matches[len(matches)-1]
}

func promtoolCheck(t *testing.T, rules []byte) {
	t.Helper()
	bin := promtool(t)
	p := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(p, rules, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "check", "rules", p)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s\n%s", err, out.String(), rules)
	}
	if !strings.Contains(out.String(), "SUCCESS") {
		t.Fatalf("promtool check rules said:\n%s", out.String())
	}
}

// TestNodeFaultRulesPassPromtool: the node-fault budgets' PromQL (GPU Xid
// from dcgm-exporter, node_exporter counters joined to the pool) exports
// to rules promtool accepts.
func TestNodeFaultRulesPassPromtool(t *testing.T) {
	promtool(t)
	w := 5 * time.Minute
	checkExprRules(t, "faultline-node-faults", alerts.Signal{Kind: alerts.KindRate, Window: alerts.Duration(w), Count: `source == "node"`},
		map[string]string{
			"PoolH100GPUXidErrors":   alerts.GPUXidPromQL("pool", "h100", w),
			"PoolH100OOMKills":       alerts.NodeCounterPromQL("node_vmstat_oom_kill")("pool", "h100", w),
			"PoolH100ConntrackDrops": alerts.NodeCounterPromQL("node_nf_conntrack_stat_drop")("node.kubernetes.io/pool", "h100", w),
		})
}

// checkExprRules exports a rule a PromQL expression, each with sig, and
// has Guard accept them and promtool check them.
func checkExprRules(t *testing.T, group string, sig alerts.Signal, exprs map[string]string) {
	t.Helper()
	f := &alerts.File{SchemaVersion: alerts.SchemaVersion, Interval: alerts.Duration(15 * time.Second)}
	for name, q := range exprs {
		d := alerts.Definition{Name: name, Summary: "s", Severity: "page", Signal: sig,
			Slice: map[string]string{"pool": "h100"}, Normal: alerts.Normal{Max: 0.001}, For: alerts.Duration(time.Minute),
			Owner: alerts.Owner{Team: "platform", Rotation: "platform-oncall"}, Mitigation: "cordon", Runbook: alerts.RunbookBase + "node-faults"}
		d.Signal.PromQL = q
		if err := alerts.Guard(&d); err != nil {
			t.Errorf("guard refused %s: %v", name, err)
		}
		f.Alerts = append(f.Alerts, d)
	}
	rules, err := alerts.Prometheus(f, group)
	if err != nil {
		t.Fatal(err)
	}
	y, err := alerts.YAML(rules)
	if err != nil {
		t.Fatal(err)
	}
	promtoolCheck(t, y)
}
