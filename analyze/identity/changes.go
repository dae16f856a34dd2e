package identity

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/timeline"
)

// ObjectChange is a change of one identity dimension of an object, from
// one of its versions to the next (or its creation).
type ObjectChange struct {
	Ref string `json:"ref"` // Kind/namespace/name of the object that changed
	Change
}

// Changes returns how the identity dimensions of the given objects changed
// in (since, until]: ConfigMap and Secret keys (as content hashes), node
// identity (labels, driver, kernel, taints), and owners (generation and
// template images); an object first seen in the window is "created".
// Refs of other kinds (pods) are ignored: their changes are their units'.
func Changes(ctx context.Context, s Store, refs []Ref, since, until time.Time) ([]ObjectChange, error) {
	byResource := refsByResource(refs)
	var out []ObjectChange
	keys := make([]string, 0, len(byResource))
	for k := range byResource {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		cs, err := resourceChanges(ctx, s, key, byResource[key], since, until)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].When.Equal(out[j].When) {
			return out[i].When.Before(out[j].When)
		}
		if out[i].Ref != out[j].Ref {
			return out[i].Ref < out[j].Ref
		}
		return out[i].Dimension < out[j].Dimension
	})
	return out, nil
}

// refsByResource groups the refs Changes follows by group/resource, then by
// namespace/name; pods and kinds without identity dimensions are left out.
func refsByResource(refs []Ref) map[string]map[string]Ref {
	byResource := map[string]map[string]Ref{} // group/resource -> ns/name -> ref
	for _, r := range refs {
		if r.Kind == "Pod" {
			continue
		}
		m, ok := kinds[strings.ToLower(r.Kind)]
		if !ok {
			switch r.Kind {
			case "ConfigMap":
				m.group, m.resource = "", "configmaps"
			case "Secret":
				m.group, m.resource = "", "secrets"
			default:
				continue
			}
		}
		key := m.group + "/" + m.resource
		if byResource[key] == nil {
			byResource[key] = map[string]Ref{}
		}
		byResource[key][r.Namespace+"/"+r.Name] = r
	}
	return byResource
}

// resourceChanges returns the changes of the wanted objects of one
// group/resource (key), in the order of their versions.
func resourceChanges(ctx context.Context, s Store, key string, want map[string]Ref, since, until time.Time) ([]ObjectChange, error) {
	group, resource := splitKey(key)
	q := timeline.VersionQuery{Group: group, Resource: resource, History: true}
	if len(want) == 1 { // one object: ask for it alone
		for _, r := range want {
			q.Namespace, q.Name = r.Namespace, r.Name
		}
	}
	vs, err := s.Versions(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("%s versions: %w", resource, err)
	}
	var out []ObjectChange
	var prev map[string]Dimension
	var prevKey string
	for i := range vs {
		v := &vs[i]
		ref, ok := want[v.Object.Namespace+"/"+v.Object.Name]
		if !ok || (!until.IsZero() && v.Time.After(until)) {
			continue
		}
		o := &obj{v: *v}
		if json.Unmarshal(v.Content, &o.m) != nil {
			continue
		}
		dims := map[string]Dimension{}
		for _, d := range objectDims(ref.Kind, o) {
			dims[d.Name] = d
		}
		k := objectKey(*v)
		if k != prevKey {
			prevKey = k
			if !since.IsZero() && v.Time.After(since) {
				ev := o.evidence()
				out = append(out, ObjectChange{Ref: ref.String(), Change: Change{Dimension: "created", To: ref.Kind, When: v.Time, Evidence: ev}})
			}
			prev = dims
			continue
		}
		if since.IsZero() || v.Time.After(since) {
			for _, c := range Diff(&Identity{Ref: "a", Dimensions: values(prev)}, &Identity{Ref: "a", Dimensions: values(dims)}) {
				c.When = v.Time
				c.Evidence = o.evidence()
				out = append(out, ObjectChange{Ref: ref.String(), Change: c})
			}
		}
		prev = dims
	}
	return out, nil
}

// objectDims are the identity dimensions an object lends to the pods that
// use it, named as in a pod's identity.
func objectDims(kind string, o *obj) []Dimension {
	ev := o.evidence()
	var dims []Dimension
	switch kind {
	case "Node":
		return nodeDims(o)
	case "ConfigMap", "Secret":
		prefix := "configmap/"
		if kind == "Secret" {
			prefix = "secret/"
		}
		prefix += o.v.Object.Name
		for _, field := range []string{"data", "binaryData", "stringData"} {
			for k, v := range strMap(o.m, field) {
				dims = append(dims, Dimension{Name: prefix + "/" + k, Value: v, Evidence: ev})
			}
		}
		return dims
	}
	dims = ownerDims(o)
	tmpl := mapAt(o.m, "spec", "template", "spec")
	if kind == "DaemonSet" {
		dims = append(dims, agentDims(o.v.Object.Namespace, o.v.Object.Name, tmpl, ev)...)
	}
	if tmpl != nil {
		var sched dimList
		schedulingDims(&sched, tmpl, ev)
		dims = append(dims, sched...)
	}
	return append(dims, templateDims(tmpl, ev)...)
}

func values(m map[string]Dimension) []Dimension {
	out := make([]Dimension, 0, len(m))
	for _, d := range m {
		out = append(out, d)
	}
	return out
}

func splitKey(k string) (group, resource string) {
	for i := 0; i < len(k); i++ {
		if k[i] == '/' {
			return k[:i], k[i+1:]
		}
	}
	return "", k
}
