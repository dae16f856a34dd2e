// Command auditgen writes a synthetic kube-apiserver audit log for benchmarks
// and ingest tests: JSON Lines, one audit.k8s.io/v1 Event per line, shaped the
// way kube-apiserver writes them with --audit-log-format=json (field order,
// omitted empty fields, HTML-escaped "&" in requestURI, microsecond UTC
// timestamps, Go duration strings in latency annotations).
//
// The cluster it describes is a GPU training cluster: -nodes kubelets renewing
// leases and patching status, MPI training jobs (kubeflow.org MPIJobs) in
// llm-pretrain and vision-train whose worker pods talk to the API server with
// their service-account tokens, the scheduler, the controller manager, the
// mpi-operator, Prometheus and a few admins.
//
// The output is fully determined by the flags: the same -seed gives
// byte-identical output. Lines are written in stageTimestamp order, as a
// single apiserver's log backend writes them, so a request's RequestReceived
// line comes before its ResponseComplete line with other requests in between,
// and a watch's ResponseComplete comes minutes after its ResponseStarted.
// Requests still open when the line budget is reached are completed at the
// end; -lines counts every line written.
//
// Secret and ConfigMap contents carry markers so tests can check that values
// never reach a database: every Secret data value is the base64 encoding of
// "SECRETVALUE-" + 32 hex digits (so the encoded value starts with
// "U0VDUkVUVkFMVUUt"), and every ConfigMap data value is "CMVALUE-" + 32 hex
// digits.
//
// Usage:
//
//	auditgen -lines 1000000 -seed 1 -o audit.log.gz
//	auditgen -lines 200000 -burst 600s:60s:20 > audit.log
package main

import (
	"bufio"
	"compress/gzip"
	"container/heap"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes, as in the rest of faultline.
const (
	exitOK        = 0
	exitFailure   = 1
	exitUsage     = 2
	exitInterrupt = 130
)

// usageError is a flag value that is wrong; run prints it with a hint.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	var ue *usageError
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "error: %s\nTry: auditgen -lines 100000 -seed 1 -burst 600s:60s:20 -o audit.log.gz\n", ue.msg)
		return exitUsage
	case err != nil: // the flag package has already printed the error and usage
		return exitUsage
	}

	log := slog.New(slog.NewTextHandler(stderr, nil))
	out := opts.out
	if out == "" || out == "-" {
		out = "stdout"
	}
	began := time.Now()
	n, err := writeLog(ctx, opts, stdout)
	if err != nil {
		if ctx.Err() != nil {
			log.Error("interrupted", "lines", n, "out", out)
			return exitInterrupt
		}
		log.Error("writing audit log", "out", out, "lines", n, "err", err)
		return exitFailure
	}
	log.Info("wrote audit log", "lines", n, "out", out, "seed", opts.seed,
		"elapsed", time.Since(began).Round(time.Millisecond))
	return exitOK
}

// options are the command's flag values.
type options struct {
	lines  int
	seed   uint64
	start  time.Time
	rate   float64 // requests per second outside the burst
	nodes  int
	rr     float64 // fraction of requests audited at RequestResponse level
	stages float64 // fraction of requests that also log RequestReceived
	out    string  // "" or "-" for stdout; *.gz is gzip-compressed
	burst  burst
}

// burst is a window in which node and worker clients fan out: the request
// rate is multiplied, latencies grow, and 429s and 5xx become common.
type burst struct {
	offset, length time.Duration
	mult           float64 // 0 when there is no burst
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("auditgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: auditgen [flags]\n\nWrites a synthetic kube-apiserver audit log (JSON Lines, audit.k8s.io/v1 Events).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	var o options
	var start, burstSpec string
	fs.IntVar(&o.lines, "lines", 1000000, "number of audit lines to write")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed; the output is fully determined by the flags")
	fs.StringVar(&start, "start", "2026-05-01T10:00:00Z", "time of the first request (RFC 3339)")
	fs.Float64Var(&o.rate, "rate", 300, "baseline requests per second")
	fs.IntVar(&o.nodes, "nodes", 1000, "number of nodes (kubelets)")
	fs.Float64Var(&o.rr, "rr", 0.05, "fraction of lines at RequestResponse level")
	fs.Float64Var(&o.stages, "stages", 0.3, "fraction of requests that also log a RequestReceived line")
	fs.StringVar(&o.out, "o", "", "output path (default stdout); a path ending in .gz is gzip-compressed")
	fs.StringVar(&burstSpec, "burst", "", "optional START_OFFSET:DURATION:MULTIPLIER, e.g. 600s:60s:20: a window where node and worker clients fan out")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, &usageError{fmt.Sprintf("unexpected argument %q: auditgen takes flags only", fs.Arg(0))}
	}
	t, err := time.Parse(time.RFC3339, start)
	if err != nil {
		return o, &usageError{fmt.Sprintf("invalid -start %q: want RFC 3339, e.g. 2026-05-01T10:00:00Z", start)}
	}
	o.start = t.UTC()
	if o.lines < 0 {
		return o, &usageError{fmt.Sprintf("invalid -lines %d: want 0 or more", o.lines)}
	}
	if !(o.rate > 0) || math.IsInf(o.rate, 0) {
		return o, &usageError{fmt.Sprintf("invalid -rate %v: want a positive number of requests per second", o.rate)}
	}
	if o.nodes < 1 || o.nodes > 99999 {
		return o, &usageError{fmt.Sprintf("invalid -nodes %d: want 1 to 99999", o.nodes)}
	}
	if !(o.rr >= 0 && o.rr <= 1) {
		return o, &usageError{fmt.Sprintf("invalid -rr %v: want a fraction between 0 and 1", o.rr)}
	}
	if !(o.stages >= 0 && o.stages <= 1) {
		return o, &usageError{fmt.Sprintf("invalid -stages %v: want a fraction between 0 and 1", o.stages)}
	}
	if o.burst, err = parseBurst(burstSpec); err != nil {
		return o, err
	}
	return o, nil
}

// parseBurst parses START_OFFSET:DURATION:MULTIPLIER; "" means no burst.
// maxBurst bounds a burst's multiplier: a million times the base rate is
// already past any apiserver; more only overflows the arithmetic.
const maxBurst = 1e6

func parseBurst(s string) (burst, error) {
	if s == "" {
		return burst{}, nil
	}
	bad := func(why string) (burst, error) {
		return burst{}, &usageError{fmt.Sprintf("invalid -burst %q: %s; want START_OFFSET:DURATION:MULTIPLIER, e.g. 600s:60s:20", s, why)}
	}
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return bad("want three fields")
	}
	off, err := time.ParseDuration(parts[0])
	if err != nil || off < 0 {
		return bad("START_OFFSET is not a duration of 0 or more")
	}
	length, err := time.ParseDuration(parts[1])
	if err != nil || length <= 0 {
		return bad("DURATION is not a positive duration")
	}
	mult, err := strconv.ParseFloat(parts[2], 64)
	if err != nil || !(mult >= 1) || mult > maxBurst {
		return bad(fmt.Sprintf("MULTIPLIER is not a number from 1 to %g", float64(maxBurst)))
	}
	return burst{offset: off, length: length, mult: mult}, nil
}

// writeLog writes the log to opts.out (or stdout) and returns the number of
// lines written.
func writeLog(ctx context.Context, opts options, stdout io.Writer) (n int, err error) {
	var w io.Writer = stdout
	if opts.out != "" && opts.out != "-" {
		f, err := os.Create(opts.out)
		if err != nil {
			return 0, err
		}
		defer func() {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}()
		w = f
		if strings.HasSuffix(opts.out, ".gz") {
			zw, err := gzip.NewWriterLevel(f, gzip.BestSpeed)
			if err != nil {
				return 0, err
			}
			defer func() {
				if cerr := zw.Close(); err == nil {
					err = cerr
				}
			}()
			w = zw
		}
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	n, err = newGenerator(opts).run(ctx, bw)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return n, err
}

// ---------------------------------------------------------------------------
// Output: audit.k8s.io/v1 Event, fields in the order kube-apiserver writes.

type event struct {
	Kind                     string            `json:"kind"`
	APIVersion               string            `json:"apiVersion"`
	Level                    string            `json:"level"`
	AuditID                  string            `json:"auditID"`
	Stage                    string            `json:"stage"`
	RequestURI               string            `json:"requestURI"`
	Verb                     string            `json:"verb"`
	User                     *userInfo         `json:"user"`
	ImpersonatedUser         *userInfo         `json:"impersonatedUser,omitempty"`
	SourceIPs                []string          `json:"sourceIPs,omitempty"`
	UserAgent                string            `json:"userAgent,omitempty"`
	ObjectRef                *objectRef        `json:"objectRef,omitempty"`
	ResponseStatus           *status           `json:"responseStatus,omitempty"`
	RequestObject            json.RawMessage   `json:"requestObject,omitempty"`
	ResponseObject           json.RawMessage   `json:"responseObject,omitempty"`
	RequestReceivedTimestamp microTime         `json:"requestReceivedTimestamp"`
	StageTimestamp           microTime         `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations,omitempty"`
}

type userInfo struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

type objectRef struct {
	Resource        string `json:"resource,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name,omitempty"`
	UID             string `json:"uid,omitempty"`
	APIGroup        string `json:"apiGroup,omitempty"`
	APIVersion      string `json:"apiVersion,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	Subresource     string `json:"subresource,omitempty"`
}

// status is metav1.Status; "metadata" is always written, as upstream does.
type status struct {
	Kind       string         `json:"kind,omitempty"`
	APIVersion string         `json:"apiVersion,omitempty"`
	Metadata   struct{}       `json:"metadata"`
	Status     string         `json:"status,omitempty"`
	Message    string         `json:"message,omitempty"`
	Reason     string         `json:"reason,omitempty"`
	Details    *statusDetails `json:"details,omitempty"`
	Code       int            `json:"code,omitempty"`
}

type statusDetails struct {
	Name              string `json:"name,omitempty"`
	Group             string `json:"group,omitempty"`
	Kind              string `json:"kind,omitempty"`
	UID               string `json:"uid,omitempty"`
	RetryAfterSeconds int    `json:"retryAfterSeconds,omitempty"`
}

// microTime is a Unix time in nanoseconds, written as metav1.MicroTime does:
// RFC 3339 in UTC, truncated to microseconds.
type microTime int64

func (t microTime) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 32)
	b = append(b, '"')
	b = time.Unix(0, int64(t)).UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
	return append(b, '"'), nil
}

// ---------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------
// The generator.

type generator struct {
	opts      options
	rng       *rand.Rand
	seedTag   [8]byte
	now       int64 // arrival time of the latest request, Unix ns
	burstLo   int64
	burstHi   int64
	seq       uint64
	rv        uint64            // cluster-wide resourceVersion (etcd revision)
	rv0       uint64            // rv when the log starts
	lastRV    map[string]uint64 // resourceVersion of objects written during the log; bounded by the object pool
	pending   pendingHeap
	podActs   map[string]actor // per pod; bounded by the pod pool
	base      table
	fanout    table
	nodes     []nodeInfo
	podTotal  int   // training pods (launchers and workers)
	trainPods []pod // launchers and workers of trainJobs, in order
	actors    actors
}

type nodeInfo struct {
	name, ip, uid string
	ips           []string
	user          *userInfo
}

// actor is who sends a request.
type actor struct {
	user   *userInfo
	ua     string
	ips    []string
	reason string // authorization.k8s.io/reason when allowed
	token  bool   // authenticated with a service-account token rather than x509
}

type actors struct {
	scheduler, kcm, apiserver, mpiOperator, prometheus, reaper actor
	controllers                                                map[string]actor
	admins                                                     []actor
}

func newGenerator(o options) *generator {
	g := &generator{
		opts:    o,
		rng:     rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15)),
		now:     o.start.UnixNano(),
		lastRV:  make(map[string]uint64),
		podActs: make(map[string]actor),
		base:    newTable(baseActions),
		fanout:  newTable(burstActions),
	}
	binary.LittleEndian.PutUint64(g.seedTag[:], o.seed)
	if o.burst.mult > 0 {
		g.burstLo = g.now + int64(o.burst.offset)
		g.burstHi = g.burstLo + int64(o.burst.length)
	}
	g.rv = 2_100_000_000 + g.rng.Uint64N(100_000_000)
	g.rv0 = g.rv
	for i := range o.nodes {
		name := fmt.Sprintf("node-%04d", i)
		ip := fmt.Sprintf("10.%d.%d.%d", 20+i/60000, i/240%250, 10+i%240)
		g.nodes = append(g.nodes, nodeInfo{
			name: name, ip: ip, ips: []string{ip},
			uid:  g.uid("nodes", "", name),
			user: &userInfo{Username: "system:node:" + name, Groups: []string{"system:nodes", "system:authenticated"}},
		})
	}
	for j := range trainJobs {
		job := &trainJobs[j]
		for i := range 1 + job.workers {
			name := job.name + "-launcher"
			if i > 0 {
				name = fmt.Sprintf("%s-worker-%d", job.name, i-1)
			}
			g.trainPods = append(g.trainPods, pod{ns: job.ns, name: name, node: int(g.hash("placement", job.ns, name) % uint64(len(g.nodes))), job: job, ordinal: i})
		}
	}
	g.podTotal = len(g.trainPods)
	g.actors = g.newActors()
	return g
}

func (g *generator) newActors() actors {
	x509 := func(name, ua, reason string, groups ...string) actor {
		return actor{user: &userInfo{Username: name, Groups: append(groups, "system:authenticated")}, ua: ua, ips: []string{controlPlaneIP}, reason: reason}
	}
	rbacUser := func(name string) string {
		return fmt.Sprintf("RBAC: allowed by ClusterRoleBinding %q of ClusterRole %q to User %q", name, name, name)
	}
	a := actors{
		scheduler: x509("system:kube-scheduler", uaScheduler, rbacUser("system:kube-scheduler")),
		kcm:       x509("system:kube-controller-manager", uaKCM, rbacUser("system:kube-controller-manager")),
		apiserver: actor{
			user: &userInfo{Username: "system:apiserver", UID: g.uid("apiserver", "", apiserverLease), Groups: []string{"system:authenticated", "system:masters"}},
			ua:   uaAPIServer, ips: []string{"::1"},
		},
		controllers: map[string]actor{},
	}
	for _, c := range []string{"job-controller", "replicaset-controller", "deployment-controller", "endpointslice-controller", "generic-garbage-collector", "node-lifecycle-controller", "pod-garbage-collector"} {
		a.controllers[c] = actor{
			user:   g.saUser("kube-system", c, nil),
			ua:     uaKCM + "/system:serviceaccount:kube-system:" + c,
			ips:    []string{controlPlaneIP},
			reason: fmt.Sprintf("RBAC: allowed by ClusterRoleBinding %q of ClusterRole %q to ServiceAccount %q", "system:controller:"+c, "system:controller:"+c, c+"/kube-system"),
			token:  true,
		}
	}
	podActor := func(ns, sa, pod, ua, binding string) actor {
		n := int(g.hash("placement", ns, pod) % uint64(len(g.nodes)))
		return actor{
			user:   g.saUser(ns, sa, &podBinding{pod: pod, node: n}),
			ua:     ua,
			ips:    []string{g.podIP(n, int(g.hash("slot", ns, pod)%200))},
			reason: fmt.Sprintf("RBAC: allowed by ClusterRoleBinding %q of ClusterRole %q to ServiceAccount %q", binding, binding, sa+"/"+ns),
			token:  true,
		}
	}
	a.mpiOperator = podActor("mpi-operator", "mpi-operator", "mpi-operator-6d9f7c8b5-x2x7k", uaMPI, "mpi-operator")
	a.prometheus = podActor("monitoring", "prometheus-k8s", "prometheus-k8s-0", uaProm, "prometheus-k8s")
	a.reaper = podActor("ml-platform", "job-reaper", "job-reaper-29571840-8xq2m", uaReaper, "job-reaper")
	a.admins = []actor{
		{user: &userInfo{Username: "oidc:alice@example.com", Groups: []string{"oidc:ml-platform-admins", "system:authenticated"}}, ua: uaKubectlMa, ips: []string{"203.0.113.45"},
			reason: `RBAC: allowed by ClusterRoleBinding "ml-platform-admins" of ClusterRole "cluster-admin" to Group "oidc:ml-platform-admins"`},
		{user: &userInfo{Username: "oidc:bob@example.com", Groups: []string{"oidc:ml-researchers", "system:authenticated"}}, ua: uaKubectl, ips: []string{"198.51.100.7", "10.0.0.5"},
			reason: `RBAC: allowed by ClusterRoleBinding "ml-researchers" of ClusterRole "ml-researcher" to Group "oidc:ml-researchers"`},
		{user: &userInfo{Username: "kubernetes-admin", Groups: []string{"kubeadm:cluster-admins", "system:authenticated"}}, ua: uaKubectl, ips: []string{"10.0.0.5"},
			reason: `RBAC: allowed by ClusterRoleBinding "kubeadm:cluster-admins" of ClusterRole "cluster-admin" to Group "kubeadm:cluster-admins"`},
	}
	return a
}

type podBinding struct {
	pod  string
	node int
}

// saUser is the user of a service-account token; bound tokens carry the pod
// and node in extra.
func (g *generator) saUser(ns, sa string, b *podBinding) *userInfo {
	u := &userInfo{
		Username: "system:serviceaccount:" + ns + ":" + sa,
		UID:      g.uid("serviceaccounts", ns, sa),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	if b == nil {
		u.Extra = map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=" + g.uid("jti", ns, sa)}}
		return u
	}
	nd := g.nodes[b.node]
	u.Extra = map[string][]string{
		"authentication.kubernetes.io/credential-id": {"JTI=" + g.uid("jti", ns, b.pod)},
		"authentication.kubernetes.io/node-name":     {nd.name},
		"authentication.kubernetes.io/node-uid":      {nd.uid},
		"authentication.kubernetes.io/pod-name":      {b.pod},
		"authentication.kubernetes.io/pod-uid":       {g.uid("pods", ns, b.pod)},
	}
	return u
}

// run writes opts.lines lines to w.
func (g *generator) run(ctx context.Context, w io.Writer) (int, error) {
	written, scheduled := 0, 0
	var buf []byte
	write := func(ev *event) error {
		written++
		buf = appendEvent(buf[:0], ev)
		_, err := w.Write(buf)
		return err
	}
	for i := 0; scheduled < g.opts.lines; i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return written, err
			}
		}
		g.now += g.gap()
		for len(g.pending) > 0 && g.pending[0].at <= g.now {
			if err := write(heap.Pop(&g.pending).(pendingLine).ev); err != nil {
				return written, err
			}
		}
		scheduled += g.request(g.opts.lines - scheduled)
	}
	for len(g.pending) > 0 {
		if written%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return written, err
			}
		}
		if err := write(heap.Pop(&g.pending).(pendingLine).ev); err != nil {
			return written, err
		}
	}
	return written, nil
}

func (g *generator) inBurst(t int64) bool { return t >= g.burstLo && t < g.burstHi }

// gap is the time to the next arrival of a Poisson process.
func (g *generator) gap() int64 {
	rate := g.opts.rate
	if g.inBurst(g.now) {
		rate *= g.opts.burst.mult
	}
	return max(1, int64(g.rng.ExpFloat64()/rate*1e9))
}

// pendingLine is a line waiting for its stageTimestamp; seq breaks ties so
// the order is fully determined.
type pendingLine struct {
	at  int64
	seq uint64
	ev  *event
}

type pendingHeap []pendingLine

func (h pendingHeap) Len() int { return len(h) }
func (h pendingHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}

func (h pendingHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pendingHeap) Push(x any)   { *h = append(*h, x.(pendingLine)) }
func (h *pendingHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = pendingLine{}
	*h = old[:len(old)-1]
	return x
}

func (g *generator) schedule(at int64, ev *event) {
	g.seq++
	heap.Push(&g.pending, pendingLine{at: at, seq: g.seq, ev: ev})
}

// ---------------------------------------------------------------------------
// Requests.

// target is the object a request addresses.
type target struct {
	group, resource, sub, ns, name string
}

func (t target) version() string { return groupVersion[t.group] }

func (t target) key() string { return t.resource + "/" + t.ns + "/" + t.name }

// qualified is the resource as API errors name it: "pods", "leases.coordination.k8s.io".
func (t target) qualified() string {
	if t.group == "" {
		return t.resource
	}
	return t.resource + "." + t.group
}

type request struct {
	verb  string
	at    int64
	actor actor
	imp   *userInfo
	t     target
	query string
	path  string // non-resource requests only

	nameInRef    bool   // list/watch with fieldSelector metadata.name: objectRef.name is set
	generateName string // create with metadata.generateName: no name until the response
	longRunning  bool
	watchTimeout int // seconds
	timeout      time.Duration

	median    time.Duration
	sigma     float64
	cached    bool // served from the watch cache: no etcd latency
	pNotFound float64
	pConflict float64
	pForbid   float64
	forbidWhy string // authorizer reason on a forbid (Node authorizer)
	untracked bool   // object name is not from the bounded pool: do not remember its resourceVersion

	// body inputs
	pod      *pod
	node     int
	job      *trainJob
	patch    func(g *generator, r *request) any // built only when the level logs bodies
	delOpts  any
	evReason string
	podSec   string
}

// request draws and schedules one request; it returns the number of lines
// scheduled, never more than budget.
func (g *generator) request(budget int) int {
	r := g.draw()
	for budget < 2 && r.longRunning { // a long-running request needs ResponseStarted too
		r = g.draw()
	}
	return g.emit(r, budget)
}

func (g *generator) draw() *request {
	t := g.base
	if g.inBurst(g.now) && g.rng.Float64() < 1-1/g.opts.burst.mult {
		t = g.fanout
	}
	a := t.pick(g.rng.Float64())
	r := &request{verb: a.verb, at: g.now, node: -1, timeout: time.Minute}
	switch a.verb {
	case "get":
		r.median, r.sigma = 2500*time.Microsecond, 0.8
	case "list":
		r.median, r.sigma = 30*time.Millisecond, 1.0
	case "create":
		r.median, r.sigma = 9*time.Millisecond, 0.6
	case "update":
		r.median, r.sigma = 6*time.Millisecond, 0.6
	case "patch":
		r.median, r.sigma = 8*time.Millisecond, 0.7
	case "delete":
		r.median, r.sigma = 10*time.Millisecond, 0.7
	case "watch":
		r.longRunning = true
	}
	a.fill(g, r)
	return r
}

// ---------------------------------------------------------------------------
// Cluster objects.

type pod struct {
	ns, name string
	node     int
	job      *trainJob // nil for daemon-set pods
	ds       *daemonSet
	ordinal  int // 0 is the launcher
}

func (g *generator) trainPod(i int) pod { return g.trainPods[i] }

func (g *generator) dsPod(d, node int) pod {
	ds := &daemonSets[d]
	return pod{ns: ds.ns, name: ds.name + "-" + g.suffix(ds.name, g.nodes[node].name), node: node, ds: ds}
}

func (g *generator) anyPod() pod {
	if g.rng.Float64() < 0.65 {
		return g.trainPod(g.rng.IntN(g.podTotal))
	}
	return g.dsPod(g.rng.IntN(len(daemonSets)), g.rng.IntN(len(g.nodes)))
}

func (g *generator) anyTrainPod() pod { return g.trainPod(g.rng.IntN(g.podTotal)) }

func (g *generator) podActor(p pod) actor {
	key := p.ns + "/" + p.name
	if a, ok := g.podActs[key]; ok {
		return a
	}
	a := g.newPodActor(p)
	g.podActs[key] = a
	return a
}

func (g *generator) newPodActor(p pod) actor {
	if p.job == nil {
		return actor{user: g.saUser(p.ns, p.ds.sa, &podBinding{pod: p.name, node: p.node}), ua: uaKubeProxy, ips: []string{g.nodes[p.node].ip},
			reason: `RBAC: allowed by ClusterRoleBinding "system:node-proxier" of ClusterRole "system:node-proxier" to ServiceAccount "kube-proxy/kube-system"`, token: true}
	}
	ua := trainerUserAgents[g.hash("ua", p.ns, p.name)%uint64(len(trainerUserAgents))]
	if p.ordinal == 0 {
		ua = uaKubectl
	}
	return actor{
		user:   g.saUser(p.ns, "trainer", &podBinding{pod: p.name, node: p.node}),
		ua:     ua,
		ips:    []string{g.podIP(p.node, int(g.hash("slot", p.ns, p.name)%200))},
		reason: fmt.Sprintf("RBAC: allowed by RoleBinding %q of Role %q to ServiceAccount %q", "trainer/"+p.ns, "trainer", "trainer/"+p.ns),
		token:  true,
	}
}

func (g *generator) nodeActor(n int) actor {
	nd := g.nodes[n]
	return actor{user: nd.user, ua: uaKubelet, ips: nd.ips}
}

func (g *generator) podIP(node, slot int) string {
	return fmt.Sprintf("10.%d.%d.%d", 128+node/256, node%256, 2+slot)
}

func (g *generator) podConfigMaps(p pod) []string {
	switch {
	case p.job != nil:
		return []string{"kube-root-ca.crt", p.job.name + "-config"}
	case p.ds.name == "kube-proxy":
		return []string{"kube-root-ca.crt", "kube-proxy"}
	}
	return []string{"kube-root-ca.crt"}
}

func (g *generator) podSecrets(p pod) []string {
	return []string{p.job.name + "-ssh", nsSecrets[0], nsSecrets[1]}
}

func pickOne[T any](g *generator, xs []T) T { return xs[g.rng.IntN(len(xs))] }

func core(resource, ns, name string) target { return target{resource: resource, ns: ns, name: name} }

func grouped(resource, ns, name string) target {
	return target{group: groupOf[resource], resource: resource, ns: ns, name: name}
}

func (g *generator) anyNode() int { return g.rng.IntN(len(g.nodes)) }

func (g *generator) anyJob() *trainJob { return &trainJobs[g.rng.IntN(len(trainJobs))] }

func jobSelector(job *trainJob, role string) string {
	s := "training.kubeflow.org/job-name=" + job.name
	if role != "" {
		s += ",training.kubeflow.org/job-role=" + role
	}
	return s
}

func (g *generator) listQuery(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v.Encode()
}

// watchQuery is the query client-go reflectors send.
func (g *generator) watchQuery(r *request, kv ...string) {
	ts := 300 + g.rng.IntN(300)
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	v.Set("allowWatchBookmarks", "true")
	v.Set("resourceVersion", strconv.FormatUint(g.rv-g.rng.Uint64N(20000), 10))
	v.Set("timeout", (time.Duration(ts) * time.Second).String())
	v.Set("timeoutSeconds", strconv.Itoa(ts))
	v.Set("watch", "true")
	r.query, r.watchTimeout = v.Encode(), ts
}

// ---------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------
// Turning a request into audit lines.

// emit decides the request's outcome and schedules its lines; it returns the
// number of lines scheduled.
func (g *generator) emit(r *request, budget int) int {
	burst := g.inBurst(r.at)
	out := g.outcome(r, burst)
	level := "Metadata"
	if u := g.rng.Float64(); u < g.opts.rr {
		level = "RequestResponse"
	} else if u < g.opts.rr+requestLevelShare {
		level = "Request"
	}

	ev := &event{
		Kind: "Event", APIVersion: "audit.k8s.io/v1",
		Level:                    level,
		AuditID:                  g.uuid(),
		Stage:                    "ResponseComplete",
		RequestURI:               g.requestURI(r),
		Verb:                     r.verb,
		User:                     r.actor.user,
		ImpersonatedUser:         r.imp,
		SourceIPs:                r.actor.ips,
		UserAgent:                r.actor.ua,
		ResponseStatus:           out.status,
		RequestReceivedTimestamp: microTime(r.at),
		StageTimestamp:           microTime(r.at + out.latency),
	}
	if r.path == "" {
		ev.ObjectRef = g.objectRef(r)
	}

	// Object versions: writes move the cluster's resourceVersion on.
	cur := g.currentRV(r)
	var next uint64
	mutating := r.verb == "create" || r.verb == "update" || r.verb == "patch" || r.verb == "delete"
	if mutating && out.code < 300 {
		g.rv += 1 + g.rng.Uint64N(4)
		next = g.rv
		if !r.untracked && r.t.sub != "binding" {
			// Kept on delete too: pool objects come back under the same name,
			// and their resourceVersions must keep increasing.
			g.lastRV[r.t.key()] = next
		}
	} else if mutating {
		g.rv += g.rng.Uint64N(3) // other writers
	}
	sentRV := cur
	if out.code == 409 && r.verb == "update" {
		sentRV = cur - 1 - g.rng.Uint64N(50) // the client's copy was stale
	}
	// The apiserver fills uid and resourceVersion from the body of a create or
	// update (logged at Metadata level too), and the name of a create.
	hasBody := (r.verb == "create" || r.verb == "update") && out.code != 403 && out.code != 429
	if hasBody && ev.ObjectRef != nil {
		if r.verb == "update" {
			ev.ObjectRef.UID = g.uid(r.t.resource, r.t.ns, r.t.name)
			ev.ObjectRef.ResourceVersion = strconv.FormatUint(sentRV, 10)
		}
		if r.t.sub == "binding" {
			ev.ObjectRef.UID = g.uid("pods", r.t.ns, r.t.name)
		}
		if r.verb == "create" && r.generateName == "" {
			ev.ObjectRef.Name = r.t.name
		}
	}

	if level != "Metadata" && r.path == "" && !r.longRunning && out.code != 403 && out.code != 429 {
		ev.RequestObject = g.requestBody(r, sentRV)
	}
	if level == "RequestResponse" && r.path == "" && !r.longRunning && out.code != 429 {
		ev.ResponseObject = g.responseBody(r, out, cur, next)
	}

	ev.Annotations = map[string]string{"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": r.actor.reason}
	if out.code == 403 {
		ev.Annotations["authorization.k8s.io/decision"] = "forbid"
		ev.Annotations["authorization.k8s.io/reason"] = r.forbidWhy
	}
	if r.podSec != "" && out.code < 300 {
		ev.Annotations["pod-security.kubernetes.io/enforce-policy"] = r.podSec
	}
	if out.latency > int64(500*time.Millisecond) {
		g.latencyAnnotations(r, out, ev.Annotations)
	}

	lines := 1
	received := budget > 1+btoi(r.longRunning) && g.rng.Float64() < g.opts.stages
	if received {
		rr := *ev
		rr.Stage = "RequestReceived"
		rr.StageTimestamp = rr.RequestReceivedTimestamp
		rr.ResponseStatus, rr.RequestObject, rr.ResponseObject, rr.Annotations = nil, nil, nil, nil
		if ev.ObjectRef != nil { // logged before the body is read
			ref := *ev.ObjectRef
			ref.UID, ref.ResourceVersion = "", ""
			if r.verb == "create" && r.t.sub == "" {
				ref.Name = ""
			}
			rr.ObjectRef = &ref
		}
		g.schedule(r.at, &rr)
		lines++
	}
	if r.longRunning {
		rs := *ev
		rs.Stage = "ResponseStarted"
		rs.ResponseStatus = codeStatus(out.code)
		started := min(out.latency, g.lognormal(2*time.Millisecond, 0.6))
		if r.t.sub == "log" {
			started = min(out.latency, g.lognormal(30*time.Millisecond, 0.6))
		}
		rs.StageTimestamp = microTime(r.at + started)
		rs.Annotations = map[string]string{"authorization.k8s.io/decision": ev.Annotations["authorization.k8s.io/decision"], "authorization.k8s.io/reason": ev.Annotations["authorization.k8s.io/reason"]}
		g.schedule(r.at+started, &rs)
		lines++
	}
	g.schedule(r.at+out.latency, ev)
	return lines
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

type outcome struct {
	code    int
	status  *status
	latency int64 // ns
	apfWait int64 // ns
	etcd    bool  // the request reached storage
}

func (g *generator) outcome(r *request, burst bool) outcome {
	fr := baseFailures
	if burst {
		fr = burstFailures
	}
	o := outcome{code: 200, etcd: !r.cached && r.path == "" && !r.longRunning}
	if r.verb == "create" {
		o.code = 201
	}
	apfExempt := r.actor.user == g.actors.apiserver.user || (r.t.sub == "log") // system:masters is exempt; pods/log is not queued
	if !apfExempt {
		o.apfWait = g.lognormal(25*time.Microsecond, 0.8)
		if burst {
			o.apfWait = g.lognormal(120*time.Millisecond, 1.2)
		}
	}

	u := g.rng.Float64()
	switch {
	case !apfExempt && u < fr.tooMany:
		o.code, o.status, o.etcd = 429, codeStatus(429), false
		if g.rng.IntN(2) == 0 { // queues full: rejected at once
			o.apfWait = 0
			o.latency = g.lognormal(700*time.Microsecond, 0.5)
		} else { // timed out in the queue after a quarter of the 60 s request timeout
			o.apfWait = int64(15*time.Second) + g.lognormal(2*time.Millisecond, 0.5)
			o.latency = o.apfWait + g.lognormal(300*time.Microsecond, 0.5)
		}
		return o
	case r.path == "" && r.verb != "watch" && u < fr.tooMany+fr.internal: // watch errors travel inside a 200 stream
		o.code = 500
		o.latency = o.apfWait + g.lognormal(1500*time.Millisecond, 0.6)
		switch g.rng.IntN(5) {
		case 0, 1:
			o.status = &status{Status: "Failure", Message: "etcdserver: leader changed", Code: 500}
		case 2, 3:
			o.status = &status{Status: "Failure", Message: "etcdserver: request timed out", Code: 500}
			o.latency = o.apfWait + int64(7*time.Second) + g.lognormal(20*time.Millisecond, 0.5)
		default:
			o.status = &status{Status: "Failure", Reason: "ServerTimeout", Code: 500,
				Message: fmt.Sprintf("The %s operation against %s could not be completed at this time, please try again.", r.verb, r.t.qualified()),
				Details: &statusDetails{Name: r.verb, Kind: r.t.qualified(), RetryAfterSeconds: 2}}
		}
		return o
	case u < fr.tooMany+fr.internal+fr.unavailable:
		o.code, o.etcd = 503, false
		o.status = &status{Status: "Failure", Message: "service unavailable", Reason: "ServiceUnavailable", Code: 503}
		o.latency = o.apfWait + g.lognormal(2*time.Millisecond, 0.5)
		return o
	case !r.longRunning && u < fr.tooMany+fr.internal+fr.unavailable+fr.timeout:
		o.code, o.status = 504, timeoutStatus()
		o.latency = int64(r.timeout) + g.lognormal(3*time.Millisecond, 0.5)
		return o
	}

	u = g.rng.Float64()
	name := r.t.name
	switch {
	case u < r.pForbid:
		o.code, o.etcd = 403, false
		o.status = g.forbidden(r)
		o.latency = o.apfWait + g.lognormal(400*time.Microsecond, 0.5)
		return o
	case u < r.pForbid+r.pNotFound && r.verb != "create":
		o.code = 404
		o.status = &status{Status: "Failure", Reason: "NotFound", Code: 404,
			Message: fmt.Sprintf("%s %q not found", r.t.qualified(), name),
			Details: &statusDetails{Name: name, Group: r.t.group, Kind: r.t.resource}}
	case u < r.pForbid+r.pNotFound+r.pConflict:
		o.code = 409
		switch {
		case r.t.sub == "binding":
			other := g.nodes[g.anyNode()].name
			o.status = &status{Status: "Failure", Reason: "Conflict", Code: 409,
				Message: fmt.Sprintf("Operation cannot be fulfilled on pods/binding %q: pod %s is already assigned to node %q", name, name, other),
				Details: &statusDetails{Name: name, Kind: "pods/binding"}}
		case r.verb == "create":
			o.status = &status{Status: "Failure", Reason: "AlreadyExists", Code: 409,
				Message: fmt.Sprintf("%s %q already exists", r.t.qualified(), name),
				Details: &statusDetails{Name: name, Group: r.t.group, Kind: r.t.resource}}
		default:
			o.status = &status{Status: "Failure", Reason: "Conflict", Code: 409,
				Message: fmt.Sprintf("Operation cannot be fulfilled on %s %q: the object has been modified; please apply your changes to the latest version and try again", r.t.qualified(), name),
				Details: &statusDetails{Name: name, Group: r.t.group, Kind: r.t.resource}}
		}
	}

	if r.verb == "watch" {
		o.etcd = false
		if o.code == 200 {
			if g.rng.IntN(10) == 0 { // the client went away early
				o.latency = int64(time.Second) + g.rng.Int64N(int64(r.watchTimeout)*int64(time.Second))
			} else {
				o.latency = int64(r.watchTimeout)*int64(time.Second) + g.lognormal(3*time.Millisecond, 0.6)
			}
			o.status = codeStatus(200)
			return o
		}
	}
	lat := g.lognormal(r.median, r.sigma)
	if burst {
		lat = lat*3 + g.lognormal(r.median, r.sigma)
	}
	if g.rng.IntN(500) == 0 { // an etcd fsync stall or a slow webhook
		lat *= 40
	}
	o.latency = o.apfWait + lat
	switch {
	case r.longRunning: // kubectl logs -f: until someone presses ^C
		o.latency = min(o.latency, int64(30*time.Minute)+lat%int64(time.Minute))
	case o.latency > int64(r.timeout):
		o.code, o.status = 504, timeoutStatus()
		o.latency = int64(r.timeout) + g.lognormal(3*time.Millisecond, 0.5)
	}
	if o.status == nil {
		o.status = g.successStatus(r, o.code)
	}
	return o
}

// timeoutStatus is what the apiserver's request finisher returns when the
// request context expires.
func timeoutStatus() *status {
	return &status{Status: "Failure", Reason: "Timeout", Details: &statusDetails{}, Code: 504,
		Message: "Timeout: request did not complete within requested timeout - context deadline exceeded"}
}

func (g *generator) successStatus(r *request, code int) *status {
	switch {
	case r.t.sub == "binding":
		return &status{Status: "Success", Code: 201}
	case r.verb == "delete" && r.t.resource != "pods":
		return &status{Status: "Success", Code: 200,
			Details: &statusDetails{Name: r.t.name, Group: r.t.group, Kind: r.t.resource, UID: g.uid(r.t.resource, r.t.ns, r.t.name)}}
	}
	return codeStatus(code)
}

// Statuses that carry only a code are shared; nothing modifies a status
// once it is made.
var (
	status200 = &status{Code: 200}
	status201 = &status{Code: 201}
)

func codeStatus(code int) *status {
	switch code {
	case 200:
		return status200
	case 201:
		return status201
	}
	return &status{Code: code}
}

func (g *generator) forbidden(r *request) *status {
	u := r.actor.user.Username
	if r.imp != nil {
		u = r.imp.Username
	}
	res := r.t.resource
	if r.t.sub != "" {
		res += "/" + r.t.sub
	}
	var msg string
	if r.t.name != "" && r.verb != "list" && r.verb != "watch" {
		msg = fmt.Sprintf("%s %q is forbidden: ", r.t.qualified(), r.t.name)
	} else {
		msg = r.t.qualified() + " is forbidden: "
	}
	msg += fmt.Sprintf("User %q cannot %s resource %q in API group %q", u, r.verb, res, r.t.group)
	if r.t.ns != "" {
		msg += fmt.Sprintf(" in the namespace %q", r.t.ns)
	} else {
		msg += " at the cluster scope"
	}
	if r.forbidWhy != "" {
		msg += ": " + r.forbidWhy
	}
	return &status{Status: "Failure", Message: msg, Reason: "Forbidden", Code: 403,
		Details: &statusDetails{Name: r.t.name, Group: r.t.group, Kind: r.t.resource}}
}

// latencyAnnotations adds what kube-apiserver's latency trackers write for a
// request slower than 500 ms.
func (g *generator) latencyAnnotations(r *request, o outcome, ann map[string]string) {
	d := func(ns int64) string { return time.Duration(ns).String() }
	ann["apiserver.latency.k8s.io/total"] = d(o.latency)
	authn := g.lognormal(15*time.Microsecond, 0.6)
	if r.actor.token {
		authn = g.lognormal(60*time.Microsecond, 0.8)
	}
	ann["apiserver.latency.k8s.io/authentication"] = d(authn)
	ann["apiserver.latency.k8s.io/authorization"] = d(g.lognormal(12*time.Microsecond, 0.7))
	if o.apfWait > 0 {
		ann["apiserver.latency.k8s.io/apf-queue-wait"] = d(o.apfWait)
	}
	if o.code == 429 || o.code == 403 || o.code == 503 {
		return
	}
	work := float64(o.latency - o.apfWait)
	switch {
	case r.verb == "watch" || r.t.sub == "log":
		ann["apiserver.latency.k8s.io/serialize-response-object"] = d(int64(work * (0.002 + 0.01*g.rng.Float64())))
		ann["apiserver.latency.k8s.io/response-write"] = d(int64(work * (0.001 + 0.005*g.rng.Float64())))
		return
	case o.etcd:
		ann["apiserver.latency.k8s.io/etcd"] = d(int64(work * (0.55 + 0.4*g.rng.Float64())))
	}
	if r.verb == "get" || r.verb == "list" {
		if o.etcd {
			ann["apiserver.latency.k8s.io/decode-response-object"] = d(int64(work * (0.005 + 0.03*g.rng.Float64())))
		}
		ann["apiserver.latency.k8s.io/transform-response-object"] = d(g.lognormal(3*time.Microsecond, 0.6))
	}
	ser, wr := g.lognormal(120*time.Microsecond, 0.8), g.lognormal(4*time.Microsecond, 0.8)
	if r.verb == "list" {
		ser, wr = int64(work*(0.02+0.15*g.rng.Float64())), int64(work*(0.005+0.05*g.rng.Float64()))
	}
	ann["apiserver.latency.k8s.io/serialize-response-object"] = d(ser)
	ann["apiserver.latency.k8s.io/response-write"] = d(wr)
	if r.t.resource == "pods" && r.t.sub == "" && (r.verb == "create" || r.verb == "update" || r.verb == "patch") {
		ann["apiserver.latency.k8s.io/mutating-webhook"] = d(g.lognormal(4*time.Millisecond, 0.6))
	}
}

func (g *generator) requestURI(r *request) string {
	if r.path != "" {
		return r.path
	}
	var b strings.Builder
	if r.t.group == "" {
		b.WriteString("/api/v1")
	} else {
		b.WriteString("/apis/" + r.t.group + "/" + r.t.version())
	}
	if r.t.ns != "" {
		b.WriteString("/namespaces/" + r.t.ns)
	}
	b.WriteString("/" + r.t.resource)
	named := r.verb != "list" && r.verb != "watch" && (r.verb != "create" || r.t.sub != "")
	if named && r.t.name != "" {
		b.WriteString("/" + r.t.name)
		if r.t.sub != "" {
			b.WriteString("/" + r.t.sub)
		}
	}
	if r.query != "" {
		b.WriteString("?" + r.query)
	}
	return b.String()
}

// objectRef is the reference of the ResponseComplete line.
func (g *generator) objectRef(r *request) *objectRef {
	ref := &objectRef{Resource: r.t.resource, Namespace: r.t.ns, APIGroup: r.t.group, APIVersion: r.t.version(), Subresource: r.t.sub}
	switch {
	case r.verb == "list" || r.verb == "watch":
		if r.nameInRef {
			ref.Name = r.t.name
		}
	case r.verb == "create" && r.t.sub == "":
		// filled from the body in emit
	default:
		ref.Name = r.t.name
	}
	return ref
}

// currentRV is the resourceVersion an object has now.
func (g *generator) currentRV(r *request) uint64 {
	if v, ok := g.lastRV[r.t.key()]; ok {
		return v
	}
	// last written before the log starts
	return g.rv0 - 1 - g.hash("rv", r.t.resource, r.t.ns, r.t.name)%5_000_000
}

// ---------------------------------------------------------------------------
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
	yes := true
	var c container
	if p.job != nil {
		j := p.job
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
		c = container{Name: name, Image: j.image,
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
	} else {
		ds := p.ds
		o.Metadata.Labels = map[string]string{"controller-revision-hash": g.suffix("rev", ds.name) + "d8f", "k8s-app": ds.name, "pod-template-generation": "1"}
		o.Metadata.OwnerReferences = []ownerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.name, UID: g.uid("daemonsets", ds.ns, ds.name), Controller: &yes, BlockOwnerDeletion: &yes}}
		c = container{Name: ds.name, Image: ds.image, Resources: resources{Requests: map[string]string{"cpu": "100m", "memory": "128Mi"}}, VolumeMounts: mounts}
		if ds.name == "kube-proxy" {
			c.Command = []string{"/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf", "--hostname-override=$(NODE_NAME)"}
			c.Env = []envVar{{Name: "NODE_NAME", ValueFrom: &envSource{FieldRef: &fieldRef{APIVersion: "v1", FieldPath: "spec.nodeName"}}}}
			c.SecurityContext = map[string]any{"privileged": true}
			o.Spec.HostNetwork = true
		}
		o.Spec.ServiceAccountName, o.Spec.PriorityClassName, o.Spec.Priority = ds.sa, "system-node-critical", 2000001000
		o.Spec.Tolerations = []toleration{{Operator: "Exists"}}
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

// ---------------------------------------------------------------------------
// Randomness and stable derived values.

func (g *generator) lognormal(median time.Duration, sigma float64) int64 {
	return int64(float64(median) * math.Exp(sigma*g.rng.NormFloat64()))
}

// uuid is a random version 4 UUID.
func (g *generator) uuid() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], g.rng.Uint64())
	binary.LittleEndian.PutUint64(b[8:], g.rng.Uint64())
	return formatUUID(b)
}

func formatUUID(b [16]byte) string {
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

// hash is a stable hash of the seed and parts (FNV-1a).
func (g *generator) hash(parts ...string) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for _, c := range g.seedTag {
		h = (h ^ uint64(c)) * prime
	}
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			h = (h ^ uint64(p[i])) * prime
		}
		h *= prime // separator: a zero byte
	}
	return h
}

func (g *generator) sum(parts ...string) [32]byte {
	h := sha256.New()
	h.Write(g.seedTag[:])
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// uid is the object's stable UID: the same for the same parts and seed.
func (g *generator) uid(parts ...string) string {
	s := g.sum(append([]string{"uid"}, parts...)...)
	return formatUUID([16]byte(s[:16]))
}

// hexOf is n (at most 64) stable hex digits.
func (g *generator) hexOf(n int, parts ...string) string {
	s := g.sum(parts...)
	return hex.EncodeToString(s[:])[:n]
}

func (g *generator) digest(image string) string { return g.hexOf(64, "image", image) }

const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789" // k8s.io/apimachinery/pkg/util/rand

// suffix is a stable five-character name suffix, like a generated name's.
func (g *generator) suffix(parts ...string) string {
	h := g.hash(parts...)
	var b [5]byte
	for i := range b {
		b[i] = suffixAlphabet[h%uint64(len(suffixAlphabet))]
		h /= uint64(len(suffixAlphabet))
	}
	return string(b[:])
}

func (g *generator) randSuffix() string {
	var b [5]byte
	for i := range b {
		b[i] = suffixAlphabet[g.rng.IntN(len(suffixAlphabet))]
	}
	return string(b[:])
}

func rfc3339(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339) }

func microString(ns int64) string {
	return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}

// ---------------------------------------------------------------------------
// Encoding. appendEvent writes exactly what encoding/json writes for an
// event (HTML escaping on, as the apiserver's JSON serializer) plus a
// newline, several times faster; TestAppendEvent holds it to that.

func appendEvent(b []byte, ev *event) []byte {
	b = append(b, `{"kind":`...)
	b = appendString(b, ev.Kind)
	b = append(b, `,"apiVersion":`...)
	b = appendString(b, ev.APIVersion)
	b = append(b, `,"level":`...)
	b = appendString(b, ev.Level)
	b = append(b, `,"auditID":`...)
	b = appendString(b, ev.AuditID)
	b = append(b, `,"stage":`...)
	b = appendString(b, ev.Stage)
	b = append(b, `,"requestURI":`...)
	b = appendString(b, ev.RequestURI)
	b = append(b, `,"verb":`...)
	b = appendString(b, ev.Verb)
	b = append(b, `,"user":`...)
	b = appendUser(b, ev.User)
	if ev.ImpersonatedUser != nil {
		b = append(b, `,"impersonatedUser":`...)
		b = appendUser(b, ev.ImpersonatedUser)
	}
	if len(ev.SourceIPs) > 0 {
		b = append(b, `,"sourceIPs":`...)
		b = appendStrings(b, ev.SourceIPs)
	}
	if ev.UserAgent != "" {
		b = append(b, `,"userAgent":`...)
		b = appendString(b, ev.UserAgent)
	}
	if r := ev.ObjectRef; r != nil {
		b = append(b, `,"objectRef":{`...)
		first := true
		b = appendField(b, &first, "resource", r.Resource)
		b = appendField(b, &first, "namespace", r.Namespace)
		b = appendField(b, &first, "name", r.Name)
		b = appendField(b, &first, "uid", r.UID)
		b = appendField(b, &first, "apiGroup", r.APIGroup)
		b = appendField(b, &first, "apiVersion", r.APIVersion)
		b = appendField(b, &first, "resourceVersion", r.ResourceVersion)
		b = appendField(b, &first, "subresource", r.Subresource)
		b = append(b, '}')
	}
	if ev.ResponseStatus != nil {
		b = append(b, `,"responseStatus":`...)
		b = appendStatus(b, ev.ResponseStatus)
	}
	if len(ev.RequestObject) > 0 { // already compact and HTML-escaped by json.Marshal
		b = append(b, `,"requestObject":`...)
		b = append(b, ev.RequestObject...)
	}
	if len(ev.ResponseObject) > 0 {
		b = append(b, `,"responseObject":`...)
		b = append(b, ev.ResponseObject...)
	}
	b = append(b, `,"requestReceivedTimestamp":`...)
	b = appendMicroTime(b, int64(ev.RequestReceivedTimestamp))
	b = append(b, `,"stageTimestamp":`...)
	b = appendMicroTime(b, int64(ev.StageTimestamp))
	if len(ev.Annotations) > 0 {
		b = append(b, `,"annotations":`...)
		b = appendStringMap(b, ev.Annotations)
	}
	return append(b, '}', '\n')
}

func appendUser(b []byte, u *userInfo) []byte {
	if u == nil {
		return append(b, "null"...)
	}
	b = append(b, '{')
	first := true
	b = appendField(b, &first, "username", u.Username)
	b = appendField(b, &first, "uid", u.UID)
	if len(u.Groups) > 0 {
		b = appendKey(b, &first, "groups")
		b = appendStrings(b, u.Groups)
	}
	if len(u.Extra) > 0 {
		b = appendKey(b, &first, "extra")
		b = append(b, '{')
		var arr [8]string
		for i, k := range sortedKeys(arr[:0], u.Extra) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendStrings(b, u.Extra[k])
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

func appendStatus(b []byte, s *status) []byte {
	b = append(b, '{')
	first := true
	b = appendField(b, &first, "kind", s.Kind)
	b = appendField(b, &first, "apiVersion", s.APIVersion)
	b = appendKey(b, &first, "metadata")
	b = append(b, '{', '}')
	b = appendField(b, &first, "status", s.Status)
	b = appendField(b, &first, "message", s.Message)
	b = appendField(b, &first, "reason", s.Reason)
	if d := s.Details; d != nil {
		b = appendKey(b, &first, "details")
		b = append(b, '{')
		dfirst := true
		b = appendField(b, &dfirst, "name", d.Name)
		b = appendField(b, &dfirst, "group", d.Group)
		b = appendField(b, &dfirst, "kind", d.Kind)
		b = appendField(b, &dfirst, "uid", d.UID)
		if d.RetryAfterSeconds != 0 {
			b = appendKey(b, &dfirst, "retryAfterSeconds")
			b = strconv.AppendInt(b, int64(d.RetryAfterSeconds), 10)
		}
		b = append(b, '}')
	}
	if s.Code != 0 {
		b = appendKey(b, &first, "code")
		b = strconv.AppendInt(b, int64(s.Code), 10)
	}
	return append(b, '}')
}

// appendKey appends a member name, after a comma unless it is the first.
func appendKey(b []byte, first *bool, name string) []byte {
	if !*first {
		b = append(b, ',')
	}
	*first = false
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// appendField appends a string member with omitempty.
func appendField(b []byte, first *bool, name, v string) []byte {
	if v == "" {
		return b
	}
	b = appendKey(b, first, name)
	return appendString(b, v)
}

func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

func appendStringMap(b []byte, m map[string]string) []byte {
	b = append(b, '{')
	var arr [16]string
	for i, k := range sortedKeys(arr[:0], m) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendString(b, m[k])
	}
	return append(b, '}')
}

// sortedKeys appends m's keys to keys, sorted as encoding/json sorts them.
func sortedKeys[V any](keys []string, m map[string]V) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func appendMicroTime(b []byte, ns int64) []byte {
	b = append(b, '"')
	b = time.Unix(0, ns).UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendString quotes s as encoding/json does with HTML escaping: <, > and &
// become \u003c, \u003e and \u0026 (so requestURIs read "...?a=1\u0026b=2"),
// invalid UTF-8 becomes \ufffd, and U+2028 and U+2029 are escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
