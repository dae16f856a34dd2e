package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

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
		{[]string{"--store", "clickhouse://ch:9000/db", "sources"}, "", "error: invalid --store (or FAULTLINE_STORE): store \"clickhouse://ch:9000/db\": no cluster (add ?cluster=NAME"},
	} {
		t.Run(strings.Join(tc.args, " ")+" "+tc.env, func(t *testing.T) {
			var out, errOut bytes.Buffer
			f := &Factory{IO: IOStreams{Out: &out, ErrOut: &errOut}, Now: time.Now,
				Getenv: func(k string) string {
					if k == "FAULTLINE_STORE" {
						return tc.env
					}
					return ""
				}}
			code := Run(context.Background(), tc.args, f)
			if code != exitUsage || !strings.Contains(errOut.String(), tc.err) {
				t.Errorf("exit %d, stderr %q; want exit 2 saying %q", code, errOut.String(), tc.err)
			}
		})
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
// left out.
func TestAllowPartial(t *testing.T) {
	c := clickhousetest.StartCluster(t, 39311)
	if code, _, stderr := runCLI(t, "--store", c.DSN, "ingest", "audit", "../../../fixtures/sample-audit/audit.log.gz"); code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, stderr)
	}
	c.StopShard(2)
	code, _, stderr := runCLI(t, "--store", c.DSN, "timeline", "--where", "code >= 500")
	if want := "error: clickhouse shard 2 (127.0.0.1:39312) is unavailable"; code != exitFailure || !strings.Contains(stderr, want) ||
		!strings.Contains(stderr, "--allow-partial") {
		t.Errorf("shard 2 down: exit %d, stderr %q; want exit 1 saying %q and suggesting --allow-partial", code, stderr, want)
	}
	code, stdout, stderr := runCLI(t, "--store", c.DSN, "--allow-partial", "timeline", "--where", "code >= 500")
	if want := "warning: PARTIAL ANSWER (--allow-partial): clickhouse shard 2 (127.0.0.1:39312) is unavailable"; code != 0 ||
		!strings.Contains(stderr, want) || stdout == "" {
		t.Errorf("--allow-partial: exit %d, stdout %d bytes, stderr %q; want exit 0, an answer, and %q", code, len(stdout), stderr, want)
	}
}
