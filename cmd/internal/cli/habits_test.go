package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"90m", 90 * time.Minute, true},
		{"-90m", 90 * time.Minute, true},
		{"1d", 24 * time.Hour, true},
		{"-1d", 24 * time.Hour, true},
		{"1.5d", 36 * time.Hour, true},
		{"2d12h", 60 * time.Hour, true},
		{"1d30m", 24*time.Hour + 30*time.Minute, true},
		{"d", 0, false},
		{"1d-2h", 0, false},
		{"1dx", 0, false},
		{"1000000d", 0, false}, // past what a time.Duration holds
		{"yesterday", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := parseDuration(tt.in)
			if ok != tt.ok || got != tt.want {
				t.Errorf("parseDuration(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// fakeBounds is a store whose evidence spans [first, last].
type fakeBounds struct{ first, last time.Time }

func (b fakeBounds) Bounds(context.Context) (time.Time, time.Time, error) {
	return b.first, b.last, nil
}

func TestWindowResolve(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	last := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC) // three days before now
	store := fakeBounds{last.Add(-time.Hour), last}
	tests := []struct {
		name      string
		w         windowFlags
		since     time.Time
		until     time.Time
		note      string // in stderr; "" for none
		wantUsage bool
	}{
		{name: "nothing", w: windowFlags{}},
		{name: "1d from now", w: windowFlags{since: "1d"}, since: now.Add(-24 * time.Hour),
			note: "note: the timeline ends at 2026-11-28T12:00:00Z, 2 days before --since (2026-11-30T12:00:00Z); use --since-data"},
		{name: "1d from the data", w: windowFlags{since: "1d", fromData: true}, since: last.Add(-24 * time.Hour)},
		{name: "30m from the data, until 10m", w: windowFlags{since: "30m", until: "10m", fromData: true},
			since: last.Add(-30 * time.Minute), until: last.Add(-10 * time.Minute)},
		{name: "5d from now reaches the data", w: windowFlags{since: "5d"}, since: now.Add(-5 * 24 * time.Hour)},
		{name: "hours from now", w: windowFlags{since: "2h"}, since: now.Add(-2 * time.Hour),
			note: "2 days before --since (2026-12-01T10:00:00Z)"},
		{name: "RFC 3339 is absolute", w: windowFlags{since: "2026-11-28T11:30:00Z"}, since: last.Add(-30 * time.Minute)},
		{name: "RFC 3339 ignores --since-data", w: windowFlags{since: "2026-11-28T11:30:00Z", fromData: true}, since: last.Add(-30 * time.Minute)},
		{name: "past what a duration holds", w: windowFlags{since: "106752d"}, wantUsage: true},
		{name: "not a time", w: windowFlags{since: "last week"}, wantUsage: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errOut bytes.Buffer
			f := &Factory{IO: IOStreams{ErrOut: &errOut}, Now: func() time.Time { return now }}
			since, until, err := tt.w.resolve(context.Background(), f, store)
			var ue *usageError
			if tt.wantUsage {
				if !errors.As(err, &ue) {
					t.Fatalf("err = %v, want a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !since.Equal(tt.since) || !until.Equal(tt.until) {
				t.Errorf("got [%v, %v), want [%v, %v)", since, until, tt.since, tt.until)
			}
			switch {
			case tt.note == "" && errOut.Len() > 0:
				t.Errorf("unexpected note %q", errOut.String())
			case tt.note != "" && !strings.Contains(errOut.String(), tt.note):
				t.Errorf("stderr %q, want a note with %q", errOut.String(), tt.note)
			}
		})
	}
}

func TestScopeFlags(t *testing.T) {
	tests := []struct {
		s    scopeFlags
		expr string
		want string
	}{
		{scopeFlags{}, "code == 429", "code == 429"},
		{scopeFlags{}, "", ""},
		{scopeFlags{namespace: "ml"}, "", `ns == "ml"`},
		{scopeFlags{namespace: "ml"}, "code == 429 || code >= 500", `ns == "ml" && (code == 429 || code >= 500)`},
		{scopeFlags{namespace: "ml", all: true}, "code == 429", "code == 429"}, // -A wins, as in kubectl
		{scopeFlags{namespace: `a"b`}, "", `ns == "a\"b"`},
	}
	for _, tt := range tests {
		if got := tt.s.scoped(tt.expr); got != tt.want {
			t.Errorf("%+v.scoped(%q) = %q, want %q", tt.s, tt.expr, got, tt.want)
		}
	}
}

func TestBuildInfo(t *testing.T) {
	read := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/faultline/faultline", Version: "v0.4.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "461c7ca"}, {Key: "vcs.time", Value: "2026-12-01T21:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}, true
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	tests := []struct {
		name    string
		release string
		read    func() (*debug.BuildInfo, bool)
		want    versionInfo
	}{
		{"go install", "dev", read, versionInfo{Version: "v0.4.0", Module: "github.com/faultline/faultline", Revision: "461c7ca",
			Time: "2026-12-01T21:00:00Z", Modified: true, GoVersion: "go1.26.8"}},
		{"release build", "v1.0.0", read, versionInfo{Version: "v1.0.0", Module: "github.com/faultline/faultline", Revision: "461c7ca",
			Time: "2026-12-01T21:00:00Z", Modified: true, GoVersion: "go1.26.8"}},
		{"no build info", "dev", none, versionInfo{Version: "dev"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, buildInfo(tt.release, tt.read)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// runIn runs faultline with its config (the key) in a folder of the test.
func runIn(t *testing.T, cfg string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	getenv := func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return cfg
		}
		return ""
	}
	f := &Factory{IO: IOStreams{Out: &out, ErrOut: &errOut}, Getenv: getenv, Now: time.Now}
	code = Run(context.Background(), args, f)
	return code, out.String(), errOut.String()
}

// TestHabits runs the kubectl habits on a replayed incident: -o yaml holds
// what -o json holds, --no-headers drops the header row, -n narrows to a
// namespace, and --since counts from now unless --since-data.
func TestHabits(t *testing.T) {
	dir := t.TempDir()
	h := habitsDB{dir: dir, db: filepath.Join(dir, "t.db")}
	if code, _, stderr := runIn(t, dir, "replay", "bad-config-rollout", "--db", h.db); code != 0 {
		t.Fatalf("replay: exit %d: %s", code, stderr)
	}
	t.Run("yaml is json", h.yamlIsJSON)
	t.Run("no headers", h.noHeaders)
	t.Run("namespace", h.namespace)
	t.Run("since", h.since)
}

// habitsDB is the incident TestHabits replays, with its config in dir.
type habitsDB struct{ dir, db string }

// run runs faultline --db args, fails the test unless it exits 0, and
// returns its stdout and stderr.
func (h habitsDB) run(t *testing.T, args ...string) (string, string) {
	t.Helper()
	code, stdout, stderr := runIn(t, h.dir, append([]string{"--db", h.db}, args...)...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	return stdout, stderr
}

// yamlIsJSON: -o yaml holds what -o json holds.
func (h habitsDB) yamlIsJSON(t *testing.T) {
	for _, args := range [][]string{
		{"timeline", "--where", `reason == "OOMKilled" || code == 429`, "--limit", "20"},
		{"sources"},
		{"investigate"},
		{"diff"},
		{"history", "configmap/ml/trainer-env"},
		{"identity", "job/ml/vision-train"},
		{"controlplane"},
		{"version"},
	} {
		j, _ := h.run(t, append(args, "-o", "json")...)
		y, _ := h.run(t, append(args, "-o", "yaml")...)
		var fromJSON, fromYAML any
		if err := json.Unmarshal([]byte(j), &fromJSON); err != nil {
			t.Fatalf("%v -o json: %v", args, err)
		}
		if err := yaml.Unmarshal([]byte(y), &fromYAML); err != nil {
			t.Fatalf("%v -o yaml: %v\n%s", args, err, y)
		}
		if diff := cmp.Diff(fromJSON, fromYAML); diff != "" {
			t.Errorf("%v: -o yaml differs from -o json (-json +yaml)\n%s", args, diff)
		}
	}
}

// noHeaders: --no-headers drops the header row and nothing else.
func (h habitsDB) noHeaders(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		header string
	}{
		{[]string{"timeline", "--limit", "3"}, "TIME"},
		{[]string{"timeline", "--limit", "3", "-o", "wide"}, "TIME"},
		{[]string{"sources"}, "SOURCE"},
		{[]string{"bisect"}, "SIDE"},
		{[]string{"counterexample"}, "DIMENSION"},
		{[]string{"controlplane"}, "VERB"},
		{[]string{"identity", "job/ml/vision-train"}, "DIMENSION"},
	} {
		with, _ := h.run(t, tc.args...)
		without, _ := h.run(t, append(tc.args, "--no-headers")...)
		if !strings.Contains(with, tc.header) {
			t.Errorf("%v: no header %q in\n%s", tc.args, tc.header, with)
		}
		for _, line := range strings.Split(without, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), tc.header+" ") {
				t.Errorf("%v --no-headers: header row %q", tc.args, line)
			}
		}
		if len(without) == 0 || len(without) >= len(with) {
			t.Errorf("%v --no-headers printed %d bytes, with headers %d", tc.args, len(without), len(with))
		}
	}
}

// namespace: -n narrows to a namespace, -A widens again, and investigate
// looks only at the namespace.
func (h habitsDB) namespace(t *testing.T) {
	all, _ := h.run(t, "timeline", "-o", "json")
	ml, _ := h.run(t, "timeline", "-o", "json", "-n", "ml")
	allNS, _ := h.run(t, "timeline", "-o", "json", "-n", "ml", "-A")
	var recs, mlRecs, allRecs []recordJSON
	for _, x := range []struct {
		s string
		p *[]recordJSON
	}{{all, &recs}, {ml, &mlRecs}, {allNS, &allRecs}} {
		if err := json.Unmarshal([]byte(x.s), x.p); err != nil {
			t.Fatal(err)
		}
	}
	if len(mlRecs) == 0 || len(mlRecs) >= len(recs) || len(allRecs) != len(recs) {
		t.Errorf("records: all %d, -n ml %d, -n ml -A %d", len(recs), len(mlRecs), len(allRecs))
	}
	for _, r := range mlRecs {
		if r.Object.Namespace != "ml" {
			t.Fatalf("-n ml kept record %d of namespace %q", r.ID, r.Object.Namespace)
		}
	}
	// Narrowed to a namespace where nothing failed, nothing is bad.
	out, _ := h.run(t, "investigate", "-n", "kube-system", "-o", "json")
	if !strings.Contains(out, `"boundary": null`) {
		t.Errorf("investigate -n kube-system found a boundary:\n%.400s", out)
	}
	out, _ = h.run(t, "investigate", "-n", "ml", "-o", "json")
	if strings.Contains(out, `"boundary": null`) {
		t.Errorf("investigate -n ml found no boundary")
	}
}

// since: --since counts from now unless --since-data.
func (h habitsDB) since(t *testing.T) {
	// The recording is of 2026-11-30: from now, the last day holds
	// nothing, and a note says why.
	out, stderr := h.run(t, "timeline", "--since", "1h")
	if out != "" || !strings.Contains(stderr, "use --since-data to count from the end of the data") {
		t.Errorf("--since 1h: stdout %q, stderr %q", out, stderr)
	}
	out, stderr = h.run(t, "timeline", "--since", "1m", "--since-data", "--no-headers")
	if out == "" || strings.Contains(stderr, "note:") {
		t.Errorf("--since 1m --since-data: %d bytes, stderr %q", len(out), stderr)
	}
	out, _ = h.run(t, "timeline", "--since", "36500d", "--no-headers")
	if out == "" {
		t.Errorf("--since 36500d selected nothing")
	}
}

// FuzzParseDuration: a duration accepted is never negative (it counts back),
// and a Go duration keeps its size.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"90m", "-90m", "1d", "1.5d", "2d12h", "1d-2h", "1000000d", "-2562047h47m16.854775808s", "106751d", "9e300d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := parseDuration(s)
		if !ok {
			return
		}
		if d < 0 {
			t.Fatalf("parseDuration(%q) = %v: negative", s, d)
		}
		if g, err := time.ParseDuration(strings.TrimSpace(s)); err == nil && g != d && g != -d {
			t.Fatalf("parseDuration(%q) = %v, want %v", s, d, g)
		}
	})
}
