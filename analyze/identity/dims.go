package identity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
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

// NodePool is the pool a node's labels name ("" for none): the first of
// poolLabels set.
func NodePool(labels map[string]string) string {
	for _, l := range poolLabels {
		if v := labels[l]; v != "" {
			return v
		}
	}
	return ""
}

// PoolLabel says whether a node label names the node's pool.
func PoolLabel(key string) bool { return slices.Contains(poolLabels, key) }

// perPod dimensions differ between the pods of one job by design; a job's
// identity leaves them out.
func perPod(name string) bool {
	return name == "rank" || name == "node" || name == "run"
}

// dimList collects dimensions in order; add leaves out empty values.
type dimList []Dimension

func (d *dimList) add(name, value string, e Evidence) {
	if value != "" {
		*d = append(*d, Dimension{Name: name, Value: value, Evidence: e})
	}
}

// pod returns the dimensions of one pod version.
func (r *Resolver) pod(ctx context.Context, p *obj) ([]Dimension, error) {
	ev := p.evidence()
	var dims dimList
	spec := mapAt(p.m, "spec")
	imageDims(&dims, spec, mapAt(p.m, "status"), ev)
	placementDims(&dims, p, spec, ev)
	owner, err := r.ownerChainDims(ctx, &dims, p)
	if err != nil {
		return nil, err
	}
	if owner != nil {
		markAdmitted(dims, p, owner)
	}
	if err := r.configDims(ctx, &dims, p, spec, ev); err != nil {
		return nil, err
	}
	if err := r.podNodeDims(ctx, &dims, p, spec, ev); err != nil {
		return nil, err
	}
	if err := r.storageDims(ctx, &dims, p, owner, spec, ev); err != nil {
		return nil, err
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
			dims.add(rule.Dimension, v, ev)
		}
	}
	return dims, nil
}

// imageDims adds what the pod runs: its template's dimensions
// (templateDims) as its own spec gives them, and the digest each
// container ran.
func imageDims(dims *dimList, spec, status map[string]any, ev Evidence) {
	digests := map[string]string{}
	for _, field := range []string{"containerStatuses", "initContainerStatuses"} {
		for _, x := range list(status, field) {
			cs, _ := x.(map[string]any)
			digests[str(cs, "name")] = digestOf(str(cs, "imageID"))
		}
	}
	eachContainer(spec, func(prefix string, c map[string]any) {
		dims.add(prefix+".digest/"+str(c, "name"), digests[str(c, "name")], ev)
	})
	for _, d := range templateDims(spec, ev) {
		dims.add(d.Name, d.Value, ev)
	}
}

// templateDims are the dimensions a pod spec (a pod's, or a workload's
// template) gives its pods: each container's image tag (image.tag/C,
// initImage.tag/C), what it runs with (containerDims), and the rest of the
// spec (specDims).
func templateDims(spec map[string]any, ev Evidence) []Dimension {
	var out []Dimension
	eachContainer(spec, func(prefix string, c map[string]any) {
		if img := str(c, "image"); img != "" {
			out = append(out, Dimension{Name: prefix + ".tag/" + str(c, "name"), Value: img, Evidence: ev})
		}
	})
	out = append(out, containerDims(spec, ev)...)
	return append(out, specDims(spec, ev)...)
}

// eachContainer calls f with each container of a pod spec and the prefix
// its image dimensions take: "image" for containers, "initImage" for init
// containers.
func eachContainer(spec map[string]any, f func(prefix string, c map[string]any)) {
	for _, field := range []string{"containers", "initContainers"} {
		prefix := "image"
		if field == "initContainers" {
			prefix = "initImage"
		}
		for _, x := range list(spec, field) {
			c, _ := x.(map[string]any)
			f(prefix, c)
		}
	}
}

// containerDims are what each container of a pod spec runs with beyond
// its image, each a change that can break a pod with nothing else
// changed:
//   - the resources it asks for and is held to ("resources/main/limits.memory"
//     = "4Gi"): a limit lowered below what it uses kills it (OOMKilled);
//   - its probes ("probes/main/readiness" = "httpGet :8080/healthz period=5s"):
//     a readiness probe at a path the image does not serve keeps it from
//     ever turning ready, and a liveness probe too strict kills it;
//   - its literal environment ("env/main/ATTN_IMPL" = "flash2"): a flag,
//     a batch size, a path changed;
//   - its command and args ("command/main", "args/main"), as a digest of
//     what the timeline holds of them (each element is stored keyed-hashed):
//     a flag changed.
func containerDims(spec map[string]any, ev Evidence) []Dimension {
	var out []Dimension
	for _, x := range list(spec, "containers") {
		c, _ := x.(map[string]any)
		name := str(c, "name")
		limits := strMap(c, "resources", "limits")
		for k, v := range limits {
			out = append(out, Dimension{Name: "resources/" + name + "/limits." + k, Value: v, Evidence: ev})
		}
		for k, v := range strMap(c, "resources", "requests") {
			// A request equal to its limit says nothing more (the
			// apiserver sets a pod's requests to its limits when the
			// template gives none).
			if limits[k] != v {
				out = append(out, Dimension{Name: "resources/" + name + "/requests." + k, Value: v, Evidence: ev})
			}
		}
		for _, probe := range []string{"readiness", "liveness", "startup"} {
			if p := mapAt(c, probe+"Probe"); p != nil {
				out = append(out, Dimension{Name: "probes/" + name + "/" + probe, Value: probeString(p), Evidence: ev})
			}
		}
		for _, x := range list(c, "env") {
			// A literal value (kept in clear, or a keyed hash when it
			// looks like a credential: a change is still a change); one
			// read from a ConfigMap or Secret is that object's key.
			em, _ := x.(map[string]any)
			if v, ok := em["value"].(string); ok && str(em, "name") != "" {
				if v == "" {
					v = emptyValue
				}
				out = append(out, Dimension{Name: "env/" + name + "/" + str(em, "name"), Value: v, Evidence: ev})
			}
		}
		for _, field := range []string{"command", "args"} {
			if l := list(c, field); len(l) > 0 {
				b, _ := json.Marshal(l)
				h := sha256.Sum256(b)
				out = append(out, Dimension{Name: field + "/" + name, Value: "sha256:" + hex.EncodeToString(h[:]), Evidence: ev})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// probeString spells a probe as its handler and the timings it sets
// other than the defaults: "httpGet :8080/healthz period=5s failure=1".
func probeString(p map[string]any) string {
	var b strings.Builder
	switch {
	case mapAt(p, "httpGet") != nil:
		h := mapAt(p, "httpGet")
		b.WriteString("httpGet ")
		if s := str(h, "scheme"); s != "" && s != "HTTP" {
			b.WriteString(strings.ToLower(s) + "://")
		}
		b.WriteString(str(h, "host") + ":" + scalar(h["port"]) + str(h, "path"))
	case mapAt(p, "tcpSocket") != nil:
		b.WriteString("tcpSocket :" + scalar(mapAt(p, "tcpSocket")["port"]))
	case mapAt(p, "grpc") != nil:
		g := mapAt(p, "grpc")
		b.WriteString("grpc :" + scalar(g["port"]))
		if s := str(g, "service"); s != "" {
			b.WriteString(" " + s)
		}
	case mapAt(p, "exec") != nil:
		cmd, _ := json.Marshal(list(mapAt(p, "exec"), "command"))
		h := sha256.Sum256(cmd)
		b.WriteString("exec sha256:" + hex.EncodeToString(h[:6]))
	default:
		b.WriteString("(no handler)")
	}
	// The timings the apiserver does not default to (it stores 10 s, 1 s,
	// 1 and 3 when the spec gives none): a template that spells out a
	// default runs the same probe as one that does not.
	for _, t := range []struct{ field, name, unit, dflt string }{
		{"initialDelaySeconds", "delay", "s", "0"}, {"periodSeconds", "period", "s", "10"}, {"timeoutSeconds", "timeout", "s", "1"},
		{"successThreshold", "success", "", "1"}, {"failureThreshold", "failure", "", "3"}, {"terminationGracePeriodSeconds", "grace", "s", ""},
	} {
		if v, ok := p[t.field]; ok && scalar(v) != t.dflt {
			b.WriteString(" " + t.name + "=" + scalar(v) + t.unit)
		}
	}
	return b.String()
}

// scalar spells a JSON scalar (a port is a number or a name).
func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// placementDims adds the pod's scheduling and its place in the job.
func placementDims(dims *dimList, p *obj, spec map[string]any, ev Evidence) {
	schedulingDims(dims, spec, ev)
	// The taints it tolerates: a pod's own, with those admission adds
	// (DefaultTolerationSeconds), so not its template's.
	dims.add("tolerations", tolerations(spec), ev)
	labels := strMap(p.m, "metadata", "labels")
	annotations := strMap(p.m, "metadata", "annotations")
	for _, l := range rankLabels {
		if v := labels[l]; v != "" {
			dims.add("rank", v, ev)
			break
		}
		if v := annotations[l]; v != "" {
			dims.add("rank", v, ev)
			break
		}
	}
	if h := labels["pod-template-hash"]; h != "" {
		dims.add("owner.podTemplateHash", h, ev)
	}
	if h := labels["controller-revision-hash"]; h != "" {
		dims.add("owner.controllerRevision", h, ev)
	}
}

// schedulingDims adds what a pod spec, a pod's or its workload's
// template, says of who places the pod and as whom it runs, as the pod
// holds it: its scheduler (a name no scheduler serves keeps its pods
// Pending with no event), the ServiceAccount its requests are authorized
// as, the node labels it requires, its priority class. A workload's
// template that changes one of them changes its new pods' (objectDims).
func schedulingDims(dims *dimList, spec map[string]any, ev Evidence) {
	dims.add("schedulerName", str(spec, "schedulerName"), ev)
	sa := str(spec, "serviceAccountName")
	if sa == "" {
		sa = "default"
	}
	dims.add("serviceAccount", sa, ev)
	for k, v := range strMap(spec, "nodeSelector") {
		dims.add("nodeSelector/"+k, v, ev)
	}
	dims.add("priorityClassName", str(spec, "priorityClassName"), ev)
}

// ownerChainDims adds the pod's owner chain (four owners at most), with
// each owner's generation at the instant.
func (r *Resolver) ownerChainDims(ctx context.Context, dims *dimList, p *obj) (*obj, error) {
	var first *obj
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
			dims.add("owner/"+o.kind, o.name, cur.evidence())
			break
		}
		if first == nil {
			first = owner
		}
		*dims = append(*dims, ownerDims(owner)...)
		cur = owner
	}
	return first, nil
}

// Deleted is the value of a ConfigMap or Secret a pod reads that was
// deleted before the pod started: it has none of its keys.
const Deleted = "(deleted)"

// whenStarted returns the object as it stood when the pod started (at the
// resolver's instant, unless pinned to pod starts), and the delete that
// took it away after that version and by then (nil when none).
func (r *Resolver) whenStarted(ctx context.Context, group, resource, kind, ns, name string, p *obj) (*obj, *Evidence, error) {
	var o *obj
	var err error
	at := r.at
	if r.pinStart {
		at = podStart(p)
		o, err = r.atStart(ctx, group, resource, ns, name, p)
	} else {
		o, err = r.get(ctx, group, resource, ns, name)
	}
	if err != nil || at.IsZero() {
		return o, nil, err
	}
	var after time.Time
	if o != nil {
		after = o.v.Time
	}
	d, err := r.deletedBetween(ctx, group, resource, kind, ns, name, after, at)
	return o, d, err
}

// configDims adds the config the pod reads through volumes, envFrom and
// env, as content hashes.
func (r *Resolver) configDims(ctx context.Context, dims *dimList, p *obj, spec map[string]any, ev Evidence) error {
	cms, secrets := configRefs(spec)
	for _, ref := range []struct {
		resource, dim string
		refs          []configRef
		kind          string
	}{{"configmaps", "configmap", cms, "ConfigMap"}, {"secrets", "secret", secrets, "Secret"}} {
		for _, cr := range ref.refs {
			name := cr.name
			o, d, err := r.whenStarted(ctx, "", ref.resource, ref.kind, p.v.Object.Namespace, name, p)
			if err != nil {
				return err
			}
			if d != nil {
				// Deleted by the time the pod started: it read nothing.
				dims.add(ref.dim+"/"+name, Deleted, *d)
				continue
			}
			if o == nil {
				dims.add(ref.dim+"/"+name, "(not in the timeline)", ev)
				continue
			}
			// The object as a whole by its content alone: the same bytes in
			// every namespace (kube-root-ca.crt) are one value, so an object
			// every pod mounts never stands in for the namespace.
			read := cr.only(o.m)
			dims.add(ref.dim+"/"+name, contentHash(read), o.evidence())
			for _, field := range []string{"data", "binaryData", "stringData"} {
				for k, v := range strMap(read, field) {
					dims.add(ref.dim+"/"+name+"/"+k, v, o.evidence())
				}
			}
		}
	}
	return nil
}

// podNodeDims adds the pod's node, as it was.
func (r *Resolver) podNodeDims(ctx context.Context, dims *dimList, p *obj, spec map[string]any, ev Evidence) error {
	node := str(spec, "nodeName")
	if node == "" {
		return nil
	}
	dims.add("node", node, ev)
	var n *obj
	var err error
	if r.pinStart {
		n, err = r.nodeAtStart(ctx, node, p)
	} else {
		n, err = r.get(ctx, "", "nodes", "", node)
	}
	if err != nil {
		return err
	}
	if n != nil {
		*dims = append(*dims, nodeDims(n)...)
	}
	at := r.at
	if r.pinStart {
		at = podStart(p)
	}
	agents, err := r.agentsOn(ctx, node, at)
	if err != nil {
		return err
	}
	for _, a := range agents {
		*dims = append(*dims, agentDims(a.ns, a.ds, mapAt(a.o.m, "spec"), a.o.evidence())...)
	}
	return nil
}

// digestOf keeps the digest of an imageID ("docker-pullable://repo@sha256:..").
func digestOf(imageID string) string {
	if i := strings.Index(imageID, "sha256:"); i >= 0 {
		return imageID[i:]
	}
	return imageID
}

// configRefs lists the ConfigMaps and Secrets a pod spec reads (its image
// pull secrets too), sorted,
// each with the keys it reads: nil for every key (a volume without items,
// envFrom), else the keys named (env valueFrom, a volume's items). A pod
// that reads one key of a shared ConfigMap does not run with the others.
func configRefs(spec map[string]any) (cms, secrets []configRef) {
	cm, sec := map[string]map[string]bool{}, map[string]map[string]bool{}
	all := map[string]bool{} // "c/NAME" or "s/NAME": every key read
	add := func(into map[string]map[string]bool, kind, name string, keys ...string) {
		if name == "" {
			return
		}
		if into[name] == nil {
			into[name] = map[string]bool{}
		}
		if len(keys) == 0 {
			all[kind+"/"+name] = true
		}
		for _, k := range keys {
			into[name][k] = true
		}
	}
	volume := func(into map[string]map[string]bool, kind string, src map[string]any, nameField string) {
		var keys []string
		for _, it := range list(src, "items") {
			im, _ := it.(map[string]any)
			keys = append(keys, str(im, "key"))
		}
		add(into, kind, str(src, nameField), keys...)
	}
	for _, x := range list(spec, "volumes") {
		v, _ := x.(map[string]any)
		volume(cm, "c", mapAt(v, "configMap"), "name")
		volume(sec, "s", mapAt(v, "secret"), "secretName")
		for _, s := range list(mapAt(v, "projected"), "sources") {
			sm, _ := s.(map[string]any)
			volume(cm, "c", mapAt(sm, "configMap"), "name")
			volume(sec, "s", mapAt(sm, "secret"), "name")
		}
	}
	// The credentials the kubelet pulls the pod's images with: a pull
	// secret rotated or deleted fails the next pulls.
	for _, x := range list(spec, "imagePullSecrets") {
		ps, _ := x.(map[string]any)
		add(sec, "s", str(ps, "name"))
	}
	for _, field := range []string{"containers", "initContainers"} {
		for _, x := range list(spec, field) {
			c, _ := x.(map[string]any)
			for _, e := range list(c, "envFrom") {
				em, _ := e.(map[string]any)
				add(cm, "c", str(mapAt(em, "configMapRef"), "name"))
				add(sec, "s", str(mapAt(em, "secretRef"), "name"))
			}
			for _, e := range list(c, "env") {
				em, _ := e.(map[string]any)
				vf := mapAt(em, "valueFrom")
				add(cm, "c", str(mapAt(vf, "configMapKeyRef"), "name"), str(mapAt(vf, "configMapKeyRef"), "key"))
				add(sec, "s", str(mapAt(vf, "secretKeyRef"), "name"), str(mapAt(vf, "secretKeyRef"), "key"))
			}
		}
	}
	refs := func(kind string, m map[string]map[string]bool) []configRef {
		out := make([]configRef, 0, len(m))
		for name, keys := range m {
			r := configRef{name: name}
			if !all[kind+"/"+name] {
				r.keys = keys
			}
			out = append(out, r)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
		return out
	}
	return refs("c", cm), refs("s", sec)
}

// configRef is a ConfigMap or Secret a pod reads: its name, and the keys
// it reads (nil: every key).
type configRef struct {
	name string
	keys map[string]bool
}

// only keeps the keys of a ConfigMap's or Secret's data a pod reads.
func (r configRef) only(m map[string]any) map[string]any {
	if r.keys == nil {
		return m
	}
	out := map[string]any{}
	for _, field := range []string{"data", "binaryData", "stringData"} {
		d, _ := m[field].(map[string]any)
		kept := map[string]any{}
		for k, v := range d {
			if r.keys[k] {
				kept[k] = v
			}
		}
		if len(kept) > 0 {
			out[field] = kept
		}
	}
	return out
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
	add("node.pool", NodePool(labels))
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

// tolerations lists a pod's tolerations in one canonical, sorted line:
// "key=value:Effect", "key:Effect" (operator Exists), ":Effect" or "*"
// (every taint of an effect, or every taint).
func tolerations(spec map[string]any) string {
	var out []string
	for _, x := range list(spec, "tolerations") {
		t, _ := x.(map[string]any)
		key, op, val, eff := str(t, "key"), str(t, "operator"), str(t, "value"), str(t, "effect")
		s := key
		if op != "Exists" && val != "" {
			s += "=" + val
		}
		if key == "" && op == "Exists" && eff == "" {
			s = "*"
		} else {
			s += ":" + eff
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
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
