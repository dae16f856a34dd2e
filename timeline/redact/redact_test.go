package redact

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

func redactString(t *testing.T, r *Redactor, in string, ref timeline.ObjectRef) string {
	t.Helper()
	got, err := r.Object([]byte(in), ref)
	if err != nil {
		t.Fatal(err)
	}
	return string(got)
}

func TestObject(t *testing.T) {
	r := &Redactor{Key: testKey}
	secrets := timeline.ObjectRef{Resource: "secrets", Namespace: "ns"}
	tests := []struct {
		name string
		in   string
		ref  timeline.ObjectRef
		want string // "" checks only that no marker survives
	}{
		{
			name: "configmap values stay in clear",
			in:   `{"kind":"ConfigMap","metadata":{"name":"c","managedFields":[{"x":1}]},"data":{"LR":"0.001","BATCH_SIZE":"64"},"binaryData":{"b":"dHdv"}}`,
			want: `{"binaryData":{"b":"dHdv"},"data":{"BATCH_SIZE":"64","LR":"0.001"},"kind":"ConfigMap","metadata":{"name":"c"}}`,
		},
		{
			name: "configmap credentials by key and by value",
			in:   `{"kind":"ConfigMap","metadata":{"name":"c"},"data":{"password":"MARKER","access.properties":"aws_access_key_id = MARKER\n","url":"postgres://u:MARKER@db/x"},"binaryData":{"k":"LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tTUFSS0VS","bin":"TUFSS0VS/wA="}}`,
		},
		{
			name: "configmap list items",
			in:   `{"kind":"ConfigMapList","items":[{"metadata":{"name":"c"},"data":{"LR":"0.001","DB_PASSWORD":"MARKER"}}]}`,
			want: `{"items":[{"data":{"DB_PASSWORD":"hmac-sha256:` + hmacOf("configmap", "", "c", "DB_PASSWORD", "MARKER") + `","LR":"0.001"},"metadata":{"name":"c"}}],"kind":"ConfigMapList"}`,
		},
		{
			name: "configmap value that is not a string",
			in:   `{"kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":["MARKER"]}}`,
		},
		{
			name: "configmap data as a string",
			in:   `{"kind":"ConfigMap","metadata":{"name":"c"},"data":"MARKER"}`,
		},
		{name: "secret", in: `{"kind":"Secret","data":{"p":"TUFSS0VS"},"stringData":{"q":"MARKER"}}`},
		{name: "secret kind in lower case", in: `{"kind":"secret","metadata":{"name":"s"},"data":{"p":"TUFSS0VS"}}`},
		{name: "capitalized fields", in: `{"Kind":"Secret","Metadata":{"Name":"s"},"Data":{"p":"MARKER"}}`},
		{name: "kind from the resource", in: `{"metadata":{"name":"s"},"data":{"p":"TUFSS0VS"},"extra":"MARKER"}`, ref: secrets},
		{name: "secret data as a string", in: `{"kind":"Secret","metadata":{"name":"s"},"data":"MARKER"}`},
		{
			name: "last-applied of a kind-less secret",
			in:   `{"metadata":{"name":"s","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"stringData\":{\"p\":\"MARKER\"}}"}},"type":"Opaque"}`,
			ref:  secrets,
		},
		{
			name: "kind-less items of a list",
			in:   `{"kind":"List","items":[{"metadata":{"name":"s","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"p\":\"TUFSS0VS\"}}"}},"data":{"p":"TUFSS0VS"}}]}`,
			ref:  secrets,
		},
		{name: "secret list", in: `{"kind":"SecretList","items":[{"metadata":{"name":"s"},"data":{"p":"TUFSS0VS"}}]}`},
		{name: "token review", in: `{"kind":"TokenReview","metadata":{"name":"t"},"spec":{"token":"MARKER"}}`},
		{name: "token request", in: `{"kind":"TokenRequest","metadata":{"name":"t"},"status":{"token":"MARKER"}}`},
		{
			name: "pod env literals, args and command",
			in:   `{"kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"trainer:1","env":[{"name":"A_PASSWORD","value":"MARKER"},{"name":"B","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}],"command":["sh","-c"],"args":["mysql -pMARKER"]}]}}`,
		},
		{
			name: "deployment template",
			in:   `{"kind":"Deployment","metadata":{"name":"d","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"value\":\"AKIAMARKER0000000000\"}]}]}}}}"}},"spec":{"template":{"spec":{"initContainers":[{"name":"i","args":["MARKER"]}],"containers":[{"name":"c","env":[{"name":"SECRET","value":"MARKER"}]}]}}}}`,
		},
		{
			name: "cronjob template",
			in:   `{"kind":"CronJob","metadata":{"name":"j"},"spec":{"jobTemplate":{"spec":{"template":{"spec":{"Containers":[{"name":"c","Env":[{"Name":"TOKEN","Value":"MARKER"}]}]}}}}}}`,
		},
		{
			name: "env literals stay in clear unless they look like credentials",
			in:   `{"kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","env":[{"name":"LR","value":"0.001"},{"name":"API_KEY","value":"MARKER"},{"name":"ID","value":"AKIAMARKER0000000000"}]}]}}`,
			want: `{"kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"env":[{"name":"LR","value":"0.001"},{"name":"API_KEY","value":"hmac-sha256:` + hmacOf("env", "", "c", "API_KEY", "MARKER") + `"},{"name":"ID","value":"hmac-sha256:` + hmacOf("env", "", "c", "ID", "AKIAMARKER0000000000") + `"}],"name":"c"}]}}`,
		},
		{
			name: "pods keep what is not a value",
			in:   `{"kind":"Pod","metadata":{"name":"p"},"spec":{"nodeName":"n1","containers":[{"name":"c","image":"trainer:1","env":[{"name":"B","valueFrom":{"configMapKeyRef":{"name":"cm","key":"k"}}}]}]}}`,
			want: `{"kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"env":[{"name":"B","valueFrom":{"configMapKeyRef":{"key":"k","name":"cm"}}}],"image":"trainer:1","name":"c"}],"nodeName":"n1"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := redactString(t, r, tt.in, tt.ref)
			for _, secret := range []string{"MARKER", "TUFSS0VS"} {
				if strings.Contains(got, secret) {
					t.Errorf("value %s survived: %s", secret, got)
				}
			}
			if tt.want != "" {
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("(-want +got)\n%s", diff)
				}
			}
		})
	}
}

// hmacOf is the hex HMAC the redactor gives a value under testKey.
func hmacOf(class, ns, obj, key, value string) string {
	r := &Redactor{Key: testKey}
	return strings.TrimPrefix(r.keyed(value, class, ns, obj, key, ""), hmacTag)
}

// hashOf returns the stored value at the path in a redacted object.
func hashOf(t *testing.T, body string, path ...any) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	for _, p := range path {
		switch p := p.(type) {
		case string:
			v = v.(map[string]any)[p]
		case int:
			v = v.([]any)[p]
		}
	}
	s, _ := v.(string)
	return s
}

func TestSecretHashesBindTheObjectAndKey(t *testing.T) {
	r := &Redactor{Key: testKey}
	secret := func(ns, name, field, key, value string) string {
		body := redactString(t, r, `{"kind":"Secret","metadata":{"name":"`+name+`","namespace":"`+ns+`"},"`+field+`":{"`+key+`":"`+value+`"}}`, timeline.ObjectRef{})
		return hashOf(t, body, field, key)
	}
	base := secret("ns", "a", "data", "p", "aHVudGVyMg==")
	if !strings.HasPrefix(base, "hmac-sha256:") {
		t.Fatalf("hash = %q", base)
	}
	if got := secret("ns", "a", "stringData", "p", "hunter2"); got != base {
		t.Errorf("data and stringData of one value differ: %s, %s", base, got)
	}
	if got := secret("ns", "a", "data", "p", "aHVudGVyMg=="); got != base {
		t.Errorf("the same value of the same key later differs: %s, %s", base, got)
	}
	for _, other := range []string{secret("ns", "b", "data", "p", "aHVudGVyMg=="), secret("ns2", "a", "data", "p", "aHVudGVyMg=="), secret("ns", "a", "data", "q", "aHVudGVyMg==")} {
		if other == base {
			t.Errorf("equal values of another object or key share a hash: %s", base)
		}
	}
	r2 := &Redactor{Key: []byte("another key, as long as the first")}
	body := redactString(t, r2, `{"kind":"Secret","metadata":{"name":"a","namespace":"ns"},"data":{"p":"aHVudGVyMg=="}}`, timeline.ObjectRef{})
	if hashOf(t, body, "data", "p") == base {
		t.Errorf("another key gave the same hash")
	}
}

func TestEnvHashesCompareAcrossPods(t *testing.T) {
	r := &Redactor{Key: testKey}
	pod := func(name, value string) string {
		body := redactString(t, r, `{"kind":"Pod","metadata":{"name":"`+name+`","namespace":"ns"},"spec":{"containers":[{"name":"c","env":[{"name":"HF_TOKEN","value":"`+value+`"}]}]}}`, timeline.ObjectRef{})
		return hashOf(t, body, "spec", "containers", 0, "env", 0, "value")
	}
	dep := redactString(t, r, `{"kind":"Deployment","metadata":{"name":"d","namespace":"ns"},"spec":{"template":{"spec":{"containers":[{"name":"c","env":[{"name":"HF_TOKEN","value":"v1"}]}]}}}}`, timeline.ObjectRef{})
	a, b, c := pod("p-1", "v1"), pod("p-2", "v1"), pod("p-1", "v2")
	if a != b || a != hashOf(t, dep, "spec", "template", "spec", "containers", 0, "env", 0, "value") {
		t.Errorf("pods of one template differ: %s %s", a, b)
	}
	if a == c || !strings.HasPrefix(a, "hmac-sha256:") {
		t.Errorf("a change of value is no change: %s %s", a, c)
	}
}

func TestNoKey(t *testing.T) {
	calls := 0
	r := &Redactor{OnNoKey: func() { calls++ }}
	got := redactString(t, r, `{"kind":"Secret","metadata":{"name":"s"},"data":{"p":"TUFSS0VS","q":"eA=="}}`, timeline.ObjectRef{})
	if want := `{"data":{"p":"redacted (no key)","q":"redacted (no key)"},"kind":"Secret","metadata":{"name":"s"}}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if calls != 2 {
		t.Errorf("OnNoKey called %d times, want 2", calls)
	}
}

func TestLastAppliedKeptWhenClean(t *testing.T) {
	r := &Redactor{Key: testKey}
	in := `{"kind":"Service","metadata":{"name":"s","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"spec\": {\"ports\": [80]}}\n"}}}`
	got := redactString(t, r, in, timeline.ObjectRef{})
	if hashOf(t, got, "metadata", "annotations", LastApplied) != "{\"spec\": {\"ports\": [80]}}\n" {
		t.Errorf("a last-applied with nothing to hide was rewritten: %s", got)
	}
}

func TestObjectRejectsNonObjects(t *testing.T) {
	for _, in := range []string{``, `[]`, `"x"`, `null`, `{"a":`} {
		if _, err := (&Redactor{}).Object([]byte(in), timeline.ObjectRef{}); err == nil {
			t.Errorf("Object(%q): want error", in)
		}
	}
}

func FuzzObject(f *testing.F) {
	f.Add([]byte(`{"kind":"Secret","data":{"p":"aHVudGVyMg=="}}`), "")
	f.Add([]byte(`{"kind":"ConfigMapList","items":[{"data":{"a":"b"}}]}`), "configmaps")
	f.Add([]byte(`{"kind":"Secret","data":"notamap","metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":1}}}`), "")
	f.Add([]byte(`{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"items\":[{\"data\":1}]}"}},"spec":{"containers":[{"env":[1,{"value":{}}],"args":"x"}]}}`), "secrets")
	f.Fuzz(func(t *testing.T, in []byte, resource string) {
		r := &Redactor{Key: testKey}
		ref := timeline.ObjectRef{Resource: resource}
		out, err := r.Object(in, ref)
		if err != nil {
			return
		}
		if _, err := r.Object(out, ref); err != nil {
			t.Fatalf("redacted output does not parse again: %v", err)
		}
	})
}

func TestURI(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"/api/v1/namespaces/ns/pods/p/exec?command=mysql&command=-pMARKER&container=db&stdin=true",
			"/api/v1/namespaces/ns/pods/p/exec?command=redacted&command=redacted&container=db&stdin=true"},
		{"/api/v1/namespaces/ns/pods/p/attach?Command=x", "/api/v1/namespaces/ns/pods/p/attach?Command=redacted"},
		{"/api/v1/pods?limit=500&watch=true", "/api/v1/pods?limit=500&watch=true"},
		{"/api/v1/pods", "/api/v1/pods"},
	} {
		if got := URI(tt.in); got != tt.want {
			t.Errorf("URI(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRecordMessages(t *testing.T) {
	for _, tt := range []struct {
		verb     string
		ref      timeline.ObjectRef
		redacted bool
	}{
		{"create", timeline.ObjectRef{Resource: "secrets"}, true},
		{"patch", timeline.ObjectRef{Resource: "Secrets"}, true},
		{"create", timeline.ObjectRef{Resource: "tokenreviews", Group: "authentication.k8s.io"}, true},
		{"create", timeline.ObjectRef{Resource: "serviceaccounts", Subresource: "token"}, true},
		{"get", timeline.ObjectRef{Resource: "secrets"}, false},
		{"create", timeline.ObjectRef{Resource: "pods"}, false},
	} {
		r := timeline.Record{Verb: tt.verb, Object: tt.ref, Message: `admission webhook denied: {"data":{"p":"MARKER"}}`}
		Record(&r)
		if got := r.Message == Redacted; got != tt.redacted {
			t.Errorf("%s %+v: message %q", tt.verb, tt.ref, r.Message)
		}
	}
}

func TestRedactConfigMapsHashesEveryValue(t *testing.T) {
	in := `{"kind":"List","items":[` +
		`{"kind":"ConfigMap","metadata":{"name":"c","namespace":"ml"},"data":{"LR":"0.001"},"binaryData":{"b":"dHdv"}},` +
		`{"kind":"Pod","metadata":{"name":"p","namespace":"ml"},"spec":{"containers":[{"name":"c","env":[{"name":"LR","value":"0.001"}]}]}}]}`
	for _, tt := range []struct {
		all   bool
		clear bool
	}{{false, true}, {true, false}} {
		got := redactString(t, &Redactor{Key: testKey, RedactConfigMaps: tt.all}, in, timeline.ObjectRef{})
		for _, path := range [][]any{
			{"items", 0, "data", "LR"},
			{"items", 0, "binaryData", "b"},
			{"items", 1, "spec", "containers", 0, "env", 0, "value"},
		} {
			v := hashOf(t, got, path...)
			if isClear := !strings.HasPrefix(v, hmacTag); isClear != tt.clear {
				t.Errorf("RedactConfigMaps %v: %v = %q", tt.all, path, v)
			}
		}
	}
}

// TestClearValuesCompareAsHashesDid: a value in clear is equal over time
// exactly when its hash was, and a value a rule hashes still compares.
func TestClearValuesCompareAsHashesDid(t *testing.T) {
	r := &Redactor{Key: testKey}
	cm := func(ns, key, value string) string {
		body := redactString(t, r, `{"kind":"ConfigMap","metadata":{"name":"c","namespace":"`+ns+`"},"data":{"`+key+`":"`+value+`"}}`, timeline.ObjectRef{})
		return hashOf(t, body, "data", key)
	}
	if a, b := cm("a", "ca.crt", "-----BEGIN CERTIFICATE-----"), cm("b", "ca.crt", "-----BEGIN CERTIFICATE-----"); a != b {
		t.Errorf("one value in two namespaces differs: %s, %s", a, b)
	}
	if a, b := cm("a", "LR", "0.001"), cm("a", "LR", "0.01"); a == b {
		t.Errorf("a change of value is no change: %s", a)
	}
	p1, p2, p3 := cm("a", "password", "x"), cm("a", "password", "x"), cm("a", "password", "y")
	if p1 != p2 || p1 == p3 || !strings.HasPrefix(p1, hmacTag) {
		t.Errorf("hashed values do not compare: %s %s %s", p1, p2, p3)
	}
}
