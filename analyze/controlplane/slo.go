package controlplane

// sloBreaches checks each class's p99 against the Kubernetes API call
// latency SLOs: 1 s for mutating calls and single-object reads, 5 s for
// namespace-scope and 30 s for cluster-scope LISTs. WATCHes are long-running
// and have none. Classes of fewer than 20 requests have no meaningful p99.
func sloBreaches(classes []*Class) []SLOBreach {
	out := []SLOBreach{}
	for _, c := range classes {
		if c.Count < 20 || c.Verb == "watch" {
			continue
		}
		kind, slo := "", 0.0
		switch {
		case c.Verb == "create" || c.Verb == "update" || c.Verb == "patch" || c.Verb == "delete" || c.Verb == "deletecollection":
			kind, slo = "mutating", 1000
		case c.Verb == "get" || c.Scope == "object":
			kind, slo = "read-object", 1000
		case c.Verb == "list" && c.Scope == "namespace":
			kind, slo = "read-namespace", 5000
		case c.Verb == "list":
			kind, slo = "read-cluster", 30000
		default:
			continue
		}
		if c.P99Ms > slo {
			out = append(out, SLOBreach{Class: c.Key(), P99Ms: c.P99Ms, SLOMs: slo, Kind: kind})
		}
	}
	return out
}
