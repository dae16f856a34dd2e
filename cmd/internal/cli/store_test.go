package cli

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
)

// TestStoreFlag: --store (or FAULTLINE_STORE) must be a ClickHouse DSN; a
// file path or a malformed DSN is a usage error that names the form.
func TestStoreFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		err  string
	}{
		{[]string{"--store", "./faultline.db", "sources"}, "", `--store "./faultline.db": want a ClickHouse DSN`},
		{[]string{"sources"}, "http://ch:8123/", `--store "http://ch:8123/": want a ClickHouse DSN`},
		{[]string{"--store", "clickhouse://ch:9000/db?cluster=", "sources"}, "", "error: invalid --store (or FAULTLINE_STORE): store \"clickhouse://ch:9000/db?cluster=\": an empty ?cluster= (leave it out for faultline)"},
		{[]string{"--db", "x.db", "--store", "clickhouse://ch:9000/db", "sources"}, "", "--db and --store both name a timeline: give one"},
	} {
		t.Run(strings.Join(tc.args, " ")+" "+tc.env, func(t *testing.T) {
			code, _, stderr := runCLIEnv(t, map[string]string{"FAULTLINE_STORE": tc.env}, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.err) {
				t.Errorf("exit %d, stderr %q; want exit 2 saying %q", code, stderr, tc.err)
			}
		})
	}
}

// TestStorePrecedence: a flag beats the environment. With FAULTLINE_STORE
// naming a cluster that is not there, --db on the command line still goes
// to its file (which does not exist either, and says so), and without
// --db the command goes to the cluster (and says it cannot reach it).
func TestStorePrecedence(t *testing.T) {
	env := map[string]string{"FAULTLINE_STORE": "clickhouse://127.0.0.1:1/faultline"}
	db := filepath.Join(t.TempDir(), "f.db")
	if code, _, errOut := runCLIEnv(t, env, "--db", db, "sources"); code == 0 || !strings.Contains(errOut, "no timeline at "+db) {
		t.Errorf("--db with FAULTLINE_STORE set: exit %d, stderr %q; want the file's error (no timeline at %s)", code, errOut, db)
	}
	if code, _, errOut := runCLIEnv(t, env, "sources"); code == 0 || !strings.Contains(errOut, "store 127.0.0.1:1:") {
		t.Errorf("FAULTLINE_STORE alone: exit %d, stderr %q; want an error opening the store at 127.0.0.1:1", code, errOut)
	}
}

// TestReadsNeedNoKey: a command that only reads a ClickHouse store, run
// where no redaction key can be found or made, answers without a word
// about the key, as one that reads a --db file does; an ingest warns.
func TestReadsNeedNoKey(t *testing.T) {
	dsn := clickhousetest.DSN(t)
	const warning = "no key to hash secret values"
	if code, _, stderr := runCLI(t, "--store", dsn, "ingest", "audit", "../../../fixtures/sample-audit/audit.log.gz"); code != 0 || !strings.Contains(stderr, warning) {
		t.Fatalf("ingest without a key: exit %d, stderr %q; want exit 0 and %q", code, stderr, warning)
	}
	for _, args := range [][]string{{"sources"}, {"timeline", "--where", "code >= 500"}, {"investigate"}} {
		if code, _, stderr := runCLI(t, append([]string{"--store", dsn}, args...)...); code != 0 || strings.Contains(stderr, "key") {
			t.Errorf("%v without a key: exit %d, stderr %q; want exit 0 and nothing about a key", args, code, stderr)
		}
	}
}

// TestReadingNoTimeline: reading a database of the cluster that holds no
// timeline (a name mistyped) is a usage error that names it and says how
// to make one, and leaves no database behind; once ingested, it reads.
func TestReadingNoTimeline(t *testing.T) {
	dsn := clickhousetest.DSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := strings.TrimPrefix(u.Path, "/")
	for _, args := range [][]string{{"sources"}, {"investigate"}, {"timeline"}} {
		code, _, stderr := runCLI(t, append([]string{"--store", dsn}, args...)...)
		if want := "error: no timeline in database " + db + " at "; code != exitUsage || !strings.Contains(stderr, want) ||
			!strings.Contains(stderr, "Try: faultline ingest audit --store") {
			t.Errorf("%v on an empty database: exit %d, stderr %q; want exit 2 saying %q and how to ingest", args, code, stderr, want)
		}
	}
	if dbs := clickhousetest.Databases(t, dsn, db); len(dbs) != 0 {
		t.Errorf("reading made the databases %v", dbs)
	}
	if code, _, stderr := runCLI(t, "--store", dsn, "ingest", "audit", "../../../fixtures/sample-audit/audit.log.gz"); code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "--store", dsn, "sources"); code != 0 {
		t.Errorf("sources after the ingest: exit %d: %s", code, stderr)
	}
}

// TestIngestAndTimelineOnClickHouse runs ingest audit and timeline against
// the ClickHouse cluster: the same rows as on a --db file.
func TestIngestAndTimelineOnClickHouse(t *testing.T) {
	dsn := clickhousetest.DSN(t)
	db := t.TempDir() + "/f.db"
	log := "../../../fixtures/sample-audit/audit.log.gz"
	if _, err := os.Stat(log); err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{}
	for _, where := range [][]string{{"--store", dsn}, {"--db", db}} {
		if code, _, stderr := runCLI(t, append(where, "ingest", "audit", log)...); code != 0 {
			t.Fatalf("%v ingest: exit %d: %s", where, code, stderr)
		}
		code, stdout, stderr := runCLI(t, append(where, "timeline", "--where", "code >= 400", "-o", "jsonl")...)
		if code != 0 {
			t.Fatalf("%v timeline: exit %d: %s", where, code, stderr)
		}
		outputs[where[0]] = stdout
	}
	if outputs["--store"] != outputs["--db"] || outputs["--db"] == "" {
		t.Errorf("timeline -o jsonl differs:\n--store:\n%s\n--db:\n%s", outputs["--store"], outputs["--db"])
	}
}

// TestAllowPartial: with a shard down, a command fails naming it; with
// --allow-partial it answers and says, after the answer, which shard it
// left out, and marks its -o json and jsonl (a field "partial", a last
// line); with every shard up, --allow-partial changes nothing.
func TestAllowPartial(t *testing.T) {
	c := clickhousetest.StartCluster(t, 29311)
	if code, _, stderr := runCLI(t, "--store", c.DSN, "ingest", "audit", "../../../fixtures/sample-audit/audit.log.gz"); code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, stderr)
	}
	for _, args := range [][]string{{"timeline", "-o", "json"}, {"timeline", "-o", "jsonl"}, {"sources", "-o", "json"}} {
		whole := sortedOutput(t, runCLI, append([]string{"--store", c.DSN}, args...))
		if allowed := sortedOutput(t, runCLI, append([]string{"--store", c.DSN, "--allow-partial"}, args...)); allowed != whole {
			t.Errorf("%v, every shard up: --allow-partial changes the output:\n%s", args, firstDiff(whole, allowed))
		}
	}
	c.StopShard(2)
	code, _, stderr := runCLI(t, "--store", c.DSN, "timeline", "--where", "code >= 500")
	if want := "error: clickhouse shard 2 (127.0.0.1:29312) is unavailable"; code != exitFailure || !strings.Contains(stderr, want) ||
		!strings.Contains(stderr, "--allow-partial") {
		t.Errorf("shard 2 down: exit %d, stderr %q; want exit 1 saying %q and suggesting --allow-partial", code, stderr, want)
	}
	code, stdout, stderr := runCLI(t, "--store", c.DSN, "--allow-partial", "timeline", "--where", "code >= 500")
	if want := "warning: PARTIAL ANSWER (--allow-partial): clickhouse shard 2 (127.0.0.1:29312) is unavailable"; code != 0 ||
		!strings.Contains(stderr, want) || stdout == "" || strings.Contains(stdout, "PARTIAL") {
		t.Errorf("--allow-partial: exit %d, stdout %d bytes, stderr %q; want exit 0, an answer, and %q on stderr only", code, len(stdout), stderr, want)
	}
	checkPartialMarks(t, c.DSN, "127.0.0.1:29312")
}

// checkPartialMarks checks the marks of answers that leave out shard 2
// (at addr): timeline -o json wraps its records, sources -o json gains a
// field, timeline -o jsonl a last line; the same records either way.
func checkPartialMarks(t *testing.T, dsn, addr string) {
	t.Helper()
	run := func(args ...string) string {
		code, stdout, stderr := runCLI(t, append([]string{"--store", dsn, "--allow-partial"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		return stdout
	}
	want := []any{map[string]any{"shard": 2.0, "address": addr}}
	mark := func(m map[string]any) any { // the mark, without the error's text
		p, _ := m["partial"].([]any)
		for _, s := range p {
			if sm, ok := s.(map[string]any); ok && sm["error"] != nil && sm["error"] != "" {
				delete(sm, "error")
			}
		}
		return m["partial"]
	}
	list, _ := decode(t, "json", []byte(run("timeline", "--where", "code >= 500", "-o", "json"))).(map[string]any)
	if diff := cmp.Diff(want, mark(list)); diff != "" {
		t.Errorf("timeline -o json: partial (-want +got)\n%s", diff)
	}
	items, _ := list["items"].([]any)
	obj, _ := decode(t, "json", []byte(run("sources", "-o", "json"))).(map[string]any)
	if diff := cmp.Diff(want, mark(obj)); diff != "" || obj["sources"] == nil {
		t.Errorf("sources -o json: keys %v; partial (-want +got)\n%s", keys(obj), diff)
	}
	lines := strings.Split(strings.TrimSuffix(run("timeline", "--where", "code >= 500", "-o", "jsonl"), "\n"), "\n")
	last, _ := decode(t, "json", []byte(lines[len(lines)-1])).(map[string]any)
	if diff := cmp.Diff(want, mark(last)); diff != "" || len(last) != 1 {
		t.Errorf("timeline -o jsonl: last line %v; partial (-want +got)\n%s", last, diff)
	}
	if len(items) == 0 || len(lines)-1 != len(items) {
		t.Errorf("timeline: %d records in -o json, %d in -o jsonl; want the same, some", len(items), len(lines)-1)
	}
	// The same mark in YAML, and in an analysis's answer.
	for _, args := range [][]string{{"timeline", "--where", "code >= 500", "-o", "yaml"}, {"sources", "-o", "yaml"},
		{"investigate", "-o", "json"}, {"controlplane", "-o", "yaml"}} {
		format := args[len(args)-1]
		obj, _ := decode(t, format, []byte(run(args...))).(map[string]any)
		if diff := cmp.Diff(want, mark(obj)); diff != "" || len(obj) < 2 {
			t.Errorf("%s: keys %v; partial (-want +got)\n%s", strings.Join(args, " "), keys(obj), diff)
		}
	}
}
