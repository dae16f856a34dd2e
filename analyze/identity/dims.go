package identity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// rankLabels say which rank or index a pod has in its job, most specific first.
var rankLabels = []string{
	"batch.kubernetes.io/job-completion-index",
	"training.kubeflow.org/replica-index",
	"jobset.sigs.k8s.io/job-index",
	"apps.kubernetes.io/pod-index",
}

// poolLabels name a node's pool on the clouds and provisioners in use.
var poolLabels = []string{
	"cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup", "kubernetes.azure.com/agentpool",
	"karpenter.sh/nodepool", "node.kubernetes.io/pool", "pool",
}

// perPod dimensions differ between the pods of one job by design; a job's
// identity leaves them out.
func perPod(name string) bool {
	return name == "rank" || name == "node" || name == "run"
}

// pod returns the dimensions of one pod version.
func (r *Resolver) pod(ctx context.Context, p *obj) ([]Dimension, error) {
	ev := p.evidence()
	var dims []Dimension
	add := func(name, value string, e Evidence) {
		if value != "" {
			dims = append(dims, Dimension{Name: name, Value: value, Evidence: e})
		}
	}
	spec := mapAt(p.m, "spec")
	status := mapAt(p.m, "status")

	// Images: the tag asked for, and the digest that ran.
	digests := map[string]string{}
	for _, field := range []string{"containerStatuses", "initContainerStatuses"} {
		for _, x := range list(status, field) {
			cs, _ := x.(map[string]any)
			digests[str(cs, "name")] = digestOf(str(cs, "imageID"))
		}
	}
	for _, field := range []string{"containers", "initContainers"} {
		prefix := "image"
		if field == "initContainers" {
			prefix = "initImage"
		}
		for _, x := range list(spec, field) {
			c, _ := x.(map[string]any)
			name := str(c, "name")
			add(prefix+".tag/"+name, str(c, "image"), ev)
			add(prefix+".digest/"+name, digests[name], ev)
		}
	}

	// Scheduling and place in the job.
	add("schedulerName", str(spec, "schedulerName"), ev)
	add("priorityClassName", str(spec, "priorityClassName"), ev)
	labels := strMap(p.m, "metadata", "labels")
	annotations := strMap(p.m, "metadata", "annotations")
	for _, l := range rankLabels {
		if v := labels[l]; v != "" {
			add("rank", v, ev)
			break
		}
		if v := annotations[l]; v != "" {
			add("rank", v, ev)
			break
		}
	}
	if h := labels["pod-template-hash"]; h != "" {
		add("owner.podTemplateHash", h, ev)
	}
	if h := labels["controller-revision-hash"]; h != "" {
		add("owner.controllerRevision", h, ev)
	}

	// The owner chain, with each owner's generation at the instant.
	cur := p
	for depth := 0; depth < 4; depth++ {
		refs := ownerRefs(cur.m)
		if len(refs) == 0 {
			break
		}
		o := refs[0]
		owner, err := r.owner(ctx, o)
		if err == nil && r.pinStart {
			var then *obj
			if then, err = r.ownerAtStart(ctx, o, p); then != nil {
				owner = then
			}
		}
		if err != nil {
			return nil, err
		}
		if owner == nil {
			add("owner/"+o.kind, o.name, cur.evidence())
			break
		}
		dims = append(dims, ownerDims(owner)...)
		cur = owner
	}

	// Config read through volumes, envFrom and env, as content hashes.
	cms, secrets := configRefs(spec)
	for _, ref := range []struct {
		resource, dim string
		names         []string
	}{{"configmaps", "configmap", cms}, {"secrets", "secret", secrets}} {
		for _, name := range ref.names {
			var o *obj
			var err error
			if r.pinStart {
				o, err = r.atStart(ctx, "", ref.resource, p.v.Object.Namespace, name, p)
			} else {
				o, err = r.get(ctx, "", ref.resource, p.v.Object.Namespace, name)
			}
			if err != nil {
				return nil, err
			}
			if o == nil {
				add(ref.dim+"/"+name, "(not in the timeline)", ev)
				continue
			}
			// The object as a whole by its content alone: the same bytes in
			// every namespace (kube-root-ca.crt) are one value, so an object
			// every pod mounts never stands in for the namespace.
			add(ref.dim+"/"+name, contentHash(o.m), o.evidence())
			for _, field := range []string{"data", "binaryData", "stringData"} {
				for k, v := range strMap(o.m, field) {
					add(ref.dim+"/"+name+"/"+k, v, o.evidence())
				}
			}
		}
	}

	// The node, as it was.
	if node := str(spec, "nodeName"); node != "" {
		add("node", node, ev)
		var n *obj
		var err error
		if r.pinStart {
			n, err = r.nodeAtStart(ctx, node, p)
		} else {
			n, err = r.get(ctx, "", "nodes", "", node)
		}
		if err != nil {
			return nil, err
		}
		if n != nil {
			dims = append(dims, nodeDims(n)...)
		}
	}

	// What the pod's job run consumed, as the ML platform recorded it.
	rd, err := r.runDims(ctx, p)
	if err != nil {
		return nil, err
	}
	dims = append(dims, rd...)

	// Declared artifacts.
	for _, rule := range r.rules {
		if v, ok := rule.eval(p.m); ok {
			add(rule.Dimension, v, ev)
		}
	}
	return dims, nil
}

// digestOf keeps the digest of an imageID ("docker-pullable://repo@sha256:..").
func digestOf(imageID string) string {
	if i := strings.Index(imageID, "sha256:"); i >= 0 {
		return imageID[i:]
	}
	return imageID
}

// configRefs lists the ConfigMaps and Secrets a pod spec reads.
func configRefs(spec map[string]any) (cms, secrets []string) {
	seenC, seenS := map[string]bool{}, map[string]bool{}
	addC := func(n string) {
		if n != "" && !seenC[n] {
			seenC[n] = true
			cms = append(cms, n)
		}
	}
	addS := func(n string) {
		if n != "" && !seenS[n] {
			seenS[n] = true
			secrets = append(secrets, n)
		}
	}
	for _, x := range list(spec, "volumes") {
		v, _ := x.(map[string]any)
		addC(str(mapAt(v, "configMap"), "name"))
		addS(str(mapAt(v, "secret"), "secretName"))
		for _, s := range list(mapAt(v, "projected"), "sources") {
			sm, _ := s.(map[string]any)
			addC(str(mapAt(sm, "configMap"), "name"))
			addS(str(mapAt(sm, "secret"), "name"))
		}
	}
	for _, field := range []string{"containers", "initContainers"} {
		for _, x := range list(spec, field) {
			c, _ := x.(map[string]any)
			for _, e := range list(c, "envFrom") {
				em, _ := e.(map[string]any)
				addC(str(mapAt(em, "configMapRef"), "name"))
				addS(str(mapAt(em, "secretRef"), "name"))
			}
			for _, e := range list(c, "env") {
				em, _ := e.(map[string]any)
				vf := mapAt(em, "valueFrom")
				addC(str(mapAt(vf, "configMapKeyRef"), "name"))
				addS(str(mapAt(vf, "secretKeyRef"), "name"))
			}
		}
	}
	sort.Strings(cms)
	sort.Strings(secrets)
	return cms, secrets
}

// ownerDims are an owner's name and generation.
func ownerDims(o *obj) []Dimension {
	ev := o.evidence()
	kind := o.v.Object.Kind
	dims := []Dimension{{Name: "owner/" + kind, Value: o.v.Object.Name, Evidence: ev}}
	if g, ok := mapAt(o.m, "metadata")["generation"]; ok {
		dims = append(dims, Dimension{Name: "owner/" + kind + ".generation", Value: fmt.Sprint(g), Evidence: ev})
	}
	return dims
}

// nodeDims are a node's identity: what it runs and where it is.
func nodeDims(n *obj) []Dimension {
	ev := n.evidence()
	var dims []Dimension
	add := func(name, value string) {
		if value != "" {
			dims = append(dims, Dimension{Name: name, Value: value, Evidence: ev})
		}
	}
	info := mapAt(mapAt(n.m, "status"), "nodeInfo")
	add("node.kernel", str(info, "kernelVersion"))
	add("node.osImage", str(info, "osImage"))
	add("node.kubelet", str(info, "kubeletVersion"))
	add("node.containerRuntime", str(info, "containerRuntimeVersion"))
	labels := strMap(n.m, "metadata", "labels")
	add("node.instanceType", labels["node.kubernetes.io/instance-type"])
	add("node.zone", labels["topology.kubernetes.io/zone"])
	for _, l := range poolLabels {
		if v := labels[l]; v != "" {
			add("node.pool", v)
			break
		}
	}
	for k, v := range labels {
		if strings.HasPrefix(k, "nvidia.com/") || strings.HasPrefix(k, "amd.com/") {
			add("node.label/"+k, v)
		}
	}
	var taints []string
	for _, x := range list(mapAt(n.m, "spec"), "taints") {
		t, _ := x.(map[string]any)
		s := str(t, "key")
		if v := str(t, "value"); v != "" {
			s += "=" + v
		}
		taints = append(taints, s+":"+str(t, "effect"))
	}
	sort.Strings(taints)
	add("node.taints", strings.Join(taints, ","))
	if b, _ := mapAt(n.m, "spec")["unschedulable"].(bool); b {
		add("node.unschedulable", "true")
	}
	return dims
}

// aggregate folds the dimensions of many pods into a job's: a value all
// pods share stands as it is; several values are listed with their counts.
func aggregate(pods [][]Dimension) []Dimension {
	type tally struct {
		counts map[string]int
		ev     map[string]Evidence
	}
	by := map[string]*tally{}
	for _, dims := range pods {
		for _, d := range dims {
			if perPod(d.Name) {
				continue
			}
			t := by[d.Name]
			if t == nil {
				t = &tally{counts: map[string]int{}, ev: map[string]Evidence{}}
				by[d.Name] = t
			}
			t.counts[d.Value]++
			if e, ok := t.ev[d.Value]; !ok || d.Evidence.Time.After(e.Time) {
				t.ev[d.Value] = d.Evidence
			}
		}
	}
	var out []Dimension
	for name, t := range by {
		values := make([]string, 0, len(t.counts))
		for v := range t.counts {
			values = append(values, v)
		}
		sort.Strings(values)
		if len(values) == 1 {
			out = append(out, Dimension{Name: name, Value: values[0], Evidence: t.ev[values[0]]})
			continue
		}
		parts := make([]string, len(values))
		var latest Evidence
		for i, v := range values {
			unit := " pods)"
			if t.counts[v] == 1 {
				unit = " pod)"
			}
			parts[i] = v + " (" + strconv.Itoa(t.counts[v]) + unit
			if t.ev[v].Time.After(latest.Time) {
				latest = t.ev[v]
			}
		}
		out = append(out, Dimension{Name: name, Value: strings.Join(parts, ", "), Evidence: latest})
	}
	return out
}

// Accessors over decoded JSON.

func mapAt(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		next, _ := m[k].(map[string]any)
		m = next
	}
	return m
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func strMap(m map[string]any, keys ...string) map[string]string {
	out := map[string]string{}
	for k, v := range mapAt(m, keys...) {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

func list(m map[string]any, keys ...string) []any {
	if len(keys) == 0 {
		return nil
	}
	l, _ := mapAt(m, keys[:len(keys)-1]...)[keys[len(keys)-1]].([]any)
	return l
}

// contentHash is a digest of a ConfigMap's or Secret's data (its keys and
// their stored values), nothing of its metadata.
func contentHash(m map[string]any) string {
	var lines []string
	for _, field := range []string{"data", "binaryData", "stringData"} {
		for k, v := range strMap(m, field) {
			lines = append(lines, field+"\x00"+k+"\x00"+v)
		}
	}
	sort.Strings(lines)
	h := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return "sha256:" + hex.EncodeToString(h[:])
}
