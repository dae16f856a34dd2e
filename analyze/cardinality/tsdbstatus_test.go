package cardinality

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func readStatus(t testing.TB, name string, o Options) (*Report, error) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return ReadTSDBStatus(f, name, o)
}

func TestCardinalityTSDBStatus(t *testing.T) {
	podDrop := dropFix("pod", nil, 0)
	tests := []struct {
		file string
		opt  Options
		want *Report
	}{
		{"tsdb-status.json", Options{Top: 3}, &Report{
			Source: "tsdb-status", At: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
			Series: 48213, MetricCount: 1183, LabelCount: 5,
			Metrics: []Metric{
				{Name: "apiserver_request_duration_seconds_bucket", Series: 9744},
				{Name: "apiserver_request_sli_duration_seconds_bucket", Series: 7812},
				{Name: "etcd_request_duration_seconds_bucket", Series: 3960},
			},
			Labels: []Label{
				{Name: "pod", Values: 2140, MemoryBytes: 1304288},
				{Name: "resource", Values: 214, MemoryBytes: 402117},
				{Name: "le", Values: 62},
			},
			Pairs: []Pair{
				{"job", "apiserver", 22051}, {"instance", "127.0.0.1:6443", 22050}, {"component", "apiserver", 18332},
			},
			Targets: []Target{},
			Worst:   &Worst{Label: "pod", Fixes: []Fix{podDrop}},
		}},
		{"tsdb-status-data.json", Options{Metric: "net_conntrack_dialer_conn_failed_total"}, &Report{
			Source: "tsdb-status", Metric: "net_conntrack_dialer_conn_failed_total", At: time.UnixMilli(1598896800143).UTC(),
			Series: 508, MetricCount: 211, LabelCount: 2,
			Metrics: []Metric{{Name: "net_conntrack_dialer_conn_failed_total", Series: 20}},
			Labels:  []Label{{Name: "event", Values: 3}, {Name: "instance", MemoryBytes: 28}},
			Pairs:   []Pair{{"instance", "localhost:9090", 425}, {"job", "prometheus", 425}},
			Targets: []Target{},
			Worst:   &Worst{Label: "event", Fixes: []Fix{dropFix("event", nil, 0)}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := readStatus(t, tt.file, tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Notes) == 0 {
				t.Error("no note that a status lists only its top entries")
			}
			got.Notes = nil
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestCardinalityTSDBStatusErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"prometheus error", `{"status":"error","errorType":"unavailable","error":"TSDB not ready"}`, "s.json: Prometheus answered unavailable: TSDB not ready"},
		{"syntax", "{\n\"data\": {\n\"seriesCountByMetricName\": [}\n}", "s.json:3: invalid character '}'"},
		{"type", "{\"data\": {\n\"seriesCountByMetricName\": [{\"name\": \"up\", \"value\": \"7\"}]}}", "s.json:2: data.seriesCountByMetricName.value: want int64, got string"},
		{"negative", `{"data": {"seriesCountByMetricName": [{"name": "up", "value": -1}]}}`, "s.json: data.seriesCountByMetricName[0].value: -1: a count is never negative"},
		{"pair", `{"data": {"seriesCountByMetricName": [], "seriesCountByLabelValuePair": [{"name": "job", "value": 1}]}}`, `s.json: data.seriesCountByLabelValuePair[0].name: "job": want label=value`},
		{"not a status", `{"status":"success","data":{"resultType":"matrix","result":[]}}`, "s.json: data.seriesCountByMetricName: missing: not an /api/v1/status/tsdb answer"},
		{"empty", ``, "s.json:1: unexpected end of JSON input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadTSDBStatus(strings.NewReader(tt.in), "s.json", Options{})
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v, want an *InputError", err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %q, want it to start %q", err, tt.want)
			}
		})
	}
}

// FuzzCardinalityTSDBStatus: any input is a report or an *InputError,
// never a panic, and a report's lists are never nil nor longer than Top.
func FuzzCardinalityTSDBStatus(f *testing.F) {
	for _, name := range []string{"tsdb-status.json", "tsdb-status-data.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"status":"error","errorType":"bad_data","error":"x"}`))
	f.Add([]byte(`{"seriesCountByLabelValuePair":[{"name":"a==b","value":1}],"labelValueCountByLabelName":[{"name":"__name__","value":1}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rep, err := ReadTSDBStatus(strings.NewReader(string(b)), "fuzz.json", Options{Top: 2})
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v (%T), want an *InputError", err, err)
			}
			return
		}
		if rep.Metrics == nil || rep.Labels == nil || rep.Pairs == nil || rep.Targets == nil {
			t.Errorf("nil list in %+v", rep)
		}
		if len(rep.Metrics) > 2 || len(rep.Labels) > 2 || len(rep.Pairs) > 2 {
			t.Errorf("more than Top entries in %+v", rep)
		}
	})
}
