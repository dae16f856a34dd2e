// Package identity answers "what exactly was this running on?" for a pod, a
// job (the set of its pods), a gang job, or a node, at an instant: a flat
// set of dimensions (image digests, owner generations, ConfigMap and Secret
// content hashes, node identity, scheduling, declared artifacts), each with
// the object version that says so. Two identities diff into the dimensions
// that changed.
package identity

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/timeline"
)

// Evidence is the object version a dimension was read from.
type Evidence struct {
	Ref             string    `json:"ref"` // Kind/namespace/name
	ResourceVersion string    `json:"resourceVersion,omitempty"`
	Time            time.Time `json:"time"`
	Run             int64     `json:"run"`
	Line            int64     `json:"line"`
}

// Dimension is one name = value of an identity.
type Dimension struct {
	Name     string   `json:"name"`
	Value    string   `json:"value"`
	Evidence Evidence `json:"evidence"`
	// Admission, on a pod's dimension its owner's template does not give
	// (a container's resources, probes, env, command, args or image), is
	// what set it as the pod was admitted: "LimitRange" when the pod says
	// its LimitRanger did, else "admission" (a mutating webhook or
	// admission policy). No write to the workload made that value.
	Admission string `json:"admission,omitempty"`
}

// Admission values.
const (
	ByLimitRange = "LimitRange" // the LimitRanger plugin set it from a LimitRange's defaults
	ByAdmission  = "admission"  // a mutating webhook or policy: the pod does not say which
)

// Identity is what a unit ran on at an instant.
type Identity struct {
	Ref        string      `json:"ref"`
	At         time.Time   `json:"at,omitzero"` // zero: the latest evidence held
	Pods       int         `json:"pods,omitempty"`
	Dimensions []Dimension `json:"dimensions"`
}

// Get returns the value of a dimension, and whether it is there.
func (id *Identity) Get(name string) (string, bool) {
	for _, d := range id.Dimensions {
		if d.Name == name {
			return d.Value, true
		}
	}
	return "", false
}

// Store is what identities are read from.
type Store interface {
	Versions(ctx context.Context, q timeline.VersionQuery) ([]timeline.ObjectVersion, error)
	Records(ctx context.Context, q timeline.Query) iter.Seq2[*timeline.Record, error]
}

// Ref names a unit: a kind, a namespace (empty for nodes) and a name.
type Ref struct {
	Kind, Namespace, Name string
}

func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}

// kinds maps what users type to a kind and its resource.
var kinds = map[string]struct{ kind, group, resource string }{
	"pod": {"Pod", "", "pods"}, "pods": {"Pod", "", "pods"}, "po": {"Pod", "", "pods"},
	"node": {"Node", "", "nodes"}, "nodes": {"Node", "", "nodes"}, "no": {"Node", "", "nodes"},
	"job": {"Job", "batch", "jobs"}, "jobs": {"Job", "batch", "jobs"},
	"mpijob": {"MPIJob", "kubeflow.org", "mpijobs"}, "mpijobs": {"MPIJob", "kubeflow.org", "mpijobs"},
	"pytorchjob": {"PyTorchJob", "kubeflow.org", "pytorchjobs"}, "jobset": {"JobSet", "jobset.x-k8s.io", "jobsets"},
	"deployment": {"Deployment", "apps", "deployments"}, "deploy": {"Deployment", "apps", "deployments"},
	"statefulset": {"StatefulSet", "apps", "statefulsets"}, "sts": {"StatefulSet", "apps", "statefulsets"},
	"replicaset": {"ReplicaSet", "apps", "replicasets"}, "rs": {"ReplicaSet", "apps", "replicasets"},
	"daemonset": {"DaemonSet", "apps", "daemonsets"}, "ds": {"DaemonSet", "apps", "daemonsets"},
	"replicationcontroller": {"ReplicationController", "", "replicationcontrollers"}, "rc": {"ReplicationController", "", "replicationcontrollers"},
}

// Resource returns the API group and resource of a kind as users type it
// (pod, po, deploy, MPIJob...), and whether it is known.
func Resource(kind string) (group, resource string, ok bool) {
	m, ok := kinds[strings.ToLower(kind)]
	return m.group, m.resource, ok
}

// ParseRef reads KIND/NAMESPACE/NAME, KIND/NAME (with defaultNS, or none for
// nodes) or NAMESPACE/NAME (a pod).
func ParseRef(s, defaultNS string) (Ref, error) {
	parts := strings.Split(s, "/")
	for _, p := range parts {
		if p == "" {
			return Ref{}, fmt.Errorf("invalid reference %q: want KIND/NAMESPACE/NAME, e.g. pod/ml/train-0", s)
		}
	}
	kindOf := func(k string) (string, bool) {
		if m, ok := kinds[strings.ToLower(k)]; ok {
			return m.kind, true
		}
		return "", false
	}
	switch len(parts) {
	case 3:
		k, ok := kindOf(parts[0])
		if !ok {
			return Ref{}, fmt.Errorf("invalid reference %q: unknown kind %q (pod, job, node, mpijob, jobset, deployment, ...)", s, parts[0])
		}
		return Ref{k, parts[1], parts[2]}, nil
	case 2:
		if k, ok := kindOf(parts[0]); ok {
			if k == "Node" {
				return Ref{k, "", parts[1]}, nil
			}
			if defaultNS == "" {
				return Ref{}, fmt.Errorf("invalid reference %q: which namespace? write %s/NAMESPACE/%s or pass -n", s, parts[0], parts[1])
			}
			return Ref{k, defaultNS, parts[1]}, nil
		}
		return Ref{"Pod", parts[0], parts[1]}, nil
	}
	return Ref{}, fmt.Errorf("invalid reference %q: want KIND/NAMESPACE/NAME, e.g. pod/ml/train-0", s)
}

// Resolver computes identities from a store, caching what it reads for one
// instant, so the identities of many pods cost one query per resource.
type Resolver struct {
	store Store
	rules []Rule
	at    time.Time

	loaded map[string]bool            // resources loaded
	byName map[string]map[string]*obj // resource -> ns/name -> latest version at At
	byUID  map[string]*obj            // uid -> version
	pods   map[string][]*obj          // namespace -> pods
	runs   map[string]*jobRun         // pod ("ns/name", "uid:UID") -> latest job run

	pinStart  bool
	histories map[string]*history // group/resource -> every version
	deletes   deletions
	agents    map[string][]agentPod // node -> the DaemonSets' pods on it
}

// PinAtPodStart makes a pod's identity the one it started with: the
// ConfigMaps and Secrets it read, its owners and its node as they were when
// the pod was created, not at the resolver's instant. A pod runs with the
// config, template and node it started on; a ConfigMap edited, an owner
// rolled or a node relabelled later does not change what it ran. (Creation,
// not status.startTime: some kubelets and kwok rewrite startTime when a
// container restarts or fails.) The pod's own fields (its image digests,
// its labels) are read from its latest version: they describe what ran.
func (r *Resolver) PinAtPodStart() { r.pinStart = true }

// PinNodesAtPodStart is PinAtPodStart.
//
// Deprecated: use PinAtPodStart, which pins config and owners too.
func (r *Resolver) PinNodesAtPodStart() { r.PinAtPodStart() }

// podStart is when the pod was created (its first version, when the
// creationTimestamp is missing).
func podStart(p *obj) time.Time {
	start, _ := time.Parse(time.RFC3339, str(mapAt(p.m, "metadata"), "creationTimestamp"))
	if start.IsZero() {
		start = p.v.Time
	}
	return start
}

// history holds every version of one resource, by ns/name and by uid,
// oldest first.
type history struct {
	byName map[string][]*obj
	byUID  map[string][]*obj
}

func (r *Resolver) history(ctx context.Context, group, resource string) (*history, error) {
	key := group + "/" + resource
	if h := r.histories[key]; h != nil {
		return h, nil
	}
	vs, err := r.store.Versions(ctx, timeline.VersionQuery{Group: group, Resource: resource, History: true})
	if err != nil {
		return nil, err
	}
	h := &history{byName: map[string][]*obj{}, byUID: map[string][]*obj{}}
	for i := range vs {
		o := &obj{v: vs[i]}
		if json.Unmarshal(vs[i].Content, &o.m) != nil {
			continue
		}
		nk := vs[i].Object.Namespace + "/" + vs[i].Object.Name
		h.byName[nk] = append(h.byName[nk], o)
		if u := vs[i].Object.UID; u != "" {
			h.byUID[u] = append(h.byUID[u], o)
		}
	}
	if r.histories == nil {
		r.histories = map[string]*history{}
	}
	r.histories[key] = h
	return h, nil
}

// standingAt picks the version of an object that stood at t: the latest
// written at or before it, else its first (a snapshot taken after its last
// write stands for it from its creation).
func standingAt(hist []*obj, t time.Time) *obj {
	if len(hist) == 0 {
		return nil
	}
	pick := hist[0]
	for _, o := range hist[1:] {
		if o.v.Time.After(t) {
			break
		}
		pick = o
	}
	return pick
}

// deletedBetween returns the first successful delete of the object in
// (after, until], from the audit log; nil when none. A version the store
// holds says the object stood; only its deletion says it stopped.
func (r *Resolver) deletedBetween(ctx context.Context, group, resource, kind, ns, name string, after, until time.Time) (*Evidence, error) {
	d := &r.deletes
	if d.read == nil {
		*d = deletions{all: map[string]bool{}, read: map[string]bool{}, byName: map[string][]Evidence{}}
	}
	res := group + "/" + resource
	if !d.all[res] && !d.read[res+"/"+name] {
		ask := []deleteAsk{{group, resource, kind, []string{name}}}
		if len(d.read) == 0 && len(d.all) == 0 {
			// The first ask: every ConfigMap and Secret the pods refer
			// to as well, in the same read.
			refs, err := r.referenced(ctx)
			if err != nil {
				return nil, err
			}
			ask = append(ask, refs...)
		}
		if err := r.readDeletes(ctx, ask); err != nil {
			return nil, err
		}
	}
	for _, e := range d.byName[res+"/"+ns+"/"+name] {
		if e.Time.After(after) && !e.Time.After(until) {
			return &e, nil
		}
	}
	return nil, nil
}

// deletions is what a resolver read of the deletions of objects.
type deletions struct {
	all    map[string]bool       // group/resource -> every deletion of it was read
	read   map[string]bool       // group/resource/name -> its deletions were read
	byName map[string][]Evidence // group/resource/ns/name -> its deletions, oldest first
}

// deleteAsk is the names of one resource whose deletions to read.
type deleteAsk struct {
	group, resource, kind string
	names                 []string
}

// maxDeleteNames bounds the names of a resource one read of deletions
// lists: past it, the list costs the store about as much to match as
// every deletion costs to read, and it reads every deletion of the
// resources asked. maxDeleteList bounds the list's characters.
const (
	maxDeleteNames = 512
	maxDeleteList  = 32 << 10
)

// readDeletes reads the successful deletes of the objects asked (in any
// namespace), in one read. Only names asked are read: a store that holds
// the timeline in columns reads every part of the table to find a few
// thousand scattered rows, once per read.
func (r *Resolver) readDeletes(ctx context.Context, asks []deleteAsk) error {
	d := &r.deletes
	byRes := map[string]*deleteAsk{}
	for _, a := range asks {
		res := a.group + "/" + a.resource
		if d.all[res] {
			continue
		}
		if byRes[res] == nil {
			byRes[res] = &deleteAsk{group: a.group, resource: a.resource, kind: a.kind}
		}
		for _, n := range a.names {
			if !d.read[res+"/"+n] {
				byRes[res].names = append(byRes[res].names, n)
			}
		}
	}
	// One filter for every resource asked: the groups, resources and names
	// asked, each a list (a filter of one clause per resource is an OR
	// that SQLite reads by scanning). It keeps a superset, a name asked of
	// one resource deleted in another; what was not asked is left out
	// below.
	var groups, resources, names []string
	whole := false              // every deletion of the resources asked is read
	for res, a := range byRes { // celList sorts what it lists
		slices.Sort(a.names)
		a.names = slices.Compact(a.names)
		if len(a.names) == 0 {
			delete(byRes, res)
			continue
		}
		groups, resources = append(groups, a.group), append(resources, a.resource)
		whole = whole || len(a.names) > maxDeleteNames
		names = append(names, a.names...)
	}
	if len(byRes) == 0 {
		return nil
	}
	all := fmt.Sprintf(`group in %s && resource in %s && subresource == "" && verb == "delete" && code > 0 && code < 400`,
		celList(groups), celList(resources))
	// A list too long for a filter (CEL parses 100,000 characters at
	// most; names run to 253) is read whole too, and so is one the filter
	// language refuses (the names come from the pods' specs).
	var f *timeline.Filter
	var err error
	if list := celList(names); !whole && len(list) <= maxDeleteList {
		f, err = timeline.CompileFilter(all + " && name in " + list)
	}
	if whole = f == nil || err != nil; whole {
		if f, err = timeline.CompileFilter(all); err != nil {
			return fmt.Errorf("deletions: %w", err) // constants but for the resources asked: a bug
		}
	}
	asked := map[string]bool{}
	for res, a := range byRes {
		for _, n := range a.names {
			asked[res+"/"+n] = true
		}
		if whole {
			d.all[res] = true
			for k := range d.byName {
				if strings.HasPrefix(k, res+"/") {
					delete(d.byName, k) // read again, whole
				}
			}
		}
	}
	// Only the time, object and evidence every read has are kept (the
	// code is the smallest field a read can name).
	for rec, err := range r.store.Records(ctx, timeline.Query{Where: f, Fields: timeline.FieldCode}) {
		if err != nil {
			return fmt.Errorf("deletions: %w", err)
		}
		o := rec.Object
		res := o.Group + "/" + o.Resource
		a := byRes[res]
		if a == nil || !whole && !asked[res+"/"+o.Name] {
			continue
		}
		k := res + "/" + o.Namespace + "/" + o.Name
		d.byName[k] = append(d.byName[k], Evidence{Ref: Ref{a.kind, o.Namespace, o.Name}.String(),
			Time: rec.Time, Run: rec.Evidence.Run, Line: rec.Evidence.Line})
	}
	for res, a := range byRes {
		for _, n := range a.names {
			d.read[res+"/"+n] = true
		}
	}
	return nil
}

// celList is strs as a CEL list of strings, sorted, each once.
func celList(strs []string) string {
	strs = slices.Compact(slices.Sorted(slices.Values(strs)))
	quoted := make([]string, len(strs))
	for i, s := range strs {
		quoted[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// referenced returns the ConfigMaps and Secrets the pods at the
// resolver's instant refer to, by name.
func (r *Resolver) referenced(ctx context.Context) ([]deleteAsk, error) {
	if err := r.load(ctx, "", "pods"); err != nil {
		return nil, err
	}
	cm := deleteAsk{resource: "configmaps", kind: "ConfigMap"}
	sec := deleteAsk{resource: "secrets", kind: "Secret"}
	for _, pods := range r.pods {
		for _, p := range pods {
			cms, secrets := configRefs(mapAt(p.m, "spec"))
			for _, c := range cms {
				cm.names = append(cm.names, c.name)
			}
			for _, c := range secrets {
				sec.names = append(sec.names, c.name)
			}
		}
	}
	return []deleteAsk{cm, sec}, nil
}

// atStart returns the object (by namespace and name) as it stood when the
// pod p was created.
func (r *Resolver) atStart(ctx context.Context, group, resource, ns, name string, p *obj) (*obj, error) {
	h, err := r.history(ctx, group, resource)
	if err != nil {
		return nil, err
	}
	return standingAt(h.byName[ns+"/"+name], podStart(p)), nil
}

// ownerAtStart returns the owner as it stood when the pod p was created.
func (r *Resolver) ownerAtStart(ctx context.Context, o ownerRef, p *obj) (*obj, error) {
	m, ok := kinds[strings.ToLower(o.kind)]
	if !ok {
		return nil, nil
	}
	h, err := r.history(ctx, m.group, m.resource)
	if err != nil {
		return nil, err
	}
	return standingAt(h.byUID[o.uid], podStart(p)), nil
}

func (r *Resolver) nodeAtStart(ctx context.Context, name string, p *obj) (*obj, error) {
	return r.atStart(ctx, "", "nodes", "", name, p)
}

type obj struct {
	v timeline.ObjectVersion
	m map[string]any
}

func (o *obj) evidence() Evidence {
	return Evidence{Ref: Ref{o.v.Object.Kind, o.v.Object.Namespace, o.v.Object.Name}.String(),
		ResourceVersion: o.v.ResourceVersion, Time: o.v.Time, Run: o.v.Evidence.Run, Line: o.v.Evidence.Line}
}

// NewResolver returns a resolver for the instant at (zero: latest held).
// rules extract declared artifacts; nil means DefaultRules.
func NewResolver(store Store, at time.Time, rules []Rule) *Resolver {
	if rules == nil {
		rules = DefaultRules()
	}
	return &Resolver{store: store, rules: rules, at: at, loaded: map[string]bool{},
		byName: map[string]map[string]*obj{}, byUID: map[string]*obj{}, pods: map[string][]*obj{}}
}

// load reads every version of a resource at the instant, once. An object
// stands for itself from its creation: when the instant falls between its
// creationTimestamp and its first version held (a snapshot taken after its
// last write), that first version is used.
func (r *Resolver) load(ctx context.Context, group, resource string) error {
	key := group + "/" + resource
	if r.loaded[key] {
		return nil
	}
	vs, err := r.store.Versions(ctx, timeline.VersionQuery{Group: group, Resource: resource, At: r.at, OrFirstAfter: true})
	if err != nil {
		return err
	}
	if !r.at.IsZero() {
		vs = standing(vs, r.at)
	}
	names := map[string]*obj{}
	for i := range vs {
		o := &obj{v: vs[i]}
		if err := json.Unmarshal(vs[i].Content, &o.m); err != nil {
			continue // content is written by the store as JSON; an unreadable one says nothing
		}
		nk := vs[i].Object.Namespace + "/" + vs[i].Object.Name
		// Several objects can share a name over time (a pod recreated):
		// the newest version wins.
		if old, ok := names[nk]; !ok || old.v.Time.Before(o.v.Time) {
			names[nk] = o
		}
		if vs[i].Object.UID != "" {
			r.byUID[vs[i].Object.UID] = o
		}
	}
	r.byName[key] = names
	if resource == "pods" {
		for _, o := range names {
			ns := o.v.Object.Namespace
			r.pods[ns] = append(r.pods[ns], o)
		}
		for ns := range r.pods {
			sort.Slice(r.pods[ns], func(i, j int) bool { return r.pods[ns][i].v.Object.Name < r.pods[ns][j].v.Object.Name })
		}
	}
	r.loaded[key] = true
	return nil
}

// standing keeps the versions that describe their object at the instant:
// those written at or before it, and first versions written after it whose
// object says it was created by then.
func standing(vs []timeline.ObjectVersion, at time.Time) []timeline.ObjectVersion {
	out := vs[:0]
	for _, v := range vs {
		if !v.Time.After(at) {
			out = append(out, v)
			continue
		}
		var meta struct {
			Metadata struct {
				CreationTimestamp time.Time `json:"creationTimestamp"`
			} `json:"metadata"`
		}
		if json.Unmarshal(v.Content, &meta) == nil && !meta.Metadata.CreationTimestamp.IsZero() && !meta.Metadata.CreationTimestamp.After(at) {
			out = append(out, v)
		}
	}
	return out
}

func objectKey(v timeline.ObjectVersion) string {
	if v.Object.UID != "" {
		return v.Object.UID
	}
	return v.Object.Resource + "/" + v.Object.Namespace + "/" + v.Object.Name
}

func (r *Resolver) get(ctx context.Context, group, resource, ns, name string) (*obj, error) {
	if err := r.load(ctx, group, resource); err != nil {
		return nil, err
	}
	return r.byName[group+"/"+resource][ns+"/"+name], nil
}

// ErrNotFound says the store holds no version of the unit at the instant.
type ErrNotFound struct {
	Ref Ref
	At  time.Time
}

func (e *ErrNotFound) Error() string {
	if e.At.IsZero() {
		return fmt.Sprintf("no version of %s in the timeline", e.Ref)
	}
	return fmt.Sprintf("no version of %s at or before %s in the timeline", e.Ref, e.At.Format(time.RFC3339))
}

// Of returns the identity of a unit.
func (r *Resolver) Of(ctx context.Context, ref Ref) (*Identity, error) {
	switch ref.Kind {
	case "Pod":
		p, err := r.get(ctx, "", "pods", ref.Namespace, ref.Name)
		if err != nil {
			return nil, err
		}
		if p == nil {
			return nil, &ErrNotFound{ref, r.at}
		}
		dims, err := r.pod(ctx, p)
		if err != nil {
			return nil, err
		}
		return &Identity{Ref: ref.String(), At: r.at, Pods: 1, Dimensions: sorted(dims)}, nil
	case "Node":
		n, err := r.get(ctx, "", "nodes", "", ref.Name)
		if err != nil {
			return nil, err
		}
		if n == nil {
			return nil, &ErrNotFound{ref, r.at}
		}
		return &Identity{Ref: ref.String(), At: r.at, Dimensions: sorted(nodeDims(n))}, nil
	}
	pods, owner, err := r.members(ctx, ref)
	if err != nil {
		return nil, err
	}
	if len(pods) == 0 && owner == nil {
		return nil, &ErrNotFound{ref, r.at}
	}
	var dims []Dimension
	if owner != nil {
		dims = append(dims, ownerDims(owner)...)
	}
	each := make([][]Dimension, 0, len(pods))
	for _, p := range pods {
		d, err := r.pod(ctx, p)
		if err != nil {
			return nil, err
		}
		each = append(each, d)
	}
	dims = append(dims, aggregate(each)...)
	return &Identity{Ref: ref.String(), At: r.at, Pods: len(pods), Dimensions: sorted(dims)}, nil
}

// gangLabels name the pods of a gang job, per kind.
var gangLabels = map[string][]string{
	"MPIJob":     {"training.kubeflow.org/job-name", "mpi-job-name"},
	"PyTorchJob": {"training.kubeflow.org/job-name"},
	"JobSet":     {"jobset.sigs.k8s.io/jobset-name"},
	"Job":        {"batch.kubernetes.io/job-name", "job-name"},
}

// members returns the pods of a job-like unit and the unit's own version.
func (r *Resolver) members(ctx context.Context, ref Ref) ([]*obj, *obj, error) {
	m, ok := kinds[strings.ToLower(ref.Kind)]
	if !ok {
		return nil, nil, fmt.Errorf("identity of a %s is not supported", ref.Kind)
	}
	owner, err := r.get(ctx, m.group, m.resource, ref.Namespace, ref.Name)
	if err != nil {
		return nil, nil, err
	}
	if err := r.load(ctx, "", "pods"); err != nil {
		return nil, nil, err
	}
	var out []*obj
	for _, p := range r.pods[ref.Namespace] {
		ok, err := r.belongs(ctx, p, ref)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			out = append(out, p)
		}
	}
	return out, owner, nil
}

// owner returns the version of an owner at the instant, loading its kind.
func (r *Resolver) owner(ctx context.Context, o ownerRef) (*obj, error) {
	if v := r.byUID[o.uid]; v != nil {
		return v, nil
	}
	m, ok := kinds[strings.ToLower(o.kind)]
	if !ok {
		return nil, nil
	}
	if err := r.load(ctx, m.group, m.resource); err != nil {
		return nil, err
	}
	return r.byUID[o.uid], nil
}

// belongs tells whether a pod is part of a unit: by the unit's labels on the
// pod, or by an owner chain that reaches the unit.
func (r *Resolver) belongs(ctx context.Context, p *obj, ref Ref) (bool, error) {
	labels := strMap(p.m, "metadata", "labels")
	for _, l := range gangLabels[ref.Kind] {
		if labels[l] == ref.Name {
			return true, nil
		}
	}
	cur := p
	for range 4 {
		refs := ownerRefs(cur.m)
		if len(refs) == 0 {
			return false, nil
		}
		o := refs[0]
		if o.kind == ref.Kind && o.name == ref.Name {
			return true, nil
		}
		next, err := r.owner(ctx, o)
		if err != nil || next == nil {
			return false, err
		}
		cur = next
	}
	return false, nil
}

type ownerRef struct{ kind, name, uid, apiVersion string }

// ownerRefs returns an object's owners, the controller first.
func ownerRefs(m map[string]any) []ownerRef {
	var out []ownerRef
	for _, x := range list(m, "metadata", "ownerReferences") {
		om, _ := x.(map[string]any)
		o := ownerRef{kind: str(om, "kind"), name: str(om, "name"), uid: str(om, "uid"), apiVersion: str(om, "apiVersion")}
		if b, _ := om["controller"].(bool); b {
			out = append([]ownerRef{o}, out...)
		} else {
			out = append(out, o)
		}
	}
	return out
}

func sorted(dims []Dimension) []Dimension {
	sort.SliceStable(dims, func(i, j int) bool { return dims[i].Name < dims[j].Name })
	return dims
}

// NodeLabels returns a node's labels at the resolver's instant (nil when
// the timeline holds no version of it).
func (r *Resolver) NodeLabels(ctx context.Context, name string) (map[string]string, error) {
	n, err := r.get(ctx, "", "nodes", "", name)
	if err != nil || n == nil {
		return nil, err
	}
	return strMap(n.m, "metadata", "labels"), nil
}
