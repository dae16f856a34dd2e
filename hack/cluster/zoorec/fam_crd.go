package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/faultline/faultline/hack/cluster/internal/apiload"
)

// Family crd-tightened: the ML platform keeps its training bookkeeping in
// custom resources of its own (group ml.example.com): each worker of a
// training job writes a record of its progress (a checkpoint, a step
// report) as it goes. Two teams' jobs write them; the newer team's client
// fills in a field the older one never set. The actor, preparing a new
// loader that needs the field, makes it required in the CRD's schema. The
// apiserver now refuses every write of the older client (422: "spec.F:
// Required value"); its workers fail to record their progress twice in a
// row, exit 1, and the Job fails. The newer team's job, writing the same
// kind with the field set, is fine. Just before, the same actor added an
// optional field to another of the platform's CRDs, which nobody's writes
// notice. CRDs are audited at the Metadata level: who wrote the CRD and
// when, not what.

// Family crd-deleted: the same platform; a cleanup deletes CRDs it
// believes unused: first a legacy one nobody writes, then the one a
// training job's workers write their progress to. The apiserver deletes
// every object of it and stops serving the resource: the workers' writes
// now fail (404), a worker failing twice in a row exits 1, and the Job
// fails. Another team's job, writing the platform's other kind, is fine.

func init() {
	register(&Family{Name: "crd-tightened",
		Summary: "a CRD's schema is made to require a field one team's client never sets; its workers' writes of the custom resource are refused (422) and its Job fails; another team's, setting it, is fine",
		Run:     func(ctx context.Context, c *Cluster, e *Expected) (string, error) { return runCRD(ctx, c, e, false) }})
	register(&Family{Name: "crd-deleted",
		Summary: "a cleanup deletes a CRD a job's workers write to, after a legacy one; their writes fail (404) and the Job fails; another team's, writing another kind, is fine",
		Run:     func(ctx context.Context, c *Cluster, e *Expected) (string, error) { return runCRD(ctx, c, e, true) }})
}

// crdLegacy are CRDs of the platform that nothing uses any more.
var crdLegacy = []struct{ plural, kind string }{{"trainingruns", "TrainingRun"}, {"experiments", "Experiment"}, {"sweeps", "Sweep"}}

// crdKinds are the custom resources a training worker writes as it goes,
// with the field the platform makes required.
var crdKinds = []struct{ plural, kind, field string }{
	{"checkpoints", "Checkpoint", "format"},
	{"stepreports", "StepReport", "runID"},
	{"shardprogresses", "ShardProgress", "storageURI"},
}

// crdDecoys are the platform's other CRDs, given an optional field.
var crdDecoys = []struct{ plural, kind string }{{"datasets", "Dataset"}, {"evalresults", "EvalResult"}, {"modelcards", "ModelCard"}}

const crdGroup = "ml.example.com"

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// crdWriters are the training jobs whose workers write the records.
var crdWriters = []string{"pretrain-7b", "finetune-chat", "rl-reward", "vision-encoder", "speech-asr"}

// dynamicAs is a dynamic client acting as the actor (As's identity).
func (c *Cluster) dynamicAs(a Actor) (dynamic.Interface, error) {
	cfg := rest.CopyConfig(c.cfg)
	cfg.BearerToken, cfg.BearerTokenFile, cfg.UserAgent = c.tokens[a.User], "", a.UserAgent
	cfg.Username, cfg.Password, cfg.CertFile, cfg.KeyFile, cfg.CertData, cfg.KeyData = "", "", "", "", nil, nil
	return dynamic.NewForConfig(cfg)
}

// crd is a namespaced CRD of crdGroup, served as v1, whose spec declares an
// integer step and the string properties named, none of them required.
func crd(plural, kind string, props ...string) *unstructured.Unstructured {
	p := map[string]any{"step": map[string]any{"type": "integer"}}
	for _, name := range props {
		p[name] = map[string]any{"type": "string"}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + crdGroup},
		"spec": map[string]any{
			"group": crdGroup, "scope": "Namespaced",
			"names": map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind, "listKind": kind + "List"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object",
					"properties": map[string]any{"spec": map[string]any{"type": "object", "properties": p}}}}}},
		},
	}}
}

// establish creates the CRD with dyn and waits until it is served.
func establish(ctx context.Context, dyn dynamic.Interface, obj *unstructured.Unstructured) error {
	if _, err := dyn.Resource(crdGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create crd %s: %w", obj.GetName(), err)
	}
	return until(ctx, time.Minute, "crd "+obj.GetName()+" established", func() (bool, error) {
		got, err := dyn.Resource(crdGVR).Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, cd := range conds {
			if m, ok := cd.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
}

// runCRD records crd-tightened, or crd-deleted when deleted is set.
func runCRD(ctx context.Context, c *Cluster, e *Expected, deleted bool) (string, error) {
	e.Nodes = Scale(c, e.Family)
	k, decoyKind := Pick(c, crdKinds), Pick(c, crdDecoys)
	perm := c.rng.Perm(len(agentNamespaces))
	ns, other := agentNamespaces[perm[0]], agentNamespaces[perm[1]]
	name, version := Pick(c, crdWriters), c.version()
	nb, nbVersion := pickOther(c, crdWriters, name), c.version()
	workers, every := c.Between(24, 48), c.Dur(1500*time.Millisecond, 2500*time.Millisecond)
	actor := c.DrawActor()
	legacy := crdLegacy[0]
	if deleted {
		legacy = Pick(c, crdLegacy)
	}

	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	// The platform's CRDs, installed long ago by its automation.
	platform, err := c.dynamicAs(routineActor)
	if err != nil {
		return "", err
	}
	if err := establish(ctx, platform, crd(k.plural, k.kind, k.field, "job", "worker")); err != nil {
		return "", err
	}
	if err := establish(ctx, platform, crd(decoyKind.plural, decoyKind.kind, "job", "uri")); err != nil {
		return "", err
	}
	if deleted {
		if err := establish(ctx, platform, crd(legacy.plural, legacy.kind, "job")); err != nil {
			return "", err
		}
	}
	for _, n := range []string{ns, other} {
		if err := c.Namespace(ctx, n); err != nil {
			return "", err
		}
	}
	if err := apiload.ClusterRole(ctx, c.Admin, "ml-progress-writers",
		[]rbacv1.PolicyRule{{APIGroups: []string{crdGroup}, Resources: []string{k.plural, decoyKind.plural}, Verbs: []string{"create", "get", "list"}}},
		append(apiload.NamespaceServiceAccounts(ns), apiload.NamespaceServiceAccounts(other)...)); err != nil {
		return "", err
	}

	// The older team's job: its workers never set the field.
	cr, created, fail, wctx, stop, err := c.podAgent(ctx, routineActor, ns, name, version, workers, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer stop()
	// A worker's progress record of the kind named, created in its job's
	// namespace, with the field or without.
	record := func(job, ns, plural, kind string, withField bool) apiload.Op {
		spec := map[string]any{"job": job, "step": int64(1000)}
		if withField {
			spec[k.field] = "v2"
		}
		return apiload.Op{Verb: "create", Group: crdGroup, Version: "v1", Resource: plural, Namespace: ns,
			Object: map[string]any{"apiVersion": crdGroup + "/v1", "kind": kind,
				"metadata": map[string]any{"generateName": job + "-", "namespace": ns}, "spec": spec}}
	}
	op := record(name, ns, k.plural, k.kind, false)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cr.run(wctx, func(i int, w *apiload.Worker) {
			w.Delay, w.Repeat, w.Every, w.Jitter = c.Dur(0, every), []apiload.Op{op}, every, every/2
			w.Tries, w.Pause = 2, 500*time.Millisecond
		}, fail)()
	}()
	stopAll := func() { stop(); <-done }
	// The newer team's job, in another namespace: the same kind with the
	// field set (crd-tightened), or the platform's other kind (crd-deleted).
	nbOp := record(nb, other, k.plural, k.kind, true)
	if deleted {
		nbOp = record(nb, other, decoyKind.plural, decoyKind.kind, false)
	}
	_, stopNb, err := c.neighbour(ctx, other, nb, nbVersion, c.Between(10, 20), func(i int, w *apiload.Worker) {
		w.Delay, w.Repeat, w.Every, w.Jitter = c.Dur(0, every), []apiload.Op{nbOp}, every, every/2
	})
	if err != nil {
		stopAll()
		return "", err
	}
	// abort stops both jobs' workers and returns err.
	abort := func(err error) (string, error) {
		stopAll()
		stopNb()
		return "", err
	}
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return abort(err)
	}
	Sleep(ctx, c.Dur(15*time.Second, 25*time.Second))
	if gave, _ := cr.failures(); len(gave) > 0 {
		return abort(fmt.Errorf("%d workers gave up before the incident", len(gave)))
	}

	dyn, err := c.dynamicAs(actor)
	if err != nil {
		return abort(err)
	}
	addProp := func(prop string) []byte {
		return []byte(fmt.Sprintf(`[{"op":"add","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/%s","value":{"type":"string"}}]`, prop))
	}
	decoyRef := "CustomResourceDefinition/" + decoyKind.plural + "." + crdGroup
	decoyAt := Now()
	if deleted {
		decoyRef = "CustomResourceDefinition/" + legacy.plural + "." + crdGroup
		if err := dyn.Resource(crdGVR).Delete(ctx, legacy.plural+"."+crdGroup, metav1.DeleteOptions{}); err != nil {
			return abort(fmt.Errorf("delete crd %s: %w", decoyRef, err))
		}
		e.Decoys = []Change{{Ref: decoyRef, Dimension: "deleted", At: decoyAt, Actor: &actor}}
	} else {
		if _, err := dyn.Resource(crdGVR).Patch(ctx, decoyKind.plural+"."+crdGroup, types.JSONPatchType, addProp("license"), metav1.PatchOptions{}); err != nil {
			return abort(fmt.Errorf("patch crd %s: %w", decoyRef, err))
		}
		e.Decoys = []Change{{Ref: decoyRef, Dimension: "spec", At: decoyAt, Actor: &actor}}
	}
	Sleep(ctx, c.Dur(4*time.Second, 10*time.Second))
	lastGood := Now()
	Sleep(ctx, time.Second)
	ref := "CustomResourceDefinition/" + k.plural + "." + crdGroup
	at := Now()
	if deleted {
		if err := dyn.Resource(crdGVR).Delete(ctx, k.plural+"."+crdGroup, metav1.DeleteOptions{}); err != nil {
			return abort(fmt.Errorf("delete crd %s: %w", ref, err))
		}
		e.Changes = []Change{{Ref: ref, Dimension: "deleted", At: at, Actor: &actor}}
	} else {
		require := []byte(`[{"op":"add","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/required","value":["` + k.field + `"]}]`)
		if _, err := dyn.Resource(crdGVR).Patch(ctx, k.plural+"."+crdGroup, types.JSONPatchType, require, metav1.PatchOptions{}); err != nil {
			return abort(fmt.Errorf("patch crd %s: %w", ref, err))
		}
		e.Changes = []Change{{Ref: ref, Dimension: "spec", At: at, Actor: &actor}}
	}
	if err := until(ctx, 2*time.Minute, "a worker giving up", func() (bool, error) {
		gave, _ := cr.failures()
		return len(gave) > 0, nil
	}); err != nil {
		return abort(err)
	}
	Sleep(ctx, c.Dur(20*time.Second, 30*time.Second))
	stopAll()
	_, failed, err := c.stormOver(ctx, cr, ns, name, stopNb)
	if err != nil {
		return "", err
	}
	gave := agentTruth(e, cr, name, version, lastGood)
	e.Mitigation = []Action{{Action: "rollback", Target: ref}}
	e.extra("created", created.Ref)
	e.extra("workers", workers)
	e.extra("failedWorkers", gave)
	e.extra("failedPods", failed)
	refused := cr.counter.Count(422)
	if deleted {
		refused = cr.counter.Count(403) + cr.counter.Count(404)
	}
	e.extra("refused", refused)
	same, today := "the same kind of", "The ML platform team shipped something today."
	if deleted {
		same, today = "its", "The platform team was cleaning up unused APIs today."
	}
	return fmt.Sprintf(`A training job fails an hour into its run.

## What on-call saw
%s/%s, a Job of %d workers that record their progress as they train, had been running
fine; now it has failed: %d of its pods exited 1 with messages like "%s",
and the Job controller deleted the others. Its image and its spec did not change.
%s/%s, another team's job recording %s progress, is fine.
%s`, ns, name, workers, failed, apiload.GiveUpMessage(cr.firstError()), other, nb, same, today), nil
}
