package identity

import (
	"context"
)

// What a pod's volumes are made of. A PersistentVolumeClaim is provisioned
// by its StorageClass: the class says which driver, with which parameters,
// makes the volume. A pod whose claim has no volume yet waits for one, so
// the class its claims name (as it stood when the pod started) is part of
// what the pod ran with: "storageclass/NAME" = a hash of what the class
// sets (driver, parameters, reclaim policy, binding mode, mount options,
// expansion), or Deleted when an audited delete took the class away
// before the pod started.
//
// A claim's class is in its spec (immutable once created); when the
// timeline holds no version of the claim, a StatefulSet's claim is read
// from its volumeClaimTemplates (claim "TEMPLATE-POD"). A bound claim no
// longer needs its class, but nothing in the evidence says when a claim
// was bound, so a pod started after its class was deleted holds Deleted
// even when its claim was bound before.

// storageClassFields are what a StorageClass sets for the volumes it
// provisions.
var storageClassFields = []string{"provisioner", "parameters", "reclaimPolicy", "volumeBindingMode", "mountOptions", "allowVolumeExpansion", "allowedTopologies"}

// storageDims adds the StorageClasses of the pod's claims.
func (r *Resolver) storageDims(ctx context.Context, dims *dimList, p *obj, owner *obj, spec map[string]any, ev Evidence) error {
	ns := p.v.Object.Namespace
	classes := map[string]bool{}
	for _, x := range list(spec, "volumes") {
		v, _ := x.(map[string]any)
		claim := str(mapAt(v, "persistentVolumeClaim"), "claimName")
		if claim == "" {
			continue
		}
		class, err := r.claimClass(ctx, ns, claim, p, owner)
		if err != nil {
			return err
		}
		if class != "" {
			classes[class] = true
		}
	}
	for class := range classes {
		o, d, err := r.whenStarted(ctx, "storage.k8s.io", "storageclasses", "StorageClass", "", class, p)
		if err != nil {
			return err
		}
		if d != nil {
			dims.add("storageclass/"+class, Deleted, *d)
			continue
		}
		if o == nil {
			dims.add("storageclass/"+class, "(not in the timeline)", ev)
			continue
		}
		set := map[string]any{}
		for _, f := range storageClassFields {
			if v, ok := o.m[f]; ok {
				set[f] = v
			}
		}
		dims.add("storageclass/"+class, contentHash(set), o.evidence())
	}
	return nil
}

// claimClass is the StorageClass a claim names: from the claim itself, or
// from the volumeClaimTemplates of the StatefulSet that owns the pod; ""
// when neither says (the cluster's default class, which the evidence does
// not name).
func (r *Resolver) claimClass(ctx context.Context, ns, claim string, p, owner *obj) (string, error) {
	c, err := r.get(ctx, "", "persistentvolumeclaims", ns, claim)
	if err != nil {
		return "", err
	}
	if c != nil {
		return str(mapAt(c.m, "spec"), "storageClassName"), nil
	}
	if owner == nil || owner.v.Object.Kind != "StatefulSet" {
		return "", nil
	}
	for _, x := range list(mapAt(owner.m, "spec"), "volumeClaimTemplates") {
		t, _ := x.(map[string]any)
		if str(mapAt(t, "metadata"), "name")+"-"+p.v.Object.Name == claim {
			return str(mapAt(t, "spec"), "storageClassName"), nil
		}
	}
	return "", nil
}
