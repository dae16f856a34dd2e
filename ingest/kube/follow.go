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

// followWriter is the one writer of a follow: it batches what the watchers
// saw, commits it with the positions to resume from, and keeps the ingest
// run of each LIST under way.
type followWriter struct {
	in      *Ingester
	run     *timeline.IngestRun // the follow's run: watched changes go to it
	batch   timeline.Batch      // open, or nil
	pending int                 // changes in batch
	cursors map[string]string   // positions to commit with the batch, by cursor name
	lists   map[string]*timeline.IngestRun
	item    int64 // changes written, numbering their evidence
}

// writeChanges commits changes in batches, each with the positions it
// reached, until the watchers stop. LISTs get ingest runs of their own.
func (in *Ingester) writeChanges(ctx context.Context, run *timeline.IngestRun, changes <-chan change) error {
	w := &followWriter{in: in, run: run, cursors: map[string]string{}, lists: map[string]*timeline.IngestRun{}}
	defer w.abandon(ctx)
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	for {
		select {
		case c, ok := <-changes:
			if !ok {
				return w.flush(ctx)
			}
			if err := w.handle(ctx, c); err != nil {
				return err
			}
		case <-tick.C:
			if err := w.flush(ctx); err != nil {
				return err
			}
		}
	}
}

// handle writes one change; a thousand pending are committed.
func (w *followWriter) handle(ctx context.Context, c change) error {
	name := c.t.cursorName(w.in.opt.Namespace)
	switch c.kind {
	case changeListStart:
		return w.listStart(ctx, c.t, name)
	case changeListEnd:
		return w.listEnd(ctx, c, name)
	}
	if err := w.open(ctx); err != nil {
		return err
	}
	if c.kind == changeObject {
		if err := w.object(ctx, c, name); err != nil {
			return err
		}
	}
	if c.cursor != "" && w.lists[name] == nil {
		w.cursors[name] = c.cursor
	}
	if w.pending >= 1000 {
		return w.flush(ctx)
	}
	return nil
}

// object writes an object a watch or a LIST page saw, into the run of its
// LIST if one is under way, and its deletion as a record of its own.
func (w *followWriter) object(ctx context.Context, c change, name string) error {
	into := w.run
	if lr := w.lists[name]; lr != nil {
		into = lr
	}
	w.item++
	if err := w.in.add(ctx, w.batch, into, c.t, c.obj, w.item); err != nil {
		return err
	}
	if c.typ == watch.Deleted && !c.t.isEvent() {
		if err := w.in.addDeletion(ctx, w.batch, into, c.t, c.obj, w.item); err != nil {
			return err
		}
	}
	w.pending++
	return nil
}

// listStart begins the run of a LIST, ending as failed the one it
// interrupts.
func (w *followWriter) listStart(ctx context.Context, t target, name string) error {
	if err := w.flush(ctx); err != nil {
		return err
	}
	if err := w.endList(ctx, name, timeline.RunFailed, "interrupted; listed again"); err != nil {
		return err
	}
	lr := &timeline.IngestRun{Source: timeline.SourceObject, Path: w.in.runPath(t)}
	if t.isEvent() {
		lr.Source = timeline.SourceEvent
	}
	if err := w.in.store.BeginRun(ctx, lr); err != nil {
		return err
	}
	w.lists[name] = lr
	return nil
}

// listEnd completes a LIST: what it no longer shows was deleted unseen,
// and the watch resumes from its position.
func (w *followWriter) listEnd(ctx context.Context, c change, name string) error {
	lr := w.lists[name]
	if lr == nil {
		return nil
	}
	if !c.t.isEvent() {
		// The items are committed first, so the store sees them.
		if err := w.flush(ctx); err != nil {
			return err
		}
		if err := w.open(ctx); err != nil {
			return err
		}
		if err := w.in.reconcile(ctx, w.batch, lr, c.t, c.listed); err != nil {
			return err
		}
	}
	w.cursors[name] = c.cursor
	if err := w.flush(ctx); err != nil {
		return err
	}
	return w.endList(ctx, name, timeline.RunDone, "")
}

// open opens a batch if none is.
func (w *followWriter) open(ctx context.Context) error {
	if w.batch != nil {
		return nil
	}
	var err error
	w.batch, err = w.in.store.Batch(ctx, w.run.ID)
	return err
}

// flush commits what is pending: changes, and positions alone too (an
// empty LIST or a bookmark still moves the cursor).
func (w *followWriter) flush(ctx context.Context) error {
	if w.batch == nil && len(w.cursors) == 0 {
		return nil
	}
	if err := w.open(ctx); err != nil {
		return err
	}
	for name, rv := range w.cursors {
		if err := w.batch.SetCursor(ctx, name, rv); err != nil {
			return err
		}
	}
	err := w.batch.Commit(ctx, w.run)
	w.batch, w.pending = nil, 0
	clear(w.cursors)
	return err
}

// endList finishes the run of the LIST name, if one is under way.
func (w *followWriter) endList(ctx context.Context, name string, status timeline.RunStatus, msg string) error {
	lr := w.lists[name]
	if lr == nil {
		return nil
	}
	delete(w.lists, name)
	lr.Status, lr.Error = status, msg
	return w.in.store.FinishRun(context.WithoutCancel(ctx), lr)
}

// abandon rolls back an open batch (only on an error path: a clean end
// flushes) and fails the LISTs still under way.
func (w *followWriter) abandon(ctx context.Context) {
	if w.batch != nil {
		w.batch.Rollback()
	}
	for name := range w.lists {
		w.endList(ctx, name, timeline.RunFailed, "the follow stopped before this list completed")
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
