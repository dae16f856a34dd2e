package cli

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/homedir"
)

// kubeFlags are kubectl's flags for reaching a cluster: --kubeconfig,
// --context, -n/--namespace, --cluster, --user, -s/--server, --token, the
// TLS and impersonation flags and --request-timeout. client-go's clientcmd
// binds them (its override flags) and loads the kubeconfig the way kubectl
// does: --kubeconfig, else $KUBECONFIG, else ~/.kube/config.
type kubeFlags struct {
	kubeconfig string
	// cacheDir is kubectl's --cache-dir, accepted so a kubectl command
	// line works as it is; faultline keeps no discovery cache.
	cacheDir  string
	userExtra []string // --as-user-extra KEY=VALUE, repeated
	overrides clientcmd.ConfigOverrides
}

func newKubeFlags() *kubeFlags {
	return &kubeFlags{overrides: clientcmd.ConfigOverrides{ClusterDefaults: clientcmd.ClusterDefaults}}
}

// addFlags adds the flags to cmd.
func (k *kubeFlags) addFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&k.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	fl.StringVar(&k.cacheDir, "cache-dir", defaultKubeCacheDir(), "kubectl's cache directory: accepted as kubectl takes it; faultline caches nothing there")
	fl.StringArrayVar(&k.userExtra, "as-user-extra", nil, "user extra KEY=VALUE to impersonate for the operation; repeat it for several values of one key")
	names := clientcmd.RecommendedConfigOverrideFlags("")
	// kubectl offers no --username/--password (basic authentication), and
	// spells --server -s.
	names.AuthOverrideFlags.Username.LongName = ""
	names.AuthOverrideFlags.Password.LongName = ""
	names.ClusterOverrideFlags.APIServer.ShortName = "s"
	clientcmd.BindOverrideFlags(&k.overrides, fl, names)
}

// namespace is the namespace -n names; "" for none.
func (k *kubeFlags) namespace() string { return k.overrides.Context.Namespace }

// restConfig loads the kubeconfig with the flags' overrides.
func (k *kubeFlags) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	// As kubectl: without any kubeconfig, $KUBERNETES_MASTER names the
	// server (clientcmd's deprecated default).
	rules.DefaultClientConfig = &clientcmd.DefaultClientConfig
	overrides := k.overrides
	if len(k.userExtra) > 0 {
		overrides.AuthInfo.ImpersonateUserExtra = map[string][]string{}
		for _, kv := range k.userExtra {
			if key, value, ok := strings.Cut(kv, "="); ok {
				overrides.AuthInfo.ImpersonateUserExtra[key] = append(overrides.AuthInfo.ImpersonateUserExtra[key], value)
			}
		}
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &overrides).ClientConfig()
}

// defaultKubeCacheDir is kubectl's default --cache-dir.
func defaultKubeCacheDir() string {
	if d := os.Getenv("KUBECACHEDIR"); d != "" {
		return d
	}
	return filepath.Join(homedir.HomeDir(), ".kube", "cache")
}
