package main

// Kubernetes and client constants.

const (
	k8sVersion = "v1.37.2"
	k8sCommit  = "abcdef0"

	uaKubelet   = "kubelet/" + k8sVersion + " (linux/amd64) kubernetes/" + k8sCommit
	uaKubectl   = "kubectl/" + k8sVersion + " (linux/amd64) kubernetes/" + k8sCommit
	uaKubectlMa = "kubectl/" + k8sVersion + " (darwin/arm64) kubernetes/" + k8sCommit
	uaKCM       = "kube-controller-manager/" + k8sVersion + " (linux/amd64) kubernetes/" + k8sCommit
	uaScheduler = "kube-scheduler/" + k8sVersion + " (linux/amd64) kubernetes/" + k8sCommit
	uaAPIServer = "kube-apiserver/" + k8sVersion + " (linux/amd64) kubernetes/" + k8sCommit
	uaKubeProxy = "kube-proxy/" + k8sVersion + " (linux/amd64) kubernetes/" + k8sCommit
	uaMPI       = "mpi-operator/v0.6.0 (linux/amd64) kubernetes/$Format"
	uaProm      = "Prometheus/2.53.1"
	uaReaper    = "python-requests/2.31"

	controlPlaneIP = "10.0.0.10"
	apiserverLease = "apiserver-vq4ztgd3f5hqtb6yjsfhcecbfe"

	secretMarker = "SECRETVALUE-"
	cmMarker     = "CMVALUE-"
)

var trainerUserAgents = []string{"python-requests/2.31", "trainer/1.4 (linux/amd64)", "OpenAPI-Generator/30.1.0/python"}

// trainJob is an MPIJob: one launcher pod and workers worker pods.
type trainJob struct {
	ns, name, image string
	workers, gpus   int
}

// jobFirst is the index of the job's launcher among all training pods.
func jobFirst(j *trainJob) int {
	n := 0
	for i := range trainJobs {
		if &trainJobs[i] == j {
			return n
		}
		n += 1 + trainJobs[i].workers
	}
	panic("jobFirst: job not in trainJobs")
}

var trainJobs = []trainJob{
	{ns: "llm-pretrain", name: "llama-70b-pretrain", image: "nvcr.io/nvidia/pytorch:24.05-py3", workers: 256, gpus: 8},
	{ns: "llm-pretrain", name: "mixtral-8x7b-sft", image: "registry.example.com/ml/llm-trainer:2.3.1", workers: 64, gpus: 8},
	{ns: "vision-train", name: "vit-h14-imagenet", image: "registry.example.com/ml/vision-trainer:1.4.0", workers: 64, gpus: 8},
	{ns: "vision-train", name: "resnet152-sweep-07", image: "nvcr.io/nvidia/pytorch:24.05-py3", workers: 16, gpus: 4},
	{ns: "vision-train", name: "detr-coco-finetune", image: "registry.example.com/ml/vision-trainer:1.4.0", workers: 8, gpus: 8},
}

type daemonSet struct{ ns, name, image, sa string }

var daemonSets = []daemonSet{
	{ns: "kube-system", name: "kube-proxy", image: "registry.k8s.io/kube-proxy:" + k8sVersion, sa: "kube-proxy"},
	{ns: "monitoring", name: "node-exporter", image: "quay.io/prometheus/node-exporter:v1.8.2", sa: "node-exporter"},
	{ns: "kube-system", name: "nvidia-device-plugin-daemonset", image: "nvcr.io/nvidia/k8s-device-plugin:v0.16.2", sa: "default"},
}

var (
	trainNamespaces = []string{"llm-pretrain", "vision-train"}
	allNamespaces   = []string{"default", "kube-node-lease", "kube-system", "llm-pretrain", "monitoring", "mpi-operator", "vision-train"}
	nsSecrets       = []string{"hf-token", "wandb-api-key"}
)

// workload is a controller-owned object that is not a training pod.
type workload struct{ group, resource, ns, name string }

var workloads = []workload{
	{"apps", "deployments", "kube-system", "coredns"},
	{"apps", "deployments", "monitoring", "kube-state-metrics"},
	{"apps", "deployments", "mpi-operator", "mpi-operator"},
	{"apps", "replicasets", "kube-system", "coredns-7db6d8ff4d"},
	{"apps", "replicasets", "monitoring", "kube-state-metrics-5c9d8b7f64"},
	{"apps", "replicasets", "mpi-operator", "mpi-operator-6d9f7c8b5"},
	{"batch", "jobs", "vision-train", "imagenet-shard-prep"},
	{"batch", "jobs", "llm-pretrain", "tokenize-shards"},
	{"batch", "jobs", "llm-pretrain", "eval-llama-70b-step-12000"},
}

var services = []struct{ ns, name string }{
	{"default", "kubernetes"}, {"kube-system", "kube-dns"}, {"monitoring", "prometheus-k8s"},
	{"llm-pretrain", "llama-70b-pretrain-worker"}, {"llm-pretrain", "mixtral-8x7b-sft-worker"},
	{"vision-train", "vit-h14-imagenet-worker"}, {"vision-train", "resnet152-sweep-07-worker"},
}

var kindOf = map[string]string{
	"pods": "Pod", "nodes": "Node", "leases": "Lease", "configmaps": "ConfigMap", "secrets": "Secret",
	"events": "Event", "services": "Service", "endpoints": "Endpoints", "endpointslices": "EndpointSlice",
	"jobs": "Job", "deployments": "Deployment", "replicasets": "ReplicaSet", "namespaces": "Namespace",
	"mpijobs": "MPIJob",
}

var groupVersion = map[string]string{
	"": "v1", "apps": "v1", "batch": "v1", "coordination.k8s.io": "v1", "discovery.k8s.io": "v1",
	"events.k8s.io": "v1", "kubeflow.org": "v2beta1",
}

var groupOf = map[string]string{
	"leases": "coordination.k8s.io", "endpointslices": "discovery.k8s.io", "jobs": "batch",
	"deployments": "apps", "replicasets": "apps", "mpijobs": "kubeflow.org",
}
