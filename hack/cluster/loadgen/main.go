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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
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

func run(ctx context.Context) error {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "admin kubeconfig")
	ns := flag.String("namespace", "ml", "the job's namespace")
	job := flag.String("job", "trainer", "the job's name: ConfigMap JOB-env, Secret JOB-creds, ServiceAccounts JOB-worker-NNNN")
	workers := flag.Int("workers", 1000, "workers")
	watchFor := flag.Duration("watch-for", 20*time.Second, "how long each worker watches")
	timeout := flag.Duration("timeout", 15*time.Second, "per-request timeout; a worker whose request fails is a failed worker")
	jitter := flag.Duration("jitter", 0, "spread the starts uniformly over this window")
	scoped := flag.Bool("scoped", false, "read as the fix would: namespace+label scoped, resourceVersion=0")
	seed := flag.Uint64("seed", 1, "seed for the jitter")
	setup := flag.Bool("setup-only", false, "create ServiceAccounts, tokens and RBAC, write the tokens to -tokens, then exit")
	tokenFile := flag.String("tokens", "", "the workers' tokens, one per line: written by -setup-only, read otherwise")
	ua := flag.String("user-agent", "trainer/2.3 (linux/amd64) client-go/v0.37.2", "the workers' user agent")
	failPods := flag.Bool("fail-pods", false, "when a worker gives up, its pod (label app=JOB, completion index = worker) exits 1 at once (through kwok's chaos stage)")
	flag.Parse()

	admin, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", *kubeconfig, err)
	}
	admin.QPS, admin.Burst = 50, 100
	var tokens []string
	if *setup || *tokenFile == "" {
		if tokens, err = prepare(ctx, admin, *ns, *job, *workers); err != nil {
			return err
		}
		if *setup {
			return os.WriteFile(*tokenFile, []byte(strings.Join(tokens, "\n")+"\n"), 0o600)
		}
	} else {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return err
		}
		tokens = strings.Fields(string(b))
		if len(tokens) < *workers {
			return fmt.Errorf("%s: %d tokens for %d workers", *tokenFile, len(tokens), *workers)
		}
	}

	var (
		s         = summary{Workers: *workers, UserAgent: *ua, UserPrefix: "system:serviceaccount:" + *ns + ":" + *job + "-worker-"}
		requests  atomic.Int64
		throttled atomic.Int64
		mu        sync.Mutex
		wg        sync.WaitGroup
	)
	var podOf map[int]string
	if *failPods {
		if podOf, err = podsByIndex(ctx, admin, *ns, *job); err != nil {
			return err
		}
	}
	rng := rand.New(rand.NewPCG(*seed, 0))
	delays := make([]time.Duration, *workers)
	for i := range delays {
		if *jitter > 0 {
			delays[i] = time.Duration(rng.Int64N(int64(*jitter)))
		}
	}
	s.Start = time.Now().UTC()
	for i := range *workers {
		cfg := workerConfig(admin, tokens[i], *ua, *timeout)
		tlsConfig, err := rest.TLSConfigFor(admin)
		if err != nil {
			return err
		}
		count := func(resp *http.Response) {
			requests.Add(1)
			if resp != nil && resp.StatusCode == http.StatusTooManyRequests {
				if throttled.Add(1) == 1 {
					mu.Lock()
					s.First429 = time.Now().UTC()
					mu.Unlock()
				}
			}
		}
		cfg.Transport = &counting{next: &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 2}, count: count}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			time.Sleep(delays[i])
			if err := work(ctx, cfg, *ns, *job, *watchFor, *scoped); err != nil {
				mu.Lock()
				s.Failed = append(s.Failed, i)
				s.FailedError = append(s.FailedError, fmt.Sprintf("%d: %v", i, err))
				mu.Unlock()
				if pod := podOf[i]; pod != "" {
					if err := exitPod(ctx, admin, *ns, pod, err); err != nil {
						slog.Warn("could not fail pod", "pod", pod, "err", err)
					}
				}
			}
		}(i)
	}
	wg.Wait()
	s.End = time.Now().UTC()
	s.Requests, s.Throttled = requests.Load(), throttled.Load()
	sort.Ints(s.Failed)
	sort.Strings(s.FailedError)
	slog.Info("done", "workers", *workers, "failed", len(s.Failed), "requests", s.Requests, "429s", s.Throttled, "took", s.End.Sub(s.Start))
	return json.NewEncoder(os.Stdout).Encode(s)
}

// work is one worker's start-up.
func work(ctx context.Context, cfg *rest.Config, ns, job string, watchFor time.Duration, scoped bool) error {
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := c.CoreV1().ConfigMaps(ns).Get(ctx, job+"-env", metav1.GetOptions{}); err != nil {
		return fmt.Errorf("get configmap: %w", err)
	}
	if _, err := c.CoreV1().Secrets(ns).Get(ctx, job+"-creds", metav1.GetOptions{}); err != nil {
		return fmt.Errorf("get secret: %w", err)
	}
	listNS, opts := "", metav1.ListOptions{}
	if scoped {
		listNS, opts = ns, metav1.ListOptions{LabelSelector: "app=" + job, ResourceVersion: "0"}
	}
	pods, err := c.CoreV1().Pods(listNS).List(ctx, opts)
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, watchFor)
	defer cancel()
	w, err := c.CoreV1().Pods(listNS).Watch(wctx, metav1.ListOptions{
		LabelSelector: opts.LabelSelector, ResourceVersion: pods.ResourceVersion,
		TimeoutSeconds: ptr.To(int64(watchFor.Seconds())), AllowWatchBookmarks: true,
	})
	if err != nil {
		if wctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("watch pods: %w", err)
	}
	defer w.Stop()
	for range w.ResultChan() {
	}
	return nil
}

func workerConfig(admin *rest.Config, token, ua string, timeout time.Duration) *rest.Config {
	return &rest.Config{
		Host:        admin.Host,
		BearerToken: token,
		UserAgent:   ua,
		QPS:         -1, // naive: no client-side rate limit
		Timeout:     timeout,
	}
}

type counting struct {
	next  http.RoundTripper
	count func(*http.Response)
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	c.count(resp)
	return resp, err
}

// prepare creates the job's ConfigMap and Secret, one ServiceAccount per
// worker with a token of its own, and the RBAC the workers need.
func prepare(ctx context.Context, admin *rest.Config, ns, job string, workers int) ([]string, error) {
	c, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return nil, err
	}
	create := func(what string, err error) error {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s: %w", what, err)
		}
		return nil
	}
	_, err = c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err := create("namespace", err); err != nil {
		return nil, err
	}
	_, err = c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: job + "-creds"},
		StringData: map[string]string{"WANDB_API_KEY": "not-a-real-key", "S3_SECRET": "not-a-real-secret"},
	}, metav1.CreateOptions{})
	if err := create("secret", err); err != nil {
		return nil, err
	}
	_, err = c.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: job + "-worker"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets", "pods"}, Verbs: []string{"get", "list", "watch"}}},
	}, metav1.CreateOptions{})
	if err := create("role", err); err != nil {
		return nil, err
	}
	group := []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "system:serviceaccounts:" + ns}}
	_, err = c.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: job + "-worker"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: job + "-worker"},
		Subjects:   group,
	}, metav1.CreateOptions{})
	if err := create("rolebinding", err); err != nil {
		return nil, err
	}
	_, err = c.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + job + "-pods"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}}},
	}, metav1.CreateOptions{})
	if err := create("clusterrole", err); err != nil {
		return nil, err
	}
	_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + job + "-pods"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: ns + "-" + job + "-pods"},
		Subjects:   group,
	}, metav1.CreateOptions{})
	if err := create("clusterrolebinding", err); err != nil {
		return nil, err
	}

	tokens := make([]string, workers)
	for i := range workers {
		name := fmt.Sprintf("%s-worker-%04d", job, i)
		_, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err := create("serviceaccount "+name, err); err != nil {
			return nil, err
		}
		tr, err := c.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("token for %s: %w", name, err)
		}
		tokens[i] = tr.Status.Token
	}
	return tokens, nil
}

// podsByIndex maps completion indexes to the job's pod names.
func podsByIndex(ctx context.Context, admin *rest.Config, ns, job string) (map[int]string, error) {
	c, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return nil, err
	}
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + job})
	if err != nil {
		return nil, fmt.Errorf("list pods of %s: %w", job, err)
	}
	out := map[int]string{}
	for _, p := range pods.Items {
		if i, err := strconv.Atoi(p.Labels["batch.kubernetes.io/job-completion-index"]); err == nil {
			out[i] = p.Name
		}
	}
	return out, nil
}

// exitPod makes a pod's container exit 1 with the worker's error, through
// kwok's chaos stage: the annotations say how, the label says now.
func exitPod(ctx context.Context, admin *rest.Config, ns, pod string, cause error) error {
	c, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return err
	}
	msg := "worker gave up"
	if apierrors.IsTooManyRequests(cause) || strings.Contains(cause.Error(), "too many requests") {
		msg = "the server has received too many requests and has asked us to try again later"
	} else if strings.Contains(cause.Error(), "deadline") || strings.Contains(cause.Error(), "Timeout") {
		msg = "timed out waiting for the apiserver"
	}
	const stage = "pod-container-running-failed.stage.kwok.x-k8s.io"
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{stage + "/reason": "Error", stage + "/message": msg, stage + "/exit-code": "1"},
		"labels":      map[string]string{stage: "true"},
	}})
	if err != nil {
		return err
	}
	_, err = c.CoreV1().Pods(ns).Patch(ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
