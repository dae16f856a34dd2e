package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite"

	"github.com/faultline/faultline/internal/testenv"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

// sharedSamples is ../shared/data/audit-samples from the repository root:
// real audit records that nobody on this project wrote.
const sharedSamples = "../../../shared/data/audit-samples"

func samplesDir(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(sharedSamples); err != nil {
		testenv.Missing(t, "shared samples not beside the repository: %v", err)
	}
	return sharedSamples
}

func records(t *testing.T, s *sqlite.Store) []*timeline.Record {
	t.Helper()
	var out []*timeline.Record
	for r, err := range s.Records(context.Background(), timeline.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// got is the projection of a record the sample tests compare.
type got struct {
	Time      string
	Verb      string
	User      string
	UserAgent string
	SourceIP  string
	Code      int
	Latency   time.Duration
	Object    timeline.ObjectRef
	AuditID   string
	URI       string
	Level     string
	Stage     string
	Line      int64
}

func project(rs []*timeline.Record) []got {
	var out []got
	for _, r := range rs {
		out = append(out, got{
			Time: r.Time.Format(time.RFC3339Nano), Verb: r.Verb, User: r.User, UserAgent: r.UserAgent,
			SourceIP: r.SourceIP, Code: r.Code, Latency: r.Latency, Object: r.Object, AuditID: r.AuditID,
			URI: r.URI, Level: r.Level, Stage: r.Stage(), Line: r.Evidence.Line,
		})
	}
	return out
}

// TestSharedSamples ingests the real audit logs in the shared samples (an
// Elastic test log with GKE and AKS envelopes, Falco's traces) and checks
// the records and the run of each.
func TestSharedSamples(t *testing.T) {
	dir := samplesDir(t)
	lease := func(name, uid string) timeline.ObjectRef {
		return timeline.ObjectRef{Group: "coordination.k8s.io", Version: "v1", Resource: "leases", Namespace: "kube-system", Name: name, UID: uid}
	}
	tests := []sharedSample{
		{
			file:       "elastic-test-audit.log",
			duplicates: 1, // line 3 repeats line 2 byte for byte
			want: []got{
				{Time: "2025-03-04T06:22:18.819232Z", Verb: "get", User: "system:serviceaccounts:default:default", UserAgent: "kubectl/v1.26.1",
					SourceIP: "67.43.156.1", Code: 200, Latency: 3300 * time.Microsecond,
					Object:  timeline.ObjectRef{Version: "v1", Resource: "pods", Namespace: "default", Name: "my-pod"},
					AuditID: "abcde12345", URI: "/api/v1/namespaces/default/pods", Level: "Metadata", Stage: "ResponseComplete", Line: 1},
				// GKE Cloud Logging export: protoPayload, a non-resource URL, gRPC status 0.
				{Time: "2025-07-13T08:38:39.127266Z", Verb: "get", User: "system:gke-master-healthcheck", UserAgent: "gke-master-healthcheck",
					SourceIP: "67.43.156.1", Code: 200, AuditID: "1234abcd", URI: "/readyz", Level: "Metadata", Stage: "ResponseComplete", Line: 4},
				{Time: "2025-07-16T10:12:56.525137Z", Verb: "get", User: "system:serviceaccount:kube-system:elastic-agent",
					UserAgent: "elastic-agent/v0.0.0 (linux/amd64) kubernetes/$Format", SourceIP: "67.43.156.1", Code: 200, Latency: 38040 * time.Microsecond,
					Object: lease("elastic-agent-cluster-test", ""), AuditID: "abcde12345",
					URI: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/elastic-agent-cluster-test", Level: "Metadata", Stage: "ResponseComplete", Line: 2},
				// AKS envelope with properties.log as an object.
				{Time: "2025-09-30T06:23:35.091134Z", Verb: "update", User: "aksService", UserAgent: "elastic-agent/v0.0.0 (linux/amd64) kubernetes/$Format",
					SourceIP: "67.43.156.1", Code: 200, Latency: 10048 * time.Microsecond, Object: lease("elastic-agent-cluster-test", "12345678"),
					AuditID: "abcde12345", URI: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/elastic-agent-cluster-test",
					Level: "Metadata", Stage: "ResponseComplete", Line: 5},
			},
		},
		{
			// AKS envelope with properties.log as a JSON string.
			file: "elastic-test-kube-audit.log",
			want: []got{{Time: "2025-10-07T16:19:19.643609Z", Verb: "update", User: "aksService",
				UserAgent: "approver/v0.0.0 (linux/amd64) kubernetes/$Format/leader-election", SourceIP: "172.31.51.172", Code: 200,
				Latency: 4153 * time.Microsecond, Object: lease("kubelet-serving-csr-approver", "14be99f8-ebb7-47b9-a194-43e63d9386af"),
				AuditID: "ad26f7bc-f1c6-4097-90f1-e0924e12f257", URI: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kubelet-serving-csr-approver",
				Level: "Metadata", Stage: "ResponseComplete", Line: 1}},
		},
		{
			// Level Request, extensions/v1beta1, legacy top-level timestamp; no user agent.
			file:     "falco-create_deployment.json",
			versions: 1,
			want: []got{{Time: "2018-10-26T13:07:36.905144Z", Verb: "create", User: "minikube-user", SourceIP: "192.168.99.1", Code: 201,
				Latency: 6298 * time.Microsecond,
				Object:  timeline.ObjectRef{Group: "extensions", Version: "v1beta1", Resource: "deployments", Kind: "Deployment", Namespace: "default", Name: "nginx-deployment"},
				AuditID: "c5be68f4-80b8-4159-adc4-76ddb195334e", URI: "/apis/extensions/v1beta1/namespaces/default/deployments",
				Level: "Request", Stage: "ResponseComplete", Line: 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) { checkSharedSample(t, dir, tt) })
	}
	t.Run("falco-create_configmap_sensitive_values.json", func(t *testing.T) { checkSensitiveConfigMapSample(t, dir) })
}

// sharedSample is one file of the shared samples, the records it gives and
// what its run counts.
type sharedSample struct {
	file       string
	want       []got
	duplicates int64
	versions   int64
}

// checkSharedSample ingests tt.file from dir and checks its records and
// its run: done, no bad line, the duplicates and versions tt expects.
func checkSharedSample(t *testing.T, dir string, tt sharedSample) {
	s := sqlitetest.New(t)
	runs, err := Ingest(context.Background(), s, []string{filepath.Join(dir, tt.file)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tt.want, project(records(t, s))); diff != "" {
		t.Errorf("records (-want +got)\n%s", diff)
	}
	r := runs[0]
	if r.Duplicates != tt.duplicates || r.BadLines != 0 || r.Versions != tt.versions || r.Status != timeline.RunDone {
		t.Errorf("run: duplicates %d (want %d), bad %d, versions %d (want %d), status %s",
			r.Duplicates, tt.duplicates, r.BadLines, r.Versions, tt.versions, r.Status)
	}
}

// checkSensitiveConfigMapSample ingests Falco's ConfigMaps with private
// values from dir: six records, six versions, the first the create of
// ConfigMap default/my-config.
func checkSensitiveConfigMapSample(t *testing.T, dir string) {
	cm := timeline.ObjectRef{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespace: "default", Name: "my-config", UID: "b4952dc3-d670-11e5-8cd0-68f728db1985"}
	s := sqlitetest.New(t)
	runs, err := Ingest(context.Background(), s, []string{filepath.Join(dir, "falco-create_configmap_sensitive_values.json")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rs := records(t, s)
	if len(rs) != 6 || runs[0].Versions != 6 {
		t.Fatalf("got %d records and %d versions, want 6 and 6", len(rs), runs[0].Versions)
	}
	first := project(rs[:1])[0]
	want := got{Time: "2018-10-26T09:51:20.713631Z", Verb: "create", User: "minikube-user", SourceIP: "192.168.99.1", Code: 201,
		Latency: 3382 * time.Microsecond, Object: cm, AuditID: "9a2bb12c-b9f7-4d34-809c-671e8c7e1e06",
		URI: "/api/v1/namespaces/default/configmaps", Level: "RequestResponse", Stage: "ResponseComplete", Line: 1}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("first record (-want +got)\n%s", diff)
	}
}

func TestSamplesInEveryEnvelopeMapAlike(t *testing.T) {
	// One event, wrapped in each envelope a user may have, gives one record.
	ev := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a-1","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/ml/pods?limit=500","verb":"list","user":{"username":"system:node:gpu-17","groups":["system:nodes"]},"sourceIPs":["10.0.0.7"],"userAgent":"kubelet/v1.37.2","objectRef":{"resource":"pods","namespace":"ml","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":429},"requestReceivedTimestamp":"2026-05-01T10:00:00.000100Z","stageTimestamp":"2026-05-01T10:00:00.250100Z","annotations":{"apf.k8s.io/priority-level":"workload-low"}}`
	quoted := strings.ReplaceAll(strings.ReplaceAll(ev, `\`, `\\`), `"`, `\"`)
	lines := map[string]string{
		"plain":                 ev,
		"eventlist":             `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[` + ev + `]}`,
		"aks object":            `{"category":"kube-audit","properties":{"log":` + ev + `,"pod":"kube-apiserver-1"},"time":"2026-05-01T10:00:01Z"}`,
		"aks string":            `{"category":"kube-audit","properties":{"log":"` + quoted + `"},"time":"2026-05-01T10:00:01Z"}`,
		"cloudwatch message":    `{"timestamp":1777629600250,"message":"` + quoted + `"}`,
		"cloudwatch logEvents":  `{"messageType":"DATA_MESSAGE","logGroup":"/aws/eks/c/cluster","logEvents":[{"id":"1","timestamp":1777629600250,"message":"` + quoted + `"}]}`,
		"cloudwatch events":     `{"events":[{"logStreamName":"kube-apiserver-audit-1","timestamp":1777629600250,"message":"` + quoted + `"}]}`,
		"cloudwatch s3 export":  `2026-05-01T10:00:00.250Z ` + ev,
		"pretty eventlist (ml)": "{\n  \"kind\": \"EventList\",\n  \"items\": [\n" + ev + "\n  ]\n}",
	}
	want := got{Time: "2026-05-01T10:00:00.0001Z", Verb: "list", User: "system:node:gpu-17", UserAgent: "kubelet/v1.37.2", SourceIP: "10.0.0.7",
		Code: 429, Latency: 250 * time.Millisecond, Object: timeline.ObjectRef{Version: "v1", Resource: "pods", Namespace: "ml"},
		AuditID: "a-1", URI: "/api/v1/namespaces/ml/pods?limit=500", Level: "Metadata", Stage: "ResponseComplete", Line: 1}
	for name, line := range lines {
		t.Run(name, func(t *testing.T) {
			s := sqlitetest.New(t)
			path := filepath.Join(t.TempDir(), "audit.log")
			if err := os.WriteFile(path, []byte(line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Ingest(context.Background(), s, []string{path}, Options{Strict: true}); err != nil {
				t.Fatal(err)
			}
			rs := records(t, s)
			if diff := cmp.Diff([]got{want}, project(rs)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			if len(rs) == 1 && rs[0].Annotations()["apf.k8s.io/priority-level"] != "workload-low" {
				t.Errorf("annotations lost: %s", rs[0].Extra)
			}
		})
	}
}

func TestStagesJoinByAuditID(t *testing.T) {
	lines := `{"kind":"Event","level":"Metadata","auditID":"x","stage":"RequestReceived","verb":"watch","user":{"username":"u"},"requestReceivedTimestamp":"2026-05-01T10:00:00Z","stageTimestamp":"2026-05-01T10:00:00Z"}
{"kind":"Event","level":"Metadata","auditID":"x","stage":"ResponseStarted","verb":"watch","user":{"username":"u"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-05-01T10:00:00Z","stageTimestamp":"2026-05-01T10:00:00.01Z"}
{"kind":"Event","level":"Metadata","auditID":"x","stage":"ResponseComplete","verb":"watch","user":{"username":"u"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-05-01T10:00:00Z","stageTimestamp":"2026-05-01T10:05:00Z"}
`
	s := sqlitetest.New(t)
	path := filepath.Join(t.TempDir(), "audit.log")
	os.WriteFile(path, []byte(lines), 0o644)
	runs, err := Ingest(context.Background(), s, []string{path}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rs := records(t, s)
	if len(rs) != 1 || rs[0].Latency != 5*time.Minute || rs[0].Stage() != "ResponseComplete" || rs[0].Code != 200 {
		t.Fatalf("joined: %+v", project(rs))
	}
	if r := runs[0]; r.Records != 1 || r.Merged != 2 || r.Lines != 3 {
		t.Errorf("run counts: records %d merged %d lines %d", r.Records, r.Merged, r.Lines)
	}
}

func TestReingestIsANoop(t *testing.T) {
	dir := samplesDir(t)
	s := sqlitetest.New(t)
	ctx := context.Background()
	files := []string{filepath.Join(dir, "elastic-test-audit.log"), filepath.Join(dir, "falco-create_configmap_sensitive_values.json")}
	var reports int
	first, err := Ingest(ctx, s, files, Options{OnProgress: func(p Progress) {
		reports++
		if p.Bytes < 0 || p.Path == "" {
			t.Errorf("progress report %+v", p)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if reports < len(files) {
		t.Errorf("%d progress reports for %d files, want one at least per file", reports, len(files))
	}
	before := len(records(t, s))
	second, err := Ingest(ctx, s, files, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if after := len(records(t, s)); after != before {
		t.Errorf("re-ingest changed the record count: %d -> %d", before, after)
	}
	for i := range second {
		if second[i].Records != 0 || second[i].Versions != 0 || second[i].Duplicates != first[i].Records+first[i].Duplicates {
			t.Errorf("second run of %s: %d records, %d versions, %d duplicates (first had %d records)",
				second[i].Path, second[i].Records, second[i].Versions, second[i].Duplicates, first[i].Records)
		}
		if second[i].SHA256 != first[i].SHA256 || len(first[i].SHA256) != 64 {
			t.Errorf("sha256 differs across runs of one file: %q %q", first[i].SHA256, second[i].SHA256)
		}
	}
}

func TestStrictStopsAtFirstBadLineKeepingWhatCameBefore(t *testing.T) {
	good := func(id string) string {
		return `{"kind":"Event","level":"Metadata","auditID":"` + id + `","stage":"ResponseComplete","verb":"get","user":{"username":"u"},"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	os.WriteFile(path, []byte(good("a")+"\n"+good("b")+"\n{\"kind\":\n"+good("c")+"\n"), 0o644)
	s := sqlitetest.New(t)
	runs, err := Ingest(context.Background(), s, []string{path}, Options{Strict: true})
	if !errors.Is(err, ErrStrict) || !strings.Contains(err.Error(), "audit.log:3: json: truncated") {
		t.Fatalf("err = %v", err)
	}
	if n := len(records(t, s)); n != 2 {
		t.Errorf("kept %d records, want the 2 before the bad line", n)
	}
	if runs[0].Status != timeline.RunFailed || runs[0].BadLines != 1 {
		t.Errorf("run: %+v", runs[0])
	}
}
