package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Actions: each fills in who sends the request and what it addresses.

func (g *generator) kubeletGetNode(r *request) {
	n := g.anyNode()
	r.actor, r.t, r.node = g.nodeActor(n), core("nodes", "", g.nodes[n].name), n
	r.query, r.cached, r.median = "resourceVersion=0", true, 900*time.Microsecond
}

func (g *generator) kubeletGetPod(r *request) {
	p := g.anyPod()
	r.actor, r.t, r.pod = g.nodeActor(p.node), core("pods", p.ns, p.name), &p
	r.pNotFound = 0.03
}

func (g *generator) kubeletGetConfigMap(r *request) {
	p := g.anyPod()
	r.actor, r.t = g.nodeActor(p.node), core("configmaps", p.ns, pickOne(g, g.podConfigMaps(p)))
	r.pNotFound, r.pForbid = 0.01, 0.002
	r.forbidWhy = fmt.Sprintf("no relationship found between node '%s' and this object", g.nodes[p.node].name)
}

func (g *generator) kubeletGetSecret(r *request) {
	p := g.anyTrainPod()
	r.actor, r.t = g.nodeActor(p.node), core("secrets", p.ns, pickOne(g, g.podSecrets(p)))
	r.pNotFound, r.pForbid = 0.01, 0.002
	r.forbidWhy = fmt.Sprintf("no relationship found between node '%s' and this object", g.nodes[p.node].name)
}

func (g *generator) leaderActor() (actor, string) {
	if g.rng.IntN(2) == 0 {
		a := g.actors.kcm
		a.ua += "/leader-election"
		return a, "kube-controller-manager"
	}
	a := g.actors.scheduler
	a.ua += "/leader-election"
	return a, "kube-scheduler"
}

func (g *generator) leaderGetLease(r *request) {
	a, name := g.leaderActor()
	r.actor, r.t = a, grouped("leases", "kube-system", name)
	r.median = 1500 * time.Microsecond
}

func (g *generator) apiserverGetLease(r *request) {
	r.actor, r.t = g.actors.apiserver, grouped("leases", "kube-system", apiserverLease)
}

func (g *generator) trainerGetConfigMap(r *request) {
	p := g.anyTrainPod()
	r.actor, r.t = g.podActor(p), core("configmaps", p.ns, p.job.name+"-config")
	r.pNotFound = 0.05
}

func (g *generator) trainerGetPod(r *request) {
	p := g.anyTrainPod()
	q := p
	if g.rng.IntN(2) == 0 { // a peer of the same job
		q = g.trainPod(jobFirst(p.job) + g.rng.IntN(p.job.workers+1))
	}
	r.actor, r.t, r.pod = g.podActor(p), core("pods", q.ns, q.name), &q
	r.pNotFound = 0.04
}

func (g *generator) trainerGetSecret(r *request) {
	p := g.anyTrainPod()
	r.actor, r.t = g.podActor(p), core("secrets", p.ns, pickOne(g, g.podSecrets(p)))
	r.pNotFound, r.pForbid = 0.005, 0.005
}

func (g *generator) mpiOperatorGetMPIJob(r *request) {
	j := g.anyJob()
	r.actor, r.t, r.job = g.actors.mpiOperator, grouped("mpijobs", j.ns, j.name), j
	r.pNotFound = 0.01
}

func (g *generator) controllerGetWorkload(r *request) {
	w := pickOne(g, workloads)
	c := map[string]string{"jobs": "job-controller", "deployments": "deployment-controller", "replicasets": "replicaset-controller"}[w.resource]
	r.actor, r.t = g.actors.controllers[c], grouped(w.resource, w.ns, w.name)
}

func (g *generator) trainerGetService(r *request) {
	p := g.anyTrainPod()
	res := "services"
	if g.rng.IntN(2) == 0 {
		res = "endpoints"
	}
	r.actor, r.t = g.podActor(p), core(res, p.ns, p.job.name+"-worker")
	r.pNotFound = 0.02
}

func (g *generator) adminGet(r *request) {
	a := pickOne(g, g.actors.admins)
	r.actor = a
	switch g.rng.IntN(4) {
	case 0:
		j := g.anyJob()
		r.t, r.job = grouped("mpijobs", j.ns, j.name), j
	case 1:
		n := g.anyNode()
		r.t, r.node = core("nodes", "", g.nodes[n].name), n
	case 2:
		w := pickOne(g, workloads)
		r.t = grouped(w.resource, w.ns, w.name)
	default:
		p := g.anyPod()
		r.t, r.pod = core("pods", p.ns, p.name), &p
	}
	r.pNotFound = 0.05
	if g.rng.IntN(10) == 0 { // kubectl --as=system:serviceaccount:<ns>:trainer
		ns := pickOne(g, trainNamespaces)
		u := g.saUser(ns, "trainer", nil)
		r.imp = &userInfo{Username: u.Username, Groups: u.Groups}
		r.actor.reason = fmt.Sprintf("RBAC: allowed by RoleBinding %q of Role %q to ServiceAccount %q", "trainer/"+ns, "trainer", "trainer/"+ns)
		if r.t.ns != ns {
			r.pForbid = 0.5
		}
	}
}

func (g *generator) adminLogs(r *request) {
	p := g.anyTrainPod()
	r.actor, r.t, r.pod = pickOne(g, g.actors.admins), core("pods", p.ns, p.name), &p
	r.t.sub, r.longRunning = "log", true
	container := "trainer"
	if p.ordinal == 0 {
		container = "launcher"
	}
	if g.rng.IntN(4) == 0 {
		r.query = g.listQuery("container", container, "follow", "true")
		r.median, r.sigma = 4*time.Minute, 0.8
	} else {
		r.query = g.listQuery("container", container, "tailLines", "200")
		r.median, r.sigma = 80*time.Millisecond, 0.8
	}
	r.pNotFound = 0.02
}

var discoveryPaths = []string{"/api", "/apis", "/version", "/openapi/v3", "/openapi/v3/api/v1", "/apis/kubeflow.org/v2beta1", "/api/v1"}

func (g *generator) discovery(r *request) {
	if g.rng.IntN(10) == 0 {
		r.actor = pickOne(g, g.actors.admins)
	} else {
		r.actor = g.podActor(g.anyTrainPod())
	}
	r.actor.reason = `RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated"`
	r.path = pickOne(g, discoveryPaths)
	r.median, r.sigma = 1200*time.Microsecond, 0.7
	if strings.HasPrefix(r.path, "/openapi") {
		r.median = 6 * time.Millisecond
	}
}

func (g *generator) controllerGetEndpointSlice(r *request) {
	s := pickOne(g, services)
	r.actor, r.t = g.actors.controllers["endpointslice-controller"], grouped("endpointslices", s.ns, s.name+"-"+g.suffix("eps", s.name))
}

func (g *generator) gcGetReplicaSet(r *request) {
	var w workload
	for w.resource != "replicasets" {
		w = pickOne(g, workloads)
	}
	r.actor, r.t = g.actors.controllers["generic-garbage-collector"], grouped("replicasets", w.ns, w.name)
	r.query = "resourceVersion=0"
	r.cached = true
}

func (g *generator) kubeletListPods(r *request) {
	n := g.anyNode()
	r.actor, r.t = g.nodeActor(n), core("pods", "", "")
	r.query = g.listQuery("fieldSelector", "spec.nodeName="+g.nodes[n].name, "limit", "500", "resourceVersion", "0")
	r.cached, r.median, r.sigma = true, 8*time.Millisecond, 0.7
}

var relistResources = []string{"pods", "nodes", "leases", "endpointslices", "jobs", "replicasets", "services", "namespaces", "configmaps", "deployments"}

func (g *generator) informerRelist(r *request) {
	if g.rng.IntN(3) == 0 {
		r.actor = g.actors.scheduler
	} else {
		r.actor = g.actors.kcm
	}
	res := pickOne(g, relistResources)
	r.t = grouped(res, "", "")
	r.query = g.listQuery("limit", "500", "resourceVersion", "0")
	r.cached, r.median, r.sigma = true, 60*time.Millisecond, 0.8
}

func (g *generator) trainerListPods(r *request) {
	p := g.anyTrainPod()
	r.actor, r.t = g.podActor(p), core("pods", p.ns, "")
	r.query = g.listQuery("labelSelector", jobSelector(p.job, "worker"))
	r.median, r.sigma = 25*time.Millisecond, 0.8
}

func (g *generator) adminListAll(r *request) {
	r.actor = pickOne(g, g.actors.admins)
	r.t = core("pods", "", "")
	if g.rng.IntN(3) == 0 {
		r.t.ns = pickOne(g, trainNamespaces)
	}
	r.query = g.listQuery("limit", "500")
	r.median, r.sigma = 150*time.Millisecond, 0.6
}

func (g *generator) prometheusList(r *request) {
	r.actor, r.t = g.actors.prometheus, core(pickOne(g, []string{"pods", "endpoints", "services", "nodes"}), "", "")
	r.query = g.listQuery("limit", "500", "resourceVersion", "0")
	r.cached, r.median, r.sigma = true, 40*time.Millisecond, 0.8
}

// unscopedList is the expensive kind: every pod in the cluster, from etcd.
func (g *generator) unscopedList(r *request) {
	r.actor, r.t = g.actors.reaper, core("pods", "", "")
	r.median, r.sigma = 1200*time.Millisecond, 0.5
}

func (g *generator) listEvents(r *request) {
	if g.rng.IntN(5) == 0 {
		r.actor = pickOne(g, g.actors.admins)
	} else {
		r.actor = g.actors.reaper
	}
	p := g.anyTrainPod()
	r.t = core("events", p.ns, "")
	if g.rng.IntN(2) == 0 {
		r.query = g.listQuery("fieldSelector", "involvedObject.name="+p.name, "limit", "500")
	}
	r.median, r.sigma = 80*time.Millisecond, 0.8
}

func (g *generator) mpiOperatorList(r *request) {
	r.actor = g.actors.mpiOperator
	r.t = pickOne(g, []target{grouped("mpijobs", "", ""), core("pods", "", ""), core("configmaps", "", ""), core("secrets", "", "")})
	r.query = g.listQuery("limit", "500", "resourceVersion", "0")
	r.cached, r.median, r.sigma = true, 20*time.Millisecond, 0.8
}

func (g *generator) kubeletWatchPods(r *request) {
	n := g.anyNode()
	r.actor, r.t = g.nodeActor(n), core("pods", "", "")
	g.watchQuery(r, "fieldSelector", "spec.nodeName="+g.nodes[n].name)
}

func (g *generator) kubeletWatchObject(r *request) {
	p := g.anyPod()
	res, name := "configmaps", pickOne(g, g.podConfigMaps(p))
	if p.job != nil && g.rng.IntN(2) == 0 {
		res, name = "secrets", pickOne(g, g.podSecrets(p))
	}
	r.actor, r.t, r.nameInRef = g.nodeActor(p.node), core(res, p.ns, name), true
	g.watchQuery(r, "fieldSelector", "metadata.name="+name)
}

func (g *generator) kubeletWatchNode(r *request) {
	n := g.anyNode()
	r.actor, r.t, r.nameInRef = g.nodeActor(n), core("nodes", "", g.nodes[n].name), true
	g.watchQuery(r, "fieldSelector", "metadata.name="+g.nodes[n].name)
}

func (g *generator) controlPlaneWatch(r *request) {
	if g.rng.IntN(3) == 0 {
		r.actor = g.actors.scheduler
	} else {
		r.actor = g.actors.kcm
	}
	r.t = grouped(pickOne(g, relistResources), "", "")
	g.watchQuery(r)
}

func (g *generator) kubeProxyWatch(r *request) {
	p := g.dsPod(0, g.anyNode())
	r.actor = g.podActor(p)
	if g.rng.IntN(2) == 0 {
		r.t = grouped("endpointslices", "", "")
	} else {
		r.t = core("services", "", "")
	}
	g.watchQuery(r, "labelSelector", "!service.kubernetes.io/headless,!service.kubernetes.io/service-proxy-name")
}

func (g *generator) trainerWatch(r *request) {
	p := g.anyTrainPod()
	r.actor, r.t = g.podActor(p), core("pods", p.ns, "")
	g.watchQuery(r, "labelSelector", jobSelector(p.job, ""))
}

func (g *generator) mpiOperatorWatch(r *request) {
	r.actor = g.actors.mpiOperator
	r.t = pickOne(g, []target{grouped("mpijobs", "", ""), core("pods", "", ""), core("configmaps", "", ""), core("secrets", "", "")})
	g.watchQuery(r)
}

func (g *generator) prometheusWatch(r *request) {
	r.actor, r.t = g.actors.prometheus, core(pickOne(g, []string{"pods", "endpoints", "services", "nodes"}), "", "")
	g.watchQuery(r)
}

var kubeletEventReasons = []string{"Pulled", "Created", "Started", "Killing", "BackOff", "Unhealthy", "FailedMount", "SandboxChanged"}

func (g *generator) eventName(p pod) string {
	return fmt.Sprintf("%s.%016x", p.name, g.rng.Uint64()>>1)
}

func (g *generator) kubeletCreateEvent(r *request) {
	p := g.anyPod()
	r.actor, r.t, r.pod = g.nodeActor(p.node), core("events", p.ns, g.eventName(p)), &p
	r.evReason, r.untracked, r.pConflict = pickOne(g, kubeletEventReasons), true, 0.002
}

func (g *generator) schedulerCreateEvent(r *request) {
	p := g.anyTrainPod()
	r.actor, r.t, r.pod = g.actors.scheduler, target{group: "events.k8s.io", resource: "events", ns: p.ns, name: g.eventName(p)}, &p
	r.evReason, r.untracked = "Scheduled", true
}

func (g *generator) mpiOperatorCreatePod(r *request) {
	j := g.anyJob()
	p := g.trainPod(jobFirst(j) + 1 + g.rng.IntN(min(8, j.workers)))
	r.actor, r.t, r.pod = g.actors.mpiOperator, core("pods", p.ns, p.name), &p
	r.pConflict, r.podSec = 0.03, "baseline:latest"
	r.median = 15 * time.Millisecond
}

func (g *generator) schedulerBind(r *request) {
	p := g.anyTrainPod()
	r.actor, r.t, r.pod = g.actors.scheduler, core("pods", p.ns, p.name), &p
	r.t.sub, r.pConflict = "binding", 0.01
	r.actor.ua += "/scheduler"
}

func (g *generator) trainerCreateConfigMap(r *request) {
	p := g.anyTrainPod()
	name := fmt.Sprintf("%s-ckpt-step-%d", p.job.name, 100*(1+g.rng.IntN(400)))
	r.actor, r.t, r.untracked = g.podActor(p), core("configmaps", p.ns, name), true
	r.pConflict = 0.1
}

func (g *generator) adminCreateMPIJob(r *request) {
	j := g.anyJob()
	r.actor, r.t, r.job = pickOne(g, g.actors.admins), grouped("mpijobs", j.ns, j.name), j
	r.pConflict = 0.3
}

func (g *generator) mpiOperatorCreateSecret(r *request) {
	j := g.anyJob()
	r.actor, r.t = g.actors.mpiOperator, core("secrets", j.ns, j.name+"-ssh")
	r.pConflict = 0.2
}

func (g *generator) controllerCreateEndpointSlice(r *request) {
	s := pickOne(g, services)
	r.actor, r.t, r.untracked = g.actors.controllers["endpointslice-controller"], grouped("endpointslices", s.ns, s.name+"-"+g.randSuffix()), true
	r.generateName = s.name + "-"
}

func (g *generator) mpiOperatorCreateConfigMap(r *request) {
	j := g.anyJob()
	r.actor, r.t = g.actors.mpiOperator, core("configmaps", j.ns, j.name+"-config")
	r.pConflict = 0.1
}

func (g *generator) kubeletUpdateLease(r *request) {
	n := g.anyNode()
	r.actor, r.t, r.node = g.nodeActor(n), grouped("leases", "kube-node-lease", g.nodes[n].name), n
	r.query, r.timeout, r.pConflict = "timeout=10s", 10*time.Second, 0.001
	r.median = 4 * time.Millisecond
}

func (g *generator) leaderUpdateLease(r *request) {
	a, name := g.leaderActor()
	r.actor, r.t = a, grouped("leases", "kube-system", name)
	r.query, r.timeout = "timeout=5s", 5*time.Second
}

func (g *generator) apiserverUpdateLease(r *request) {
	r.actor, r.t = g.actors.apiserver, grouped("leases", "kube-system", apiserverLease)
}

func (g *generator) controllerUpdateStatus(r *request) {
	w := pickOne(g, workloads)
	c := map[string]string{"jobs": "job-controller", "deployments": "deployment-controller", "replicasets": "replicaset-controller"}[w.resource]
	r.actor, r.t = g.actors.controllers[c], grouped(w.resource, w.ns, w.name)
	r.t.sub, r.pConflict = "status", 0.02
}

func (g *generator) controllerUpdateEndpointSlice(r *request) {
	s := pickOne(g, services)
	r.actor, r.t = g.actors.controllers["endpointslice-controller"], grouped("endpointslices", s.ns, s.name+"-"+g.suffix("eps", s.name))
	r.pConflict = 0.02
}

func (g *generator) mpiOperatorUpdateStatus(r *request) {
	j := g.anyJob()
	r.actor, r.t, r.job = g.actors.mpiOperator, grouped("mpijobs", j.ns, j.name), j
	r.t.sub, r.pConflict = "status", 0.03
}

func (g *generator) trainerUpdateConfigMap(r *request) {
	p := g.anyTrainPod()
	r.actor, r.t = g.podActor(p), core("configmaps", p.ns, p.job.name+"-progress")
	r.pConflict = 0.05
}

func (g *generator) kubeletPatchPodStatus(r *request) {
	p := g.anyPod()
	r.actor, r.t, r.pod = g.nodeActor(p.node), core("pods", p.ns, p.name), &p
	r.t.sub, r.pNotFound, r.pConflict = "status", 0.005, 0.003
	r.patch = func(g *generator, r *request) any { return g.podStatusPatch(*r.pod, r.at) }
}

func (g *generator) kubeletPatchNodeStatus(r *request) {
	n := g.anyNode()
	r.actor, r.t, r.node = g.nodeActor(n), core("nodes", "", g.nodes[n].name), n
	r.t.sub = "status"
	r.patch = func(_ *generator, r *request) any { return nodeStatusPatch(r.at) }
}

func (g *generator) kubeletPatchEvent(r *request) {
	p := g.anyPod()
	r.actor, r.t, r.pod = g.nodeActor(p.node), core("events", p.ns, g.eventName(p)), &p
	r.evReason, r.untracked, r.pNotFound = "BackOff", true, 0.01
	r.patch = func(g *generator, r *request) any {
		return map[string]any{"count": 2 + g.rng.IntN(40), "lastTimestamp": rfc3339(r.at)}
	}
}

func (g *generator) controllerPatch(r *request) {
	if g.rng.IntN(5) < 3 {
		n := g.anyNode()
		r.actor, r.t, r.node = g.actors.controllers["node-lifecycle-controller"], core("nodes", "", g.nodes[n].name), n
		r.patch = func(_ *generator, r *request) any {
			return map[string]any{"spec": map[string]any{"taints": []any{map[string]any{"effect": "NoSchedule", "key": "node.kubernetes.io/unreachable", "timeAdded": rfc3339(r.at)}}}}
		}
		return
	}
	p := g.anyTrainPod()
	r.actor, r.t, r.pod = g.actors.controllers["generic-garbage-collector"], core("pods", p.ns, p.name), &p
	r.patch = func(g *generator, r *request) any {
		p := r.pod
		return map[string]any{"metadata": map[string]any{"ownerReferences": []any{map[string]any{"$patch": "delete", "uid": g.uid("mpijobs", p.ns, p.job.name)}}, "uid": g.uid("pods", p.ns, p.name)}}
	}
	r.pNotFound = 0.02
}

func (g *generator) trainerPatchPod(r *request) {
	p := g.anyTrainPod()
	r.actor, r.t, r.pod = g.podActor(p), core("pods", p.ns, p.name), &p
	r.patch = func(g *generator, _ *request) any {
		return map[string]any{"metadata": map[string]any{"annotations": map[string]string{
			"trainer.example.com/step": strconv.Itoa(g.rng.IntN(50000)),
			"trainer.example.com/loss": strconv.FormatFloat(1+3*g.rng.Float64(), 'f', 4, 64),
		}}}
	}
}

func (g *generator) adminApply(r *request) {
	a := pickOne(g, g.actors.admins)
	var w workload
	for w.resource != "deployments" {
		w = pickOne(g, workloads)
	}
	r.actor, r.t = a, grouped(w.resource, w.ns, w.name)
	r.query = g.listQuery("fieldManager", "kubectl", "fieldValidation", "Strict", "force", "false")
	r.patch = func(g *generator, r *request) any {
		return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": r.t.name, "namespace": r.t.ns},
			"spec": map[string]any{"replicas": 1 + g.rng.IntN(3)}}
	}
	r.pConflict = 0.02
}

func (g *generator) controllerPatchPodStatus(r *request) {
	p := g.anyPod()
	r.actor, r.t, r.pod = g.actors.controllers["pod-garbage-collector"], core("pods", p.ns, p.name), &p
	r.t.sub, r.pNotFound = "status", 0.05
	r.patch = func(_ *generator, r *request) any {
		return map[string]any{"status": map[string]any{"conditions": []any{map[string]any{
			"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC", "message": "PodGC: node no longer exists", "lastTransitionTime": rfc3339(r.at)}}}}
	}
}

func (g *generator) kubeletDeletePod(r *request) {
	p := g.anyPod()
	r.actor, r.t, r.pod = g.nodeActor(p.node), core("pods", p.ns, p.name), &p
	r.pNotFound = 0.02
	r.delOpts = map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0, "preconditions": map[string]string{"uid": g.uid("pods", p.ns, p.name)}}
}

func (g *generator) gcDeletePod(r *request) {
	p := g.anyTrainPod()
	r.actor, r.t, r.pod = g.actors.controllers["generic-garbage-collector"], core("pods", p.ns, p.name), &p
	r.pNotFound = 0.05
	r.delOpts = map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background", "preconditions": map[string]string{"uid": g.uid("pods", p.ns, p.name)}}
}

func (g *generator) trainerDeleteConfigMap(r *request) {
	p := g.anyTrainPod()
	name := fmt.Sprintf("%s-ckpt-step-%d", p.job.name, 100*(1+g.rng.IntN(400)))
	r.actor, r.t, r.untracked = g.podActor(p), core("configmaps", p.ns, name), true
	r.pNotFound = 0.05
}

func (g *generator) adminDelete(r *request) {
	r.actor = pickOne(g, g.actors.admins)
	if g.rng.IntN(2) == 0 {
		j := g.anyJob()
		r.t, r.job = grouped("mpijobs", j.ns, j.name), j
	} else {
		p := g.anyTrainPod()
		r.t, r.pod = core("pods", p.ns, p.name), &p
	}
	r.pNotFound = 0.1
	r.delOpts = map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
}

func (g *generator) controllerDeleteEndpointSlice(r *request) {
	s := pickOne(g, services)
	r.actor, r.t, r.untracked = g.actors.controllers["endpointslice-controller"], grouped("endpointslices", s.ns, s.name+"-"+g.randSuffix()), true
	r.pNotFound = 0.05
}

func (g *generator) mpiOperatorDeleteSecret(r *request) {
	j := g.anyJob()
	r.actor, r.t = g.actors.mpiOperator, core("secrets", j.ns, j.name+"-ssh")
	r.pNotFound = 0.1
}

func (g *generator) apiserverDeleteLease(r *request) {
	r.actor, r.t, r.untracked = g.actors.apiserver, grouped("leases", "kube-system", "apiserver-"+g.randSuffix()+g.randSuffix()), true
	r.pNotFound = 0.3
}
