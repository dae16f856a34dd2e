// Package kube ingests a live cluster through client-go: a paged LIST
// snapshot of the workload, node, config and event resources (and the gang
// job CRDs an ML cluster runs, where the API has them), and in follow mode a
// WATCH that resumes after restarts. It only ever gets, lists and watches.
package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/pager"

	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/timeline"
)

// Wanted is a resource faultline reads, by group and plural name. Optional
// ones (CRDs) are skipped quietly where the API does not serve them.
type Wanted struct {
	Group    string
	Resource string
	Optional bool
}

// DefaultResources are what a snapshot reads: the evidence of workloads,
// the nodes they ran on, the config they read, and what happened to them.
var DefaultResources = []Wanted{
	{"", "events", false},
	{"events.k8s.io", "events", false},
	{"", "nodes", false},
	{"", "pods", false},
	{"", "configmaps", false},
	{"", "secrets", false}, // values never stored: the store keeps per-key hashes
	{"batch", "jobs", false},
	{"batch", "cronjobs", false},
	{"apps", "deployments", false},
	{"apps", "replicasets", false},
	{"apps", "statefulsets", false},
	{"apps", "daemonsets", false},
	// What pods' volumes are provisioned by: a claim names its class.
	{"", "persistentvolumeclaims", false},
	{"storage.k8s.io", "storageclasses", false},
	// Gang-scheduled training jobs.
	{"kubeflow.org", "mpijobs", true},
	{"kubeflow.org", "pytorchjobs", true},
	{"kubeflow.org", "tfjobs", true},
	{"jobset.x-k8s.io", "jobsets", true},
	{"scheduling.x-k8s.io", "podgroups", true},
	{"scheduling.sigs.k8s.io", "podgroups", true},
	{"scheduling.volcano.sh", "podgroups", true},
	{"batch.volcano.sh", "jobs", true},
}

// Options tune an ingest.
type Options struct {
	Namespace string // "" for all namespaces
	PageSize  int64  // LIST page size; <= 0: 500
	Resources []Wanted
	Logger    *slog.Logger
	// OnSkip hears of what was skipped (a forbidden resource, say).
	OnSkip input.OnSkip
	Now    func() time.Time
}

func (o *Options) defaults() {
	if o.PageSize <= 0 {
		o.PageSize = 500
	}
	if o.Resources == nil {
		o.Resources = DefaultResources
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.OnSkip == nil {
		o.OnSkip = func(*input.Skip) {}
	}
}

// Store is what a cluster ingest uses: it writes runs, and reads back where
// its watches stand and which objects it last saw alive.
type Store interface {
	timeline.Appender
	timeline.IngestState
}

// Ingester reads one cluster into one store.
type Ingester struct {
	store  Store
	dyn    dynamic.Interface
	disc   discovery.DiscoveryInterface
	opt    Options
	mapper meta.RESTMapper
	host   string
}

// New returns an ingester. host names the cluster in ingest runs.
func New(store Store, dyn dynamic.Interface, disc discovery.DiscoveryInterface, host string, opt Options) *Ingester {
	opt.defaults()
	return &Ingester{store: store, dyn: dyn, disc: disc, opt: opt, host: host}
}

// target is a resolved resource to read.
type target struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
}

// cursorName is the key under which a resource's watch position is kept.
func (t target) cursorName(namespace string) string {
	return t.gvr.Group + "/" + t.gvr.Version + "/" + t.gvr.Resource + "@" + namespace
}

func (t target) isEvent() bool { return t.gvr.Resource == "events" }

// resolve asks discovery for the preferred version of each wanted resource.
func (in *Ingester) resolve(ctx context.Context) ([]target, error) {
	lists, err := discovery.ServerPreferredResources(in.disc)
	if err != nil {
		var gdf *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &gdf) || len(lists) == 0 {
			return nil, fmt.Errorf("discover the API: %w", err)
		}
		for gv, e := range gdf.Groups {
			in.opt.OnSkip(&input.Skip{Err: fmt.Errorf("API group %s could not be discovered (%v): its resources are skipped", gv, e)})
		}
	}
	served := map[schema.GroupResource]target{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerbs(r.Verbs, "list", "watch") {
				continue
			}
			served[schema.GroupResource{Group: gv.Group, Resource: r.Name}] = target{
				gvr: gv.WithResource(r.Name), kind: r.Kind, namespaced: r.Namespaced}
		}
	}
	var out []target
	for _, w := range in.opt.Resources {
		t, ok := served[schema.GroupResource{Group: w.Group, Resource: w.Resource}]
		if !ok {
			if !w.Optional {
				in.opt.OnSkip(&input.Skip{Err: fmt.Errorf("%s is not served by this cluster: skipped", groupResource(w.Group, w.Resource))})
			} else {
				in.opt.Logger.Debug("optional resource absent", "resource", groupResource(w.Group, w.Resource))
			}
			continue
		}
		out = append(out, t)
	}
	in.mapper = restMapper(in.disc)
	return out, ctx.Err()
}

func hasVerbs(have metav1.Verbs, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			if h == w {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func groupResource(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

// Snapshot lists every resource, page by page, into one ingest run per
// resource. A resource the credentials may not list is skipped with a
// warning; the rest go on.
func (in *Ingester) Snapshot(ctx context.Context) ([]timeline.IngestRun, error) {
	targets, err := in.resolve(ctx)
	if err != nil {
		return nil, err
	}
	var runs []timeline.IngestRun
	for _, t := range targets {
		run, err := in.list(ctx, t)
		if run != nil {
			runs = append(runs, *run)
		}
		if err != nil {
			if skip := in.skippable(t, err); skip != "" {
				in.opt.OnSkip(&input.Skip{Err: errors.New(skip)})
				continue
			}
			return runs, err
		}
	}
	return runs, nil
}

// skippable returns a warning for errors that concern one resource only.
func (in *Ingester) skippable(t target, err error) string {
	name := groupResource(t.gvr.Group, t.gvr.Resource)
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Sprintf("%s: forbidden for these credentials (RBAC): skipped; the rest is ingested", name)
	case apierrors.IsNotFound(err), apierrors.IsMethodNotSupported(err):
		return fmt.Sprintf("%s: not served (%v): skipped", name, err)
	}
	return ""
}

// list reads one resource with paged LISTs into a new run. (Follow lists
// through listInto, which streams to its writer.)
func (in *Ingester) list(ctx context.Context, t target) (*timeline.IngestRun, error) {
	src := timeline.SourceObject
	if t.isEvent() {
		src = timeline.SourceEvent
	}
	run := &timeline.IngestRun{Source: src, Path: in.runPath(t)}
	if err := in.store.BeginRun(ctx, run); err != nil {
		return nil, err
	}
	ri := in.resource(t)
	var (
		listRV string
		item   int64
		listed = map[string]bool{}
	)
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		l, err := ri.List(ctx, opts)
		if err == nil {
			listRV = l.GetResourceVersion()
		}
		return l, err
	})
	p.PageSize = in.opt.PageSize
	// Pages only: a full re-list from the watch cache would hide paging bugs
	// and cost the apiserver more than the pager's fallback is worth here.
	p.PageBufferSize = 0
	batch, err := in.store.Batch(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	err = p.EachListItemWithAlloc(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("list %s: unexpected %T", t.gvr, obj)
		}
		item++
		listed[string(u.GetUID())] = true
		if err := in.add(ctx, batch, run, t, u, item); err != nil {
			return err
		}
		if item%5000 == 0 {
			if err := batch.Commit(ctx, run); err != nil {
				return err
			}
			if batch, err = in.store.Batch(ctx, run.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		batch.Rollback()
		run.Status, run.Error = timeline.RunFailed, err.Error()
		in.store.FinishRun(context.WithoutCancel(ctx), run)
		return run, fmt.Errorf("list %s: %w", groupResource(t.gvr.Group, t.gvr.Resource), err)
	}
	if !t.isEvent() {
		if err := in.reconcile(ctx, batch, run, t, listed); err != nil {
			batch.Rollback()
			return run, err
		}
	}
	if err := batch.Commit(ctx, run); err != nil {
		return run, err
	}
	run.Status = timeline.RunDone
	run.Lines = item
	if err := in.store.FinishRun(ctx, run); err != nil {
		return run, err
	}
	in.opt.Logger.Debug("listed", "resource", t.gvr.String(), "items", item, "resourceVersion", listRV)
	return run, nil
}

func (in *Ingester) runPath(t target) string {
	ns := in.opt.Namespace
	if ns == "" || !t.namespaced {
		ns = "*"
	}
	return fmt.Sprintf("cluster://%s/%s?namespace=%s", in.host, strings.TrimPrefix(t.gvr.Group+"/"+t.gvr.Version+"/"+t.gvr.Resource, "/"), ns)
}

func (in *Ingester) resource(t target) dynamic.ResourceInterface {
	r := in.dyn.Resource(t.gvr)
	if t.namespaced && in.opt.Namespace != "" {
		return r.Namespace(in.opt.Namespace)
	}
	return r
}

// add stores one listed or watched object; a malformed Event is skipped
// with a warning.
func (in *Ingester) add(ctx context.Context, b timeline.Batch, run *timeline.IngestRun, t target, u *unstructured.Unstructured, item int64) error {
	err := storeObject(ctx, b, run, t, u, timeline.Evidence{Run: run.ID, Line: item}, in.opt.Now(), in.mapper)
	var bad *badObject
	if errors.As(err, &bad) {
		run.BadLines++
		in.opt.OnSkip(&input.Skip{Err: fmt.Errorf("%s %s/%s: %v: skipped", t.gvr.Resource, u.GetNamespace(), u.GetName(), bad.err)})
		return nil
	}
	return err
}

// badObject is an object that cannot be stored; the rest go on.
type badObject struct{ err error }

func (b *badObject) Error() string { return b.err.Error() }

// storeObject stores one object, wherever it came from: an Event as a
// record, anything else as an object version, counted in run.
func storeObject(ctx context.Context, b timeline.Batch, run *timeline.IngestRun, t target, u *unstructured.Unstructured,
	ev timeline.Evidence, now time.Time, mapper meta.RESTMapper) error {
	if t.isEvent() {
		rec, err := eventRecord(u, mapper)
		if err != nil {
			return &badObject{err}
		}
		rec.Evidence = ev
		res, err := b.AddRecord(ctx, rec)
		if err != nil {
			return err
		}
		count(run, rec.Time, res)
		return nil
	}
	v, err := version(u, t, now)
	if err != nil {
		return &badObject{err}
	}
	v.Evidence = ev
	added, err := b.AddVersion(ctx, v)
	if err != nil {
		return err
	}
	if added {
		run.Versions++
	} else {
		run.Duplicates++
	}
	stretch(run, v.Time)
	return nil
}

// count tallies a stored record in its run.
func count(run *timeline.IngestRun, t time.Time, res timeline.AddResult) {
	run.Tally(res)
	stretch(run, t)
}

// stretch widens the run's time range to t.
func stretch(run *timeline.IngestRun, t time.Time) {
	if !t.IsZero() && (run.First.IsZero() || t.Before(run.First)) {
		run.First = t
	}
	if t.After(run.Last) {
		run.Last = t
	}
}

// version turns an object into an object version. Its time is the latest
// time the object itself records (created, fields managed, deleted), which
// is when this version came to be at the latest; failing that, now.
func version(u *unstructured.Unstructured, t target, now time.Time) (*timeline.ObjectVersion, error) {
	body, err := json.Marshal(u.Object)
	if err != nil {
		return nil, err
	}
	gv, _ := schema.ParseGroupVersion(u.GetAPIVersion())
	kind := u.GetKind()
	if kind == "" {
		kind = t.kind
	}
	return &timeline.ObjectVersion{
		Object: timeline.ObjectRef{Group: gv.Group, Version: gv.Version, Resource: t.gvr.Resource, Kind: kind,
			Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID())},
		ResourceVersion: u.GetResourceVersion(),
		Time:            objectTime(u, now),
		Seen:            timeline.SeenInferred,
		Content:         body,
	}, nil
}

func objectTime(u *unstructured.Unstructured, now time.Time) time.Time {
	var times []time.Time
	if ts := u.GetCreationTimestamp(); !ts.IsZero() {
		times = append(times, ts.Time)
	}
	if ts := u.GetDeletionTimestamp(); ts != nil {
		times = append(times, ts.Time)
	}
	for _, mf := range u.GetManagedFields() {
		if mf.Time != nil {
			times = append(times, mf.Time.Time)
		}
	}
	if len(times) == 0 {
		return now.UTC()
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	return times[len(times)-1].UTC()
}

// reconcile records as deleted the objects the store holds as live that a
// complete LIST no longer shows: deleted while nobody watched (a watch that
// expired, a follow that was stopped, an earlier snapshot).
func (in *Ingester) reconcile(ctx context.Context, b timeline.Batch, run *timeline.IngestRun, t target, listed map[string]bool) error {
	ns := ""
	if t.namespaced {
		ns = in.opt.Namespace
	}
	live, err := in.store.LiveObjects(ctx, t.gvr.Group, t.gvr.Resource, ns)
	if err != nil {
		return err
	}
	now := in.opt.Now().UTC()
	for _, ref := range live {
		if listed[ref.UID] {
			continue
		}
		res, err := b.AddRecord(ctx, deletionRecord(ref, now, true, timeline.Evidence{Run: run.ID}))
		if err != nil {
			return err
		}
		count(run, now, res)
	}
	return nil
}
