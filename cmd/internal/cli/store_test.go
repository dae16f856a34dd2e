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
		{[]string{"--store", "clickhouse://ch:9000/db", "sources"}, "", "no cluster (add ?cluster=NAME"},
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
			if code == 0 || !strings.Contains(errOut.String(), tc.err) {
				t.Errorf("exit %d, stderr %q; want a failure saying %q", code, errOut.String(), tc.err)
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
