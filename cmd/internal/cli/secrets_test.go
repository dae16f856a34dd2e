package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// secretShape plants a marker in one way an audit log can carry a secret
// value, and names the object whose history shows it.
type secretShape struct {
	name  string
	event func(m string) map[string]any // the audit event, marker planted
	ref   string                        // for faultline history; "" if none
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// lastApplied is the annotation kubectl apply leaves, repeating obj.
func lastApplied(obj map[string]any) map[string]any {
	b, _ := json.Marshal(obj)
	return map[string]any{"kubectl.kubernetes.io/last-applied-configuration": string(b)}
}

func podSpec(m string) map[string]any {
	return map[string]any{"containers": []any{map[string]any{
		"name": "db", "image": "mysql:8",
		"env":     []any{map[string]any{"name": "MYSQL_PASSWORD", "value": m}},
		"command": []any{"mysqld"},
		"args":    []any{"--password=" + m},
	}}}
}

var secretShapes = []secretShape{
	{"last-applied of a kind-less secret", func(m string) map[string]any {
		return writeEvent("create", "secrets", "s1", map[string]any{
			"metadata":   map[string]any{"name": "s1", "namespace": "ns", "annotations": lastApplied(map[string]any{"stringData": map[string]any{"p": m}})},
			"stringData": map[string]any{"p": m},
		})
	}, "secret/ns/s1"},
	{"kind secret in lower case", func(m string) map[string]any {
		return writeEvent("create", "secrets", "s2", map[string]any{
			"kind": "secret", "apiVersion": "v1",
			"metadata": map[string]any{"name": "s2", "namespace": "ns", "annotations": lastApplied(map[string]any{"kind": "secret", "data": map[string]any{"p": b64(m)}})},
			"data":     map[string]any{"p": b64(m)},
		})
	}, "secret/ns/s2"},
	{"kind-less item of a list", func(m string) map[string]any {
		ev := writeEvent("list", "secrets", "", nil)
		ev["responseObject"] = map[string]any{"kind": "List", "apiVersion": "v1", "items": []any{map[string]any{
			"metadata": map[string]any{"name": "s3", "namespace": "ns", "annotations": lastApplied(map[string]any{"data": map[string]any{"p": b64(m)}})},
			"data":     map[string]any{"p": b64(m)},
		}}}
		return ev
	}, "secret/ns/s3"},
	{"capitalized keys", func(m string) map[string]any {
		return writeEvent("update", "secrets", "s4", map[string]any{
			"Kind": "Secret", "APIVersion": "v1",
			"Metadata": map[string]any{"Name": "s4", "Namespace": "ns"},
			"Data":     map[string]any{"p": b64(m)},
		})
	}, "secret/ns/s4"},
	{"configmap data as a string", func(m string) map[string]any {
		return writeEvent("create", "configmaps", "c1", map[string]any{
			"kind": "ConfigMap", "apiVersion": "v1",
			"metadata": map[string]any{"name": "c1", "namespace": "ns"},
			"data":     m,
		})
	}, "configmap/ns/c1"},
	{"token review", func(m string) map[string]any {
		ev := writeEvent("create", "tokenreviews", "", map[string]any{
			"kind": "TokenReview", "apiVersion": "authentication.k8s.io/v1",
			"metadata": map[string]any{"name": "t1"},
			"spec":     map[string]any{"token": m},
		})
		ev["objectRef"].(map[string]any)["apiGroup"] = "authentication.k8s.io"
		return ev
	}, ""},
	{"denied secret create", func(m string) map[string]any {
		ev := writeEvent("create", "secrets", "s5", map[string]any{
			"kind": "Secret", "apiVersion": "v1",
			"metadata": map[string]any{"name": "s5", "namespace": "ns"},
			"data":     map[string]any{"p": b64(m)},
		})
		ev["responseStatus"] = map[string]any{"code": 403, "reason": "Forbidden",
			"message": `admission webhook "policy" denied the request: {"data":{"p":"` + m + `"}}`}
		return ev
	}, ""},
	{"exec command", func(m string) map[string]any {
		ev := writeEvent("create", "pods", "db-0", nil)
		ev["objectRef"].(map[string]any)["subresource"] = "exec"
		ev["requestURI"] = "/api/v1/namespaces/ns/pods/db-0/exec?command=mysql&command=-p" + m + "&container=db&stdin=true"
		return ev
	}, ""},
	{"pod env and args", func(m string) map[string]any {
		return writeEvent("create", "pods", "db-1", map[string]any{
			"kind": "Pod", "apiVersion": "v1",
			"metadata": map[string]any{"name": "db-1", "namespace": "ns"},
			"spec":     podSpec(m),
		})
	}, "pod/ns/db-1"},
	{"deployment template", func(m string) map[string]any {
		d := map[string]any{
			"kind": "Deployment", "apiVersion": "apps/v1",
			"metadata": map[string]any{"name": "db", "namespace": "ns"},
			"spec":     map[string]any{"template": map[string]any{"spec": podSpec(m)}},
		}
		d["metadata"].(map[string]any)["annotations"] = lastApplied(map[string]any{"kind": "Deployment", "spec": d["spec"]})
		ev := writeEvent("update", "deployments", "db", d)
		ev["objectRef"].(map[string]any)["apiGroup"] = "apps"
		return ev
	}, "deployment/ns/db"},
	{"configmap credentials by key", func(m string) map[string]any {
		return configMapEvent("c2", map[string]any{"password": m, "client_secret": m, "API_KEY": m, "tls.private_key": m, "GPG_PASSPHRASE": m,
			"access.properties": "aws_access_key_id = " + m + "\n", "LR": "0.001"}, nil)
	}, "configmap/ns/c2"},
	// Falco's rule for ConfigMaps with private credentials, each spelling
	// of its trace file create_configmap_sensitive_values.json.
	{"configmap credentials as Falco spells them", func(m string) map[string]any {
		data := map[string]any{"ui.properties": "color.good=purple\ncolor.bad=yellow\nallow.textmode=true\n"}
		for _, k := range []string{"aws_access_key_id", "aws-access-key-id", "aws_s3_access_key_id", "aws-s3-access-key-id", "password", "passphrase"} {
			data[k+".properties"] = k + " = " + m + "\naws_secret_access_key = " + m + "\n"
		}
		return configMapEvent("c3", data, nil)
	}, "configmap/ns/c3"},
	{"configmap credentials by value", func(m string) map[string]any {
		data := map[string]any{}
		for rule, v := range credentialValues(m) {
			data["v-"+rule] = v
		}
		return configMapEvent("c4", data, map[string]any{
			"key.pem": b64("-----BEGIN PRIVATE KEY-----\n" + m + "\n"),
			"blob":    b64(m + "\x00\xff"),
		})
	}, "configmap/ns/c4"},
	{"env literals by value", func(m string) map[string]any {
		var env []any
		for rule, v := range credentialValues(m) {
			env = append(env, map[string]any{"name": "V_" + strings.ToUpper(strings.ReplaceAll(rule, "-", "_")), "value": v})
		}
		env = append(env, map[string]any{"name": "HF_TOKEN", "value": m}, map[string]any{"name": "awsSecretAccessKey", "value": m})
		spec := map[string]any{"containers": []any{map[string]any{"name": "trainer", "image": "trainer:1", "env": env}}}
		return writeEvent("create", "pods", "trainer-0", map[string]any{
			"kind": "Pod", "apiVersion": "v1",
			"metadata": map[string]any{"name": "trainer-0", "namespace": "ns"},
			"spec":     spec,
		})
	}, "pod/ns/trainer-0"},
}

// configMapEvent is the create of ConfigMap ns/name holding data (and
// binaryData, if given).
func configMapEvent(name string, data, binaryData map[string]any) map[string]any {
	cm := map[string]any{"kind": "ConfigMap", "apiVersion": "v1",
		"metadata": map[string]any{"name": name, "namespace": "ns"}, "data": data}
	if binaryData != nil {
		cm["binaryData"] = binaryData
	}
	return writeEvent("create", "configmaps", name, cm)
}

// credentialValues are values of each shape a credential rule
// (redact.Credential) catches whatever its key, each holding the marker m or
// a part of it that markersOf registers.
func credentialValues(m string) map[string]string {
	return map[string]string{
		"aws-access-key-id":   "AKIA" + strings.ToUpper(m[:16]),
		"private-key-block":   "-----BEGIN RSA PRIVATE KEY-----\n" + m + "\n-----END RSA PRIVATE KEY-----\n",
		"jwt":                 "eyJhbGciOiJIUzI1NiJ9.eyJ" + m + ".c2ln",
		"credential-pair":     "host=db user=app password=" + m,
		"json-pair":           `{"db": {"host": "db", "password": "` + m + `"}}`,
		"url-userinfo":        "postgres://app:" + m + "@db:5432/app",
		"high-entropy-base64": "Zq8Xw3Vb7Np2Lk5Jh4Gf6Ds1" + m,
		"high-entropy-hex":    "0x" + m[2:] + "9c3e7a51",
	}
}

// markersOf are the strings planted for marker m: m itself, its base64, and
// the parts of it that credentialValues and binaryData plant.
func markersOf(m string) []string {
	return []string{m, b64(m), strings.ToUpper(m[:16]), m[2:], b64(m)[:32]}
}

var auditSeq int

// writeEvent is a RequestResponse audit event of verb on resource/name in
// namespace ns, with body as its request (and, for a success, response).
func writeEvent(verb, resource, name string, body map[string]any) map[string]any {
	auditSeq++
	ev := map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse",
		"auditID": fmt.Sprintf("00000000-0000-0000-0000-%012d", auditSeq), "stage": "ResponseComplete",
		"requestURI": "/api/v1/namespaces/ns/" + resource, "verb": verb,
		"user":      map[string]any{"username": "alice@example.com"},
		"sourceIPs": []any{"10.0.0.1"}, "userAgent": "kubectl/v1.31.0",
		"objectRef":                map[string]any{"resource": resource, "namespace": "ns", "name": name, "apiVersion": "v1"},
		"responseStatus":           map[string]any{"code": 200},
		"requestReceivedTimestamp": time.Date(2026, 5, 1, 10, 0, auditSeq, 0, time.UTC).Format(time.RFC3339Nano),
		"stageTimestamp":           time.Date(2026, 5, 1, 10, 0, auditSeq, 1e6, time.UTC).Format(time.RFC3339Nano),
	}
	if body != nil {
		ev["requestObject"] = body
		ev["responseObject"] = body
	}
	return ev
}

// TestSecretsNeverStored is the property that redaction holds: for every
// shape in secretShapes, a random marker planted in the value appears
// neither in the timeline's files (the database, its -wal and -shm) nor in
// the output of timeline, history and investigate. Seeded, so a failure
// replays.
func TestSecretsNeverStored(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0xfa017))
			dir := t.TempDir()
			s := &secretsRun{
				t:       t,
				db:      filepath.Join(dir, "t.db"),
				cfg:     t.TempDir(),
				markers: map[string]string{},
			}
			auditLog := s.writeAuditLog(rng, dir)
			s.ingest(auditLog)
			s.checkFiles("after ingest")
			s.checkSafeStaysInClear()
			if _, err := os.Stat(filepath.Join(s.cfg, "faultline", "key")); err != nil {
				t.Errorf("no key made in XDG_CONFIG_HOME: %v", err)
			}
			s.runCommands()
			s.checkFiles("after the commands")
		})
	}
}

// secretsRun is one seed of TestSecretsNeverStored: its timeline, its
// config folder, and the markers planted so far.
type secretsRun struct {
	t       *testing.T
	db      string
	cfg     string
	markers map[string]string // marker (and its base64) -> shape
}

// writeAuditLog writes dir/audit.log, one event per shape in secretShapes
// with a random marker from rng planted in its value, and returns its path.
func (s *secretsRun) writeAuditLog(rng *rand.Rand, dir string) string {
	s.t.Helper()
	var log bytes.Buffer
	for _, sh := range secretShapes {
		var b [12]byte
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		m := "MK" + hex.EncodeToString(b[:])
		for _, p := range markersOf(m) {
			s.markers[p] = sh.name
		}
		line, err := json.Marshal(sh.event(m))
		if err != nil {
			s.t.Fatal(err)
		}
		log.Write(append(line, '\n'))
	}
	auditLog := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(auditLog, log.Bytes(), 0o600); err != nil {
		s.t.Fatal(err)
	}
	return auditLog
}

// check fails the test for every marker in what.
func (s *secretsRun) check(what string, b []byte) {
	s.t.Helper()
	for m, shape := range s.markers {
		if bytes.Contains(b, []byte(m)) {
			s.t.Errorf("%s: marker %s is in %s", shape, m, what)
		}
	}
}

// checkFiles checks every file of the timeline (the database, its -wal
// and -shm) for markers.
func (s *secretsRun) checkFiles(step string) {
	s.t.Helper()
	files, _ := filepath.Glob(s.db + "*")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			s.t.Fatal(err)
		}
		s.check(step+": "+filepath.Base(f), b)
	}
}

// run runs faultline args --db on the timeline, fails the test unless it
// exits 0, checks its stdout and stderr for markers and warnings, and
// returns its stdout.
func (s *secretsRun) run(args ...string) string {
	s.t.Helper()
	var out, errOut bytes.Buffer
	f := &Factory{IO: IOStreams{Out: &out, ErrOut: &errOut},
		Getenv: func(k string) string {
			if k == "XDG_CONFIG_HOME" {
				return s.cfg
			}
			return ""
		},
		Now: func() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) }}
	args = append(args, "--db", s.db)
	if code := Run(context.Background(), args, f); code != 0 {
		s.t.Fatalf("%v: exit %d: %s", args, code, errOut.String())
	}
	s.check(strings.Join(args[:len(args)-2], " ")+" stdout", out.Bytes())
	s.check(strings.Join(args[:len(args)-2], " ")+" stderr", errOut.Bytes())
	if strings.Contains(errOut.String(), "level=WARN") {
		s.t.Errorf("%v: warned: %s", args, errOut.String())
	}
	return out.String()
}

// ingest ingests auditLog, with Falco's trace file when it is there. That
// file plants MY-ID and MY-KEY in ConfigMaps with private credentials; it
// lives beside the repository, and CI must have it.
func (s *secretsRun) ingest(auditLog string) {
	s.t.Helper()
	falco := filepath.Join("..", "..", "..", "..", "shared", "data", "audit-samples", "falco-create_configmap_sensitive_values.json")
	if _, err := os.Stat(falco); err == nil {
		s.markers["MY-ID"], s.markers["MY-KEY"] = "falco sample", "falco sample"
		s.run("ingest", "audit", auditLog, falco)
	} else if os.Getenv("CI") != "" {
		s.t.Fatalf("shared samples missing in CI: %v", err)
	} else {
		s.t.Logf("no Falco sample at %s: its shapes are planted only", falco)
		s.run("ingest", "audit", auditLog)
	}
}

// checkSafeStaysInClear: what is safe stays in clear, so the grep for
// markers could see a value.
func (s *secretsRun) checkSafeStaysInClear() {
	s.t.Helper()
	if b, err := os.ReadFile(s.db); err != nil || !bytes.Contains(b, []byte("color.good=purple")) && !bytes.Contains(b, []byte(`"LR":"0.001"`)) {
		if wal, _ := os.ReadFile(s.db + "-wal"); !bytes.Contains(wal, []byte(`"LR":"0.001"`)) {
			s.t.Errorf("no ConfigMap value in clear in the timeline: the grep for markers sees nothing")
		}
	}
}

// runCommands runs timeline, history of every shape with a ref, and
// investigate, each checked by run.
func (s *secretsRun) runCommands() {
	s.t.Helper()
	tl := s.run("timeline", "-o", "json")
	if n := strings.Count(tl, "\n"); n < len(secretShapes) {
		s.t.Errorf("timeline shows %d lines, want at least %d: the shapes did not all ingest", n, len(secretShapes))
	}
	for _, sh := range secretShapes {
		if sh.ref != "" {
			if out := s.run("history", sh.ref, "-o", "json"); !strings.Contains(out, `"hash"`) {
				s.t.Errorf("history %s shows no version:\n%s", sh.ref, out)
			}
		}
	}
	s.run("investigate", "-o", "json")
}
