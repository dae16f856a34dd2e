package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"container/heap"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// auditEvent is the audit.k8s.io/v1 Event as a consumer reads it, declared
// here so the test does not trust the generator's own types.
type auditEvent struct {
	Kind             string            `json:"kind"`
	APIVersion       string            `json:"apiVersion"`
	Level            string            `json:"level"`
	AuditID          string            `json:"auditID"`
	Stage            string            `json:"stage"`
	RequestURI       string            `json:"requestURI"`
	Verb             string            `json:"verb"`
	User             testUser          `json:"user"`
	ImpersonatedUser *testUser         `json:"impersonatedUser"`
	SourceIPs        []string          `json:"sourceIPs"`
	UserAgent        string            `json:"userAgent"`
	ObjectRef        *testRef          `json:"objectRef"`
	ResponseStatus   *testState        `json:"responseStatus"`
	RequestObject    json.RawMessage   `json:"requestObject"`
	ResponseObject   json.RawMessage   `json:"responseObject"`
	RequestReceived  string            `json:"requestReceivedTimestamp"`
	StageTimestamp   string            `json:"stageTimestamp"`
	Annotations      map[string]string `json:"annotations"`
}

type testUser struct {
	Username string              `json:"username"`
	UID      string              `json:"uid"`
	Groups   []string            `json:"groups"`
	Extra    map[string][]string `json:"extra"`
}

type testRef struct {
	Resource        string `json:"resource"`
	Namespace       string `json:"namespace"`
	Name            string `json:"name"`
	UID             string `json:"uid"`
	APIGroup        string `json:"apiGroup"`
	APIVersion      string `json:"apiVersion"`
	ResourceVersion string `json:"resourceVersion"`
	Subresource     string `json:"subresource"`
}

type testState struct {
	Metadata map[string]any `json:"metadata"`
	Status   string         `json:"status"`
	Message  string         `json:"message"`
	Reason   string         `json:"reason"`
	Details  *struct {
		Name              string `json:"name"`
		Group             string `json:"group"`
		Kind              string `json:"kind"`
		UID               string `json:"uid"`
		RetryAfterSeconds int    `json:"retryAfterSeconds"`
	} `json:"details"`
	Code int `json:"code"`
}

const microLayout = "2006-01-02T15:04:05.000000Z"

var (
	uuidRE   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	secretRE = regexp.MustCompile(`^SECRETVALUE-[0-9a-f]{32}$`)
	cmRE     = regexp.MustCompile(`^CMVALUE-[0-9a-f]{32}$`)
)

// generate runs the command with args and -o in a temporary directory and
// returns the file's bytes.
func generate(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	var stderr bytes.Buffer
	if code := run(context.Background(), append(args, "-o", path), io.Discard, &stderr); code != exitOK {
		t.Fatalf("run(%q) = %d, stderr:\n%s", args, code, stderr.String())
	}
	data, err := readFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func readFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(path, ".gz") {
		return data, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

func decode(t *testing.T, data []byte) []auditEvent {
	t.Helper()
	var evs []auditEvent
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var ev auditEvent
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("line %d: %v\n%s", n, err, sc.Bytes())
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

func ts(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(microLayout, s)
	if err != nil {
		t.Fatalf("timestamp %q: %v", s, err)
	}
	return v
}

func complete(evs []auditEvent) []auditEvent {
	var out []auditEvent
	for _, ev := range evs {
		if ev.Stage == "ResponseComplete" {
			out = append(out, ev)
		}
	}
	return out
}

// TestAuditLog generates 6000 lines with a fixed seed and holds them to
// what kube-apiserver writes, one subtest per property.
func TestAuditLog(t *testing.T) {
	const lines = 6000
	evs := decode(t, generate(t, "audit.log", "-lines", strconv.Itoa(lines), "-seed", "42"))

	tests := []struct {
		name  string
		check func(t *testing.T, evs []auditEvent)
	}{
		{"line count", func(t *testing.T, evs []auditEvent) {
			if len(evs) != lines {
				t.Errorf("got %d lines, want %d", len(evs), lines)
			}
		}},
		{"fields", checkAuditFields},
		{"ordered by stageTimestamp", checkAuditOrder},
		{"stages of a request", checkAuditStages},
		{"verb mix", checkAuditVerbMix},
		{"levels", checkAuditLevels},
		{"object uids and resourceVersions", checkAuditObjects},
		{"latency annotations", checkAuditLatency},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, evs) })
	}
}

// checkAuditFields: every line is an audit.k8s.io/v1 Event with the fields
// its stage carries.
func checkAuditFields(t *testing.T, evs []auditEvent) {
	levels := map[string]bool{"Metadata": true, "Request": true, "RequestResponse": true}
	stages := map[string]bool{"RequestReceived": true, "ResponseStarted": true, "ResponseComplete": true}
	for i, ev := range evs {
		if ev.Kind != "Event" || ev.APIVersion != "audit.k8s.io/v1" || !levels[ev.Level] || !stages[ev.Stage] {
			t.Fatalf("line %d: kind %q apiVersion %q level %q stage %q", i+1, ev.Kind, ev.APIVersion, ev.Level, ev.Stage)
		}
		if !uuidRE.MatchString(ev.AuditID) {
			t.Fatalf("line %d: auditID %q is not a UUID", i+1, ev.AuditID)
		}
		if ev.User.Username == "" || ev.RequestURI == "" || ev.Verb == "" || len(ev.SourceIPs) == 0 || ev.UserAgent == "" {
			t.Fatalf("line %d: missing user, requestURI, verb, sourceIPs or userAgent", i+1)
		}
		if rr, st := ts(t, ev.RequestReceived), ts(t, ev.StageTimestamp); st.Before(rr) {
			t.Fatalf("line %d: stageTimestamp %s before requestReceivedTimestamp %s", i+1, ev.StageTimestamp, ev.RequestReceived)
		}
		switch ev.Stage {
		case "RequestReceived":
			if ev.ResponseStatus != nil || ev.Annotations != nil || ev.RequestObject != nil || ev.StageTimestamp != ev.RequestReceived {
				t.Fatalf("line %d: RequestReceived carries response data or a later stageTimestamp", i+1)
			}
		default:
			if ev.ResponseStatus == nil || ev.ResponseStatus.Code == 0 || ev.Annotations["authorization.k8s.io/decision"] == "" {
				t.Fatalf("line %d: %s without responseStatus code or authorization decision", i+1, ev.Stage)
			}
		}
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code == 429 && (ev.ResponseStatus.Message != "" || ev.ResponseStatus.Status != "") {
			t.Errorf("line %d: 429 from APF has a Status body: %+v", i+1, ev.ResponseStatus)
		}
		if ev.Level == "Metadata" && (ev.RequestObject != nil || ev.ResponseObject != nil) {
			t.Errorf("line %d: Metadata level with objects", i+1)
		}
	}
}

// checkAuditOrder: lines are ordered by stageTimestamp.
func checkAuditOrder(t *testing.T, evs []auditEvent) {
	for i := 1; i < len(evs); i++ {
		if evs[i].StageTimestamp < evs[i-1].StageTimestamp {
			t.Fatalf("line %d: stageTimestamp %s before the previous line's %s", i+1, evs[i].StageTimestamp, evs[i-1].StageTimestamp)
		}
	}
}

// checkAuditStages: the lines of one auditID agree, log the stages their
// verb logs, and about 30 % of requests log RequestReceived.
func checkAuditStages(t *testing.T, evs []auditEvent) {
	byID := map[string][]auditEvent{}
	for _, ev := range evs {
		byID[ev.AuditID] = append(byID[ev.AuditID], ev)
	}
	pairs := 0
	for id, group := range byID {
		var got []string
		for _, ev := range group {
			got = append(got, ev.Stage)
			if ev.RequestReceived != group[0].RequestReceived || ev.RequestURI != group[0].RequestURI || ev.Verb != group[0].Verb {
				t.Fatalf("auditID %s: lines disagree on requestReceivedTimestamp, requestURI or verb", id)
			}
		}
		want := []string{"ResponseComplete"}
		if group[0].Verb == "watch" || strings.HasSuffix(strings.SplitN(group[0].RequestURI, "?", 2)[0], "/log") {
			want = []string{"ResponseStarted", "ResponseComplete"}
		}
		if got[0] == "RequestReceived" {
			want = append([]string{"RequestReceived"}, want...)
			pairs++
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("auditID %s (%s %s): stages (-want +got)\n%s", id, group[0].Verb, group[0].RequestURI, diff)
		}
	}
	if share := float64(pairs) / float64(len(byID)); share < 0.25 || share > 0.35 {
		t.Errorf("%.3f of requests log RequestReceived, want 0.3±0.05", share)
	}
}

// checkAuditVerbMix: the verbs of completed requests hold verbShare within
// 5 points.
func checkAuditVerbMix(t *testing.T, evs []auditEvent) {
	rc := complete(evs)
	got := map[string]float64{}
	for _, ev := range rc {
		got[ev.Verb] += 1 / float64(len(rc))
	}
	if diff := cmp.Diff(verbShare, got, cmpopts.EquateApprox(0, 0.05)); diff != "" {
		t.Errorf("verb shares outside ±5 points (-want +got)\n%s", diff)
	}
}

// checkAuditLevels: about 5 % of lines are at RequestResponse.
func checkAuditLevels(t *testing.T, evs []auditEvent) {
	n := 0
	for _, ev := range evs {
		if ev.Level == "RequestResponse" {
			n++
		}
	}
	if share := float64(n) / float64(len(evs)); share < 0.03 || share > 0.07 {
		t.Errorf("%.3f of lines at RequestResponse, want 0.05±0.02", share)
	}
}

// checkAuditObjects: an object keeps its uid, and its successful updates
// send rising resourceVersions.
func checkAuditObjects(t *testing.T, evs []auditEvent) {
	uids := map[string]string{}
	type write struct {
		at string
		rv uint64
	}
	updates := map[string][]write{}
	for _, ev := range complete(evs) {
		ref := ev.ObjectRef
		if ref == nil || ref.UID == "" || ref.Name == "" || ref.Subresource == "binding" {
			continue
		}
		key := ref.APIGroup + "/" + ref.Resource + "/" + ref.Namespace + "/" + ref.Name
		if prev, ok := uids[key]; ok && prev != ref.UID {
			t.Errorf("%s: uid %s, earlier %s", key, ref.UID, prev)
		}
		uids[key] = ref.UID
		if ev.Verb == "update" && ev.ResponseStatus.Code == 200 {
			rv, err := strconv.ParseUint(ref.ResourceVersion, 10, 64)
			if err != nil {
				t.Fatalf("%s: resourceVersion %q: %v", key, ref.ResourceVersion, err)
			}
			updates[key] = append(updates[key], write{ev.RequestReceived, rv})
		}
	}
	if len(uids) == 0 {
		t.Fatal("no objectRef carries a uid")
	}
	for key, ws := range updates {
		sort.Slice(ws, func(i, j int) bool { return ws[i].at < ws[j].at })
		for i := 1; i < len(ws); i++ {
			if ws[i].rv <= ws[i-1].rv {
				t.Errorf("%s: update at %s sent resourceVersion %d, not after %d", key, ws[i].at, ws[i].rv, ws[i-1].rv)
			}
		}
	}
}

// checkAuditLatency: apiserver.latency.k8s.io/total matches the request's
// span and is at least 500ms.
func checkAuditLatency(t *testing.T, evs []auditEvent) {
	seen := 0
	for i, ev := range evs {
		total, ok := ev.Annotations["apiserver.latency.k8s.io/total"]
		if !ok {
			continue
		}
		seen++
		d, err := time.ParseDuration(total)
		if err != nil {
			t.Fatalf("line %d: total %q: %v", i+1, total, err)
		}
		span := ts(t, ev.StageTimestamp).Sub(ts(t, ev.RequestReceived))
		if d < 500*time.Millisecond || (d-span).Abs() > 2*time.Microsecond {
			t.Errorf("line %d: total %v for a %v request", i+1, d, span)
		}
	}
	if seen == 0 {
		t.Error("no apiserver.latency.k8s.io/total annotation")
	}
}

// TestAppendEvent holds the hand-written encoder to encoding/json's output,
// which is what kube-apiserver's JSON serializer writes.
func TestAppendEvent(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"defaults", nil},
		{"bodies and failures", []string{"-rr", "0.6", "-rate", "100", "-burst", "2s:20s:5"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := parseFlags(append([]string{"-seed", "9"}, tc.args...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			g := newGenerator(opts)
			for range 4000 {
				g.now += g.gap()
				g.request(1 << 30)
			}
			evs := []*event{{User: &userInfo{}, ObjectRef: &objectRef{}, ResponseStatus: &status{},
				RequestURI: "/api/v1/x?a=<b>&c=\"\\\x01\t\u2028\xff é µs", Annotations: map[string]string{"b": "", "a": "&"}}}
			for len(g.pending) > 0 {
				evs = append(evs, heap.Pop(&g.pending).(pendingLine).ev)
			}
			for i, ev := range evs {
				want, err := json.Marshal(ev)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, '\n')
				if diff := cmp.Diff(string(want), string(appendEvent(nil, ev))); diff != "" {
					t.Fatalf("event %d: appendEvent differs from encoding/json (-want +got)\n%s", i, diff)
				}
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	tests := []struct {
		name     string
		a, b     []string
		wantSame bool
	}{
		{"same seed", []string{"-lines", "3000", "-seed", "7"}, []string{"-lines", "3000", "-seed", "7"}, true},
		{"same seed with burst", []string{"-lines", "3000", "-seed", "7", "-burst", "1s:2s:10"}, []string{"-lines", "3000", "-seed", "7", "-burst", "1s:2s:10"}, true},
		{"other seed", []string{"-lines", "3000", "-seed", "7"}, []string{"-lines", "3000", "-seed", "8"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := generate(t, "a.log", tc.a...), generate(t, "b.log", tc.b...)
			if same := bytes.Equal(a, b); same != tc.wantSame {
				t.Fatalf("identical output = %v, want %v; first lines (-a +b)\n%s", same, tc.wantSame, cmp.Diff(firstLines(a, 2), firstLines(b, 2)))
			}
		})
	}
}

func firstLines(data []byte, n int) []string {
	return strings.SplitN(string(data), "\n", n+1)[:n]
}

func TestGzip(t *testing.T) {
	args := []string{"-lines", "4000", "-seed", "3", "-rr", "0.2"}
	plain := generate(t, "audit.log", args...)
	unzipped := generate(t, "audit.log.gz", args...) // readFile decompresses
	if !bytes.Equal(plain, unzipped) {
		t.Fatalf("gzip output decompresses to %d bytes that differ from the %d plain bytes", len(unzipped), len(plain))
	}
}

// TestMarkers guards the contract with ingest tests: every Secret value is
// base64 of SECRETVALUE-<hex> and every ConfigMap value is CMVALUE-<hex>.
func TestMarkers(t *testing.T) {
	evs := decode(t, generate(t, "audit.log", "-lines", "8000", "-seed", "11", "-rr", "1"))
	counts := map[string]int{}
	var visit func(t *testing.T, obj map[string]any, kind string)
	visit = func(t *testing.T, obj map[string]any, kind string) {
		if k, ok := obj["kind"].(string); ok {
			kind = k
		}
		if items, ok := obj["items"].([]any); ok {
			for _, it := range items {
				visit(t, it.(map[string]any), strings.TrimSuffix(kind, "List"))
			}
			return
		}
		data, _ := obj["data"].(map[string]any)
		for key, v := range data {
			s, _ := v.(string)
			switch kind {
			case "Secret":
				raw, err := base64.StdEncoding.DecodeString(s)
				if err != nil || !secretRE.Match(raw) || !strings.HasPrefix(s, "U0VDUkVUVkFMVUUt") {
					t.Errorf("Secret data %q = %q: want base64 of SECRETVALUE-<32 hex>", key, s)
				}
				counts["secret"]++
			case "ConfigMap":
				if !cmRE.MatchString(s) {
					t.Errorf("ConfigMap data %q = %q: want CMVALUE-<32 hex>", key, s)
				}
				counts["configmap"]++
			}
		}
		if kind == "Pod" {
			if st, ok := obj["status"].(map[string]any); ok {
				for _, cs := range asSlice(st["containerStatuses"]) {
					if id, _ := cs.(map[string]any)["imageID"].(string); strings.Contains(id, "@sha256:") {
						counts["imageID"]++
					}
				}
			}
		}
	}
	for _, ev := range evs {
		for _, raw := range []json.RawMessage{ev.RequestObject, ev.ResponseObject} {
			if raw == nil {
				continue
			}
			var obj map[string]any
			if err := json.Unmarshal(raw, &obj); err != nil {
				t.Fatalf("auditID %s: object: %v", ev.AuditID, err)
			}
			visit(t, obj, "")
		}
	}
	for _, k := range []string{"secret", "configmap", "imageID"} {
		if counts[k] == 0 {
			t.Errorf("no %s values in %d lines at RequestResponse level", k, len(evs))
		}
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func TestBurst(t *testing.T) {
	start := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	evs := complete(decode(t, generate(t, "audit.log", "-lines", "9000", "-seed", "5", "-rate", "50", "-burst", "20s:10s:10", "-stages", "0")))
	lo, hi := start.Add(20*time.Second), start.Add(30*time.Second)
	type window struct{ requests, failures int }
	var in, out window
	var outFrom, outTo time.Time
	for _, ev := range evs {
		at := ts(t, ev.RequestReceived)
		w := &out
		if !at.Before(lo) && at.Before(hi) {
			w = &in
		} else if ev.Verb != "watch" {
			if outFrom.IsZero() || at.Before(outFrom) {
				outFrom = at
			}
			if at.After(outTo) {
				outTo = at
			}
		}
		w.requests++
		if c := ev.ResponseStatus.Code; c == 429 || c >= 500 {
			w.failures++
		}
	}
	if in.requests == 0 || out.requests == 0 {
		t.Fatalf("requests inside the burst %d, outside %d: want both", in.requests, out.requests)
	}
	inRate := float64(in.requests) / 10
	outRate := float64(out.requests) / (outTo.Sub(outFrom).Seconds() - 10)
	if inRate < 5*outRate {
		t.Errorf("request rate %.0f/s inside the burst, %.0f/s outside: want 10x", inRate, outRate)
	}
	inFail, outFail := float64(in.failures)/float64(in.requests), float64(out.failures)/float64(out.requests)
	if inFail < 0.05 || outFail > 0.01 {
		t.Errorf("failure share %.3f inside the burst, %.4f outside: want above 0.05 and below 0.01", inFail, outFail)
	}
}

func TestFlags(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"help", []string{"-h"}, exitOK, ""},
		{"no lines", []string{"-lines", "0", "-o", "-"}, exitOK, ""},
		{"burst missing field", []string{"-burst", "600s:60s"}, exitUsage, `invalid -burst "600s:60s"`},
		{"burst multiplier below 1", []string{"-burst", "1s:1s:0.5"}, exitUsage, "MULTIPLIER"},
		{"rr above 1", []string{"-rr", "1.5"}, exitUsage, "invalid -rr"},
		{"start not RFC 3339", []string{"-start", "yesterday"}, exitUsage, "invalid -start"},
		{"negative lines", []string{"-lines", "-1"}, exitUsage, "invalid -lines"},
		{"unknown flag", []string{"-x"}, exitUsage, "flag provided but not defined"},
		{"argument", []string{"out.log"}, exitUsage, "unexpected argument"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), tc.args, &stdout, &stderr); code != tc.wantCode {
				t.Fatalf("run(%q) = %d, want %d; stderr:\n%s", tc.args, code, tc.wantCode, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("stderr does not mention %q:\n%s", tc.wantErr, stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout has %d bytes, want none", stdout.Len())
			}
		})
	}
}

func TestInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if code := run(ctx, []string{"-lines", "100000", "-o", filepath.Join(t.TempDir(), "a.log")}, io.Discard, io.Discard); code != exitInterrupt {
		t.Errorf("run with a cancelled context = %d, want %d", code, exitInterrupt)
	}
}

func FuzzParseBurst(f *testing.F) {
	for _, s := range []string{"", "600s:60s:20", "0s:1ms:1", "1h:1m:1.5", "600s:60s", "a:b:c", "1s:-1s:2", "1s:1s:NaN", "1s:1s:+Inf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := parseBurst(s)
		if err != nil {
			return
		}
		if s != "" && (b.offset < 0 || b.length <= 0 || !(b.mult >= 1) || b.mult > maxBurst) {
			t.Errorf("parseBurst(%q) = %+v, accepted", s, b)
		}
	})
}

func BenchmarkGenerate(b *testing.B) {
	opts, err := parseFlags([]string{"-lines", "100000"}, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	var n int
	for b.Loop() {
		if n, err = newGenerator(opts).run(context.Background(), io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}
