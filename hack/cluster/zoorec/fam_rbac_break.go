package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/faultline/faultline/hack/cluster/internal/apiload"
)

// Family rbac-break: a workload (a Job's workers, or a controller's
// replicas) reads ConfigMaps or pods through the API all the time, a few
// hundred requests a minute, as its ServiceAccounts are allowed to by a
// Role and RoleBinding. The actor, after changing an unrelated Role,
// deletes that RoleBinding or narrows that Role (a verb or a resource
// removed); from then on the workers get 403 Forbidden, and those that
// give up exit. A neighbour in the same namespace, bound to its own Role,
// reads the same way and stays healthy.

func init() {
	register(&Family{Name: "rbac-break",
		Summary: "a RoleBinding is deleted or a Role narrowed; a workload's ServiceAccounts get 403 and its workers give up",
		Run:     runRBACBreak})
}

var rbacWorkloads = []string{"feature-sync", "config-reloader", "label-sync", "quota-controller", "report-exporter", "cache-warmer"}

// rbacNamespaces are the team namespaces of the family (the kit's
// catalogue of teams).
var rbacNamespaces = []string{"ml", "research", "inference", "training", "recsys"}

// readRules is what a workload's Role grants: reading ConfigMaps and pods.
func readRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps", "pods"}, Verbs: []string{"get", "list", "watch"}}}
}

// rulesString is a Role's rules in one line, for the truth.
func rulesString(rules []rbacv1.PolicyRule) string {
	var out []string
	for _, r := range rules {
		out = append(out, strings.Join(r.Verbs, ",")+" "+strings.Join(r.Resources, ","))
	}
	return strings.Join(out, "; ")
}

// without returns the rules with the verb or the resource removed (a rule
// left with none is dropped).
func without(rules []rbacv1.PolicyRule, verb, resource string) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		r = *r.DeepCopy()
		r.Verbs = slices.DeleteFunc(r.Verbs, func(v string) bool { return v == verb })
		r.Resources = slices.DeleteFunc(r.Resources, func(v string) bool { return v == resource })
		if len(r.Verbs) > 0 && len(r.Resources) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// rbacBreak is what a seed draws for the family.
type rbacBreak struct {
	ns, name, version, kind string
	n                       int           // workers (a Job) or replicas (a Deployment)
	every                   time.Duration // each worker's read period
	resource, verb          string        // what the workers read
	mode                    string        // delete-binding, remove-verb or remove-resource
	tries                   int
	nb, nbVersion           string // the neighbour
	nbWorkers               int
	nbEvery                 time.Duration
	decoyNS, decoyRole      string // the unrelated Role changed first
	decoyAdd                string
	decoyGap                time.Duration
	actor                   Actor
}

func drawRBACBreak(c *Cluster) rbacBreak {
	var r rbacBreak
	r.ns, r.name, r.version = Pick(c, rbacNamespaces), Pick(c, rbacWorkloads), c.version()
	r.kind = Pick(c, []string{"Job", "Deployment"})
	// A few hundred reads a minute: many workers now and then, or a few
	// replicas every second or two.
	r.n, r.every = c.Between(20, 60), c.Dur(4*time.Second, 10*time.Second)
	if r.kind == "Deployment" {
		r.n, r.every = c.Between(4, 10), c.Dur(time.Second, 2*time.Second)
	}
	r.resource, r.verb = Pick(c, []string{"configmaps", "pods"}), Pick(c, []string{"get", "list"})
	r.mode = Pick(c, []string{"delete-binding", "remove-verb", "remove-resource"})
	r.tries = c.Between(2, 4)
	r.nb, r.nbVersion, r.nbWorkers = pickOther(c, rbacWorkloads, r.name), c.version(), c.Between(5, 15)
	r.nbEvery = c.Dur(5*time.Second, 15*time.Second)
	r.decoyNS, r.decoyRole = Pick(c, []string{"ci", r.ns, "ops"}), Pick(c, []string{"deployer", "debug-readers", "backup-operator"})
	r.decoyAdd = Pick(c, []string{"services", "events", "endpoints"})
	r.decoyGap = c.Dur(3*time.Second, 15*time.Second)
	r.actor = c.DrawActor()
	return r
}

// image is the workload's image; msg what its pods log when refused.
func (r *rbacBreak) image() string { return agentImage(r.name, r.version) }
func (r *rbacBreak) msg() string {
	return fmt.Sprintf("cannot %s %s in namespace %s - forbidden", r.verb, r.resource, r.ns)
}

func runRBACBreak(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	r := drawRBACBreak(c)
	c.log.Info("rbac-break", "ns", r.ns, "workload", r.kind+"/"+r.name, "workers", r.n, "every", r.every, "op", r.verb+" "+r.resource,
		"mode", r.mode, "tries", r.tries, "neighbour", r.nb, "decoy", r.decoyNS+"/"+r.decoyRole)

	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := r.setUp(ctx, c); err != nil {
		return "", err
	}
	stopNb, err := r.startNeighbour(ctx, c)
	if err != nil {
		return "", err
	}
	defer stopNb()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	cr, wait, err := r.startWorkload(ctx, wctx, stop, c)
	if err != nil {
		return "", err
	}
	defer wait()
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(10*time.Second, 20*time.Second))

	// The decoy, then the change, by the same actor.
	if err := r.decoy(ctx, c, e); err != nil {
		return "", err
	}
	lastGood := Now()
	Sleep(ctx, time.Second)
	ch, from, to, err := r.change(ctx, c)
	if err != nil {
		return "", err
	}
	c.log.Info("rbac changed", "ref", ch.Ref, "mode", r.mode, "from", from, "to", to)
	// Until every worker gave up (a Job fails at its first: the rest are
	// deleted with it).
	_ = until(wctx, 2*time.Minute, "workers giving up", func() (bool, error) {
		return cr.progress.GaveUp.Load() >= int64(r.n), nil
	})
	forbidden := cr.counter.Count(403)
	firstBad := cr.counter.FirstError(lastGood)
	gave, _ := cr.failures()
	c.log.Info("forbidden", "403s", forbidden, "gaveUp", len(gave), "err", cr.firstError())
	if firstBad.IsZero() || len(gave) == 0 {
		return "", fmt.Errorf("no 403 or no worker gave up: the incident did not happen (%d 403s, %d gave up)", forbidden, len(gave))
	}
	Sleep(ctx, c.Dur(10*time.Second, 15*time.Second))
	stop()
	wait()
	stopNb()
	bad, err := c.Pods(ctx, r.ns, "app="+r.name)
	if err != nil {
		return "", err
	}

	e.Boundary = crashBoundary(lastGood, firstBad)
	e.Changes = []Change{ch}
	r.truth(e, bad)
	e.Mitigation = []Action{{Action: "rollback", Target: ch.Ref}}
	e.extra("mode", r.mode)
	e.extra("rules", map[string]string{"from": from, "to": to})
	e.extra("reads", r.verb+" "+r.resource)
	e.extra("workers", r.n)
	e.extra("failedWorkers", len(gave))
	e.extra("forbidden", forbidden)
	return r.story(), nil
}

// setUp makes the namespace, the workloads' ConfigMaps and the unrelated
// Role the actor changes first.
func (r *rbacBreak) setUp(ctx context.Context, c *Cluster) error {
	if err := c.Namespace(ctx, r.ns); err != nil {
		return err
	}
	for _, w := range []string{r.name, r.nb} {
		if err := c.ConfigMap(ctx, r.ns, w+"-config", map[string]string{"settings.yaml": padding(w, 2048)}); err != nil {
			return err
		}
	}
	if err := c.Namespace(ctx, r.decoyNS); err != nil {
		return err
	}
	decoyRules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}, Verbs: []string{"get", "list"}}}
	return apiload.Role(ctx, c.Admin, r.decoyNS, r.decoyRole, decoyRules,
		[]rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "oncall"}})
}

// startNeighbour starts the neighbour: its own ServiceAccounts, Role and
// RoleBinding, reading the way the workload does.
func (r *rbacBreak) startNeighbour(ctx context.Context, c *Cluster) (stop func(), err error) {
	var nbSAs []string
	for i := range r.nbWorkers {
		nbSAs = append(nbSAs, apiload.WorkerName(r.nb+"-", i))
	}
	if err := apiload.Role(ctx, c.Admin, r.ns, r.nb, readRules(), apiload.ServiceAccountSubjects(r.ns, nbSAs)); err != nil {
		return nil, err
	}
	nbOp := readOp(r.verb, r.resource, r.ns, r.nb)
	_, stopNb, err := c.neighbour(ctx, r.ns, r.nb, r.nbVersion, r.nbWorkers, func(i int, w *apiload.Worker) {
		w.Delay, w.Repeat, w.Every, w.Jitter = c.Dur(0, r.nbEvery), []apiload.Op{nbOp}, r.nbEvery, r.nbEvery/2
	})
	return stopNb, err
}

// startWorkload starts the workload, made long ago by the platform's
// automation, and its workers under wctx (cancelled by stop when a Job
// fails). Its pods run as one ServiceAccount of its own (made first:
// admission rejects a pod whose ServiceAccount does not exist), whose token
// its workers use, as a controller's replicas or a Job's pods do.
func (r *rbacBreak) startWorkload(ctx, wctx context.Context, stop context.CancelFunc, c *Cluster) (*crew, func(), error) {
	image := r.image()
	if _, err := apiload.ServiceAccount(ctx, c.Admin, r.ns, r.name); err != nil {
		return nil, nil, err
	}
	t := Template{Image: image, Container: r.name, ServiceAccount: r.name}
	var err error
	if r.kind == "Job" {
		err = c.Job(ctx, routineActor, r.ns, r.name, r.n, 0, t)
	} else {
		err = c.Deployment(ctx, routineActor, r.ns, r.name, r.n, t)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := apiload.Role(ctx, c.Admin, r.ns, r.name, readRules(), apiload.ServiceAccountSubjects(r.ns, []string{r.name})); err != nil {
		return nil, nil, err
	}
	pods, fail, err := c.rbacVictims(ctx, r.kind, r.ns, r.name, image, r.msg())
	if err != nil {
		return nil, nil, err
	}
	// Worker i is pod i, with the pod's own token.
	cr, err := c.podCrew(ctx, r.ns, r.name, clientAgent(r.name, r.version), r.name, pods, 15*time.Second)
	if err != nil {
		return nil, nil, err
	}
	if r.kind == "Job" {
		c.cancelWhenJobFails(wctx, r.ns, r.name, stop)
	}
	wait := cr.run(wctx, func(i int, w *apiload.Worker) {
		op := readOp(r.verb, r.resource, r.ns, r.name)
		if r.verb == "get" && r.resource == "pods" {
			op.Names = []string{pods[i]} // each worker reads its own pod
		}
		w.Delay, w.Repeat, w.Every, w.Jitter = c.Dur(0, r.every), []apiload.Op{op}, r.every, r.every/2
		w.Tries, w.Pause = r.tries, r.every
	}, fail)
	return cr, wait, nil
}

// decoy has the actor widen the unrelated Role, then wait.
func (r *rbacBreak) decoy(ctx context.Context, c *Cluster, e *Expected) error {
	rbac := c.As(r.actor).RbacV1()
	dr, err := rbac.Roles(r.decoyNS).Get(ctx, r.decoyRole, metav1.GetOptions{})
	if err != nil {
		return err
	}
	decoyFrom := rulesString(dr.Rules)
	dr.Rules[0].Resources = append(dr.Rules[0].Resources, r.decoyAdd)
	decoyAt := Now()
	if _, err := rbac.Roles(r.decoyNS).Update(ctx, dr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("decoy: update role %s/%s: %w", r.decoyNS, r.decoyRole, err)
	}
	actor := r.actor
	e.Decoys = []Change{{Ref: "Role/" + r.decoyNS + "/" + r.decoyRole, Dimension: "rules", At: decoyAt, Actor: &actor}}
	e.extra("decoyRules", map[string]string{"from": decoyFrom, "to": rulesString(dr.Rules)})
	Sleep(ctx, r.decoyGap)
	return nil
}

// change has the actor delete the workload's RoleBinding or narrow its
// Role; it returns the change and the Role's rules before and after.
func (r *rbacBreak) change(ctx context.Context, c *Cluster) (ch Change, from, to string, err error) {
	rbac := c.As(r.actor).RbacV1()
	role, err := rbac.Roles(r.ns).Get(ctx, r.name, metav1.GetOptions{})
	if err != nil {
		return ch, "", "", err
	}
	from = rulesString(role.Rules)
	to = from
	at := Now()
	actor := r.actor
	switch r.mode {
	case "delete-binding":
		if err := rbac.RoleBindings(r.ns).Delete(ctx, r.name, metav1.DeleteOptions{}); err != nil {
			return ch, "", "", fmt.Errorf("delete rolebinding %s/%s: %w", r.ns, r.name, err)
		}
		ch = Change{Ref: "RoleBinding/" + r.ns + "/" + r.name, Dimension: "deleted", At: at, Actor: &actor}
	default:
		if r.mode == "remove-verb" {
			role.Rules = without(role.Rules, r.verb, "")
		} else {
			role.Rules = without(role.Rules, "", r.resource)
		}
		to = rulesString(role.Rules)
		if _, err := rbac.Roles(r.ns).Update(ctx, role, metav1.UpdateOptions{}); err != nil {
			return ch, "", "", fmt.Errorf("update role %s/%s: %w", r.ns, r.name, err)
		}
		ch = Change{Ref: "Role/" + r.ns + "/" + r.name, Dimension: "rules", At: at, Actor: &actor}
	}
	return ch, from, to, nil
}

// truth sets the slice (the workload, or its image; a Deployment's
// ReplicaSet too), the population and the counterexample.
func (r *rbacBreak) truth(e *Expected, bad []corev1.Pod) {
	owner := "owner/" + r.kind
	e.Slice = map[string]string{owner: r.name}
	e.SliceEquivalents = []map[string]string{{"image.tag/" + r.name: r.image()}}
	if r.kind == "Deployment" {
		for _, p := range bad {
			for _, o := range p.OwnerReferences {
				if o.Kind == "ReplicaSet" {
					e.SliceEquivalents = append(e.SliceEquivalents, map[string]string{"owner/ReplicaSet": o.Name})
					break
				}
			}
			break
		}
	}
	e.Population = map[string]string{"namespace": r.ns}
	e.CounterexampleDiffersIn = []string{owner}
}

// story is what on-call saw.
func (r *rbacBreak) story() string {
	what := fmt.Sprintf("a Job of %d workers", r.n)
	exit := "exited 1"
	if r.kind == "Deployment" {
		what, exit = fmt.Sprintf("a controller of %d replicas", r.n), "went into CrashLoopBackOff"
	}
	return fmt.Sprintf(`%s/%s stops working: its pods fail with "forbidden"; its neighbours in %s are fine.

## What on-call saw
%s in %s, %s that had been running fine, reads its %s through the API
all the time. Suddenly its pods %s, one after another, logging "%s". %s, which runs
next to it in %s and reads the same way, kept working; the apiserver and the nodes looked
healthy. Several people and bots changed things in the last hour.`,
		r.ns, r.name, r.ns, r.name, r.ns, what, r.resource, exit, r.msg(), r.nb, r.ns)
}

// readOp is a workload's read: its ConfigMap or its pods.
func readOp(verb, resource, ns, name string) apiload.Op {
	op := apiload.Op{Verb: verb, Resource: resource, Namespace: ns}
	switch {
	case verb == "list":
		op.Selector = "app=" + name
	case resource == "configmaps":
		op.Names = []string{name + "-config"}
	}
	return op
}

// rbacVictims maps the workload's workers to its pods (a Job's by
// completion index, a Deployment's by name) and returns a fail func: a
// Job's pod exits 1; a controller's replica crash-loops.
func (c *Cluster) rbacVictims(ctx context.Context, kind, ns, name, image, msg string) ([]string, func(int, error), error) {
	if kind == "Job" {
		podOf, err := apiload.PodsByIndex(ctx, c.Admin, ns, name)
		if err != nil {
			return nil, nil, err
		}
		pods := make([]string, len(podOf))
		for i, p := range podOf {
			if i < len(pods) {
				pods[i] = p
			}
		}
		fail, err := c.exitJobPods(ctx, ns, name, func(error) string { return msg })
		return pods, fail, err
	}
	running, err := c.Running(ctx, ns, "app="+name)
	if err != nil {
		return nil, nil, err
	}
	return names(running), func(i int, _ error) {
		if i >= len(running) {
			return
		}
		if _, err := c.CrashLoop(context.WithoutCancel(ctx), ns, []corev1.Pod{running[i]}, image, "", msg); err != nil {
			c.log.Warn("could not crash-loop pod", "pod", running[i].Name, "err", err)
		}
	}, nil
}
