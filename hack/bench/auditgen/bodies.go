package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Request and response bodies.

func (g *generator) marshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("auditgen: marshalling a body: %v", err)) // the bodies are our own plain types
	}
	return b
}

func (g *generator) requestBody(r *request, sentRV uint64) json.RawMessage {
	switch r.verb {
	case "create":
		if r.t.sub == "binding" {
			return g.marshal(map[string]any{"kind": "Binding", "apiVersion": "v1",
				"metadata": objectMeta{Name: r.t.name, Namespace: r.t.ns, UID: g.uid("pods", r.t.ns, r.t.name)},
				"target":   map[string]string{"kind": "Node", "name": g.nodes[r.pod.node].name}})
		}
		return g.marshal(g.object(r, 0, r.at, true))
	case "update":
		return g.marshal(g.object(r, sentRV, r.at, false))
	case "patch":
		return g.marshal(r.patch(g, r))
	case "delete":
		if r.delOpts != nil {
			return g.marshal(r.delOpts)
		}
		return g.marshal(map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
	}
	return nil
}

func (g *generator) responseBody(r *request, o outcome, cur, next uint64) json.RawMessage {
	if o.code >= 300 || (r.verb == "delete" && r.t.resource != "pods") || r.t.sub == "binding" {
		st := *o.status
		st.Kind, st.APIVersion = "Status", "v1"
		return g.marshal(&st)
	}
	switch r.verb {
	case "get":
		return g.marshal(g.object(r, cur, r.at, false))
	case "list":
		return g.marshal(g.list(r))
	}
	return g.marshal(g.object(r, next, r.at, false)) // create, update, patch; delete of a pod returns the pod
}

// list is a short list response: a page of the collection.
func (g *generator) list(r *request) any {
	items := []any{}
	n := 1 + g.rng.IntN(3)
	for range n {
		sub := *r
		sub.verb = "get"
		switch r.t.resource {
		case "pods":
			p := g.anyPod()
			for r.t.ns != "" && p.ns != r.t.ns { // namespaced lists are of the training namespaces
				p = g.anyTrainPod()
			}
			sub.pod, sub.t.ns, sub.t.name = &p, p.ns, p.name
		case "events":
			p := g.anyTrainPod()
			for r.t.ns != "" && p.ns != r.t.ns {
				p = g.anyTrainPod()
			}
			sub.pod, sub.evReason, sub.t.ns, sub.t.name = &p, pickOne(g, kubeletEventReasons), p.ns, g.eventName(p)
		case "nodes":
			sub.node = g.anyNode()
			sub.t.name = g.nodes[sub.node].name
		case "configmaps", "secrets":
			j := g.anyJob()
			sub.t.ns, sub.t.name = j.ns, j.name+"-config"
			if r.t.resource == "secrets" {
				sub.t.name = pickOne(g, nsSecrets)
			}
		case "mpijobs":
			sub.job = g.anyJob()
			sub.t.ns, sub.t.name = sub.job.ns, sub.job.name
		default:
			ns := r.t.ns
			if ns == "" {
				ns = pickOne(g, allNamespaces)
			}
			sub.t.ns, sub.t.name = ns, r.t.resource[:len(r.t.resource)-1]+"-"+g.randSuffix()
		}
		o := g.object(&sub, g.currentRV(&sub), r.at, false)
		items = append(items, o)
	}
	kind := kindOf[r.t.resource] + "List"
	apiVersion := r.t.version()
	if r.t.group != "" {
		apiVersion = r.t.group + "/" + apiVersion
	}
	meta := map[string]string{"resourceVersion": strconv.FormatUint(g.rv, 10)}
	return map[string]any{"kind": kind, "apiVersion": apiVersion, "metadata": meta, "items": stripTypeMeta(items)}
}

// stripTypeMeta drops kind and apiVersion from list items, as list
// responses carry them once, on the list.
func stripTypeMeta(items []any) []any {
	for _, it := range items {
		switch o := it.(type) {
		case *podObject:
			o.Kind, o.APIVersion = "", ""
		case *typedObject:
			o.Kind, o.APIVersion = "", ""
		case map[string]any:
			delete(o, "kind")
			delete(o, "apiVersion")
		}
	}
	return items
}

type objectMeta struct {
	Name              string            `json:"name,omitempty"`
	GenerateName      string            `json:"generateName,omitempty"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	Generation        int64             `json:"generation,omitempty"`
	CreationTimestamp *string           `json:"creationTimestamp"`
	DeletionTimestamp *string           `json:"deletionTimestamp,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	OwnerReferences   []ownerReference  `json:"ownerReferences,omitempty"`
}

type ownerReference struct {
	APIVersion         string `json:"apiVersion"`
	Kind               string `json:"kind"`
	Name               string `json:"name"`
	UID                string `json:"uid"`
	Controller         *bool  `json:"controller,omitempty"`
	BlockOwnerDeletion *bool  `json:"blockOwnerDeletion,omitempty"`
}

// typedObject is any object other than a Pod: type meta, metadata and the
// kind's own top-level fields.
type typedObject struct {
	Kind       string         `json:"kind,omitempty"`
	APIVersion string         `json:"apiVersion,omitempty"`
	Metadata   objectMeta     `json:"metadata"`
	Type       string         `json:"type,omitempty"` // Secret, Event
	Data       map[string]any `json:"data,omitempty"` // ConfigMap, Secret
	Spec       any            `json:"spec,omitempty"`
	Status     any            `json:"status,omitempty"`
}

// meta is the metadata of an existing object (create=false) or of one being
// created (no uid, no resourceVersion, creationTimestamp null).
func (g *generator) meta(r *request, rv uint64, create bool) objectMeta {
	t := r.t
	m := objectMeta{Name: t.name, Namespace: t.ns}
	if create {
		if r.generateName != "" {
			m.Name, m.GenerateName = "", r.generateName
		}
		return m
	}
	if r.generateName != "" {
		m.GenerateName = r.generateName
	}
	m.UID = g.uid(t.resource, t.ns, t.name)
	m.ResourceVersion = strconv.FormatUint(rv, 10)
	created := g.createdAt(t)
	if r.verb == "create" {
		created = rfc3339(r.at)
	}
	m.CreationTimestamp = &created
	return m
}

func (g *generator) createdAt(t target) string {
	back := time.Duration(g.hash("created", t.resource, t.ns, t.name)%(30*24*3600)) * time.Second
	return g.opts.start.Add(-back - time.Hour).Format(time.RFC3339)
}

func (g *generator) object(r *request, rv uint64, at int64, create bool) any {
	t := r.t
	if t.resource == "pods" && r.pod != nil {
		return g.podObject(r, *r.pod, rv, at, create)
	}
	apiVersion := t.version()
	if t.group != "" {
		apiVersion = t.group + "/" + apiVersion
	}
	o := &typedObject{Kind: kindOf[t.resource], APIVersion: apiVersion, Metadata: g.meta(r, rv, create)}
	switch t.resource {
	case "configmaps":
		keys := []string{"ca.crt"}
		switch {
		case strings.HasSuffix(t.name, "-config"):
			keys = []string{"discover_hosts.sh", "hostfile", "train.yaml"}
		case strings.HasSuffix(t.name, "-progress"), strings.Contains(t.name, "-ckpt-"):
			keys = []string{"checkpoint", "step"}
		case t.name == "kube-proxy":
			keys = []string{"config.conf", "kubeconfig.conf"}
		}
		o.Data = map[string]any{}
		for _, k := range keys {
			o.Data[k] = cmMarker + g.hexOf(32, "cm", t.ns, t.name, k, strconv.FormatUint(rv, 10))
		}
	case "secrets":
		keys, typ := []string{"token"}, "Opaque"
		switch {
		case strings.HasSuffix(t.name, "-ssh"):
			keys, typ = []string{"ssh-privatekey", "ssh-publickey"}, "kubernetes.io/ssh-auth"
		case t.name == "wandb-api-key":
			keys = []string{"api-key"}
		case t.name == "registry-pull":
			keys, typ = []string{".dockerconfigjson"}, "kubernetes.io/dockerconfigjson"
		}
		o.Type, o.Data = typ, map[string]any{}
		for _, k := range keys {
			o.Data[k] = base64.StdEncoding.EncodeToString([]byte(secretMarker + g.hexOf(32, "secret", t.ns, t.name, k)))
		}
	case "leases":
		o.Spec = g.leaseSpec(r, at)
		if t.ns == "kube-node-lease" && r.node >= 0 && !create {
			o.Metadata.OwnerReferences = []ownerReference{{APIVersion: "v1", Kind: "Node", Name: t.name, UID: g.nodes[r.node].uid}}
		}
	case "events":
		return g.eventObject(r, o, at, create)
	case "nodes":
		if r.node >= 0 {
			g.nodeObject(o, r.node, at)
		}
	case "mpijobs":
		if r.job != nil {
			g.mpiJobObject(o, r.job, at)
		}
	case "deployments", "replicasets", "jobs":
		o.Metadata.Generation = 1 + int64(g.hash("gen", t.name)%20)
		o.Spec = map[string]any{"replicas": 1 + g.hash("replicas", t.name)%3}
		o.Status = map[string]any{"observedGeneration": o.Metadata.Generation, "replicas": 1 + g.hash("replicas", t.name)%3}
	case "services":
		o.Spec = map[string]any{"clusterIP": "None", "type": "ClusterIP", "ports": []any{map[string]any{"name": "ssh", "port": 22, "protocol": "TCP", "targetPort": 22}}}
	case "endpointslices":
		svc := t.name
		if i := strings.LastIndexByte(svc, '-'); i > 0 {
			svc = svc[:i]
		}
		o.Metadata.Labels = map[string]string{"endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io", "kubernetes.io/service-name": svc}
	}
	return o
}

func (g *generator) leaseSpec(r *request, at int64) any {
	t := r.t
	switch {
	case t.ns == "kube-node-lease":
		return map[string]any{"holderIdentity": t.name, "leaseDurationSeconds": 40, "renewTime": microString(at)}
	case t.name == "kube-controller-manager" || t.name == "kube-scheduler":
		return map[string]any{"holderIdentity": "cp-0_" + g.uid("holder", t.name), "leaseDurationSeconds": 15,
			"acquireTime": microString(at - int64(26*time.Hour)), "renewTime": microString(at), "leaseTransitions": 3}
	}
	return map[string]any{"holderIdentity": t.name + "_" + g.uid("holder", t.name), "leaseDurationSeconds": 3600, "renewTime": microString(at)}
}

func (g *generator) eventObject(r *request, o *typedObject, at int64, create bool) any {
	p := r.pod
	involved := map[string]any{"kind": "Pod", "namespace": p.ns, "name": p.name, "uid": g.uid("pods", p.ns, p.name), "apiVersion": "v1"}
	first := rfc3339(at - int64(g.hash("first", r.t.name)%600)*int64(time.Second))
	msg := map[string]string{
		"Pulled": "Container image already present on machine", "Created": "Created container trainer",
		"Started": "Started container trainer", "Killing": "Stopping container trainer",
		"BackOff":        "Back-off restarting failed container trainer in pod " + p.name + "_" + p.ns,
		"Unhealthy":      "Readiness probe failed: HTTP probe failed with statuscode: 503",
		"FailedMount":    `MountVolume.SetUp failed for volume "config" : configmap "` + p.name + `-config" not found`,
		"SandboxChanged": "Pod sandbox changed, it will be killed and re-created.",
		"Scheduled":      fmt.Sprintf("Successfully assigned %s/%s to %s", p.ns, p.name, g.nodes[p.node].name),
	}[r.evReason]
	typ := "Normal"
	if r.evReason == "BackOff" || r.evReason == "Unhealthy" || r.evReason == "FailedMount" {
		typ = "Warning"
	}
	if r.t.group == "events.k8s.io" {
		return map[string]any{"kind": "Event", "apiVersion": "events.k8s.io/v1", "metadata": o.Metadata,
			"eventTime": microString(at), "reportingController": "default-scheduler", "reportingInstance": "default-scheduler-cp-0",
			"action": "Binding", "reason": r.evReason, "regarding": involved, "note": msg, "type": typ}
	}
	return map[string]any{"kind": "Event", "apiVersion": "v1", "metadata": o.Metadata, "involvedObject": involved,
		"reason": r.evReason, "message": msg, "source": map[string]string{"component": "kubelet", "host": g.nodes[p.node].name},
		"firstTimestamp": first, "lastTimestamp": rfc3339(at), "count": 1, "type": typ, "eventTime": nil,
		"reportingComponent": "kubelet", "reportingInstance": g.nodes[p.node].name}
}

func (g *generator) nodeObject(o *typedObject, n int, at int64) {
	nd := g.nodes[n]
	o.Metadata.Labels = map[string]string{
		"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": nd.name, "kubernetes.io/os": "linux",
		"node.kubernetes.io/instance-type": "p5.48xlarge", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
		"topology.kubernetes.io/zone": fmt.Sprintf("us-east-1%c", 'a'+rune(n%3)),
	}
	o.Metadata.Annotations = map[string]string{"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}
	o.Spec = map[string]any{"podCIDR": fmt.Sprintf("10.%d.%d.0/24", 128+n/256, n%256), "providerID": "aws:///us-east-1a/i-0" + g.hexOf(16, "instance", nd.name)}
	hb := rfc3339(at)
	conds := []any{}
	for _, c := range []struct{ typ, st, reason, msg string }{
		{"MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
		{"DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
		{"PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
		{"Ready", "True", "KubeletReady", "kubelet is posting ready status"},
	} {
		conds = append(conds, map[string]any{"type": c.typ, "status": c.st, "lastHeartbeatTime": hb, "lastTransitionTime": g.createdAt(target{resource: "nodes", name: nd.name}), "reason": c.reason, "message": c.msg})
	}
	capacity := map[string]string{"cpu": "192", "memory": "2097152000Ki", "nvidia.com/gpu": "8", "pods": "110", "ephemeral-storage": "3758096384Ki"}
	o.Status = map[string]any{
		"capacity": capacity, "allocatable": capacity, "conditions": conds,
		"addresses":       []any{map[string]string{"type": "InternalIP", "address": nd.ip}, map[string]string{"type": "Hostname", "address": nd.name}},
		"daemonEndpoints": map[string]any{"kubeletEndpoint": map[string]int{"Port": 10250}},
		"nodeInfo": map[string]string{"machineID": g.hexOf(32, "machine", nd.name), "systemUUID": g.uid("system", nd.name), "bootID": g.uid("boot", nd.name),
			"kernelVersion": "6.8.0-1015-aws", "osImage": "Ubuntu 24.04.1 LTS", "containerRuntimeVersion": "containerd://2.0.2",
			"kubeletVersion": k8sVersion, "operatingSystem": "linux", "architecture": "amd64"},
	}
}

func (g *generator) mpiJobObject(o *typedObject, j *trainJob, at int64) {
	o.Metadata.Generation = 1
	tmpl := func(role string, replicas int) map[string]any {
		return map[string]any{"replicas": replicas, "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": role, "image": j.image,
				"resources": map[string]any{"limits": map[string]string{"nvidia.com/gpu": strconv.Itoa(j.gpus)}}}}}}}
	}
	o.Spec = map[string]any{"slotsPerWorker": j.gpus, "runPolicy": map[string]any{"cleanPodPolicy": "Running", "backoffLimit": 3},
		"mpiImplementation": "OpenMPI", "launcherCreationPolicy": "WaitForWorkersReady",
		"mpiReplicaSpecs": map[string]any{"Launcher": tmpl("launcher", 1), "Worker": tmpl("trainer", j.workers)}}
	o.Status = map[string]any{
		"conditions": []any{
			map[string]any{"type": "Created", "status": "True", "reason": "MPIJobCreated", "lastTransitionTime": g.createdAt(target{resource: "mpijobs", ns: j.ns, name: j.name})},
			map[string]any{"type": "Running", "status": "True", "reason": "MPIJobRunning", "lastTransitionTime": rfc3339(at - int64(3*time.Hour))},
		},
		"replicaStatuses": map[string]any{"Launcher": map[string]int{"active": 1}, "Worker": map[string]int{"active": j.workers}},
		"startTime":       g.createdAt(target{resource: "mpijobs", ns: j.ns, name: j.name}),
	}
}

// Pods.

type podObject struct {
	Kind       string     `json:"kind,omitempty"`
	APIVersion string     `json:"apiVersion,omitempty"`
	Metadata   objectMeta `json:"metadata"`
	Spec       podSpec    `json:"spec"`
	Status     podStatus  `json:"status"`
}

type podSpec struct {
	Volumes                       []json.RawMessage `json:"volumes,omitempty"`
	Containers                    []container       `json:"containers"`
	RestartPolicy                 string            `json:"restartPolicy"`
	TerminationGracePeriodSeconds int               `json:"terminationGracePeriodSeconds"`
	DNSPolicy                     string            `json:"dnsPolicy"`
	ServiceAccountName            string            `json:"serviceAccountName,omitempty"`
	ServiceAccount                string            `json:"serviceAccount,omitempty"`
	NodeName                      string            `json:"nodeName,omitempty"`
	HostNetwork                   bool              `json:"hostNetwork,omitempty"`
	SecurityContext               struct{}          `json:"securityContext"`
	SchedulerName                 string            `json:"schedulerName"`
	Tolerations                   []toleration      `json:"tolerations,omitempty"`
	PriorityClassName             string            `json:"priorityClassName,omitempty"`
	Priority                      int               `json:"priority"`
	EnableServiceLinks            bool              `json:"enableServiceLinks"`
	PreemptionPolicy              string            `json:"preemptionPolicy"`
}

type container struct {
	Name                     string         `json:"name"`
	Image                    string         `json:"image"`
	Command                  []string       `json:"command,omitempty"`
	Args                     []string       `json:"args,omitempty"`
	Env                      []envVar       `json:"env,omitempty"`
	Resources                resources      `json:"resources"`
	VolumeMounts             []volumeMount  `json:"volumeMounts,omitempty"`
	TerminationMessagePath   string         `json:"terminationMessagePath"`
	TerminationMessagePolicy string         `json:"terminationMessagePolicy"`
	ImagePullPolicy          string         `json:"imagePullPolicy"`
	SecurityContext          map[string]any `json:"securityContext,omitempty"`
}

type envVar struct {
	Name      string     `json:"name"`
	Value     string     `json:"value,omitempty"`
	ValueFrom *envSource `json:"valueFrom,omitempty"`
}

type envSource struct {
	FieldRef     *fieldRef `json:"fieldRef,omitempty"`
	SecretKeyRef *keyRef   `json:"secretKeyRef,omitempty"`
}

type fieldRef struct {
	APIVersion string `json:"apiVersion"`
	FieldPath  string `json:"fieldPath"`
}

type keyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

type resources struct {
	Limits   map[string]string `json:"limits,omitempty"`
	Requests map[string]string `json:"requests,omitempty"`
}

type volumeMount struct {
	Name      string `json:"name"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
	MountPath string `json:"mountPath"`
}

type toleration struct {
	Key               string `json:"key,omitempty"`
	Operator          string `json:"operator,omitempty"`
	Effect            string `json:"effect,omitempty"`
	TolerationSeconds *int   `json:"tolerationSeconds,omitempty"`
}

type podStatus struct {
	Phase             string            `json:"phase,omitempty"`
	Conditions        []podCondition    `json:"conditions,omitempty"`
	HostIP            string            `json:"hostIP,omitempty"`
	HostIPs           []ipEntry         `json:"hostIPs,omitempty"`
	PodIP             string            `json:"podIP,omitempty"`
	PodIPs            []ipEntry         `json:"podIPs,omitempty"`
	StartTime         string            `json:"startTime,omitempty"`
	ContainerStatuses []containerStatus `json:"containerStatuses,omitempty"`
	QOSClass          string            `json:"qosClass,omitempty"`
}

type ipEntry struct {
	IP string `json:"ip"`
}

type podCondition struct {
	Type               string  `json:"type"`
	Status             string  `json:"status"`
	LastProbeTime      *string `json:"lastProbeTime"`
	LastTransitionTime string  `json:"lastTransitionTime"`
}

type containerStatus struct {
	Name         string         `json:"name"`
	State        containerState `json:"state"`
	LastState    containerState `json:"lastState"`
	Ready        bool           `json:"ready"`
	RestartCount int            `json:"restartCount"`
	Image        string         `json:"image"`
	ImageID      string         `json:"imageID"`
	ContainerID  string         `json:"containerID,omitempty"`
	Started      *bool          `json:"started,omitempty"`
}

type containerState struct {
	Running    *stateRunning    `json:"running,omitempty"`
	Terminated *stateTerminated `json:"terminated,omitempty"`
}

type stateRunning struct {
	StartedAt string `json:"startedAt"`
}

type stateTerminated struct {
	ExitCode    int    `json:"exitCode"`
	Reason      string `json:"reason"`
	StartedAt   string `json:"startedAt"`
	FinishedAt  string `json:"finishedAt"`
	ContainerID string `json:"containerID"`
}

const kubeAPIAccessVolume = `{"name":"kube-api-access-%s","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}},{"downwardAPI":{"items":[{"path":"namespace","fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"}}]}}],"defaultMode":420}}`

func (g *generator) podObject(r *request, p pod, rv uint64, at int64, create bool) *podObject {
	o := &podObject{Kind: "Pod", APIVersion: "v1", Metadata: g.meta(r, rv, create)}
	apiAccess := g.suffix("api-access", p.ns, p.name)
	vols := []json.RawMessage{json.RawMessage(fmt.Sprintf(kubeAPIAccessVolume, apiAccess))}
	mounts := []volumeMount{{Name: "kube-api-access-" + apiAccess, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}
	var c container
	if p.job != nil {
		c, vols = g.trainerPod(o, p, mounts, vols)
	} else {
		c = g.daemonPod(o, p, mounts)
	}
	c.TerminationMessagePath, c.TerminationMessagePolicy, c.ImagePullPolicy = "/dev/termination-log", "File", "IfNotPresent"
	o.Spec.Containers = []container{c}
	o.Spec.Volumes = vols
	o.Spec.RestartPolicy, o.Spec.TerminationGracePeriodSeconds, o.Spec.DNSPolicy = "Never", 30, "ClusterFirst"
	if p.ds != nil {
		o.Spec.RestartPolicy = "Always"
	}
	o.Spec.SchedulerName, o.Spec.EnableServiceLinks, o.Spec.PreemptionPolicy = "default-scheduler", true, "PreemptLowerPriority"
	if create {
		return o
	}
	o.Spec.ServiceAccount = o.Spec.ServiceAccountName
	o.Spec.NodeName = g.nodes[p.node].name
	if r.verb == "delete" {
		del := rfc3339(at + int64(30*time.Second))
		o.Metadata.DeletionTimestamp = &del
	}
	o.Status = g.podStatus(p, c, at)
	return o
}

// trainerPod fills in o, the pod p of an MPIJob (its launcher or a worker):
// labels, owner, scheduling; it returns the pod's container and its volumes
// (the job's own before vols).
func (g *generator) trainerPod(o *podObject, p pod, mounts []volumeMount, vols []json.RawMessage) (container, []json.RawMessage) {
	j := p.job
	yes := true
	role, name := "worker", "trainer"
	if p.ordinal == 0 {
		role, name = "launcher", "launcher"
	}
	o.Metadata.Labels = map[string]string{
		"training.kubeflow.org/job-name": j.name, "training.kubeflow.org/job-role": role,
		"training.kubeflow.org/operator-name": "mpi-operator",
	}
	if p.ordinal > 0 {
		o.Metadata.Labels["training.kubeflow.org/replica-index"] = strconv.Itoa(p.ordinal - 1)
	}
	o.Metadata.OwnerReferences = []ownerReference{{APIVersion: "kubeflow.org/v2beta1", Kind: "MPIJob", Name: j.name, UID: g.uid("mpijobs", j.ns, j.name), Controller: &yes, BlockOwnerDeletion: &yes}}
	gpus := strconv.Itoa(j.gpus)
	lim := map[string]string{"cpu": "96", "memory": "1600Gi", "nvidia.com/gpu": gpus, "vpc.amazonaws.com/efa": "32"}
	if p.ordinal == 0 {
		lim = map[string]string{"cpu": "2", "memory": "4Gi"}
	}
	c := container{Name: name, Image: j.image,
		Command: []string{"torchrun"},
		Args:    []string{fmt.Sprintf("--nnodes=%d", j.workers), "--nproc-per-node=" + gpus, "train.py", "--config=/etc/trainer/train.yaml"},
		Env: []envVar{
			{Name: "WORLD_SIZE", Value: strconv.Itoa(j.workers * j.gpus)},
			{Name: "NCCL_DEBUG", Value: "WARN"},
			{Name: "POD_NAME", ValueFrom: &envSource{FieldRef: &fieldRef{APIVersion: "v1", FieldPath: "metadata.name"}}},
			{Name: "HF_TOKEN", ValueFrom: &envSource{SecretKeyRef: &keyRef{Name: "hf-token", Key: "token"}}},
			{Name: "WANDB_API_KEY", ValueFrom: &envSource{SecretKeyRef: &keyRef{Name: "wandb-api-key", Key: "api-key"}}},
		},
		Resources: resources{Limits: lim, Requests: lim},
		VolumeMounts: append([]volumeMount{
			{Name: "config", MountPath: "/etc/trainer"}, {Name: "ssh-auth", MountPath: "/etc/mpi-ssh", ReadOnly: true}, {Name: "dshm", MountPath: "/dev/shm"},
		}, mounts...),
	}
	vols = append([]json.RawMessage{
		json.RawMessage(fmt.Sprintf(`{"name":"config","configMap":{"name":%q,"defaultMode":420}}`, j.name+"-config")),
		json.RawMessage(fmt.Sprintf(`{"name":"ssh-auth","secret":{"secretName":%q,"defaultMode":384}}`, j.name+"-ssh")),
		json.RawMessage(`{"name":"dshm","emptyDir":{"medium":"Memory","sizeLimit":"256Gi"}}`),
	}, vols...)
	o.Spec.ServiceAccountName, o.Spec.PriorityClassName, o.Spec.Priority = "trainer", "training-high", 100000
	o.Spec.Tolerations = []toleration{{Key: "nvidia.com/gpu", Operator: "Exists", Effect: "NoSchedule"}}
	return c, vols
}

// daemonPod fills in o, the pod p of a daemon set: labels, owner,
// scheduling; it returns the pod's container.
func (g *generator) daemonPod(o *podObject, p pod, mounts []volumeMount) container {
	ds := p.ds
	yes := true
	o.Metadata.Labels = map[string]string{"controller-revision-hash": g.suffix("rev", ds.name) + "d8f", "k8s-app": ds.name, "pod-template-generation": "1"}
	o.Metadata.OwnerReferences = []ownerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.name, UID: g.uid("daemonsets", ds.ns, ds.name), Controller: &yes, BlockOwnerDeletion: &yes}}
	c := container{Name: ds.name, Image: ds.image, Resources: resources{Requests: map[string]string{"cpu": "100m", "memory": "128Mi"}}, VolumeMounts: mounts}
	if ds.name == "kube-proxy" {
		c.Command = []string{"/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf", "--hostname-override=$(NODE_NAME)"}
		c.Env = []envVar{{Name: "NODE_NAME", ValueFrom: &envSource{FieldRef: &fieldRef{APIVersion: "v1", FieldPath: "spec.nodeName"}}}}
		c.SecurityContext = map[string]any{"privileged": true}
		o.Spec.HostNetwork = true
	}
	o.Spec.ServiceAccountName, o.Spec.PriorityClassName, o.Spec.Priority = ds.sa, "system-node-critical", 2000001000
	o.Spec.Tolerations = []toleration{{Operator: "Exists"}}
	return c
}

func (g *generator) podStatus(p pod, c container, at int64) podStatus {
	started := g.createdAt(target{resource: "pods", ns: p.ns, name: p.name})
	conds := []podCondition{}
	for _, t := range []string{"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"} {
		conds = append(conds, podCondition{Type: t, Status: "True", LastTransitionTime: started})
	}
	yes := true
	hostIP := g.nodes[p.node].ip
	podIP := g.podIP(p.node, int(g.hash("slot", p.ns, p.name)%200))
	if p.ds != nil && p.ds.name == "kube-proxy" {
		podIP = hostIP
	}
	return podStatus{
		Phase: "Running", Conditions: conds,
		HostIP: hostIP, HostIPs: []ipEntry{{hostIP}}, PodIP: podIP, PodIPs: []ipEntry{{podIP}},
		StartTime: started,
		ContainerStatuses: []containerStatus{{
			Name: c.Name, State: containerState{Running: &stateRunning{StartedAt: started}},
			Ready: true, RestartCount: int(g.hash("restarts", p.name) % 3), Image: c.Image,
			ImageID:     imageRepo(c.Image) + "@sha256:" + g.digest(c.Image),
			ContainerID: "containerd://" + g.hexOf(64, "container", p.ns, p.name, c.Name),
			Started:     &yes,
		}},
		QOSClass: map[bool]string{true: "Guaranteed", false: "Burstable"}[p.job != nil && p.ordinal > 0],
	}
}

func imageRepo(image string) string {
	if i := strings.LastIndexByte(image, ':'); i > strings.LastIndexByte(image, '/') {
		return image[:i]
	}
	return image
}

// podStatusPatch is the strategic merge patch a kubelet's status manager sends.
func (g *generator) podStatusPatch(p pod, at int64) any {
	order := []any{}
	for _, t := range []string{"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"} {
		order = append(order, map[string]string{"type": t})
	}
	ready := "True"
	if g.rng.IntN(3) == 0 {
		ready = "False"
	}
	now := rfc3339(at)
	image, name := podImage(p)
	return map[string]any{
		"metadata": map[string]string{"uid": g.uid("pods", p.ns, p.name)},
		"status": map[string]any{
			"$setElementOrder/conditions": order,
			"conditions": []any{
				map[string]any{"lastTransitionTime": now, "status": ready, "type": "Ready"},
				map[string]any{"lastTransitionTime": now, "status": ready, "type": "ContainersReady"},
			},
			"containerStatuses": []any{map[string]any{
				"containerID": "containerd://" + g.hexOf(64, "container", p.ns, p.name, now),
				"image":       image, "imageID": imageRepo(image) + "@sha256:" + g.digest(image),
				"lastState": map[string]any{}, "name": name, "ready": ready == "True", "restartCount": int(g.hash("restarts", p.name)%3) + 1,
				"started": true, "state": map[string]any{"running": map[string]string{"startedAt": now}},
			}},
		},
	}
}

// podImage is the image and name of the pod's container.
func podImage(p pod) (image, container string) {
	switch {
	case p.job == nil:
		return p.ds.image, p.ds.name
	case p.ordinal == 0:
		return p.job.image, "launcher"
	}
	return p.job.image, "trainer"
}

func nodeStatusPatch(at int64) any {
	hb := rfc3339(at)
	order, conds := []any{}, []any{}
	for _, t := range []string{"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"} {
		order = append(order, map[string]string{"type": t})
		conds = append(conds, map[string]string{"lastHeartbeatTime": hb, "type": t})
	}
	return map[string]any{"status": map[string]any{"$setElementOrder/conditions": order, "conditions": conds}}
}
