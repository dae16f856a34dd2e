package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// Cluster is the running control plane (hack/cluster/up) as the zoo drives
// it: the admin, kwok (which plays the kubelets) and named actors, each a
// user of its own with a user agent of its own, so the audit log says who
// made each change.
type Cluster struct {
	Dir   string // FAULTLINE_CLUSTER_DIR
	Out   string // the incident folder: a family writes evidence of its own there (nodelogs/)
	Admin *kubernetes.Clientset
	Kwok  *kubernetes.Clientset // status written as a kubelet would
	cfg   *rest.Config
	rng   *rand.Rand
	seed  int64
	log   *slog.Logger

	mu     sync.Mutex
	actors map[string]*kubernetes.Clientset
	tokens map[string]string
}

// Actor is who makes a change: a user and the client it used.
type Actor struct {
	User      string `json:"user"`
	UserAgent string `json:"userAgent,omitempty"`
}

// The people and automation that change things on the zoo's clusters
// (hack/cluster/up gives each a token). A seed draws one as the actor of
// the injected change; the same actor also makes the decoy changes.
var actorUsers = []string{"alice@example.com", "bob@example.com", "deploy-bot", "platform-automation"}

var userAgents = []string{
	"kubectl/v1.37.2 (linux/amd64) kubernetes/0f2e1c3",
	"argocd-application-controller/v2.14.3",
	"helm/v3.17.1",
	"kubectl/v1.36.4 (darwin/arm64) kubernetes/9a8b7c6",
	"platform-operator/1.9.0 (linux/amd64) client-go/v0.37.2",
}

func newCluster(family string, seed int64, log *slog.Logger) (*Cluster, error) {
	dir := os.Getenv("FAULTLINE_CLUSTER_DIR")
	if dir == "" {
		return nil, fmt.Errorf("FAULTLINE_CLUSTER_DIR is not set: run under hack/cluster/zoo")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.kubeconfig"))
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 200, 400
	admin, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	kcfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kwok.kubeconfig"))
	if err != nil {
		return nil, err
	}
	kcfg.QPS, kcfg.Burst = 200, 400
	kcfg.UserAgent = "kubelet/v1.37.2 (linux/amd64) kubernetes/kwok"
	kw, err := kubernetes.NewForConfig(kcfg)
	if err != nil {
		return nil, err
	}
	tokens, err := readTokens(filepath.Join(dir, "tokens.csv"))
	if err != nil {
		return nil, err
	}
	return &Cluster{Dir: dir, Admin: admin, Kwok: kw, cfg: cfg, seed: seed, log: log,
		// The family is mixed into the stream, so seed 1 of two families
		// draws two different scales, namespaces and timings.
		rng: rand.New(rand.NewPCG(uint64(seed), fnv64(family))), actors: map[string]*kubernetes.Clientset{}, tokens: tokens}, nil
}

func readTokens(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := map[string]string{}
	for _, row := range rows {
		if len(row) >= 2 {
			out[row[1]] = row[0]
		}
	}
	return out, nil
}

// As returns a client acting as the actor.
func (c *Cluster) As(a Actor) *kubernetes.Clientset {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := a.User + "\x00" + a.UserAgent
	if cs, ok := c.actors[key]; ok {
		return cs
	}
	token, ok := c.tokens[a.User]
	if !ok {
		panic("zoorec: no token for actor " + a.User + " (hack/cluster/up creates them)")
	}
	cfg := rest.CopyConfig(c.cfg)
	cfg.BearerToken, cfg.BearerTokenFile, cfg.UserAgent = token, "", a.UserAgent
	cfg.Username, cfg.Password, cfg.CertFile, cfg.KeyFile, cfg.CertData, cfg.KeyData = "", "", "", "", nil, nil
	cs := kubernetes.NewForConfigOrDie(cfg)
	c.actors[key] = cs
	return cs
}

// Intn draws from the seed.
func (c *Cluster) Intn(n int) int { return c.rng.IntN(n) }

// Between draws an integer in [lo, hi].
func (c *Cluster) Between(lo, hi int) int { return lo + c.rng.IntN(hi-lo+1) }

// Pick draws one of xs.
func Pick[T any](c *Cluster, xs []T) T { return xs[c.rng.IntN(len(xs))] }

// Dur draws a duration in [lo, hi].
func (c *Cluster) Dur(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(c.rng.Int64N(int64(hi-lo)+1))
}

// DrawActor draws the actor of an incident's changes.
func (c *Cluster) DrawActor() Actor {
	return Actor{User: Pick(c, actorUsers), UserAgent: Pick(c, userAgents)}
}

// Now is the instant, as the truth records it.
func Now() time.Time { return time.Now().UTC() }

// Sleep waits, or returns early when ctx ends.
func Sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// until polls f every interval until it returns true or the timeout passes.
func until(ctx context.Context, timeout time.Duration, what string, f func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := f()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s: %s", timeout, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Namespace creates a namespace (idempotent) and waits for its default
// ServiceAccount, which pods need.
func (c *Cluster) Namespace(ctx context.Context, ns string) error {
	_, err := c.Admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return until(ctx, 60*time.Second, "default ServiceAccount in "+ns, func() (bool, error) {
		_, err := c.Admin.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// ConfigMap creates or replaces a ConfigMap as the admin (setup, not a change).
func (c *Cluster) ConfigMap(ctx context.Context, ns, name string, data map[string]string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: data}
	_, err := c.Admin.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = c.Admin.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	}
	return err
}

// Secret creates a Secret as the admin.
func (c *Cluster) Secret(ctx context.Context, ns, name string, data map[string]string) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: data}
	_, err := c.Admin.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = c.Admin.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
	}
	return err
}

// Patch applies a merge patch to a namespaced core object as the actor and
// returns when it is stored. kind is "configmaps", "secrets" or "pods".
func (c *Cluster) PatchAs(ctx context.Context, a Actor, kind, ns, name string, patch any) error {
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	cs := c.As(a)
	switch kind {
	case "configmaps":
		_, err = cs.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{})
	case "secrets":
		_, err = cs.CoreV1().Secrets(ns).Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{})
	case "pods":
		_, err = cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{})
	case "deployments":
		_, err = cs.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{})
	case "nodes":
		_, err = cs.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{})
	default:
		return fmt.Errorf("PatchAs: unknown kind %s", kind)
	}
	if err != nil {
		return fmt.Errorf("patch %s %s/%s as %s: %w", kind, ns, name, a.User, err)
	}
	return nil
}

// Template is what a workload's pods run.
type Template struct {
	Image        string
	Container    string // default "main"
	Env          []corev1.EnvVar
	EnvFrom      []corev1.EnvFromSource
	Volumes      []corev1.Volume
	Mounts       []corev1.VolumeMount
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	Priority     string
	GPU          bool
	GPUs         int    // GPUs a pod takes, when more than GPU's one
	Memory       string // the container's memory limit ("4Gi"), if any
	Readiness    *corev1.Probe
	Init         *corev1.Container // an init container run before the main one, if any
	Labels       map[string]string
	// ServiceAccount the pods run as (empty: the namespace's default).
	ServiceAccount string
	// Restricted: the pods run as Pod Security's restricted profile asks
	// (non-root, no privilege escalation, no capabilities, the runtime's
	// seccomp profile).
	Restricted bool
	// PullSecrets: the Secrets the kubelet pulls the pods' images with.
	PullSecrets []string
}

func (t Template) spec(restart corev1.RestartPolicy) corev1.PodSpec {
	name := t.Container
	if name == "" {
		name = "main"
	}
	sel := map[string]string{"type": "kwok"}
	for k, v := range t.NodeSelector {
		sel[k] = v
	}
	c := corev1.Container{Name: name, Image: t.Image, Env: t.Env, EnvFrom: t.EnvFrom, VolumeMounts: t.Mounts, ReadinessProbe: t.Readiness}
	if t.GPU || t.GPUs > 0 {
		c.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(int64(max(t.GPUs, 1)), resource.DecimalSI)}
	}
	if t.Memory != "" {
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		c.Resources.Limits[corev1.ResourceMemory] = resource.MustParse(t.Memory)
	}
	var inits []corev1.Container
	if t.Init != nil {
		inits = []corev1.Container{*t.Init}
	}
	var psc *corev1.PodSecurityContext
	if t.Restricted {
		psc = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(10001)),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
		c.SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	}
	var pull []corev1.LocalObjectReference
	for _, n := range t.PullSecrets {
		pull = append(pull, corev1.LocalObjectReference{Name: n})
	}
	return corev1.PodSpec{RestartPolicy: restart, NodeSelector: sel, Containers: []corev1.Container{c}, InitContainers: inits,
		Volumes: t.Volumes, Tolerations: t.Tolerations, PriorityClassName: t.Priority, ServiceAccountName: t.ServiceAccount,
		SecurityContext: psc, ImagePullSecrets: pull, TerminationGracePeriodSeconds: ptr.To(int64(0))}
}

func labelsWith(base map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for a, b := range base {
		out[a] = b
	}
	return out
}

// Job creates an Indexed Job of pods started at once (a training job) as
// the actor and waits until they all run.
func (c *Cluster) Job(ctx context.Context, a Actor, ns, name string, pods, backoff int, t Template, opts ...func(*batchv1.Job)) error {
	if err := c.Namespace(ctx, ns); err != nil {
		return err
	}
	labels := labelsWith(t.Labels, "app", name)
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To(int32(pods)), Completions: ptr.To(int32(pods)),
			CompletionMode: ptr.To(batchv1.IndexedCompletion), BackoffLimit: ptr.To(int32(backoff)),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: t.spec(corev1.RestartPolicyNever)},
		},
	}
	for _, o := range opts {
		o(j)
	}
	if _, err := c.As(a).BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create job %s/%s: %w", ns, name, err)
	}
	return c.WaitRunning(ctx, ns, "app="+name, pods, 5*time.Minute)
}

// WaitRunning waits until at least n pods matching the selector run.
func (c *Cluster) WaitRunning(ctx context.Context, ns, selector string, n int, timeout time.Duration) error {
	return until(ctx, timeout, fmt.Sprintf("%d pods %s running in %s", n, selector, ns), func() (bool, error) {
		pods, err := c.Running(ctx, ns, selector)
		return len(pods) >= n, err
	})
}

// Pods lists the pods matching a selector, sorted by name.
func (c *Cluster) Pods(ctx context.Context, ns, selector string) ([]corev1.Pod, error) {
	l, err := c.Admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items, nil
}

// Running lists the running pods matching a selector.
func (c *Cluster) Running(ctx context.Context, ns, selector string) ([]corev1.Pod, error) {
	pods, err := c.Pods(ctx, ns, selector)
	var out []corev1.Pod
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, err
}

const chaos = "pod-container-running-failed.stage.kwok.x-k8s.io"

// FailPods makes the pods' containers exit through kwok's chaos stage (a
// Job's pods: restartPolicy Never), with the reason, exit code and message
// a real container would leave, and waits until the first is Failed. It
// returns the earliest finishedAt of the pods it failed.
func (c *Cluster) FailPods(ctx context.Context, ns string, pods []string, reason string, code int, msg string) (time.Time, error) {
	if len(pods) == 0 {
		return time.Time{}, nil
	}
	msg = strings.ReplaceAll(msg, ":", " -") // kwok's stage template breaks on a colon
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{chaos + "/reason": reason, chaos + "/message": msg, chaos + "/exit-code": fmt.Sprint(code)},
		"labels":      map[string]string{chaos: "true"},
	}})
	for _, p := range pods {
		if _, err := c.Admin.CoreV1().Pods(ns).Patch(ctx, p, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return time.Time{}, fmt.Errorf("fail pod %s/%s: %w", ns, p, err)
		}
	}
	var first time.Time
	err := until(ctx, 60*time.Second, "a failed pod in "+ns, func() (bool, error) {
		for _, name := range pods {
			p, err := c.Admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				continue
			}
			for _, cs := range p.Status.ContainerStatuses {
				if t := cs.State.Terminated; t != nil && (first.IsZero() || t.FinishedAt.Time.Before(first)) {
					first = t.FinishedAt.Time.UTC()
				}
			}
		}
		return !first.IsZero(), nil
	})
	return first, err
}

// CrashLoop reports the pods as a kubelet reports a container that exits
// at start again and again (restartPolicy Always): CrashLoopBackOff with
// the last termination, the digest that ran, and a BackOff event. It
// returns when it reported the first one.
func (c *Cluster) CrashLoop(ctx context.Context, ns string, pods []corev1.Pod, image, digest, msg string) (time.Time, error) {
	return c.crashLoopAs(ctx, ns, pods, image, digest, "Error", 1, msg)
}

// crashLoopAs is CrashLoop with the last termination's reason and exit
// code (OOMKilled, 137: the kernel killed it at its memory limit).
func (c *Cluster) crashLoopAs(ctx context.Context, ns string, pods []corev1.Pod, image, digest, reason string, code int32, msg string) (time.Time, error) {
	return c.notReady(ctx, ns, pods, "crash-loop", func(p corev1.Pod, name string, t time.Time) (corev1.ContainerStatus, string, string) {
		ts := metav1.NewTime(t)
		return corev1.ContainerStatus{Name: name, Image: image, ImageID: digest, RestartCount: 3,
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container=" + name + " pod=" + p.Name}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: msg, StartedAt: ts, FinishedAt: ts}}},
			"BackOff", "Back-off restarting failed container " + name + " in pod " + p.Name
	})
}

// PullFail reports the pods as a kubelet reports a container whose image
// it cannot pull: ImagePullBackOff with the pull's error, not ready, and a
// Failed event. It returns when it reported the first one.
func (c *Cluster) PullFail(ctx context.Context, ns string, pods []corev1.Pod, image, msg string) (time.Time, error) {
	return c.notReady(ctx, ns, pods, "pull-fail", func(p corev1.Pod, name string, t time.Time) (corev1.ContainerStatus, string, string) {
		return corev1.ContainerStatus{Name: name, Image: image,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image \"" + image + "\": " + msg}}},
			"Failed", "Failed to pull image \"" + image + "\": " + msg
	})
}

// notReady reports each pod's first container as the status func says,
// the pod not ready, with the Warning event it gives; pods gone are
// skipped. It returns when it reported the first one.
func (c *Cluster) notReady(ctx context.Context, ns string, pods []corev1.Pod, what string,
	status func(p corev1.Pod, container string, t time.Time) (cs corev1.ContainerStatus, reason, msg string)) (time.Time, error) {
	var first time.Time
	for _, p := range pods {
		t := Now()
		if first.IsZero() {
			first = t
		}
		cs, reason, msg := status(p, p.Spec.Containers[0].Name, t)
		patch := map[string]any{"status": map[string]any{
			"conditions": []map[string]any{
				{"type": "Ready", "status": "False", "reason": "ContainersNotReady", "lastTransitionTime": t.Format(time.RFC3339)},
				{"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady", "lastTransitionTime": t.Format(time.RFC3339)}},
			"containerStatuses": []corev1.ContainerStatus{cs}}}
		b, _ := json.Marshal(patch)
		if _, err := c.Kwok.CoreV1().Pods(ns).Patch(ctx, p.Name, types.StrategicMergePatchType, b, metav1.PatchOptions{}, "status"); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return first, fmt.Errorf("%s %s/%s: %w", what, ns, p.Name, err)
		}
		c.Event(ctx, &p, "Warning", reason, msg, t)
	}
	return first, nil
}

// kubeletFailed reports the pods Failed as their kubelet reports a pod it
// gave up on (evicted, rejected at admission): the pod's reason and
// message (msg), not ready, the conditions and container statuses more
// adds, and the Warning event of that reason; pause runs after each. Pods
// gone are skipped. It returns when the first was reported.
func (c *Cluster) kubeletFailed(ctx context.Context, pods []corev1.Pod, reason string, msg func(corev1.Pod) string,
	more func(p corev1.Pod, msg string, t time.Time) ([]map[string]any, []corev1.ContainerStatus), pause func()) (time.Time, error) {
	var first time.Time
	for _, p := range pods {
		t := Now()
		m := msg(p)
		conds, cs := more(p, m, t)
		conds = append([]map[string]any{{"type": "Ready", "status": "False", "reason": "PodFailed", "lastTransitionTime": t.Format(time.RFC3339)}}, conds...)
		b, _ := json.Marshal(map[string]any{"status": map[string]any{"phase": "Failed", "reason": reason, "message": m,
			"conditions": conds, "containerStatuses": cs}})
		if _, err := c.Kwok.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, b, metav1.PatchOptions{}, "status"); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return first, fmt.Errorf("%s %s/%s: %w", reason, p.Namespace, p.Name, err)
		}
		if first.IsZero() {
			first = t
		}
		c.Event(ctx, &p, "Warning", reason, m, t)
		if pause != nil {
			pause()
		}
	}
	return first, nil
}

// ReportImage reports the digest a running pod pulled, as a kubelet does.
func (c *Cluster) ReportImage(ctx context.Context, ns string, pods []corev1.Pod, image, digest string) error {
	for _, p := range pods {
		cs := corev1.ContainerStatus{Name: p.Spec.Containers[0].Name, Image: image, ImageID: digest, Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(Now())}}}
		b, _ := json.Marshal(map[string]any{"status": map[string]any{"containerStatuses": []corev1.ContainerStatus{cs}}})
		if _, err := c.Kwok.CoreV1().Pods(ns).Patch(ctx, p.Name, types.StrategicMergePatchType, b, metav1.PatchOptions{}, "status"); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("report image of %s/%s: %w", ns, p.Name, err)
		}
	}
	return nil
}

// Event records an event about a pod, as its kubelet would.
func (c *Cluster) Event(ctx context.Context, p *corev1.Pod, typ, reason, msg string, at time.Time) {
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: p.Name + ".", Namespace: p.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		Reason:         reason, Message: msg, Type: typ, Count: 1,
		Source:         corev1.EventSource{Component: "kubelet", Host: p.Spec.NodeName},
		FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at),
	}
	if _, err := c.Kwok.CoreV1().Events(p.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		c.log.Warn("event", "pod", p.Name, "err", err)
	}
}

// names returns the pods' names.
func names(pods []corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

// refs returns "Pod/NS/NAME" for each pod.
func refs(pods []corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = "Pod/" + p.Namespace + "/" + p.Name
	}
	return out
}

// fnv64 is the FNV-1a hash of s.
func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := range len(s) {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// crashBoundary is the boundary of an incident whose first bad is a
// failure the family made: known to within two seconds.
func crashBoundary(lastGood, firstBad time.Time) *Boundary {
	return &Boundary{LastGood: lastGood, FirstBad: firstBad, Tolerance: "2s"}
}
