package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/controlplane"
	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/analyze/prom"
	"github.com/faultline/faultline/timeline"
)

func TestParseWhen(t *testing.T) {
	end := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{"", time.Time{}, false},
		{"90m", end.Add(-90 * time.Minute), false},
		{"-90m", end.Add(-90 * time.Minute), false},
		{"2026-05-01T10:00:00Z", time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), false},
		{"2026-05-01T10:00:00.5+02:00", time.Date(2026, 5, 1, 8, 0, 0, 5e8, time.UTC), false},
		{"yesterday", time.Time{}, true},
		{"2026-05-01", time.Time{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseWhen("since", tt.in, end)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			var ue *usageError
			if err != nil && !errors.As(err, &ue) {
				t.Errorf("error %v is not a usage error", err)
			}
			if !got.Equal(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := map[string]int{"32MiB": 32 << 20, "512KiB": 512 << 10, "1GiB": 1 << 30, "4096": 4096, "2MB": 2e6, "0": -1, "x": -1, "-1MiB": -1}
	for in, want := range tests {
		got, err := parseSize(in)
		if want < 0 {
			if err == nil {
				t.Errorf("parseSize(%q) = %d, want an error", in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

func TestHumanInt(t *testing.T) {
	for in, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := humanInt(in); got != want {
			t.Errorf("humanInt(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestObjectString(t *testing.T) {
	tests := []struct {
		r    timeline.Record
		want string
	}{
		{timeline.Record{Object: timeline.ObjectRef{Resource: "pods", Namespace: "ml", Name: "w-0"}}, "pods ml/w-0"},
		{timeline.Record{Object: timeline.ObjectRef{Group: "apps", Resource: "deployments", Subresource: "scale", Namespace: "ml", Name: "d"}}, "deployments.apps/scale ml/d"},
		{timeline.Record{Object: timeline.ObjectRef{Resource: "nodes", Name: "n1"}}, "nodes n1"},
		{timeline.Record{Object: timeline.ObjectRef{Resource: "pods", Namespace: "ml"}}, "pods -n ml"},
		{timeline.Record{Object: timeline.ObjectRef{Resource: "pods"}}, "pods"},
		{timeline.Record{URI: "/readyz"}, "/readyz"},
		{timeline.Record{}, "-"},
	}
	for _, tt := range tests {
		if got := objectString(&tt.r); got != tt.want {
			t.Errorf("objectString(%+v) = %q, want %q", tt.r.Object, got, tt.want)
		}
	}
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		err  error
		want int
		out  string
	}{
		{nil, 0, ""},
		{usagef("faultline x", "bad %s", "thing"), 2, "error: bad thing\nTry: faultline x\n"},
		{context.Canceled, 130, "interrupted: what was committed is kept; rerun to complete it\n"},
		{errors.New("boom"), 1, "error: boom\n"},
		{&evalFailedError{unscored: 1, incidents: 7, below: true, score: 0.5, min: 0.9}, 1,
			"error: eval: 1 of 7 incidents could not be scored (NOT SCORED in the output); overall score 0.500 is below --min 0.9\n"},
		// The analyzers' typed errors, wrapped as callers do; the flags
		// are named here, not by the analyzers.
		{fmt.Errorf("slice: %w", &outcome.ExprError{Which: outcome.Good, Err: errors.New("undeclared reference to 'x'")}), 2,
			"error: --good: undeclared reference to 'x'\nTry: faultline investigate --bad 'reason == \"OOMKilled\"'\n"},
		{&outcome.ExprError{Which: outcome.Bad, Ref: "pod ml/w-0", At: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), Err: errors.New("no such key: x")}, 1,
			"error: --bad on pod ml/w-0 at 2026-05-01T10:00:00Z: no such key: x\n"},
		{&controlplane.WhereError{Expr: "verb ==", Err: errors.New("Syntax error")}, 2,
			"error: --where \"verb ==\": Syntax error\nTry: faultline controlplane --where 'verb == \"list\" && scope == \"cluster\"'\n"},
		{fmt.Errorf("dns: %w", &prom.NoSeriesError{What: "DNS pressure", Metrics: []string{"coredns_dns_requests_total"}, Selector: `{__name__=~"coredns_.*"}`, Single: true}), 1,
			"error: dns: DNS pressure: each series of coredns_dns_requests_total has a single sample in the window, and a rate needs two\n" +
				"Try: faultline ingest metrics --prometheus http://prometheus:9090 --query '{__name__=~\"coredns_.*\"}' --since 2h --step 15s " +
				"(or save /api/v1/query_range JSON and: faultline ingest metrics FILE); a single /metrics snapshot gives one sample a series: ingest a range, or snapshots taken at several times\n"},
		{fmt.Errorf("bisect: %w", investigate.ErrNoEvidence), 1,
			"error: bisect: the timeline is empty: ingest evidence first\nTry: faultline ingest --help\n"},
		{fmt.Errorf("investigate: %w", investigate.ErrOnlySeries), 1,
			"error: investigate: the timeline is empty of records: it holds only metric series; investigate reads audit records, Events, objects and node logs\n" +
				"Try: faultline dns, faultline network or faultline cardinality, which read the series; or faultline ingest --help\n"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if got := exitCode(tt.err, &b); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
		if diff := cmp.Diff(tt.out, b.String()); diff != "" {
			t.Errorf("exitCode(%v) output (-want +got)\n%s", tt.err, diff)
		}
	}
}

func TestHelpTeachesByExample(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"ingest", "audit", "--help"}, {"ingest", "cluster", "--help"}, {"ingest", "objects", "--help"}, {"timeline", "--help"}, {"sources", "--help"}, {"replay", "--help"}, {"eval", "--help"}, {"dns", "--help"}, {"network", "--help"}} {
		var out, errOut bytes.Buffer
		f := &Factory{IO: IOStreams{Out: &out, ErrOut: &errOut}, Getenv: func(string) string { return "" }, Now: time.Now}
		if code := Run(context.Background(), args, f); code != 0 {
			t.Errorf("%v: exit %d: %s", args, code, errOut.String())
		}
		if !bytes.Contains(out.Bytes(), []byte("Examples:")) {
			t.Errorf("%v: help has no examples:\n%s", args, out.String())
		}
	}
}

type okTransport struct{ calls int }

func (o *okTransport) RoundTrip(*http.Request) (*http.Response, error) {
	o.calls++
	return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
}

func TestReadOnlyTransportRefusesWrites(t *testing.T) {
	next := &okTransport{}
	rt := readOnly{next}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		req, _ := http.NewRequest(m, "https://127.0.0.1/api/v1/namespaces/ml/pods", nil)
		if _, err := rt.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "read-only") {
			t.Errorf("%s: err = %v, want a read-only refusal", m, err)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1/api/v1/pods?watch=true", nil)
	if _, err := rt.RoundTrip(req); err != nil {
		t.Errorf("GET refused: %v", err)
	}
	if next.calls != 1 {
		t.Errorf("%d requests reached the server, want only the GET", next.calls)
	}
}
