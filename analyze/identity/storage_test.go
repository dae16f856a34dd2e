package identity

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

// A pod holds the StorageClass its claims name, as it stood when the pod
// started: Deleted (the delete as evidence) when an audited delete took
// it away before. The class is the claim's own when the timeline holds
// the claim, else the StatefulSet's claim template's.
func TestStorageClassOfClaims(t *testing.T) {
	m := &memStore{}
	m.add(t, t0, "1", `{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"fast","uid":"sc1"},
		"provisioner":"csi.example.com","parameters":{"tier":"ssd"},"reclaimPolicy":"Delete","volumeBindingMode":"Immediate"}`)
	m.add(t, t0, "2", `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"store","namespace":"ml","uid":"ss1","generation":1},
		"spec":{"volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"storageClassName":"fast"}}]}}`)
	m.add(t, t0, "3", `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data-store-9","namespace":"ml","uid":"c9"},"spec":{"storageClassName":"slow"}}`)
	pod := func(name string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"ml","uid":%q,
			"ownerReferences":[{"kind":"StatefulSet","name":"store","uid":"ss1","controller":true,"apiVersion":"apps/v1"}]},
			"spec":{"containers":[{"name":"main","image":"r/store:1"}],"volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"data-%s"}}]}}`, name, "u-"+name, name)
	}
	m.add(t, t0.Add(time.Minute), "4", pod("store-0"))
	m.add(t, t0.Add(3*time.Minute), "5", pod("store-1"))
	m.add(t, t0.Add(3*time.Minute), "6", pod("store-9"))
	m.recs = append(m.recs, &timeline.Record{Time: t0.Add(90 * time.Second), Source: timeline.SourceAudit, Verb: "delete", Code: 200,
		Object:   timeline.ObjectRef{Group: "storage.k8s.io", Resource: "storageclasses", Name: "fast"},
		Evidence: timeline.Evidence{Run: 2, Line: 90}})
	for _, tt := range []struct {
		pod, dim, value string
		ev              string // the evidence's ref
	}{
		{"store-0", "storageclass/fast", "sha256:", "StorageClass/fast"},
		{"store-1", "storageclass/fast", Deleted, "StorageClass/fast"},
		{"store-9", "storageclass/slow", "(not in the timeline)", "Pod/ml/store-9"},
	} {
		t.Run(tt.pod, func(t *testing.T) {
			r := NewResolver(m, time.Time{}, nil)
			r.PinAtPodStart()
			id, err := r.Of(context.Background(), Ref{"Pod", "ml", tt.pod})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range id.Dimensions {
				if strings.HasPrefix(d.Name, "storageclass/") {
					v := d.Value
					if strings.HasPrefix(v, "sha256:") {
						v = "sha256:" // a content hash
					}
					got = append(got, d.Name+"="+v+" @"+d.Evidence.Ref)
				}
			}
			if diff := cmp.Diff([]string{tt.dim + "=" + tt.value + " @" + tt.ev}, got); diff != "" {
				t.Errorf("storage classes (-want +got)\n%s", diff)
			}
		})
	}
}
