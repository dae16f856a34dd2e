// Command loadgen plays the workers of a training job that start at once and
// each do what naive workers do against the apiserver: GET their ConfigMap
// and Secret, LIST every pod in the cluster without a resourceVersion (served
// from etcd, not the watch cache), then WATCH pods cluster-wide. Every worker
// is its own identity (a ServiceAccount token of its own) with its own
// connection, as separate pods would be.
//
//	loadgen -kubeconfig admin.kubeconfig -namespace ml -workers 1000 -job trainer
//
// It creates the ServiceAccounts and RBAC it needs (as admin), waits for
// -start-at if given, runs the workers and prints one JSON summary on stdout:
// when the burst started and ended, the first 429, and the workers that
// failed (exhausted client-go's retries or timed out), so the recording
// script can kill those pods and write the ground truth.
//
// -jitter spreads the starts over a window and -scoped makes the workers
// read the way the fixes would (namespace and label scoped, resourceVersion=0
// from the watch cache): the recording uses neither, they are there to check
// what the fixes would have done.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline/faultline/hack/cluster/internal/apiload"
)

type summary struct {
	Workers     int       `json:"workers"`
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	First429    time.Time `json:"first429,omitzero"`
	Requests    int64     `json:"requests"`
	Throttled   int64     `json:"throttled"`
	Failed      []int     `json:"failed"`
	FailedError []string  `json:"failedError"`
	UserAgent   string    `json:"userAgent"`
	UserPrefix  string    `json:"userPrefix"`
}

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// options are the command's flag values.
type options struct {
	kubeconfig, ns, job string
	workers             int
	watchFor, timeout   time.Duration
	jitter              time.Duration
	scoped              bool
	seed                uint64
	setup               bool
	tokenFile           string
	ua                  string
	failPods            bool
}

func parseFlags() options {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "admin kubeconfig")
	flag.StringVar(&o.ns, "namespace", "ml", "the job's namespace")
	flag.StringVar(&o.job, "job", "trainer", "the job's name: ConfigMap JOB-env, Secret JOB-creds, ServiceAccounts JOB-worker-NNNN")
	flag.IntVar(&o.workers, "workers", 1000, "workers")
	flag.DurationVar(&o.watchFor, "watch-for", 20*time.Second, "how long each worker watches")
	flag.DurationVar(&o.timeout, "timeout", 15*time.Second, "per-request timeout; a worker whose request fails is a failed worker")
	flag.DurationVar(&o.jitter, "jitter", 0, "spread the starts uniformly over this window")
	flag.BoolVar(&o.scoped, "scoped", false, "read as the fix would: namespace+label scoped, resourceVersion=0")
	flag.Uint64Var(&o.seed, "seed", 1, "seed for the jitter")
	flag.BoolVar(&o.setup, "setup-only", false, "create ServiceAccounts, tokens and RBAC, write the tokens to -tokens, then exit")
	flag.StringVar(&o.tokenFile, "tokens", "", "the workers' tokens, one per line: written by -setup-only, read otherwise")
	flag.StringVar(&o.ua, "user-agent", "trainer/2.3 (linux/amd64) client-go/v0.37.2", "the workers' user agent")
	flag.BoolVar(&o.failPods, "fail-pods", false, "when a worker gives up, its pod (label app=JOB, completion index = worker) exits 1 at once (through kwok's chaos stage)")
	flag.Parse()
	return o
}

func run(ctx context.Context) error {
	o := parseFlags()
	admin, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", o.kubeconfig, err)
	}
	admin.QPS, admin.Burst = 50, 100
	tokens, err := workerTokens(ctx, admin, o)
	if err != nil || o.setup {
		return err
	}
	// Pods fail as their workers give up, not at the admin's rate.
	unlimited := rest.CopyConfig(admin)
	unlimited.QPS = -1
	cs, err := kubernetes.NewForConfig(unlimited)
	if err != nil {
		return err
	}
	var podOf map[int]string
	if o.failPods {
		if podOf, err = apiload.PodsByIndex(ctx, cs, o.ns, o.job); err != nil {
			return err
		}
	}
	s, err := runWorkers(ctx, admin, cs, o, tokens, podOf)
	if err != nil {
		return err
	}
	slog.Info("done", "workers", o.workers, "failed", len(s.Failed), "requests", s.Requests, "429s", s.Throttled, "took", s.End.Sub(s.Start))
	return json.NewEncoder(os.Stdout).Encode(s)
}

// workerTokens creates the workers' identities (prepare) and, with
// -setup-only, writes their tokens to -tokens; or, given -tokens, reads
// them from it.
func workerTokens(ctx context.Context, admin *rest.Config, o options) ([]string, error) {
	if o.setup || o.tokenFile == "" {
		tokens, err := prepare(ctx, admin, o.ns, o.job, o.workers)
		if err != nil {
			return nil, err
		}
		if o.setup {
			return tokens, os.WriteFile(o.tokenFile, []byte(strings.Join(tokens, "\n")+"\n"), 0o600)
		}
		return tokens, nil
	}
	b, err := os.ReadFile(o.tokenFile)
	if err != nil {
		return nil, err
	}
	tokens := strings.Fields(string(b))
	if len(tokens) < o.workers {
		return nil, fmt.Errorf("%s: %d tokens for %d workers", o.tokenFile, len(tokens), o.workers)
	}
	return tokens, nil
}

// startDelays draws each worker's delay before its first request: uniform
// over -jitter, none without it.
func startDelays(o options) []time.Duration {
	rng := rand.New(rand.NewPCG(o.seed, 0))
	delays := make([]time.Duration, o.workers)
	for i := range delays {
		if o.jitter > 0 {
			delays[i] = time.Duration(rng.Int64N(int64(o.jitter)))
		}
	}
	return delays
}

// runWorkers runs the workers at once and sums up what became of them. A
// worker that gives up has its pod (podOf) fail, with -fail-pods.
func runWorkers(ctx context.Context, admin *rest.Config, cs *kubernetes.Clientset, o options, tokens []string, podOf map[int]string) (summary, error) {
	var (
		s       = summary{Workers: o.workers, UserAgent: o.ua, UserPrefix: apiload.UserPrefix(o.ns, o.job+"-worker-")}
		counter apiload.Counter
		mu      sync.Mutex
		wg      sync.WaitGroup
	)
	delays := startDelays(o)
	// What a naive worker does at start-up: GET its ConfigMap and Secret,
	// LIST pods, then WATCH them from the list's resourceVersion for
	// -watch-for (client-go's per-request -timeout cuts it shorter). Any
	// failure is fatal.
	pods := apiload.Op{Verb: "watch", Resource: "pods"}
	if o.scoped {
		pods = apiload.Op{Verb: "watch", Resource: "pods", Namespace: o.ns, Selector: "app=" + o.job, Cached: true}
	}
	start := []apiload.Op{
		{Verb: "get", Resource: "configmaps", Namespace: o.ns, Names: []string{o.job + "-env"}},
		{Verb: "get", Resource: "secrets", Namespace: o.ns, Names: []string{o.job + "-creds"}},
	}
	s.Start = time.Now().UTC()
	for i := range o.workers {
		cfg, err := counter.Config(admin, tokens[i], o.ua, o.timeout)
		if err != nil {
			return s, err
		}
		w := &apiload.Worker{Config: cfg, Delay: delays[i], Start: start, Watch: []apiload.Op{pods},
			WatchFor: o.watchFor, Tries: 1}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := w.Run(ctx); err != nil {
				mu.Lock()
				s.Failed = append(s.Failed, i)
				s.FailedError = append(s.FailedError, fmt.Sprintf("%d: %v", i, err))
				mu.Unlock()
				if pod := podOf[i]; pod != "" {
					if err := apiload.ExitPod(ctx, cs, o.ns, pod, apiload.GiveUpMessage(err)); err != nil {
						slog.Warn("could not fail pod", "pod", pod, "err", err)
					}
				}
			}
		}(i)
	}
	wg.Wait()
	s.End = time.Now().UTC()
	s.Requests, s.Throttled, s.First429 = counter.Requests(), counter.Count(http.StatusTooManyRequests), counter.First(http.StatusTooManyRequests, time.Time{})
	sort.Ints(s.Failed)
	sort.Strings(s.FailedError)
	return s, nil
}

// prepare creates the job's Secret, one ServiceAccount per worker with a
// token of its own, and the RBAC the workers need.
func prepare(ctx context.Context, admin *rest.Config, ns, job string, workers int) ([]string, error) {
	c, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return nil, err
	}
	if err := apiload.Namespace(ctx, c, ns); err != nil {
		return nil, err
	}
	_, err = c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: job + "-creds"},
		StringData: map[string]string{"WANDB_API_KEY": "not-a-real-key", "S3_SECRET": "not-a-real-secret"},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create secret: %w", err)
	}
	group := apiload.NamespaceServiceAccounts(ns)
	read := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets", "pods"}, Verbs: []string{"get", "list", "watch"}}}
	if err := apiload.Role(ctx, c, ns, job+"-worker", read, group); err != nil {
		return nil, err
	}
	pods := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}}}
	if err := apiload.ClusterRole(ctx, c, ns+"-"+job+"-pods", pods, group); err != nil {
		return nil, err
	}
	return apiload.ServiceAccounts(ctx, c, ns, job+"-worker-", workers, 1)
}
