package identity

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sort"
	"strings"
)

// The rest of a pod's spec. Beyond its containers, config, volumes and
// placement (their own dimensions), a pod template sets how its pods are
// placed and run: affinity, topology spread, runtime class, security
// context, host namespaces, DNS. Any of them can break every new pod with
// nothing else changed (a required node affinity for a zone the cluster
// does not have keeps them Pending), so each field the template sets to
// something other than the API's default is a dimension "spec/FIELD".
// Left out: what has a dimension of its own, what the apiserver or a
// controller sets per pod (its node, hostname, subdomain, scheduling
// gates), what admission derives from another dimension (priority and
// preemption policy from the priority class, overhead from the runtime
// class), and the restart policy, which a workload's kind decides.

// specCovered are the pod spec fields left out of spec/FIELD.
var specCovered = []string{
	"containers", "initContainers", "ephemeralContainers", "volumes", "imagePullSecrets",
	"nodeSelector", "tolerations", "priorityClassName", "schedulerName", "serviceAccountName", "serviceAccount",
	"nodeName", "hostname", "subdomain", "schedulingGates", "priority", "preemptionPolicy", "overhead", "restartPolicy",
}

// specDefaults are the values the apiserver defaults fields to: a field
// left at its default says nothing a template chose.
var specDefaults = map[string]string{
	"dnsPolicy": `"ClusterFirst"`, "terminationGracePeriodSeconds": "30", "securityContext": "{}",
	"enableServiceLinks": "true", "hostNetwork": "false", "hostPID": "false", "hostIPC": "false",
}

// maxSpecValue is the longest value shown as it is; a longer one is a digest.
const maxSpecValue = 80

// specDims are the dimensions of the pod spec fields no other dimension
// covers, set to other than their default: "spec/affinity" = the field's
// JSON, or its digest when longer than maxSpecValue; an affinity spelt
// as its rules say it (affinityString) when it can be.
func specDims(spec map[string]any, ev Evidence) []Dimension {
	var out []Dimension
	for k, v := range spec {
		if slices.Contains(specCovered, k) || v == nil {
			continue
		}
		b, err := json.Marshal(v) // maps marshal with sorted keys
		if err != nil {
			continue
		}
		s := string(b)
		if s == specDefaults[k] || s == "{}" || s == "[]" || s == `""` {
			continue
		}
		var readable string
		if sv, ok := v.(string); ok && len(b) <= maxSpecValue {
			readable = sv // a runtime class, a DNS policy: as it is
		}
		if k == "affinity" {
			readable = affinityString(mapOf(v))
		}
		switch {
		case readable != "" && len(readable) <= 2*maxSpecValue:
			s = readable
		case len(s) > maxSpecValue:
			h := sha256.Sum256(b)
			s = "sha256:" + hex.EncodeToString(h[:12])
		}
		out = append(out, Dimension{Name: "spec/" + k, Value: s, Evidence: ev})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// mapOf is v as an object, or nil.
func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// affinityString spells an affinity as its rules say it: "node requires
// topology.kubernetes.io/zone In us-west-2a; pod anti-affinity prefers
// app In web per kubernetes.io/hostname". "" when it holds a rule this
// does not read (then its digest stands).
func affinityString(a map[string]any) string {
	if a == nil {
		return ""
	}
	var parts []string
	exprs := func(term map[string]any, fields ...string) (string, bool) {
		var out []string
		for _, f := range fields {
			for _, x := range list(term, f) {
				e, _ := x.(map[string]any)
				var vals []string
				for _, v := range list(e, "values") {
					s, _ := v.(string)
					vals = append(vals, s)
				}
				out = append(out, strings.TrimSpace(str(e, "key")+" "+str(e, "operator")+" "+strings.Join(vals, ",")))
			}
		}
		return strings.Join(out, " & "), len(out) > 0
	}
	known := map[string]bool{"nodeAffinity": true, "podAffinity": true, "podAntiAffinity": true}
	for k := range a {
		if !known[k] {
			return ""
		}
	}
	if na := mapAt(a, "nodeAffinity"); na != nil {
		var terms []string
		for _, x := range list(mapAt(na, "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms") {
			t, _ := x.(map[string]any)
			e, ok := exprs(t, "matchExpressions", "matchFields")
			if !ok {
				return ""
			}
			terms = append(terms, e)
		}
		if len(terms) > 0 {
			parts = append(parts, "node requires "+strings.Join(terms, " | "))
		}
		for _, x := range list(na, "preferredDuringSchedulingIgnoredDuringExecution") {
			p, _ := x.(map[string]any)
			e, ok := exprs(mapAt(p, "preference"), "matchExpressions", "matchFields")
			if !ok {
				return ""
			}
			parts = append(parts, "node prefers("+scalar(p["weight"])+") "+e)
		}
	}
	for _, kind := range []string{"podAffinity", "podAntiAffinity"} {
		pa := mapAt(a, kind)
		if pa == nil {
			continue
		}
		name := map[string]string{"podAffinity": "pod affinity", "podAntiAffinity": "pod anti-affinity"}[kind]
		term := func(t map[string]any) (string, bool) {
			sel := mapAt(t, "labelSelector")
			var ls []string
			for k, v := range strMap(sel, "matchLabels") {
				ls = append(ls, k+"="+v)
			}
			sort.Strings(ls)
			e, _ := exprs(sel, "matchExpressions")
			if e != "" {
				ls = append(ls, e)
			}
			if len(ls) == 0 {
				return "", false
			}
			return strings.Join(ls, " & ") + " per " + str(t, "topologyKey"), true
		}
		for _, x := range list(pa, "requiredDuringSchedulingIgnoredDuringExecution") {
			t, _ := x.(map[string]any)
			e, ok := term(t)
			if !ok {
				return ""
			}
			parts = append(parts, name+" requires "+e)
		}
		for _, x := range list(pa, "preferredDuringSchedulingIgnoredDuringExecution") {
			p, _ := x.(map[string]any)
			e, ok := term(mapAt(p, "podAffinityTerm"))
			if !ok {
				return ""
			}
			parts = append(parts, name+" prefers("+scalar(p["weight"])+") "+e)
		}
	}
	return strings.Join(parts, "; ")
}
