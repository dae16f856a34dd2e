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
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/faultline/faultline/timeline"
)

// change is one thing a watch saw, on its way to the writer.
type change struct {
	t       target
	typ     watch.EventType
	obj     *unstructured.Unstructured
	cursor  string // resourceVersion to resume from once this is committed
	relists bool   // the watch expired (410): the resource was listed again
}

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
	changes := make(chan change, 1024)
	errc := make(chan error, len(targets))
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := in.watchLoop(ctx, t, changes); err != nil {
				if msg := in.skippable(t, err); msg != "" {
					in.opt.OnWarning(msg)
					return
				}
				errc <- err
			}
		}()
	}
	go func() { wg.Wait(); close(changes) }()
	werr := in.writeChanges(ctx, run, changes)
	run.Status = timeline.RunDone
	select {
	case err := <-errc:
		werr = errors.Join(werr, err)
	default:
	}
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
	backoff := wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 1 << 30, Cap: 15 * time.Second}
	for ctx.Err() == nil {
		if rv == "" {
			_, listRV, err := in.list(ctx, t)
			if err != nil {
				if !retryable(err) {
					return err
				}
				in.opt.Logger.Info("list failed; retrying", "resource", t.gvr.String(), "err", err)
				sleep(ctx, backoff.Step())
				continue
			}
			rv = listRV
			select {
			case out <- change{t: t, cursor: rv, relists: true}:
			case <-ctx.Done():
				return nil
			}
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
			backoff = wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 1 << 30, Cap: 15 * time.Second}
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
				c := change{t: t, typ: ev.Type, cursor: rv}
				if ev.Type != watch.Bookmark {
					c.obj = u
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
// reached, until the watchers stop.
func (in *Ingester) writeChanges(ctx context.Context, run *timeline.IngestRun, changes <-chan change) error {
	var (
		batch   timeline.Batch
		pending int
		cursors = map[string]string{}
		tick    = time.NewTicker(flushEvery)
		item    int64
	)
	defer tick.Stop()
	flush := func() error {
		if batch == nil {
			return nil
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
	for {
		select {
		case c, ok := <-changes:
			if !ok {
				return flush()
			}
			if batch == nil {
				var err error
				if batch, err = in.store.Batch(ctx, run.ID); err != nil {
					return err
				}
			}
			if c.obj != nil {
				item++
				if err := in.add(ctx, batch, run, c.t, c.obj, item); err != nil {
					batch.Rollback()
					return err
				}
				if c.typ == watch.Deleted && !c.t.isEvent() {
					if err := in.addDeletion(ctx, batch, run, c.t, c.obj, item); err != nil {
						batch.Rollback()
						return err
					}
				}
				pending++
			}
			cursors[c.t.cursorName(in.opt.Namespace)] = c.cursor
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
	rec := &timeline.Record{
		Key:    "deleted\x00" + string(u.GetUID()),
		Time:   at,
		Source: timeline.SourceObject,
		Verb:   "deleted",
		Object: timeline.ObjectRef{Group: gv.Group, Version: gv.Version, Resource: t.gvr.Resource, Kind: gv.Kind,
			Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID())},
		Evidence: timeline.Evidence{Run: run.ID, Line: item},
	}
	res, err := b.AddRecord(ctx, rec)
	if err != nil {
		return err
	}
	count(run, at, res)
	return nil
}
