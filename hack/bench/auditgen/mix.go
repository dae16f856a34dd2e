package main

import "sort"

// The request mix.
//
// Proportions are of requests (one ResponseComplete line each), outside a
// burst. They follow what large training clusters show: kubelet lease renewals
// and node/pod status traffic dominate writes; gets dominate overall.
//
//	verb    share  made of
//	get      49%   kubelet node GET rv=0 10, kubelet pod 5, configmap 2, secret 2;
//	               leader-election lease 2, apiserver lease 1; trainer pod 6,
//	               configmap 4, secret 2, service/endpoints 2.5; mpi-operator mpijob 3;
//	               controllers jobs/deployments/replicasets/endpointslices 5;
//	               admin get 1 (a tenth impersonating a trainer), pods/log 0.5;
//	               discovery (/api, /apis, /openapi/v3, /version) 3
//	list     10%   kubelet pods by node (limit=500&resourceVersion=0) 1.5;
//	               informer relists cluster-wide (limit=500&resourceVersion=0) 2;
//	               trainer pods by label, no resourceVersion 3; kubectl -A (limit=500) 0.4;
//	               Prometheus relists 1.4; cluster-wide pods with no resourceVersion
//	               and no limit 0.5; events 0.5; mpi-operator relists 0.7
//	watch     6%   kubelet pods 1, single configmap/secret 2, own node 0.5;
//	               control plane 0.7; kube-proxy 0.3; trainers 0.8;
//	               mpi-operator 0.4; Prometheus 0.3
//	create    5%   kubelet events 1.5; scheduler events 0.5, pods/binding 0.8;
//	               mpi-operator pods 0.8, configmaps 0.4, secrets 0.2;
//	               trainer configmaps 0.3; admin mpijobs 0.2; endpointslices 0.3
//	update   17%   kubelet leases in kube-node-lease 13; leader election 1;
//	               apiserver identity lease 0.5; controller status 0.9;
//	               endpointslices 0.5; mpijobs/status 0.5; trainer configmaps 0.6
//	patch    11%   kubelet pods/status 5, nodes/status 3, events 1.5;
//	               controllers nodes/pods 0.5, pods/status 0.2; trainer pods 0.5;
//	               kubectl apply 0.3
//	delete    2%   kubelet pods 0.6; garbage collector pods 0.5; trainer configmaps 0.2;
//	               admin 0.2; endpointslices 0.2; mpi-operator secrets 0.1;
//	               apiserver identity leases 0.2
//
// Inside a -burst window the extra (multiplier-1)/multiplier of requests come
// from burstActions: trainer workers and kubelets fanning out.
//
// Levels: -rr of requests at RequestResponse, requestLevelShare at Request, the
// rest at Metadata. Response codes (outside / inside a burst): 429 0.05% / 8%
// (half rejected at once, half after the 15 s APF queue wait), 500 0.02% / 1%,
// 503 0.01% / 1%, 504 0.02% / 1.5%; plus per-action 404 (mostly gets), 409
// (updates, creates of existing objects) and rare 403s.
//
// Latency is log-normal per verb: gets about 1-3 ms, writes 6-10 ms, lists
// 8 ms (watch cache) to over a second (cluster-wide from etcd); 0.2% of
// requests stall 40x; watches run to their timeoutSeconds (5-10 min) and
// one in ten ends early.
var verbShare = map[string]float64{
	"get": 0.49, "list": 0.10, "watch": 0.06, "create": 0.05, "update": 0.17, "patch": 0.11, "delete": 0.02,
}

const requestLevelShare = 0.08

type action struct {
	verb   string
	weight float64 // percent of requests
	fill   func(g *generator, r *request)
}

var baseActions = []action{
	// get: 49
	{"get", 10, (*generator).kubeletGetNode},
	{"get", 5, (*generator).kubeletGetPod},
	{"get", 2, (*generator).kubeletGetConfigMap},
	{"get", 2, (*generator).kubeletGetSecret},
	{"get", 2, (*generator).leaderGetLease},
	{"get", 1, (*generator).apiserverGetLease},
	{"get", 4, (*generator).trainerGetConfigMap},
	{"get", 6, (*generator).trainerGetPod},
	{"get", 2, (*generator).trainerGetSecret},
	{"get", 3, (*generator).mpiOperatorGetMPIJob},
	{"get", 3, (*generator).controllerGetWorkload},
	{"get", 2.5, (*generator).trainerGetService},
	{"get", 1, (*generator).adminGet},
	{"get", 0.5, (*generator).adminLogs},
	{"get", 3, (*generator).discovery},
	{"get", 1, (*generator).controllerGetEndpointSlice},
	{"get", 1, (*generator).gcGetReplicaSet},
	// list: 10
	{"list", 1.5, (*generator).kubeletListPods},
	{"list", 2, (*generator).informerRelist},
	{"list", 3, (*generator).trainerListPods},
	{"list", 0.4, (*generator).adminListAll},
	{"list", 1.4, (*generator).prometheusList},
	{"list", 0.5, (*generator).unscopedList},
	{"list", 0.5, (*generator).listEvents},
	{"list", 0.7, (*generator).mpiOperatorList},
	// watch: 6
	{"watch", 1, (*generator).kubeletWatchPods},
	{"watch", 2, (*generator).kubeletWatchObject},
	{"watch", 0.5, (*generator).kubeletWatchNode},
	{"watch", 0.7, (*generator).controlPlaneWatch},
	{"watch", 0.3, (*generator).kubeProxyWatch},
	{"watch", 0.8, (*generator).trainerWatch},
	{"watch", 0.4, (*generator).mpiOperatorWatch},
	{"watch", 0.3, (*generator).prometheusWatch},
	// create: 5
	{"create", 1.5, (*generator).kubeletCreateEvent},
	{"create", 0.5, (*generator).schedulerCreateEvent},
	{"create", 0.8, (*generator).mpiOperatorCreatePod},
	{"create", 0.8, (*generator).schedulerBind},
	{"create", 0.3, (*generator).trainerCreateConfigMap},
	{"create", 0.2, (*generator).adminCreateMPIJob},
	{"create", 0.2, (*generator).mpiOperatorCreateSecret},
	{"create", 0.3, (*generator).controllerCreateEndpointSlice},
	{"create", 0.4, (*generator).mpiOperatorCreateConfigMap},
	// update: 17
	{"update", 13, (*generator).kubeletUpdateLease},
	{"update", 1, (*generator).leaderUpdateLease},
	{"update", 0.5, (*generator).apiserverUpdateLease},
	{"update", 0.9, (*generator).controllerUpdateStatus},
	{"update", 0.5, (*generator).controllerUpdateEndpointSlice},
	{"update", 0.5, (*generator).mpiOperatorUpdateStatus},
	{"update", 0.6, (*generator).trainerUpdateConfigMap},
	// patch: 11
	{"patch", 5, (*generator).kubeletPatchPodStatus},
	{"patch", 3, (*generator).kubeletPatchNodeStatus},
	{"patch", 1.5, (*generator).kubeletPatchEvent},
	{"patch", 0.5, (*generator).controllerPatch},
	{"patch", 0.5, (*generator).trainerPatchPod},
	{"patch", 0.3, (*generator).adminApply},
	{"patch", 0.2, (*generator).controllerPatchPodStatus},
	// delete: 2
	{"delete", 0.6, (*generator).kubeletDeletePod},
	{"delete", 0.5, (*generator).gcDeletePod},
	{"delete", 0.2, (*generator).trainerDeleteConfigMap},
	{"delete", 0.2, (*generator).adminDelete},
	{"delete", 0.2, (*generator).controllerDeleteEndpointSlice},
	{"delete", 0.1, (*generator).mpiOperatorDeleteSecret},
	{"delete", 0.2, (*generator).apiserverDeleteLease},
}

// burstActions are the extra requests inside a burst: every worker of the
// training jobs re-reads its config and secrets and lists its peers, and the
// kubelets report the resulting pod churn.
var burstActions = []action{
	{"get", 20, (*generator).trainerGetConfigMap},
	{"get", 10, (*generator).trainerGetSecret},
	{"get", 15, (*generator).trainerGetPod},
	{"list", 10, (*generator).trainerListPods},
	{"watch", 4, (*generator).trainerWatch},
	{"get", 1, (*generator).discovery},
	{"patch", 15, (*generator).kubeletPatchPodStatus},
	{"create", 8, (*generator).kubeletCreateEvent},
	{"get", 5, (*generator).kubeletGetConfigMap},
	{"get", 5, (*generator).kubeletGetSecret},
	{"watch", 4, (*generator).kubeletWatchObject},
	{"list", 3, (*generator).kubeletListPods},
}

// Transient failure rates, outside and inside a burst.
type failureRates struct{ tooMany, internal, unavailable, timeout float64 }

var (
	baseFailures  = failureRates{tooMany: 0.0005, internal: 0.0002, unavailable: 0.0001, timeout: 0.0002}
	burstFailures = failureRates{tooMany: 0.08, internal: 0.01, unavailable: 0.01, timeout: 0.015}
)

type table struct {
	actions []action
	cum     []float64
}

func newTable(actions []action) table {
	t := table{actions: actions, cum: make([]float64, len(actions))}
	sum := 0.0
	for i, a := range actions {
		sum += a.weight
		t.cum[i] = sum
	}
	return t
}

func (t table) pick(u float64) action {
	i := sort.SearchFloat64s(t.cum, u*t.cum[len(t.cum)-1])
	return t.actions[min(i, len(t.actions)-1)]
}
