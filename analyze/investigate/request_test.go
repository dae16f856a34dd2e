package investigate

import (
	"github.com/faultline/faultline/timeline"
)

// request is an audited request at s seconds.
func request(s float64, user, verb, resource, ns, name string, code int) *timeline.Record {
	return &timeline.Record{Time: at(s), Source: timeline.SourceAudit, User: user, Verb: verb, Code: code,
		Object: timeline.ObjectRef{Group: groupOf(resource), Resource: resource, Namespace: ns, Name: name}}
}

func groupOf(resource string) string {
	switch resource {
	case "roles", "rolebindings", "clusterroles", "clusterrolebindings":
		return "rbac.authorization.k8s.io"
	case "validatingwebhookconfigurations", "mutatingwebhookconfigurations":
		return "admissionregistration.k8s.io"
	case "networkpolicies":
		return "networking.k8s.io"
	case "ciliumclusterwidenetworkpolicies":
		return "cilium.io"
	case "flowschemas", "prioritylevelconfigurations":
		return "flowcontrol.apiserver.k8s.io"
	case "customresourcedefinitions":
		return "apiextensions.k8s.io"
	case "checkpoints", "datasets":
		return "ml.example.com"
	}
	return ""
}
