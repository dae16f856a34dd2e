package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://a.example:6443"}
- name: b
  cluster: {server: "https://b.example:6443", tls-server-name: "b-name"}
users:
- name: u
  user: {token: from-file}
- name: v
  user: {token: v-token}
contexts:
- name: ca
  context: {cluster: a, user: u}
- name: cb
  context: {cluster: b, user: v, namespace: nsb}
current-context: ca
`

// TestKubeFlags: the kubectl flags of ingest cluster reach the REST
// configuration as kubectl's own do (they were k8s.io/cli-runtime's
// ConfigFlags; client-go's clientcmd binds them now).
func TestKubeFlags(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kc, []byte(testKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	type got struct {
		Host, Token, TLSServerName, Impersonate string
		Groups                                  []string
		Extra                                   map[string][]string
		Timeout                                 time.Duration
		Insecure                                bool
		Namespace                               string
	}
	for _, tt := range []struct {
		name string
		args []string
		want got
	}{
		{"current context", nil, got{Host: "https://a.example:6443", Token: "from-file"}},
		{"--context", []string{"--context", "cb"}, got{Host: "https://b.example:6443", Token: "v-token", TLSServerName: "b-name"}},
		{"--cluster and --user", []string{"--cluster", "b", "--user", "v"}, got{Host: "https://b.example:6443", Token: "v-token", TLSServerName: "b-name"}},
		{"-s, --token, -n", []string{"-s", "https://c.example", "--token", "t", "-n", "ml"}, got{Host: "https://c.example", Token: "t", Namespace: "ml"}},
		{"impersonation", []string{"--as", "alice", "--as-group", "g1", "--as-group", "g2", "--as-user-extra", "k=v1", "--as-user-extra", "k=v2", "--as-user-extra", "bad"},
			got{Host: "https://a.example:6443", Token: "from-file", Impersonate: "alice", Groups: []string{"g1", "g2"}, Extra: map[string][]string{"k": {"v1", "v2"}}}},
		{"--request-timeout, --insecure-skip-tls-verify, --tls-server-name", []string{"--request-timeout", "5s", "--insecure-skip-tls-verify", "--tls-server-name", "x"},
			got{Host: "https://a.example:6443", Token: "from-file", Timeout: 5 * time.Second, Insecure: true, TLSServerName: "x"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := newKubeFlags()
			cmd := &cobra.Command{Use: "x", Run: func(*cobra.Command, []string) {}}
			k.addFlags(cmd)
			if err := cmd.ParseFlags(append([]string{"--kubeconfig", kc}, tt.args...)); err != nil {
				t.Fatal(err)
			}
			cfg, err := k.restConfig()
			if err != nil {
				t.Fatal(err)
			}
			g := got{Host: cfg.Host, Token: cfg.BearerToken, TLSServerName: cfg.TLSClientConfig.ServerName,
				Impersonate: cfg.Impersonate.UserName, Groups: cfg.Impersonate.Groups, Extra: cfg.Impersonate.Extra,
				Timeout: cfg.Timeout, Insecure: cfg.TLSClientConfig.Insecure, Namespace: k.namespace()}
			if diff := cmp.Diff(tt.want, g); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}
