package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/pager"

	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/timeline"
)

// change is one thing a watcher saw, on its way to the writer, which alone
// writes to the store (SQLite has one writer; watchers that each held a
// transaction would queue on its lock).
type change struct {
	t      target
	kind   changeKind
	typ    watch.EventType // for changeObject
	obj    *unstructured.Unstructured
	cursor string          // resourceVersion to resume from once this is committed
	listed map[string]bool // for changeListEnd: the uids the LIST returned
}

type changeKind int

const (
	changeObject    changeKind = iota // an object from a watch event or a LIST page
	changeBookmark                    // only a new position
	changeListStart                   // a LIST begins: items follow, then changeListEnd
	changeListEnd                     // the LIST is complete: reconcile, then resume from cursor
)

// flushEvery bounds how long a change waits before it is committed.
const flushEvery = 500 * time.Millisecond

// Follow keeps the timeline up to date until ctx is done: each resource is
// listed (or, if a previous follow committed a position, resumed from it)
// and then watched with bookmarks. A watch that expires (410 Gone) is
// re-listed; throttling (429), server errors and a lost connection are
// retried with backoff. Everything seen is committed with its position, so
// a restart loses and repeats nothing. It returns nil when ctx is cancelled.
func (in *Ingester) Follow(ctx context.Context) error {
	targets, err := in.resolve(ctx)
	if err != nil {
		return err
	}
	run := &timeline.IngestRun{Source: timeline.SourceObject, Path: fmt.Sprintf("cluster://%s/watch", in.host)}
	if err := in.store.BeginRun(ctx, run); err != nil {
		return err
	}
	// A watcher that fails for good, or a writer that cannot write, stops
	// the others: the follow ends with what was committed and the error.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changes := make(chan change, 1024)
	errc := make(chan error, len(targets))
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := in.watchLoop(wctx, t, changes); err != nil {
				if msg := in.skippable(t, err); msg != "" {
					in.opt.OnSkip(&input.Skip{Err: errors.New(msg)})
					return
				}
				errc <- err
				cancel()
			}
		}()
	}
	go func() { wg.Wait(); close(changes); close(errc) }()
	werr := in.writeChanges(ctx, run, changes)
	cancel()
	for range changes { // a failed writer leaves watchers blocked on sending
	}
	for err := range errc {
		werr = errors.Join(werr, err)
	}
	run.Status = timeline.RunDone
	if werr != nil {
		run.Status, run.Error = timeline.RunFailed, werr.Error()
	}
	if err := in.store.FinishRun(context.WithoutCancel(ctx), run); err != nil && werr == nil {
		werr = err
	}
	return werr
}

// watchLoop lists or resumes one resource, then watches it until ctx ends.
func (in *Ingester) watchLoop(ctx context.Context, t target, out chan<- change) error {
	name := t.cursorName(in.opt.Namespace)
	rv, err := in.store.Cursor(ctx, name)
	if err != nil {
		return err
	}
	newBackoff := func() wait.Backoff {
		return wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 1 << 30, Cap: 15 * time.Second}
	}
	backoff := newBackoff()
	for ctx.Err() == nil {
		if rv == "" {
			listRV, err := in.listInto(ctx, t, out)
			if err != nil {
				if !retryable(err) {
					return err
				}
				in.opt.Logger.Info("list failed; retrying", "resource", t.gvr.String(), "err", err)
				sleep(ctx, backoff.Step())
				continue
			}
			rv = listRV
		}
		next, err := in.watchOnce(ctx, t, rv, out)
		switch {
		case ctx.Err() != nil:
			return nil
		case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
			in.opt.Logger.Info("watch expired; listing again", "resource", t.gvr.String(), "resourceVersion", rv)
			rv = ""
		case err != nil && !retryable(err):
			return err
		case err != nil:
			in.opt.Logger.Info("watch failed; retrying", "resource", t.gvr.String(), "err", err)
			rv = next
			sleep(ctx, backoff.Step())
		default:
			rv = next
			backoff = newBackoff()
		}
	}
	return nil
}

// watchOnce runs one watch from rv and returns the position it reached.
func (in *Ingester) watchOnce(ctx context.Context, t target, rv string, out chan<- change) (string, error) {
	w, err := in.resource(t).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	if err != nil {
		return rv, err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return rv, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv, nil // the server closed the watch: resume
			}
			switch ev.Type {
			case watch.Error:
				return rv, apierrors.FromObject(ev.Object)
			case watch.Bookmark, watch.Added, watch.Modified, watch.Deleted:
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					return rv, fmt.Errorf("watch %s: unexpected %T", t.gvr, ev.Object)
				}
				rv = u.GetResourceVersion()
				c := change{t: t, kind: changeBookmark, cursor: rv}
				if ev.Type != watch.Bookmark {
					c.kind, c.typ, c.obj = changeObject, ev.Type, u
				}
				select {
				case out <- c:
				case <-ctx.Done():
					return rv, nil
				}
			}
		}
	}
}

// listInto lists a resource page by page and streams it to the writer,
// bracketed by changeListStart and changeListEnd. It returns the list's
// resourceVersion, from which the watch starts.
func (in *Ingester) listInto(ctx context.Context, t target, out chan<- change) (string, error) {
	send := func(c change) error {
		select {
		case out <- c:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := send(change{t: t, kind: changeListStart}); err != nil {
		return "", err
	}
	var listRV string
	listed := map[string]bool{}
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		l, err := in.resource(t).List(ctx, opts)
		if err == nil {
			listRV = l.GetResourceVersion()
		}
		return l, err
	})
	p.PageSize, p.PageBufferSize = in.opt.PageSize, 0
	err := p.EachListItemWithAlloc(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("list %s: unexpected %T", t.gvr, obj)
		}
		listed[string(u.GetUID())] = true
		return send(change{t: t, kind: changeObject, typ: watch.Added, obj: u})
	})
	if err != nil {
		// The writer closes the run as failed when the next list starts or
		// the follow ends; nothing is reconciled from a partial list.
		return "", err
	}
	return listRV, send(change{t: t, kind: changeListEnd, cursor: listRV, listed: listed})
}

// retryable reports errors that pass: throttling, server trouble, and a
// server that cannot be reached (restarting).
func retryable(err error) bool {
	if apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err) {
		return true
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return se.Status().Code >= http.StatusInternalServerError
	}
	return true // transport errors: connection refused, reset, EOF
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// writeChanges commits changes in batches, each with the positions it
// reached, until the watchers stop. LISTs get ingest runs of their own.
func (in *Ingester) writeChanges(ctx context.Context, run *timeline.IngestRun, changes <-chan change) error {
	var (
		batch   timeline.Batch
		pending int
		cursors = map[string]string{}
		lists   = map[string]*timeline.IngestRun{} // LISTs under way, by cursor name
		tick    = time.NewTicker(flushEvery)
		item    int64
	)
	defer tick.Stop()
	open := func() error {
		if batch != nil {
			return nil
		}
		var err error
		batch, err = in.store.Batch(ctx, run.ID)
		return err
	}
	// flush commits what is pending: changes, and positions alone too (an
	// empty LIST or a bookmark still moves the cursor).
	flush := func() error {
		if batch == nil && len(cursors) == 0 {
			return nil
		}
		if err := open(); err != nil {
			return err
		}
		for name, rv := range cursors {
			if err := batch.SetCursor(ctx, name, rv); err != nil {
				return err
			}
		}
		err := batch.Commit(ctx, run)
		batch, pending = nil, 0
		clear(cursors)
		return err
	}
	endList := func(name string, status timeline.RunStatus, msg string) error {
		lr := lists[name]
		if lr == nil {
			return nil
		}
		delete(lists, name)
		lr.Status, lr.Error = status, msg
		return in.store.FinishRun(context.WithoutCancel(ctx), lr)
	}
	defer func() {
		if batch != nil {
			batch.Rollback() // only on an error path: a clean end flushes
		}
		for name := range lists {
			endList(name, timeline.RunFailed, "the follow stopped before this list completed")
		}
	}()
	for {
		select {
		case c, ok := <-changes:
			if !ok {
				return flush()
			}
			name := c.t.cursorName(in.opt.Namespace)
			switch c.kind {
			case changeListStart:
				if err := flush(); err != nil {
					return err
				}
				if err := endList(name, timeline.RunFailed, "interrupted; listed again"); err != nil {
					return err
				}
				lr := &timeline.IngestRun{Source: timeline.SourceObject, Path: in.runPath(c.t)}
				if c.t.isEvent() {
					lr.Source = timeline.SourceEvent
				}
				if err := in.store.BeginRun(ctx, lr); err != nil {
					return err
				}
				lists[name] = lr
				continue
			case changeListEnd:
				lr := lists[name]
				if lr == nil {
					continue
				}
				if !c.t.isEvent() {
					// What the LIST no longer shows was deleted unseen. The
					// items are committed first, so the store sees them.
					if err := flush(); err != nil {
						return err
					}
					if err := open(); err != nil {
						return err
					}
					if err := in.reconcile(ctx, batch, lr, c.t, c.listed); err != nil {
						return err
					}
				}
				cursors[name] = c.cursor
				if err := flush(); err != nil {
					return err
				}
				if err := endList(name, timeline.RunDone, ""); err != nil {
					return err
				}
				continue
			}
			if err := open(); err != nil {
				return err
			}
			if c.kind == changeObject {
				into := run
				if lr := lists[name]; lr != nil {
					into = lr
				}
				item++
				if err := in.add(ctx, batch, into, c.t, c.obj, item); err != nil {
					return err
				}
				if c.typ == watch.Deleted && !c.t.isEvent() {
					if err := in.addDeletion(ctx, batch, into, c.t, c.obj, item); err != nil {
						return err
					}
				}
				pending++
			}
			if c.cursor != "" && lists[name] == nil {
				cursors[name] = c.cursor
			}
			if pending >= 1000 {
				if err := flush(); err != nil {
					return err
				}
			}
		case <-tick.C:
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

// addDeletion records that an object was deleted, as a record of its own.
func (in *Ingester) addDeletion(ctx context.Context, b timeline.Batch, run *timeline.IngestRun, t target, u *unstructured.Unstructured, item int64) error {
	at := in.opt.Now().UTC()
	if ts := u.GetDeletionTimestamp(); ts != nil {
		at = ts.UTC()
	}
	gv := u.GroupVersionKind()
	ref := timeline.ObjectRef{Group: gv.Group, Version: gv.Version, Resource: t.gvr.Resource, Kind: gv.Kind,
		Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID())}
	res, err := b.AddRecord(ctx, deletionRecord(ref, at, false, timeline.Evidence{Run: run.ID, Line: item}))
	if err != nil {
		return err
	}
	count(run, at, res)
	return nil
}

// deletionRecord is the record of an object's deletion: seen in a watch, or
// inferred from its absence in a later LIST (then "at" is when it was found
// missing, a bound and not the moment).
func deletionRecord(ref timeline.ObjectRef, at time.Time, inferred bool, ev timeline.Evidence) *timeline.Record {
	r := &timeline.Record{
		Key:      "deleted\x00" + ref.UID,
		Time:     at,
		Source:   timeline.SourceObject,
		Verb:     "deleted",
		Object:   ref,
		Evidence: ev,
	}
	if inferred {
		r.Message = "absent when listed again: deleted at or before this time"
		r.Extra = []byte(`{"inferred":true}`)
	}
	return r
}
