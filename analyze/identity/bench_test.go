package identity

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite"
)

// BenchmarkIdentities10kPods computes, from a SQLite timeline, the identity
// of each of 10,000 pods (100 jobs on 500 nodes, each pod reading a
// ConfigMap and a Secret) at one instant.
func BenchmarkIdentities10kPods(b *testing.B) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "b.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	run := &timeline.IngestRun{Source: timeline.SourceObject, Path: "bench"}
	s.BeginRun(ctx, run)
	batch, _ := s.Batch(ctx, run.ID)
	add := func(res, kind, ns, name, uid, body string) {
		v := timeline.ObjectVersion{Object: timeline.ObjectRef{Version: "v1", Resource: res, Kind: kind, Namespace: ns, Name: name, UID: uid},
			ResourceVersion: "1", Time: t0, Content: []byte(body)}
		if _, err := batch.AddVersion(ctx, &v); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 500 {
		n := fmt.Sprintf("gpu-%04d", i)
		add("nodes", "Node", "", n, "n"+n, node(n, "550", i%7 == 0))
	}
	var refs []Ref
	for j := range 100 {
		ns := fmt.Sprintf("team-%d", j%10)
		cm := fmt.Sprintf("job-%d-env", j)
		add("configmaps", "ConfigMap", ns, cm, "c"+cm, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+cm+`","namespace":"`+ns+`"},"data":{"LR":"0.1"}}`)
		add("secrets", "Secret", ns, "wandb", "s"+ns, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"wandb","namespace":"`+ns+`"},"data":{"token":"eA=="}}`)
		add("configmaps", "ConfigMap", ns, "shared", "shared"+ns, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"shared","namespace":"`+ns+`"},"data":{"x":"1"}}`)
		for i := range 100 {
			name := fmt.Sprintf("job-%d-%d", j, i)
			add("pods", "Pod", ns, name, "p"+name, pod(ns, name, "p"+name, fmt.Sprintf("gpu-%04d", (j*100+i)%500), "Job", fmt.Sprintf("job%d", j), "sha256:0001", cm, ""))
			refs = append(refs, Ref{"Pod", ns, name})
		}
	}
	if err := batch.Commit(ctx, nil); err != nil {
		b.Fatal(err)
	}
	at := t0.Add(time.Hour)
	b.ResetTimer()
	for b.Loop() {
		r := NewResolver(s, at, nil)
		for _, ref := range refs {
			if _, err := r.Of(ctx, ref); err != nil {
				b.Fatal(err)
			}
		}
	}
}
