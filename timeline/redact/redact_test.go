package redact

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestObject(t *testing.T) {
	salt := []byte("salt")
	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "configmap values become sha256 per key",
			in:   `{"kind":"ConfigMap","metadata":{"name":"c","managedFields":[{"x":1}]},"data":{"a":"1","b":"two"}}`,
			want: `{"data":{"a":"sha256:6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b","b":"sha256:3fc4ccfe745870e2c0d99f71f30ff0656c8dedd41cc1d7d3d376b0dbe685e2f3"},"kind":"ConfigMap","metadata":{"name":"c"}}`,
		},
		{
			name: "secret values never survive",
			in:   `{"kind":"Secret","data":{"p":"aHVudGVyMg=="},"stringData":{"q":"hunter2"}}`,
		},
		{
			name: "secret list items have no kind",
			in:   `{"kind":"SecretList","items":[{"metadata":{"name":"s","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"p\":\"x\"}}"}},"data":{"p":"eA=="}}]}`,
		},
		{
			name: "pods keep their spec",
			in:   `{"kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"image":"trainer:1","env":[{"name":"A","value":"1"}]}]}}`,
			want: `{"kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"env":[{"name":"A","value":"1"}],"image":"trainer:1"}]}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Object([]byte(tt.in), salt)
			if err != nil {
				t.Fatal(err)
			}
			for _, secret := range []string{"hunter2", "aHVudGVyMg==", `"eA=="`, `\"x\"`} {
				if strings.Contains(string(got), secret) {
					t.Errorf("value %s survived: %s", secret, got)
				}
			}
			if tt.want != "" {
				if diff := cmp.Diff(tt.want, string(got)); diff != "" {
					t.Errorf("(-want +got)\n%s", diff)
				}
			}
		})
	}
}

func TestSecretHashesAgree(t *testing.T) {
	got, err := Object([]byte(`{"kind":"Secret","data":{"p":"aHVudGVyMg=="},"stringData":{"q":"hunter2"}}`), []byte("s1"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	i := strings.Index(s, "hmac-sha256:")
	j := strings.LastIndex(s, "hmac-sha256:")
	if i == j || s[i:i+76] != s[j:j+76] {
		t.Errorf("data and stringData of one value should hash alike: %s", s)
	}
	other, _ := Object([]byte(`{"kind":"Secret","data":{"p":"aHVudGVyMg=="}}`), []byte("s2"))
	if strings.Contains(string(other), s[i:i+76]) {
		t.Errorf("another salt gave the same hash")
	}
}

func TestObjectRejectsNonObjects(t *testing.T) {
	for _, in := range []string{``, `[]`, `"x"`, `null`, `{"a":`} {
		if _, err := Object([]byte(in), nil); err == nil {
			t.Errorf("Object(%q): want error", in)
		}
	}
}

func FuzzObject(f *testing.F) {
	f.Add([]byte(`{"kind":"Secret","data":{"p":"aHVudGVyMg=="}}`))
	f.Add([]byte(`{"kind":"ConfigMapList","items":[{"data":{"a":"b"}}]}`))
	f.Add([]byte(`{"kind":"Secret","data":"notamap","metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":1}}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Object(in, []byte("salt"))
		if err != nil {
			return
		}
		if _, err := Object(out, []byte("salt")); err != nil {
			t.Fatalf("redacted output does not parse again: %v", err)
		}
	})
}
