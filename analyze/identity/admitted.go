package identity

import (
	"strings"
)

// emptyValue is a literal set to the empty string: a value of its own,
// where an absent dimension is no value at all.
const emptyValue = `""`

// limitRangerAnnotation is what the LimitRanger admission plugin writes
// on a pod whose containers it gave a LimitRange's defaults:
// "LimitRanger plugin set: memory request for container main; memory
// limit for container main".
const limitRangerAnnotation = "kubernetes.io/limit-ranger"

// markAdmitted marks the dimensions of a pod that its owner's template
// (as the owner stood when the pod started) does not give, or gives
// otherwise: nothing but admission writes a pod's spec between its
// controller and its creation, so a LimitRange's defaults, or a mutating
// webhook or policy, set them. The apiserver defaults a template as it
// defaults a pod, but for requests set to limits, which a pod's identity
// leaves out. An owner without a pod template (a custom resource that
// spells its pods its own way) says nothing.
func markAdmitted(dims []Dimension, p, owner *obj) {
	tmpl := mapAt(owner.m, "spec", "template", "spec")
	if tmpl == nil {
		return
	}
	want := map[string]string{}
	for _, d := range templateDims(tmpl, Evidence{}) {
		want[d.Name] = d.Value
	}
	limited := map[string]bool{}
	for _, part := range strings.Split(str(mapAt(p.m, "metadata", "annotations"), limitRangerAnnotation), ";") {
		if _, c, ok := strings.Cut(part, " for container "); ok {
			limited[strings.TrimSpace(c)] = true
		}
	}
	templated := map[string]bool{} // what a pod spec gives, as a template would
	for _, d := range templateDims(mapAt(p.m, "spec"), Evidence{}) {
		templated[d.Name] = true
	}
	for i, d := range dims {
		if !templated[d.Name] || want[d.Name] == d.Value {
			continue
		}
		dims[i].Admission = ByAdmission
		if parts := strings.SplitN(d.Name, "/", 3); parts[0] == "resources" && limited[parts[1]] {
			dims[i].Admission = ByLimitRange
		}
	}
}
