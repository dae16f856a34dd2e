package apiload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Op is one thing a worker does against the apiserver.
type Op struct {
	Verb      string   // "get", "list", "watch" (a reflector: LIST, then WATCH from its resourceVersion, relisting whenever the watch ends) or "create"
	Resource  string   // "pods", "configmaps", "secrets" or "nodes"; for "create", any resource of Group and Version
	Namespace string   // "" for a cluster-wide LIST or WATCH (and for nodes)
	Names     []string // get: the objects, one request each
	Selector  string   // list, watch: a label selector
	// Cached lists with resourceVersion=0, served from the watch cache;
	// otherwise a LIST is a quorum read, served from etcd.
	Cached bool
	// Group and Version name a create's resource (a custom resource: the
	// dynamic client writes it); Object is its body, named by the server
	// from its metadata.generateName.
	Group, Version string
	Object         map[string]any
}

func (op Op) String() string {
	scope := "cluster-wide"
	if op.Namespace != "" {
		scope = "in " + op.Namespace
	}
	return fmt.Sprintf("%s %s %s", op.Verb, op.Resource, scope)
}

// Progress is how far a set of workers got, for whoever drives them to poll.
type Progress struct {
	Started  atomic.Int64 // workers through their Start ops
	Watching atomic.Int64 // watches open now
	GaveUp   atomic.Int64 // workers that gave up
}

// Worker is one client, as one pod of a workload would be: after Delay it
// does its Start ops once, in order; then it keeps each Watch op's watch
// open (relisting whenever it ends) and does its Repeat ops every Every,
// until ctx ends. A request that fails is tried again after Pause, up to
// Tries failed attempts in a row; then the worker gives up and Run returns
// the error. An attempt is one client-go call, client-go's own retries of
// 429s within it.
type Worker struct {
	Config *rest.Config // from Counter.Config
	Delay  time.Duration
	Start  []Op
	Watch  []Op
	Repeat []Op
	Every  time.Duration
	Tries  int // 0: never give up
	Pause  time.Duration
	// Jitter adds a random delay of up to this much to every Pause and
	// Every, and before relisting when a watch ends; 0 relists at once.
	Jitter time.Duration
	// ListTimeout, if set, is sent with every LIST (timeoutSeconds), as
	// the config's timeout is with every GET: the apiserver gives up on
	// the request after it, and APF sheds it with a 429 when it waited in
	// a queue for a quarter of it. (client-go sends no timeout with a LIST
	// unless asked to; the config's timeout still ends each attempt.)
	ListTimeout time.Duration
	// WatchFor, if set, holds each watch that long (or until the config's
	// per-request timeout cuts it) and then lets it be: no relist.
	// Otherwise watches are held (an hour each) until ctx ends.
	WatchFor time.Duration
	// WaitForServer: a request that never reached the apiserver
	// (connection refused or reset: it is down or restarting) is tried
	// again after Pause, and is no failed attempt.
	WaitForServer bool
	Seed          uint64    // draws the jitter
	Progress      *Progress // optional

	dyn dynamic.Interface // writes the creates
}

// Run runs the worker until it has nothing more to do, ctx ends (nil) or it
// gives up (the error).
func (w *Worker) Run(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(w.Config)
	if err != nil {
		return err
	}
	// Watches held until ctx ends outlive any per-request timeout: their
	// client has none. (With WatchFor, the config's timeout cuts a watch
	// short as it does in client-go.)
	wcfg := rest.CopyConfig(w.Config)
	if w.WatchFor == 0 {
		wcfg.Timeout = 0
	}
	wcs, err := kubernetes.NewForConfig(wcfg)
	if err != nil {
		return err
	}
	if w.dyn, err = dynamic.NewForConfig(w.Config); err != nil {
		return err
	}
	sleep(ctx, w.Delay)
	rng := w.rng(0)
	for _, op := range w.Start {
		if err := w.once(ctx, cs, op, rng); err != nil {
			return w.gaveUp(ctx, err)
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	if w.Progress != nil {
		w.Progress.Started.Add(1)
	}
	if len(w.Watch) == 0 && len(w.Repeat) == 0 {
		return nil
	}
	inner, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, len(w.Watch)+1)
	for i, op := range w.Watch {
		go func() { errc <- w.reflect(inner, cs, wcs, op, w.rng(uint64(i+1))) }()
	}
	n := len(w.Watch)
	if len(w.Repeat) > 0 {
		n++
		go func() { errc <- w.repeat(inner, cs, w.rng(uint64(len(w.Watch)+1))) }()
	}
	var first error
	for range n {
		if err := <-errc; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	if first != nil {
		return w.gaveUp(ctx, first)
	}
	return nil
}

func (w *Worker) rng(stream uint64) *rand.Rand { return rand.New(rand.NewPCG(w.Seed, stream)) }

func (w *Worker) gaveUp(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	if w.Progress != nil {
		w.Progress.GaveUp.Add(1)
	}
	return err
}

func (w *Worker) jitter(rng *rand.Rand) time.Duration {
	if w.Jitter <= 0 {
		return 0
	}
	return time.Duration(rng.Int64N(int64(w.Jitter)))
}

// once does one op (a GET of each of its objects, or a LIST), each
// request tried up to Tries times.
func (w *Worker) once(ctx context.Context, cs kubernetes.Interface, op Op, rng *rand.Rand) error {
	switch op.Verb {
	case "get":
		for _, name := range op.Names {
			if err := w.attempt(ctx, rng, func() error { return get(ctx, cs, op, name) }); err != nil {
				return fmt.Errorf("get %s %s: %w", op.Resource, name, err)
			}
		}
		return nil
	case "list":
		err := w.attempt(ctx, rng, func() error { _, err := list(ctx, cs, op, w.ListTimeout); return err })
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
	case "create":
		gvr := schema.GroupVersionResource{Group: op.Group, Version: op.Version, Resource: op.Resource}
		err := w.attempt(ctx, rng, func() error {
			obj := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(op.Object)}
			_, err := w.dyn.Resource(gvr).Namespace(op.Namespace).Create(ctx, obj, metav1.CreateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
	}
	return fmt.Errorf("apiload: %s: not a get, a list or a create", op)
}

// attempt calls f until it succeeds, ctx ends, or it failed Tries times in
// a row.
func (w *Worker) attempt(ctx context.Context, rng *rand.Rand, f func() error) error {
	fails := 0
	for {
		err := f()
		if err == nil || ctx.Err() != nil {
			return err
		}
		if !w.WaitForServer || !unreachable(err) {
			if fails++; w.Tries > 0 && fails >= w.Tries {
				return err
			}
		}
		sleep(ctx, w.Pause+w.jitter(rng))
	}
}

func (w *Worker) repeat(ctx context.Context, cs kubernetes.Interface, rng *rand.Rand) error {
	for {
		sleep(ctx, w.Every+w.jitter(rng))
		if ctx.Err() != nil {
			return nil
		}
		for _, op := range w.Repeat {
			if err := w.once(ctx, cs, op, rng); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
	}
}

// reflect keeps a watch open as a reflector does: LIST, WATCH from the
// list's resourceVersion, and when the watch ends, LIST again (unless
// WatchFor is set: then the first watch is held that long, and that is all).
func (w *Worker) reflect(ctx context.Context, cs, wcs kubernetes.Interface, op Op, rng *rand.Rand) error {
	fails := 0
	for ctx.Err() == nil {
		rv, err := list(ctx, cs, op, w.ListTimeout)
		if err == nil {
			if w.WatchFor > 0 {
				return w.watchOnce(ctx, wcs, op, rv)
			}
			var wi watch.Interface
			if wi, err = watchFrom(ctx, wcs, op, rv, time.Hour); err == nil {
				fails = 0
				w.watching(ctx, wi)
				sleep(ctx, w.jitter(rng))
				continue
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if !w.WaitForServer || !unreachable(err) {
			if fails++; w.Tries > 0 && fails >= w.Tries {
				return fmt.Errorf("%s: %w", op, err)
			}
		}
		sleep(ctx, w.Pause+w.jitter(rng))
	}
	return nil
}

func (w *Worker) watchOnce(ctx context.Context, wcs kubernetes.Interface, op Op, rv string) error {
	ctx, cancel := context.WithTimeout(ctx, w.WatchFor)
	defer cancel()
	wi, err := watchFrom(ctx, wcs, op, rv, w.WatchFor)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%s: %w", op, err)
	}
	w.watching(ctx, wi)
	return nil
}

func (w *Worker) watching(ctx context.Context, wi watch.Interface) {
	if w.Progress != nil {
		w.Progress.Watching.Add(1)
		defer w.Progress.Watching.Add(-1)
	}
	drain(ctx, wi)
}

// drain reads a watch until it ends (closed, or an error event such as
// 410 Gone) or ctx ends.
func drain(ctx context.Context, wi watch.Interface) {
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-wi.ResultChan():
			if !ok || ev.Type == watch.Error {
				return
			}
		}
	}
}

// unreachable says the request never got to the apiserver: it is down.
func unreachable(err error) bool {
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsHTTP2ConnectionLost(err) ||
		utilnet.IsProbableEOF(err)
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func listOptions(op Op, timeout time.Duration) metav1.ListOptions {
	opts := metav1.ListOptions{LabelSelector: op.Selector}
	if op.Cached {
		opts.ResourceVersion = "0"
	}
	if timeout > 0 {
		secs := int64(max(1, timeout.Round(time.Second).Seconds()))
		opts.TimeoutSeconds = &secs
	}
	return opts
}

func get(ctx context.Context, cs kubernetes.Interface, op Op, name string) error {
	var err error
	switch op.Resource {
	case "pods":
		_, err = cs.CoreV1().Pods(op.Namespace).Get(ctx, name, metav1.GetOptions{})
	case "configmaps":
		_, err = cs.CoreV1().ConfigMaps(op.Namespace).Get(ctx, name, metav1.GetOptions{})
	case "secrets":
		_, err = cs.CoreV1().Secrets(op.Namespace).Get(ctx, name, metav1.GetOptions{})
	case "nodes":
		_, err = cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	default:
		err = fmt.Errorf("apiload: unknown resource %q", op.Resource)
	}
	return err
}

// list returns the list's resourceVersion.
func list(ctx context.Context, cs kubernetes.Interface, op Op, timeout time.Duration) (string, error) {
	opts := listOptions(op, timeout)
	switch op.Resource {
	case "pods":
		l, err := cs.CoreV1().Pods(op.Namespace).List(ctx, opts)
		if err != nil {
			return "", err
		}
		return l.ResourceVersion, nil
	case "configmaps":
		l, err := cs.CoreV1().ConfigMaps(op.Namespace).List(ctx, opts)
		if err != nil {
			return "", err
		}
		return l.ResourceVersion, nil
	case "secrets":
		l, err := cs.CoreV1().Secrets(op.Namespace).List(ctx, opts)
		if err != nil {
			return "", err
		}
		return l.ResourceVersion, nil
	case "nodes":
		l, err := cs.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return "", err
		}
		return l.ResourceVersion, nil
	}
	return "", fmt.Errorf("apiload: unknown resource %q", op.Resource)
}

func watchFrom(ctx context.Context, cs kubernetes.Interface, op Op, rv string, timeout time.Duration) (watch.Interface, error) {
	secs := int64(timeout.Seconds())
	opts := metav1.ListOptions{LabelSelector: op.Selector, ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: &secs}
	switch op.Resource {
	case "pods":
		return cs.CoreV1().Pods(op.Namespace).Watch(ctx, opts)
	case "configmaps":
		return cs.CoreV1().ConfigMaps(op.Namespace).Watch(ctx, opts)
	case "secrets":
		return cs.CoreV1().Secrets(op.Namespace).Watch(ctx, opts)
	case "nodes":
		return cs.CoreV1().Nodes().Watch(ctx, opts)
	}
	return nil, fmt.Errorf("apiload: unknown resource %q", op.Resource)
}
