package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/fixtures"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
)

// TestConfigMapRollbackShowsPreviousValue: after bad-config-rollout is
// ingested, the version of ConfigMap ml/trainer-env before the bad change
// holds the LR value in clear (the value whose sha256 expected.json names),
// so a rollback can say what to roll back to; with --redact-configmaps it is
// a keyed hash. The timeline file is 0600 either way. The ClickHouse store
// gives the same.
func TestConfigMapRollbackShowsPreviousValue(t *testing.T) {
	fx, err := fixtures.Load("bad-config-rollout")
	if err != nil {
		t.Fatal(err)
	}
	exp, err := fixtures.LoadExpected(fx.FS)
	if err != nil {
		t.Fatal(err)
	}
	change := exp.Changes[0]
	if change.Dimension != "configmap/trainer-env/LR" {
		t.Fatalf("expected.json's change is %s, want configmap/trainer-env/LR", change.Dimension)
	}
	for _, tt := range []struct {
		name       string
		redactAll  bool
		clickhouse bool
		wantLR     string // "" : a keyed hash
	}{
		{"by default", false, false, "0.001"},
		{"with --redact-configmaps", true, false, ""},
		{"on ClickHouse", false, true, "0.001"},
		{"on ClickHouse with --redact-configmaps", true, true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			db := filepath.Join(t.TempDir(), "faultline.db")
			load := incidentLoader{logger: slog.New(slog.DiscardHandler), now: time.Now, key: []byte("0123456789abcdef0123456789abcdef"),
				warnf: t.Logf, redactAll: tt.redactAll}
			open := load.sqliteAt(db)
			if tt.clickhouse {
				open = load.clickhouseAt(clickhousetest.DSN(t))
			}
			if _, err := load.ingest(ctx, fx.FS, "", open); err != nil {
				t.Fatal(err)
			}
			if !tt.clickhouse {
				if fi, err := os.Stat(db); err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf("timeline mode: %v, %v; want 0600", fi.Mode().Perm(), err)
				}
			}
			s, err := open(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			vs, err := s.Versions(ctx, timeline.VersionQuery{Resource: "configmaps", Namespace: "ml", Name: "trainer-env", History: true})
			if err != nil {
				t.Fatal(err)
			}
			var before, after string
			for _, v := range vs {
				var obj struct {
					Data map[string]string `json:"data"`
				}
				if err := json.Unmarshal(v.Content, &obj); err != nil {
					t.Fatal(err)
				}
				if v.Time.Before(change.At) {
					before = obj.Data["LR"]
				} else if after == "" {
					after = obj.Data["LR"]
				}
			}
			if tt.wantLR == "" {
				if !strings.HasPrefix(before, "hmac-sha256:") || !strings.HasPrefix(after, "hmac-sha256:") || before == after {
					t.Errorf("LR before and after the change: %q, %q; want two keyed hashes", before, after)
				}
				return
			}
			if before != tt.wantLR {
				t.Errorf("LR before the change = %q, want %q in clear", before, tt.wantLR)
			}
			if sum := sha256.Sum256([]byte(before)); "sha256:"+hex.EncodeToString(sum[:]) != change.From {
				t.Errorf("LR before the change %q is not the value expected.json hashes (%s)", before, change.From)
			}
			if sum := sha256.Sum256([]byte(after)); "sha256:"+hex.EncodeToString(sum[:]) != change.To {
				t.Errorf("LR after the change %q is not the value expected.json hashes (%s)", after, change.To)
			}
		})
	}
}
