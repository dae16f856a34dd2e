package investigate

import (
	"context"
	"iter"
	"os/exec"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

func TestShellQuote(t *testing.T) {
	tests := map[string]string{
		"pool=h100-b":                  "pool=h100-b",
		"nvidia.com/cuda.driver.major": "nvidia.com/cuda.driver.major",
		"":                             "''",
		"a b":                          "'a b'",
		"it's":                         `'it'\''s'`,
		`{"data":{"K":"v"}}`:           `'{"data":{"K":"v"}}'`,
		"$(rm -rf /)":                  `'$(rm -rf /)'`,
		"x;y":                          "'x;y'",
	}
	for in, want := range tests {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestRestoreKeyCommand(t *testing.T) {
	tests := []struct {
		name                     string
		kind, ns, obj, key, prev string
		want                     string
		wantKnown                bool
	}{
		{"clear value", "ConfigMap", "ml", "env", "LR", "0.06",
			`kubectl patch configmap env -n ml --type merge -p '{"data":{"LR":"0.06"}}'`, true},
		// JSON first ("\"" and "\\"), then the shell's single quotes.
		{"quotes in the value", "ConfigMap", "ml", "env", "GREETING", `it's "a" \ test`,
			`kubectl patch configmap env -n ml --type merge -p '{"data":{"GREETING":"it'\''s \"a\" \\ test"}}'`, true},
		{"html stays as typed", "ConfigMap", "ml", "env", "URL", "http://x/?a=1&b=<2>",
			`kubectl patch configmap env -n ml --type merge -p '{"data":{"URL":"http://x/?a=1&b=<2>"}}'`, true},
		{"newline", "ConfigMap", "ml", "env", "K", "a\nb",
			`kubectl patch configmap env -n ml --type merge -p '{"data":{"K":"a\nb"}}'`, true},
		{"only a hash stored", "ConfigMap", "ml", "env", "LR", "sha256:9fca51987c96",
			`kubectl patch configmap env -n ml --type merge -p '{"data":{"LR":"<previous value of LR>"}}'`, false},
		{"a new key is removed", "ConfigMap", "ml", "env", "EXTRA", "",
			`kubectl patch configmap env -n ml --type merge -p '{"data":{"EXTRA":null}}'`, true},
		{"a secret's value is never known", "Secret", "ml", "creds", "token", "hmac-sha256:ab",
			`kubectl patch secret creds -n ml --type merge -p '{"stringData":{"token":"<previous value of token>"}}'`, false},
		{"a dotted key", "ConfigMap", "", "env", "app.yaml", "x: 1",
			`kubectl patch configmap env --type merge -p '{"data":{"app.yaml":"x: 1"}}'`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, known := restoreKeyCommand(tt.kind, tt.ns, tt.obj, tt.key, tt.prev)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("restoreKeyCommand (-want +got):\n%s", diff)
			}
			if known != tt.wantKnown {
				t.Errorf("known = %v, want %v", known, tt.wantKnown)
			}
		})
	}
}

// TestRestoreKeyCommandShell hands the command to a real shell and checks
// that kubectl would receive the merge patch with the value intact.
func TestRestoreKeyCommandShell(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	value := `it's "quoted" $HOME ` + "`x` \\n"
	cmd, _ := restoreKeyCommand("ConfigMap", "ml", "env", "K", value)
	// Print the -p argument as the shell parsed it.
	out, err := exec.Command(sh, "-c", `kubectl() { shift 7; printf %s "$2"; }; `+cmd).Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := mergePatch("data", "K", &value); string(out) != want {
		t.Errorf("the shell passed %s, want %s", out, want)
	}
}

func TestDotKeyVerify(t *testing.T) {
	if got, want := getKeyCommand("ConfigMap", "ml", "env", "app.yaml"), `kubectl get configmap env -n ml -o 'jsonpath={.data.app\.yaml}'`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestTaintChanges(t *testing.T) {
	tests := []struct {
		from, to string
		want     []string
	}{
		{"", "drain=now:NoExecute", []string{"drain:NoExecute-"}},
		{"a:NoSchedule", "", []string{"a:NoSchedule"}},
		{"a=1:NoSchedule", "a=2:NoSchedule", []string{"a:NoSchedule-", "a=1:NoSchedule"}},
		{"a:NoSchedule", "a:NoSchedule", nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, taintChanges(tt.from, tt.to)); diff != "" {
			t.Errorf("taintChanges(%q, %q) (-want +got):\n%s", tt.from, tt.to, diff)
		}
	}
}

// versionStore holds versions only.
type versionStore []timeline.ObjectVersion

func (s versionStore) Versions(_ context.Context, q timeline.VersionQuery) ([]timeline.ObjectVersion, error) {
	var out []timeline.ObjectVersion
	for _, v := range s {
		if v.Object.Resource == q.Resource && (q.Namespace == "" || v.Object.Namespace == q.Namespace) {
			out = append(out, v)
		}
	}
	return out, nil
}

func (versionStore) Records(context.Context, timeline.Query) iter.Seq2[*timeline.Record, error] {
	return func(func(*timeline.Record, error) bool) {}
}

func (versionStore) Bounds(context.Context) (time.Time, time.Time, error) {
	return time.Time{}, time.Time{}, nil
}

// The revision to roll back to is the one whose ReplicaSet ran the image,
// as its latest version says (a rollback renumbers a ReplicaSet).
func TestRevisionOf(t *testing.T) {
	rs := func(name, owner, rev, image string) timeline.ObjectVersion {
		return timeline.ObjectVersion{Object: timeline.ObjectRef{Group: "apps", Resource: "replicasets", Namespace: "web", Name: name},
			Content: []byte(`{"metadata":{"annotations":{"deployment.kubernetes.io/revision":"` + rev + `"},
			"ownerReferences":[{"kind":"Deployment","name":"` + owner + `"}]},
			"spec":{"template":{"spec":{"containers":[{"name":"server","image":"` + image + `"}]}}}}`)}
	}
	s := versionStore{
		rs("api-1", "api", "1", "api:1.0"),
		rs("api-2", "api", "2", "api:1.1"),
		rs("api-1", "api", "3", "api:1.0"), // rolled back once already
		rs("other-1", "other", "7", "api:1.0"),
	}
	for _, tt := range []struct {
		image string
		want  int
	}{{"api:1.0", 3}, {"api:1.1", 2}, {"api:0.9", 0}} {
		got, err := revisionOf(context.Background(), s, "web", "api", "server", tt.image)
		if err != nil || got != tt.want {
			t.Errorf("revisionOf(%s) = %d, %v; want %d", tt.image, got, err, tt.want)
		}
	}
}
