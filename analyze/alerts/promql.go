package alerts

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/dns"
	"github.com/faultline/faultline/analyze/network"
)

// The PromQL below uses the metric names of kube-apiserver
// (apiserver_request_total, apiserver_request_duration_seconds_bucket),
// the kubelet (kubelet_pod_start_duration_seconds_bucket) and
// kube-state-metrics (kube_pod_status_phase,
// kube_pod_container_status_waiting_reason,
// kube_pod_container_status_terminated_reason, kube_pod_owner,
// kube_pod_info, kube_pod_container_info, kube_node_status_condition,
// kube_node_labels; node labels appear there only where
// --metric-labels-allowlist lets them), NVIDIA's dcgm-exporter
// (DCGM_FI_DEV_XID_ERRORS), CoreDNS (coredns_dns_requests_total,
// coredns_dns_responses_total, coredns_dns_request_duration_seconds_bucket)
// and node_exporter (node_nf_conntrack_*, node_netstat_Tcp_*,
// node_network_carrier_changes_total, node_vmstat_oom_kill).

// quote writes a PromQL string literal.
func quote(s string) string { return strconv.Quote(s) }

// num writes a threshold.
func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// LabelName sanitises a Kubernetes label key into the label name
// kube-state-metrics gives it in kube_*_labels: label_ + [a-zA-Z0-9_].
func LabelName(key string) string {
	var b strings.Builder
	b.WriteString("label_")
	for _, r := range key {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// matchers writes {k="v",...} in key order.
func matchers(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		v := m[k]
		if strings.HasPrefix(v, "=~") {
			parts[i] = k + "=~" + quote(v[2:])
		} else {
			parts[i] = k + "=" + quote(v)
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// requestMatchers maps a request slice to apiserver metric labels.
func requestMatchers(slice map[string]string) map[string]string {
	m := map[string]string{}
	for _, k := range []string{"verb", "resource", "subresource", "scope", "code"} {
		if v, ok := slice[k]; ok {
			if k == "verb" {
				v = strings.ToUpper(v)
			}
			m[k] = v
		}
	}
	return m
}

func window(w time.Duration) string { return "[" + FormatDuration(w) + "]" }

// RequestRatePromQL is requests per second of a class.
func RequestRatePromQL(slice map[string]string, w time.Duration) string {
	return "sum(rate(apiserver_request_total" + matchers(requestMatchers(slice)) + window(w) + "))"
}

// RequestLatencyPromQL is a latency quantile of a class, in seconds.
func RequestLatencyPromQL(q float64, slice map[string]string, w time.Duration) string {
	m := requestMatchers(slice)
	delete(m, "code") // the duration histogram has no code label
	return fmt.Sprintf("histogram_quantile(%s, sum by (le) (rate(apiserver_request_duration_seconds_bucket%s%s)))",
		num(q), matchers(m), window(w))
}

// PodStartupPromQL is a quantile of pod start-up, in seconds.
func PodStartupPromQL(q float64, w time.Duration) string {
	return fmt.Sprintf("histogram_quantile(%s, sum by (le) (rate(kubelet_pod_start_duration_seconds_bucket%s)))", num(q), window(w))
}

// podFailedStates are the pod states that count as failures, by the
// kube-state-metrics series that show them.
var (
	failedWaiting    = []string{"CrashLoopBackOff", "ErrImagePull", "ImagePullBackOff", "CreateContainerConfigError", "CreateContainerError"}
	failedTerminated = []string{"OOMKilled", "Error", "ContainerCannotRun"}
)

// podsFailing is the pods (namespace, pod) in a failure state, offset by
// off ("" for now).
func podsFailing(ns map[string]string, off string) string {
	sel := func(extra map[string]string) string {
		m := map[string]string{}
		for k, v := range ns {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return matchers(m) + off
	}
	return "(max by (namespace, pod) (kube_pod_status_phase" + sel(map[string]string{"phase": "Failed"}) + " == 1)" +
		" or max by (namespace, pod) (kube_pod_container_status_waiting_reason" + sel(map[string]string{"reason": "=~" + strings.Join(failedWaiting, "|")}) + " == 1)" +
		" or max by (namespace, pod) (kube_pod_container_status_terminated_reason" + sel(map[string]string{"reason": "=~" + strings.Join(failedTerminated, "|")}) + " == 1))"
}

// PodFailuresPromQL is the pods of a slice that entered a failure state
// within the window, per second: those failing now and not a window ago.
// It reports the slice dimensions it cannot express in metrics.
func PodFailuresPromQL(slice map[string]string, w time.Duration) (string, []string) {
	ns := map[string]string{}
	if v, ok := slice["namespace"]; ok {
		ns["namespace"] = v
	}
	expr := "(" + podsFailing(ns, "") + " unless " + podsFailing(ns, " offset "+FormatDuration(w)) + ")"
	var left []string
	keys := make([]string, 0, len(slice))
	for k := range slice {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := slice[k]
		switch {
		case k == "namespace":
		case k == "owner":
			kind, name, _ := strings.Cut(v, "/")
			owner := map[string]string{"owner_kind": kind, "owner_name": name}
			if kind == "Deployment" { // pods are owned by its ReplicaSets
				owner = map[string]string{"owner_kind": "ReplicaSet", "owner_name": "=~" + regexp.QuoteMeta(name) + "-" + podTemplateHash}
			}
			expr += " and on (namespace, pod) kube_pod_owner" + matchers(owner)
		case strings.HasPrefix(k, "node.label/"):
			expr += " and on (namespace, pod) (kube_pod_info * on (node) group_left () kube_node_labels" +
				matchers(map[string]string{LabelName(strings.TrimPrefix(k, "node.label/")): v}) + ")"
		case strings.HasPrefix(k, "image.digest/"):
			expr += " and on (namespace, pod) kube_pod_container_info" +
				matchers(map[string]string{"container": strings.TrimPrefix(k, "image.digest/"), "image_id": "=~.*" + regexp.QuoteMeta(v)})
		default:
			left = append(left, k)
		}
	}
	return fmt.Sprintf("count(%s) / %s", expr, num(w.Seconds())), left
}

// NodeNotReadyPromQL is the nodes of a pool that became NotReady within
// the window, per second.
func NodeNotReadyPromQL(poolLabel, pool string, w time.Duration) string {
	ready := `kube_node_status_condition{condition="Ready",status="true"}`
	return fmt.Sprintf("count(((%s == 0) unless (%s offset %s == 0)) * on (node) group_left () kube_node_labels%s) / %s",
		ready, ready, FormatDuration(w), matchers(map[string]string{LabelName(poolLabel): pool}), num(w.Seconds()))
}

// GPUXidPromQL is the rate of GPU Xid errors on the nodes of a pool, from
// NVIDIA's dcgm-exporter: DCGM_FI_DEV_XID_ERRORS holds the last Xid a GPU
// reported, so a change of it is a new error (a repeat of the same code
// is not counted: a floor, not a count). Its Hostname label is the node.
func GPUXidPromQL(poolLabel, pool string, w time.Duration) string {
	return fmt.Sprintf(`sum(changes(DCGM_FI_DEV_XID_ERRORS[%s]) * on (Hostname) group_left () label_replace(kube_node_labels%s, "Hostname", "$1", "node", "(.*)")) / %s`,
		FormatDuration(w), matchers(map[string]string{LabelName(poolLabel): pool}), num(w.Seconds()))
}

// NodeCounterPromQL is the rate of a node_exporter counter on the nodes of
// a pool, joined on a node label the scrape adds (relabelled from
// __meta_kubernetes_pod_node_name or __meta_kubernetes_node_name).
func NodeCounterPromQL(metric string) func(poolLabel, pool string, w time.Duration) string {
	return func(poolLabel, pool string, w time.Duration) string {
		return fmt.Sprintf("sum(rate(%s[%s]) * on (node) group_left () kube_node_labels%s)",
			metric, FormatDuration(w), matchers(map[string]string{LabelName(poolLabel): pool}))
	}
}

// selector writes metric{k="v",...}, without braces when there is no
// matcher.
func selector(metric string, m map[string]string) string {
	if len(m) == 0 {
		return metric
	}
	return metric + matchers(m)
}

// with is m and one more label.
func with(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for mk, mv := range m {
		out[mk] = mv
	}
	return out
}

// DNSRequestRatePromQL is CoreDNS's queries per second (of the series
// with the labels of match: a client's view).
func DNSRequestRatePromQL(match map[string]string, w time.Duration) string {
	return "sum(rate(" + selector(dns.Requests, match) + window(w) + "))"
}

// DNSLatencyPromQL is a quantile of CoreDNS's request duration, in
// seconds.
func DNSLatencyPromQL(q float64, match map[string]string, w time.Duration) string {
	return fmt.Sprintf("histogram_quantile(%s, sum by (le) (rate(%s%s)))", num(q), selector(dns.Latency, match), window(w))
}

// DNSServfailSharePromQL is the share of CoreDNS's responses that are
// SERVFAIL; 0, not nothing, while CoreDNS has answered none (it exports
// a response code once it has sent one).
func DNSServfailSharePromQL(match map[string]string, w time.Duration) string {
	return fmt.Sprintf("(sum(rate(%s%s)) or vector(0)) / sum(rate(%s%s))",
		selector(dns.Responses, with(match, "rcode", "SERVFAIL")), window(w), selector(dns.Responses, match), window(w))
}

// ConntrackUsagePromQL is the fullest conntrack table of the nodes of a
// pool: node_nf_conntrack_entries over node_nf_conntrack_entries_limit
// (same target, same labels), joined to the pool on the node label the
// scrape adds, as NodeCounterPromQL is.
func ConntrackUsagePromQL(poolLabel, pool string) string {
	return fmt.Sprintf("max((%s / %s) * on (node) group_left () kube_node_labels%s)",
		network.ConntrackEntries, network.ConntrackLimit, matchers(map[string]string{LabelName(poolLabel): pool}))
}

// NodeConntrackUsagePromQL is a node's conntrack table fill, its series
// selected by the label that names the node.
func NodeConntrackUsagePromQL(label, value string) string {
	m := map[string]string{label: value}
	return fmt.Sprintf("max(%s / %s)", selector(network.ConntrackEntries, m), selector(network.ConntrackLimit, m))
}

// NodeSeriesCounterPromQL is the rate of a node_exporter counter on one
// node, its series selected by the label that names the node.
func NodeSeriesCounterPromQL(metric, label, value string, w time.Duration) string {
	return "sum(rate(" + selector(metric, map[string]string{label: value}) + window(w) + "))"
}
