package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/ingest/kube"
	"github.com/faultline/faultline/internal/termsafe"
	"github.com/faultline/faultline/timeline"
)

type ingestClusterOptions struct {
	f        *Factory
	kube     *kubeFlags
	allNS    bool
	follow   bool
	qps      float32
	burst    int
	pageSize int64
	// readTimeout bounds each request but a WATCH (deadline).
	readTimeout time.Duration
}

func newIngestClusterCmd(f *Factory) *cobra.Command {
	opts := &ingestClusterOptions{f: f, kube: newKubeFlags()}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Ingest a live cluster's objects and events through its API",
		Long: `Ingest a live cluster through its API, read-only (get, list and watch only).

A snapshot lists, 500 objects a page: Events (core/v1 and events.k8s.io/v1,
each update of an Event a record of its own, keeping its count and
lastTimestamp), Pods, Nodes, Jobs, CronJobs, Deployments, ReplicaSets,
StatefulSets, DaemonSets, ConfigMaps and Secrets (the store keeps per-key
hashes, never values), and the gang-job CRDs that ML clusters run (MPIJob,
PyTorchJob, TFJob, JobSet, PodGroup) where the API serves them. A resource
the credentials may not list is skipped with a warning.

With --follow it then watches, with bookmarks, until interrupted: a restart
resumes from the position the database holds, an expired watch (410 Gone) is
listed again, and throttling or server errors are retried with backoff.
An object the new list lacks is recorded as deleted (inferred, at the list's
time); one created and deleted between the lost watch and the new list was
never seen by faultline and is not in the timeline (the apiserver's audit log
has it). Ctrl-C stops it with everything seen committed.

Without -n, all namespaces are read.`,
		Example: `  faultline ingest cluster
  faultline ingest cluster --context prod-east -n llm-pretrain
  faultline ingest cluster --follow --db incident.db`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return ingestClusterRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	opts.kube.addFlags(cmd)
	fl.BoolVarP(&opts.allNS, "all-namespaces", "A", false, "read all namespaces (the default without -n)")
	fl.BoolVar(&opts.follow, "follow", false, "after the snapshot, watch for changes until interrupted")
	fl.Float32Var(&opts.qps, "qps", 20, "client-side requests per second to the apiserver")
	fl.IntVar(&opts.burst, "burst", 40, "client-side request burst")
	fl.Int64Var(&opts.pageSize, "page-size", 500, "objects per LIST page")
	fl.DurationVar(&opts.readTimeout, "read-timeout", time.Minute,
		"the longest one GET or LIST page may take, its body included (a WATCH is long-running and not bounded; --request-timeout bounds every request, WATCH too)")
	return cmd
}

// deadline bounds every request but a WATCH (long-running by design) with
// a timeout, its body included: an apiserver that accepts a LIST and never
// answers must not hold the ingest forever.
type deadline struct {
	next http.RoundTripper
	d    time.Duration
}

func (t deadline) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.d <= 0 || req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1" {
		return t.next.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.d)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		if ctx.Err() == context.DeadlineExceeded {
			return nil, fmt.Errorf("%s %s: no answer within --read-timeout %s: %w", req.Method, req.URL.Path, t.d, err)
		}
		return nil, err
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	return resp, nil
}

// cancelOnClose releases a request's timeout when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// readOnly refuses, below client-go, any request that is not a GET: the
// ingester must never change the cluster it investigates.
type readOnly struct{ next http.RoundTripper }

func (r readOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		return nil, fmt.Errorf("faultline is read-only: refused to send %s %s", req.Method, req.URL.Path)
	}
	return r.next.RoundTrip(req)
}

func (o *ingestClusterOptions) restConfig() (*rest.Config, error) {
	cfg, err := o.kube.restConfig()
	if err != nil {
		return nil, usagef("faultline ingest cluster --kubeconfig ~/.kube/config --context NAME", "no usable cluster configuration: %v", err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "faultline/" + o.f.Version
	cfg.QPS, cfg.Burst = o.qps, o.burst
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return readOnly{rt} })
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return deadline{rt, o.readTimeout} })
	return cfg, nil
}

func ingestClusterRun(ctx context.Context, o *ingestClusterOptions) error {
	f := o.f
	ns := o.kube.namespace()
	if o.allNS && ns != "" {
		return usagef("faultline ingest cluster -A", "-A and -n %s contradict each other", ns)
	}
	cfg, err := o.restConfig()
	if err != nil {
		return err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := disc.ServerVersion(); err != nil {
		return clusterError(cfg.Host, err)
	}
	store, err := f.OpenStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	host := cfg.Host
	if u, err := url.Parse(cfg.Host); err == nil && u.Host != "" {
		host = u.Host
	}
	in := kube.New(store, dyn, disc, host, kube.Options{
		Namespace: ns,
		PageSize:  o.pageSize,
		Logger:    f.Logger(),
		OnSkip:    func(s *input.Skip) { f.warnf("%s", s) },
		Now:       f.Now,
	})
	if o.follow {
		termsafe.Fprintf(f.IO.ErrOut, "following %s (Ctrl-C to stop)\n", host)
		err = in.Follow(ctx)
		if err == nil {
			fmt.Fprintln(f.IO.ErrOut, "stopped; everything seen is committed")
		}
	} else {
		runs, serr := in.Snapshot(ctx)
		for _, r := range runs {
			printRunSummary(f.IO.ErrOut, &r, 0)
		}
		err = serr
	}
	if err != nil {
		return clusterError(cfg.Host, err)
	}
	return analyze(ctx, store)
}

// clusterError says what a failure to talk to the cluster means.
func clusterError(host string, err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the cluster at %s rejected the credentials (expired token?): %w", host, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the cluster at %s forbids this: %w", host, err)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("cannot reach the cluster at %s (check --kubeconfig, --context, and that it is up): %w", host, err)
	}
	return err
}

func newIngestObjectsCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "objects PATH...",
		Short: "Ingest offline dumps of Kubernetes objects and events",
		Long: `Ingest objects and events saved from a cluster, for when all you have is
artifacts: the output of kubectl get -o json or -o yaml (Lists or single
objects), multi-document YAML, .gz files, and folders of them such as a
must-gather (walked for *.json, *.yaml and *.yml). Events become records,
everything else object versions, exactly as ingest cluster stores them.

A bad YAML document or List item is reported as FILE: document N: problem
and skipped; the documents and items around it are kept. Lists are read
item by item, so a dump of any size fits in memory.`,
		Example: `  kubectl get pods,nodes,jobs,configmaps -A -o json > snapshot.json
  kubectl get events -A -o json > events.json
  faultline ingest objects snapshot.json events.json
  faultline ingest objects ./must-gather.local.5512/`,
		Args: argsAtLeast(1, "faultline ingest objects snapshot.json"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ingestFilesRun(cmd.Context(), f, func(ctx context.Context, store timeline.Appender) ([]timeline.IngestRun, error) {
				return kube.IngestFiles(ctx, store, args, kube.FileOptions{Now: f.Now,
					OnSkip: func(s *input.Skip) { f.warnf("%s", s) }})
			})
		},
	}
}
