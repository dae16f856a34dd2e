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

func runRBACBreak(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	ns, name, version := Pick(c, rbacNamespaces), Pick(c, rbacWorkloads), c.version()
	kind := Pick(c, []string{"Job", "Deployment"})
	// A few hundred reads a minute: many workers now and then, or a few
	// replicas every second or two.
	n, every := c.Between(20, 60), c.Dur(4*time.Second, 10*time.Second)
	if kind == "Deployment" {
		n, every = c.Between(4, 10), c.Dur(time.Second, 2*time.Second)
	}
	resource, verb := Pick(c, []string{"configmaps", "pods"}), Pick(c, []string{"get", "list"})
	mode := Pick(c, []string{"delete-binding", "remove-verb", "remove-resource"})
	tries := c.Between(2, 4)
	nb, nbVersion, nbWorkers := pickOther(c, rbacWorkloads, name), c.version(), c.Between(5, 15)
	nbEvery := c.Dur(5*time.Second, 15*time.Second)
	decoyNS, decoyRole := Pick(c, []string{"ci", ns, "ops"}), Pick(c, []string{"deployer", "debug-readers", "backup-operator"})
	decoyAdd := Pick(c, []string{"services", "events", "endpoints"})
	decoyGap := c.Dur(3*time.Second, 15*time.Second)
	actor := c.DrawActor()
	c.log.Info("rbac-break", "ns", ns, "workload", kind+"/"+name, "workers", n, "every", every, "op", verb+" "+resource,
		"mode", mode, "tries", tries, "neighbour", nb, "decoy", decoyNS+"/"+decoyRole)

	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := c.Namespace(ctx, ns); err != nil {
		return "", err
	}
	for _, w := range []string{name, nb} {
		if err := c.ConfigMap(ctx, ns, w+"-config", map[string]string{"settings.yaml": padding(w, 2048)}); err != nil {
			return "", err
		}
	}
	// The unrelated Role the actor changes first.
	if err := c.Namespace(ctx, decoyNS); err != nil {
		return "", err
	}
	decoyRules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}, Verbs: []string{"get", "list"}}}
	if err := apiload.Role(ctx, c.Admin, decoyNS, decoyRole, decoyRules,
		[]rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "oncall"}}); err != nil {
		return "", err
	}

	// The neighbour: its own ServiceAccounts, Role and RoleBinding.
	var nbSAs []string
	for i := range nbWorkers {
		nbSAs = append(nbSAs, apiload.WorkerName(nb+"-", i))
	}
	if err := apiload.Role(ctx, c.Admin, ns, nb, readRules(), apiload.ServiceAccountSubjects(ns, nbSAs)); err != nil {
		return "", err
	}
	nbOp := readOp(verb, resource, ns, nb)
	_, stopNb, err := c.neighbour(ctx, ns, nb, nbVersion, nbWorkers, func(i int, w *apiload.Worker) {
		w.Delay, w.Repeat, w.Every, w.Jitter = c.Dur(0, nbEvery), []apiload.Op{nbOp}, nbEvery, nbEvery/2
	})
	if err != nil {
		return "", err
	}
	defer stopNb()

	// The workload, made long ago by the platform's automation. Its pods
	// run as one ServiceAccount of its own (made first: admission rejects
	// a pod whose ServiceAccount does not exist), whose token its workers
	// use, as a controller's replicas or a Job's pods do.
	image := agentImage(name, version)
	if _, err := apiload.ServiceAccount(ctx, c.Admin, ns, name); err != nil {
		return "", err
	}
	t := Template{Image: image, Container: name, ServiceAccount: name}
	if kind == "Job" {
		err = c.Job(ctx, routineActor, ns, name, n, 0, t)
	} else {
		err = c.Deployment(ctx, routineActor, ns, name, n, t)
	}
	if err != nil {
		return "", err
	}
	if err := apiload.Role(ctx, c.Admin, ns, name, readRules(), apiload.ServiceAccountSubjects(ns, []string{name})); err != nil {
		return "", err
	}
	msg := fmt.Sprintf("cannot %s %s in namespace %s - forbidden", verb, resource, ns)
	pods, fail, err := c.rbacVictims(ctx, kind, ns, name, image, msg)
	if err != nil {
		return "", err
	}
	// Worker i is pod i, with the pod's own token.
	cr, err := c.podCrew(ctx, ns, name, clientAgent(name, version), name, pods, 15*time.Second)
	if err != nil {
		return "", err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	if kind == "Job" {
		c.cancelWhenJobFails(wctx, ns, name, stop)
	}
	wait := cr.run(wctx, func(i int, w *apiload.Worker) {
		op := readOp(verb, resource, ns, name)
		if verb == "get" && resource == "pods" {
			op.Names = []string{pods[i]} // each worker reads its own pod
		}
		w.Delay, w.Repeat, w.Every, w.Jitter = c.Dur(0, every), []apiload.Op{op}, every, every/2
		w.Tries, w.Pause = tries, every
	}, fail)
	defer wait()
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(10*time.Second, 20*time.Second))

	// The decoy, then the change, by the same actor.
	rbac := c.As(actor).RbacV1()
	dr, err := rbac.Roles(decoyNS).Get(ctx, decoyRole, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	decoyFrom := rulesString(dr.Rules)
	dr.Rules[0].Resources = append(dr.Rules[0].Resources, decoyAdd)
	decoyAt := Now()
	if _, err := rbac.Roles(decoyNS).Update(ctx, dr, metav1.UpdateOptions{}); err != nil {
		return "", fmt.Errorf("decoy: update role %s/%s: %w", decoyNS, decoyRole, err)
	}
	e.Decoys = []Change{{Ref: "Role/" + decoyNS + "/" + decoyRole, Dimension: "rules", At: decoyAt, Actor: &actor}}
	e.extra("decoyRules", map[string]string{"from": decoyFrom, "to": rulesString(dr.Rules)})
	Sleep(ctx, decoyGap)

	lastGood := Now()
	Sleep(ctx, time.Second)
	var ch Change
	role, err := rbac.Roles(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	from := rulesString(role.Rules)
	to := from
	at := Now()
	switch mode {
	case "delete-binding":
		if err := rbac.RoleBindings(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return "", fmt.Errorf("delete rolebinding %s/%s: %w", ns, name, err)
		}
		ch = Change{Ref: "RoleBinding/" + ns + "/" + name, Dimension: "deleted", At: at, Actor: &actor}
	default:
		if mode == "remove-verb" {
			role.Rules = without(role.Rules, verb, "")
		} else {
			role.Rules = without(role.Rules, "", resource)
		}
		to = rulesString(role.Rules)
		if _, err := rbac.Roles(ns).Update(ctx, role, metav1.UpdateOptions{}); err != nil {
			return "", fmt.Errorf("update role %s/%s: %w", ns, name, err)
		}
		ch = Change{Ref: "Role/" + ns + "/" + name, Dimension: "rules", At: at, Actor: &actor}
	}
	c.log.Info("rbac changed", "ref", ch.Ref, "mode", mode, "from", from, "to", to)
	// Until every worker gave up (a Job fails at its first: the rest are
	// deleted with it).
	_ = until(wctx, 2*time.Minute, "workers giving up", func() (bool, error) {
		return cr.progress.GaveUp.Load() >= int64(n), nil
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
	bad, err := c.Pods(ctx, ns, "app="+name)
	if err != nil {
		return "", err
	}

	e.Boundary = &Boundary{LastGood: lastGood, FirstBad: firstBad, Tolerance: "2s"}
	e.Changes = []Change{ch}
	owner := "owner/" + kind
	e.Slice = map[string]string{owner: name}
	e.SliceEquivalents = []map[string]string{{"image.tag/" + name: image}}
	if kind == "Deployment" {
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
	e.Population = map[string]string{"namespace": ns}
	e.CounterexampleDiffersIn = []string{owner}
	e.Mitigation = []Action{{Action: "rollback", Target: ch.Ref}}
	e.extra("mode", mode)
	e.extra("rules", map[string]string{"from": from, "to": to})
	e.extra("reads", verb+" "+resource)
	e.extra("workers", n)
	e.extra("failedWorkers", len(gave))
	e.extra("forbidden", forbidden)

	what := fmt.Sprintf("a Job of %d workers", n)
	exit := "exited 1"
	if kind == "Deployment" {
		what, exit = fmt.Sprintf("a controller of %d replicas", n), "went into CrashLoopBackOff"
	}
	story := fmt.Sprintf(`%s/%s stops working: its pods fail with "forbidden"; its neighbours in %s are fine.

## What on-call saw
%s in %s, %s that had been running fine, reads its %s through the API
all the time. Suddenly its pods %s, one after another, logging "%s". %s, which runs
next to it in %s and reads the same way, kept working; the apiserver and the nodes looked
healthy. Several people and bots changed things in the last hour.`,
		ns, name, ns, name, ns, what, resource, exit, msg, nb, ns)
	return story, nil
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
