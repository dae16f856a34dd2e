package audit

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

func goodLine(id string) string {
	return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"` + id +
		`","stage":"ResponseComplete","requestURI":"/api/v1/pods","verb":"list","user":{"username":"system:node:n1"},` +
		`"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-05-01T10:00:00.000001Z","stageTimestamp":"2026-05-01T10:00:00.1Z"}`
}

// bigLine is a valid RequestResponse LIST whose response is size bytes long.
func bigLine(id string, size int) string {
	var items strings.Builder
	pod := `{"metadata":{"name":"p%d","namespace":"ml","uid":"u%d","resourceVersion":"%d"},"spec":{"containers":[{"name":"c","image":"trainer:1"}]}}`
	for i := 0; items.Len() < size; i++ {
		if i > 0 {
			items.WriteByte(',')
		}
		fmt.Fprintf(&items, pod, i, i, i+1)
	}
	return `{"kind":"Event","level":"RequestResponse","auditID":"` + id + `","stage":"ResponseComplete","verb":"list",` +
		`"user":{"username":"admin"},"objectRef":{"resource":"pods","namespace":"ml","apiVersion":"v1"},"responseStatus":{"code":200},` +
		`"requestReceivedTimestamp":"2026-05-01T10:00:01Z","stageTimestamp":"2026-05-01T10:00:02Z",` +
		`"responseObject":{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"99"},"items":[` + items.String() + `]}}`
}

// TestBadLines feeds a corpus of broken lines between good ones: each broken
// line is named by file, line and field, and every good line is kept.
func TestBadLines(t *testing.T) {
	big := bigLine("big", 20<<20) // 20 MiB: legal, longer than any 64 KiB scanner reads
	lines := []string{
		"\xef\xbb\xbf" + goodLine("g1"),                                      // a BOM before the first line is dropped
		`{"kind":"Event","auditID":"t1","verb":"get","user":{"username":"u"`, // truncated
		goodLine("g2"),
		`{"kind":"Event","auditID":"w1","verb":"get","user":"bob","requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`, // wrong type
		`{"kind":"Event","auditID":"w2","verb":"get","responseStatus":{"code":"200"},"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
		"\x00\x01\x02binary\xff\xfe",
		"",    // blank lines are skipped, not bad
		"   ", // likewise
		goodLine("g3"),
		`{"kind":"Event","auditID":"d1","verb":"get","requestReceivedTimestamp":"2026-13-01T10:00:00Z"}`,
		`{"kind":"Event","auditID":"d2","verb":"get"}`,
		`{"kind":"Pod","metadata":{"name":"p"}}`,
		`[1,2,3]`,
		`{"kind":"Event","auditID":"s1","verb":"get","stage":"Sideways","requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
		`{"category":"kube-audit","properties":{"log":"{\"kind\":\"Event\",\"auditID\":"}}`,
		big,
		"\xef\xbb\xbf" + goodLine("bom-mid"), // a BOM not at the start is garbage
		goodLine("g4"),
		`{"kind":"Event","auditID":"y9","verb":"get","stage":"ResponseComplete","requestReceivedTimestamp":"9999-12-31T23:59:59Z"}`,
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	common := []string{
		"audit.log:2: json: truncated: input ends at byte 66 inside a value",
		"audit.log:4: user: want an object, got JSON string",
		"audit.log:5: responseStatus.code: want a number, got JSON string",
		"audit.log:6: line: binary data (NUL byte at offset 0)",
		`audit.log:10: requestReceivedTimestamp: parsing "2026-13-01T10:00:00Z": month out of range`,
		"audit.log:11: requestReceivedTimestamp: missing, and no other timestamp on the line",
		`audit.log:12: kind: "Pod" is not an audit Event`,
		`audit.log:13: line: not a JSON object (starts with "[")`,
		`audit.log:14: stage: unknown stage "Sideways"`,
		"audit.log:15: properties.log: json: truncated: input ends at byte 26 inside a value",
	}
	bomMid := `audit.log:17: line: not a JSON object (starts with "\ufeff")`
	y9999 := "audit.log:19: requestReceivedTimestamp: time 9999-12-31T23:59:59Z is outside the range a timeline holds (1677-09-21T00:12:43Z .. 2262-04-11T23:47:16Z)"
	tooLong := fmt.Sprintf("audit.log:16: line: line of %d+ bytes exceeds the 16777216-byte limit (--max-line-size)", 16<<20+1)
	for _, tc := range []struct {
		name    string
		maxLine int
		wantBad []string
		records int64
	}{
		{name: "default limit", wantBad: append(slices.Clone(common), bomMid, y9999), records: 5},
		{name: "16 MiB limit", maxLine: 16 << 20, wantBad: append(slices.Clone(common), tooLong, bomMid, y9999), records: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sqlitetest.New(t)
			var bad []string
			runs, err := Ingest(context.Background(), s, []string{path}, Options{
				MaxLine: tc.maxLine,
				OnSkip:  func(b *input.Skip) { bad = append(bad, strings.Replace(b.Error(), filepath.Dir(path)+"/", "", 1)) },
			})
			if err != nil {
				t.Fatal(err)
			}
			// The over-long line's reported length depends on buffer sizes;
			// check its prefix only.
			for i := range bad {
				if strings.Contains(bad[i], "exceeds the") {
					bad[i] = tooLong
				}
			}
			if diff := cmp.Diff(tc.wantBad, bad); diff != "" {
				t.Errorf("bad lines (-want +got)\n%s", diff)
			}
			var ids []string
			for _, r := range records(t, s) {
				ids = append(ids, r.AuditID)
			}
			want := []string{"g1", "g2", "g3", "g4"}
			if tc.maxLine == 0 {
				want = []string{"g1", "g2", "g3", "g4", "big"}
			}
			if diff := cmp.Diff(want, ids, sortStrings); diff != "" {
				t.Errorf("kept records (-want +got)\n%s", diff)
			}
			if r := runs[0]; r.Records != tc.records || r.BadLines != int64(len(tc.wantBad)) {
				t.Errorf("run: %d records, %d bad lines", r.Records, r.BadLines)
			}
		})
	}
}

var sortStrings = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})

// TestSecretValuesNeverReachTheDatabase ingests every way a Secret value,
// or a ConfigMap value that looks like a credential (redact.Credential), can
// appear in an audit log, then greps the database files.
func TestSecretValuesNeverReachTheDatabase(t *testing.T) {
	const secret = "SECRETVALUE-7f3a9c"
	const cmValue = "CMVALUE-51be02"
	b64 := base64.StdEncoding.EncodeToString([]byte(secret))
	lastApplied := strings.ReplaceAll(`{"apiVersion":"v1","kind":"Secret","data":{"token":"`+b64+`"},"metadata":{"name":"s"}}`, `"`, `\"`)
	secretObj := `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s","namespace":"ml","uid":"su","resourceVersion":"%d","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"` + lastApplied + `"}},"data":{"token":"` + b64 + `"},"stringData":{"plain":"` + secret + `"}}`
	cmObj := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c","namespace":"ml","uid":"cu","resourceVersion":"%d"},"data":{"db_password":"` + cmValue + `"},"binaryData":{"api_key":"` + base64.StdEncoding.EncodeToString([]byte(cmValue)) + `"}}`
	ev := func(id, verb, resource string, req, resp string) string {
		s := `{"kind":"Event","level":"RequestResponse","auditID":"` + id + `","stage":"ResponseComplete","verb":"` + verb + `","user":{"username":"admin"},` +
			`"objectRef":{"resource":"` + resource + `","namespace":"ml","name":"x","apiVersion":"v1"},"responseStatus":{"code":200},` +
			`"requestReceivedTimestamp":"2026-05-01T10:00:00Z","stageTimestamp":"2026-05-01T10:00:00.1Z"`
		if req != "" {
			s += `,"requestObject":` + req
		}
		if resp != "" {
			s += `,"responseObject":` + resp
		}
		return s + "}"
	}
	lines := []string{
		ev("1", "create", "secrets", fmt.Sprintf(secretObj, 1), fmt.Sprintf(secretObj, 2)),
		ev("2", "update", "secrets", fmt.Sprintf(secretObj, 3), ""),
		ev("3", "patch", "secrets", `{"data":{"token":"`+b64+`"},"stringData":{"plain":"`+secret+`"}}`, fmt.Sprintf(secretObj, 4)),
		ev("4", "list", "secrets", "", `{"kind":"SecretList","apiVersion":"v1","items":[`+strings.Replace(fmt.Sprintf(secretObj, 5), `"kind":"Secret","apiVersion":"v1",`, "", 1)+`]}`),
		ev("5", "get", "configmaps", "", fmt.Sprintf(cmObj, 6)),
		ev("6", "patch", "configmaps", `{"data":{"db_password":"`+cmValue+`"}}`, fmt.Sprintf(cmObj, 7)),
		ev("7", "list", "configmaps", "", `{"kind":"ConfigMapList","apiVersion":"v1","items":[`+strings.Replace(fmt.Sprintf(cmObj, 8), `"kind":"ConfigMap","apiVersion":"v1",`, "", 1)+`]}`),
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log.gz")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(strings.Join(lines, "\n")))
	zw.Close()
	os.WriteFile(path, buf.Bytes(), 0o644)
	files := []string{path}
	if _, err := os.Stat(sharedSamples); err == nil {
		files = append(files, filepath.Join(sharedSamples, "falco-create_configmap_sensitive_values.json"))
	}

	s := sqlitetest.New(t)
	runs, err := Ingest(context.Background(), s, files, Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if runs[0].Versions < 7 {
		t.Errorf("only %d versions stored; the test must store the objects it greps for", runs[0].Versions)
	}
	dbPath := s.Path()
	for _, suffix := range []string{"", "-wal"} { // before close: the WAL holds the latest pages
		assertAbsent(t, dbPath+suffix, secret, b64, cmValue, "MY-KEY", "MY-ID")
	}
	s.Close()
	assertAbsent(t, dbPath, secret, b64, cmValue, "MY-KEY", "MY-ID")
}

func assertAbsent(t *testing.T, path string, values ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if bytes.Contains(b, []byte(v)) {
			t.Errorf("%s holds the value %q", filepath.Base(path), v)
		}
	}
}
