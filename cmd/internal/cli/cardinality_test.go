package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/faultline/faultline/analyze/cardinality"
)

// cardinalityDB ingests testdata/TestCardinality/query_range.json: pods of
// a trainer replaced between 10:00 and 11:00, and a new target.
func cardinalityDB(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "t.db")
	if code, _, stderr := runCLI(t, "--db", db, "ingest", "metrics", filepath.Join("testdata", "TestCardinality", "query_range.json")); code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, stderr)
	}
	return db
}

// TestCardinalityTables compares each table with its golden
// (testdata/TestCardinality/NAME.golden; -update rewrites them).
func TestCardinalityTables(t *testing.T) {
	db := cardinalityDB(t)
	status := filepath.Join("testdata", "TestCardinality", "tsdb-status.json")
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"at-vs", []string{"--at", "end", "--vs", "1h"}},
		{"held", []string{"--top", "3"}},
		{"metric", []string{"--vs", "2026-05-01T10:00:00Z", "--metric", "up", "--no-headers"}},
		{"tsdb-status", []string{"--tsdb-status", status}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"--db", db, "cardinality"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			golden := filepath.Join("testdata", "TestCardinality", tt.name+".golden")
			if *updateReports {
				if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -run TestCardinalityTables -update writes it)", err)
			}
			if diff := cmp.Diff(string(want), stdout); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// -o json and -o yaml carry the same report.
func TestCardinalityStructured(t *testing.T) {
	db := cardinalityDB(t)
	var reps []cardinality.Report
	for _, format := range []string{"json", "yaml"} {
		code, stdout, stderr := runCLI(t, "--db", db, "cardinality", "--at", "end", "--vs", "1h", "-o", format)
		if code != 0 {
			t.Fatalf("-o %s: exit %d: %s", format, code, stderr)
		}
		b := []byte(stdout)
		if format == "yaml" {
			var err error
			if b, err = yaml.YAMLToJSON(b); err != nil {
				t.Fatal(err)
			}
		}
		var rep cardinality.Report
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatalf("-o %s: %v", format, err)
		}
		reps = append(reps, rep)
	}
	if diff := cmp.Diff(reps[0], reps[1]); diff != "" {
		t.Errorf("json and yaml differ (-json +yaml)\n%s", diff)
	}
	got := reps[0]
	want := []any{22, 11, 17, 6, "pod", 12, "trainer", "10.0.1.3:8080", 9}
	have := []any{got.Series, got.Churn.SeriesVs, got.Churn.Appeared, got.Churn.Disappeared, got.Worst.Label, got.Worst.Saves,
		got.Targets[0].Job, got.Targets[0].Instance, got.Targets[0].Growth}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("series, then, appeared, disappeared, worst, saves, top target (-want +got)\n%s", diff)
	}
}

func TestCardinalityErrors(t *testing.T) {
	db := cardinalityDB(t)
	// A timeline whose only metrics run brought no series.
	empty := filepath.Join(t.TempDir(), "empty.db")
	none := filepath.Join(t.TempDir(), "none.json")
	if err := os.WriteFile(none, []byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "--db", empty, "ingest", "metrics", none); code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, stderr)
	}
	badStatus := filepath.Join(t.TempDir(), "tsdb.json")
	if err := os.WriteFile(badStatus, []byte("{\"data\": {\n\"seriesCountByMetricName\": [{\"name\": \"up\", \"value\": -2}]}}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no series", []string{"--db", empty, "cardinality"}, 1, "no series ingested: ingest Prometheus evidence first"},
		{"no series to end", []string{"--db", empty, "cardinality", "--vs", "1h"}, 1, "Try: faultline ingest metrics"},
		{"unknown metric", []string{"--db", db, "cardinality", "--metric", "nope"}, 1, `metric "nope": no series ingested`},
		{"bad instant", []string{"--db", db, "cardinality", "--at", "yesterday"}, 2, "Try: faultline cardinality --at end --vs 1h"},
		{"status and vs", []string{"--db", db, "cardinality", "--tsdb-status", badStatus, "--vs", "1h"}, 2, "--tsdb-status is one instant"},
		{"bad status", []string{"cardinality", "--tsdb-status", badStatus}, 1, "tsdb.json: data.seriesCountByMetricName[0].value: -2: a count is never negative"},
		{"bad output", []string{"--db", db, "cardinality", "-o", "csv"}, 2, `unknown output "csv"`},
		{"bad top", []string{"--db", db, "cardinality", "--top", "0"}, 2, "invalid --top 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d saying %q", code, stdout, stderr, tt.code, tt.want)
			}
		})
	}
}

func TestCardinalityHelp(t *testing.T) {
	code, stdout, _ := runCLI(t, "cardinality", "--help")
	if code != 0 || !strings.Contains(stdout, "Examples:") || !strings.Contains(stdout, "--tsdb-status") {
		t.Errorf("exit %d; help without examples:\n%s", code, stdout)
	}
}
