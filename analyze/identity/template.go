package identity

import (
	"context"
	"strings"
	"time"
)

// OfTemplate returns the identity of the pods a controller (a ReplicaSet,
// Job, StatefulSet, DaemonSet...) would create at the instant at, from its
// pod template as it stood then: what its pods would have run with, had
// they been created. It is the identity of pods that do not exist, such as
// those the apiserver refused: the same dimensions as a pod's but the ones
// only a running pod has (its node, the image digests it pulled).
func (r *Resolver) OfTemplate(ctx context.Context, ref Ref, at time.Time) (*Identity, error) {
	m, ok := kinds[strings.ToLower(ref.Kind)]
	if !ok {
		return nil, &ErrNotFound{ref, r.at}
	}
	c, err := r.get(ctx, m.group, m.resource, ref.Namespace, ref.Name)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, &ErrNotFound{ref, r.at}
	}
	tmpl := mapAt(c.m, "spec", "template")
	if tmpl == nil {
		return nil, &ErrNotFound{ref, r.at}
	}
	meta := map[string]any{
		"namespace":         ref.Namespace,
		"creationTimestamp": at.UTC().Format(time.RFC3339Nano),
		"ownerReferences": []any{map[string]any{"apiVersion": str(c.m, "apiVersion"), "kind": ref.Kind,
			"name": ref.Name, "uid": c.v.Object.UID, "controller": true}},
	}
	for k, v := range mapAt(tmpl, "metadata") {
		if k == "labels" || k == "annotations" {
			meta[k] = v
		}
	}
	pod := &obj{v: c.v, m: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": mapAt(tmpl, "spec")}}
	dims, err := r.pod(ctx, pod)
	if err != nil {
		return nil, err
	}
	return &Identity{Ref: ref.String(), At: at, Dimensions: sorted(dims)}, nil
}
