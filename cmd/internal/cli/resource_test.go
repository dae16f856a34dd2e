package cli

import "testing"

// What users type names a resource as the API spells it: a short name,
// a kind faultline knows, or an English plural.
func TestResourceOf(t *testing.T) {
	for in, want := range map[string]string{
		"cm": "configmaps", "Pod": "pods", "deploy": "deployments", "sts": "statefulsets",
		"storageclass": "storageclasses", "StorageClass": "storageclasses", "ingress": "ingresses",
		"networkpolicy": "networkpolicies", "persistentvolumeclaim": "persistentvolumeclaims",
		"limitranges": "limitranges", "gateway": "gateways", "ds": "daemonsets",
	} {
		if got := resourceOf(in); got != want {
			t.Errorf("resourceOf(%q) = %q, want %q", in, got, want)
		}
	}
}
