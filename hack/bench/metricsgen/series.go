package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// kind is a metric family's type.
type kind int

const (
	counter kind = iota
	gauge
	histogram
)

// family is one metric family and how its children are labelled.
type family struct {
	name   string // the metric (a counter's with _total)
	help   string
	kind   kind
	labels func(k int) []label // the labels of the family's child k
}

type label struct{ name, value string }

// corednsBuckets are CoreDNS's request duration buckets
// (prometheus.ExponentialBuckets(0.00025, 2, 16)) and +Inf.
var corednsBuckets = func() []float64 {
	b := make([]float64, 0, 17)
	for i := range 16 {
		b = append(b, 0.00025*math.Pow(2, float64(i)))
	}
	return append(b, math.Inf(1))
}()

var dnsTypes = []string{"A", "AAAA", "SRV", "PTR", "other"}

func corednsLabels(k int) []label {
	inst := k / 10
	return []label{
		{"instance", fmt.Sprintf("10.32.%d.%d:9153", inst/250, 2+inst%250)},
		{"job", "coredns"}, {"namespace", "kube-system"},
		{"pod", fmt.Sprintf("coredns-7d9f8c6b5-%05x", inst*7919%(1<<20))},
		{"server", "dns://:53"}, {"zone", "."},
		{"type", dnsTypes[k%5]}, {"proto", [...]string{"udp", "tcp"}[k/5%2]}, {"family", "1"},
	}
}

// The families, in the order their children are made.
var families = []family{
	{"coredns_dns_requests_total", "Counter of DNS requests made per zone, protocol and family.", counter, corednsLabels},
	{"coredns_dns_request_duration_seconds", "Histogram of the time (in seconds) each request took per zone.", histogram, func(k int) []label {
		return corednsLabels(k * 2)[:7:7] // instance k/5, each of the five types
	}},
	{"node_nf_conntrack_entries", "Number of currently allocated flow entries for connection tracking.", gauge, func(k int) []label {
		return []label{{"instance", fmt.Sprintf("gpu-%04d:9100", k)}, {"job", "node-exporter"}, {"node", fmt.Sprintf("gpu-%04d", k)}}
	}},
	{"DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", gauge, func(k int) []label {
		node := k / 8
		return []label{
			{"gpu", strconv.Itoa(k % 8)}, {"UUID", fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x", mix(uint64(k), 1)>>32, k%65536, 0x4000|node%4096, 0x8000|k%8, mix(uint64(k), 2)>>16)},
			{"device", fmt.Sprintf("nvidia%d", k%8)}, {"modelName", "NVIDIA H100 80GB HBM3"}, {"Hostname", fmt.Sprintf("gpu-%04d", node)},
			{"DCGM_FI_DRIVER_VERSION", "550.90.07"}, {"instance", fmt.Sprintf("10.40.%d.%d:9400", node/250, 2+node%250)},
			{"job", "dcgm-exporter"}, {"namespace", "gpu-operator"}, {"pod", fmt.Sprintf("nvidia-dcgm-exporter-%05x", node*104729%(1<<20))},
		}
	}},
	{"container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", counter, func(k int) []label {
		node, job := k/16, k/64
		ns := [...]string{"llm-pretrain", "vision-train"}[job%2]
		pod := fmt.Sprintf("train-%d-worker-%d", job, k/2%32)
		uid := fmt.Sprintf("%08x_%04x_4%03x_a%03x_%012x", mix(uint64(k/2), 3)>>32, k/2%65536, k%4096, node%4096, mix(uint64(k/2), 4)>>16)
		return []label{
			{"container", [...]string{"trainer", "log-shipper"}[k%2]}, {"cpu", "total"},
			{"id", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uid + ".slice"},
			{"image", "nvcr.io/nvidia/pytorch:24.05-py3"}, {"instance", fmt.Sprintf("gpu-%04d", node)}, {"job", "kubelet"},
			{"metrics_path", "/metrics/cadvisor"}, {"name", fmt.Sprintf("%016x", mix(uint64(k), 5))},
			{"namespace", ns}, {"node", fmt.Sprintf("gpu-%04d", node)}, {"pod", pod},
		}
	}},
	{"apiserver_request_total", "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.", counter, func(k int) []label {
		res := [...][2]string{{"", "pods"}, {"", "nodes"}, {"coordination.k8s.io", "leases"}, {"", "events"}, {"kubeflow.org", "mpijobs"}, {"", "configmaps"}, {"", "secrets"}, {"apps", "deployments"}}
		r := res[k%8]
		return []label{
			{"code", [...]string{"200", "201", "404", "409", "429", "500"}[k/8%6]}, {"component", "apiserver"}, {"dry_run", ""},
			{"group", r[0]}, {"instance", fmt.Sprintf("10.0.0.%d:6443", 10+k/48%3)}, {"job", "apiserver"}, {"resource", r[1]},
			{"scope", "namespace"}, {"subresource", ""},
			{"verb", [...]string{"GET", "LIST", "WATCH", "POST", "PUT", "PATCH", "DELETE"}[k/144%7]}, {"version", "v1"},
		}
	}},
}

// fill is the family that tops a set up to its size when a histogram's
// samples would not fit: node_nf_conntrack_entries.
const fill = 2

// child is one labelled child of a family; a histogram child is several
// series: its buckets, _sum and _count.
type child struct {
	fam    int
	k      int // the child's index in its family
	id     int // its first series' index in the set
	labels []label
}

// seriesSet is every child, in the order made, and the series they make.
type seriesSet struct {
	seed     uint64
	children []child
	n        int
}

// newSet makes children, a family each in turn, until they make n series.
func newSet(n int, seed uint64) *seriesSet {
	s := &seriesSet{seed: seed}
	next := make([]int, len(families))
	for c := 0; s.n < n; c++ {
		f := c % len(families)
		if f == 1 && s.n+len(corednsBuckets)+2 > n {
			f = fill
		}
		ch := child{fam: f, k: next[f], id: s.n, labels: families[f].labels(next[f])}
		next[f]++
		s.children = append(s.children, ch)
		s.n += ch.size()
	}
	return s
}

func (c child) size() int {
	if families[c.fam].kind == histogram {
		return len(corednsBuckets) + 2
	}
	return 1
}

// mix is splitmix64 of a and b: the source of every value.
func mix(a, b uint64) uint64 {
	z := a*0x9e3779b97f4a7c15 + b + 0x632be59bd9b4e5f5
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// sample is one series of a child at point p: its metric, the extra label
// (le) and value.
type sample struct {
	name    string
	le      string
	v       float64
	withLe  bool
	isCount bool
}

// samples are the child's series' values at point p.
func (s *seriesSet) samples(c child, p int, out []sample) []sample {
	f := families[c.fam]
	h := mix(s.seed, uint64(c.id))
	switch f.kind {
	case counter:
		rate := 0.05 + float64(h%4000)/100 // per second
		v := float64(h%100000) + rate*15*float64(p) + float64(mix(h, uint64(p))%1000)/1000
		if f.name != "container_cpu_usage_seconds_total" {
			v = math.Floor(v)
		} else {
			v = math.Round(v*1e6) / 1e6
		}
		return append(out, sample{name: f.name, v: v})
	case gauge:
		r := mix(h, uint64(p))
		v := float64(20000 + r%30000)
		if f.name == "DCGM_FI_DEV_XID_ERRORS" {
			v = 0
			if r%5000 == 0 {
				v = float64([...]int{13, 31, 43, 48, 63, 74, 79, 94}[r/5000%8])
			}
		}
		return append(out, sample{name: f.name, v: v})
	}
	count := math.Floor(float64(h%100000) + (1+float64(h%300))*15*float64(p))
	for _, le := range corednsBuckets {
		// a log-normal-ish share of requests under le
		x := (math.Log2(le/0.00025) - 4) / 2.5
		share := 1 / (1 + math.Exp(-x))
		if math.IsInf(le, 1) {
			share = 1
		}
		out = append(out, sample{name: f.name + "_bucket", le: formatFloat(le), v: math.Floor(count * share), withLe: true})
	}
	return append(out,
		sample{name: f.name + "_sum", v: math.Round(count*0.0042*1e6) / 1e6},
		sample{name: f.name + "_count", v: count, isCount: true})
}

func formatFloat(f float64) string {
	if math.IsInf(f, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// writeAPI writes the set as a query_range answer: every series, its
// points -step apart, labels sorted by name as Prometheus sorts them.
func writeAPI(ctx context.Context, w io.Writer, o options, s *seriesSet) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	first := true
	var vals [][]sample
	var b []byte
	for _, c := range s.children {
		if err := ctx.Err(); err != nil {
			return err
		}
		vals = vals[:0]
		for p := range o.points {
			vals = append(vals, s.samples(c, p, nil))
		}
		for j, head := range vals[0] {
			ls := append([]label{{"__name__", head.name}}, c.labels...)
			if head.withLe {
				ls = append(ls, label{"le", head.le})
			}
			slices.SortFunc(ls, func(a, b label) int { return strings.Compare(a.name, b.name) })
			if !first {
				bw.WriteByte(',')
			}
			first = false
			b = append(b[:0], `{"metric":{`...)
			for i, l := range ls {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendQuote(append(strconv.AppendQuote(b, l.name), ':'), l.value)
			}
			b = append(b, `},"values":[`...)
			for p := range o.points {
				if p > 0 {
					b = append(b, ',')
				}
				ms := o.start.Add(time.Duration(p) * o.step).UnixMilli()
				b = append(b, '[')
				b = strconv.AppendInt(b, ms/1000, 10)
				if ms%1000 != 0 {
					b = append(b, fmt.Sprintf(".%03d", ms%1000)...)
					b = b[:len(b)-trailingZeros(b)]
				}
				b = append(b, `,"`...)
				b = strconv.AppendFloat(b, vals[p][j].v, 'f', -1, 64)
				b = append(b, `"]`...)
			}
			b = append(b, "]}"...)
			bw.Write(b)
		}
	}
	bw.WriteString("]}}\n")
	return bw.Flush()
}

func trailingZeros(b []byte) int {
	n := 0
	for i := len(b) - 1; i >= 0 && b[i] == '0'; i-- {
		n++
	}
	return n
}

// writeExposition writes scrape p of the set as a /metrics page: the text
// format 0.0.4 or OpenMetrics 1.0, families in turn, each with HELP and
// TYPE.
func writeExposition(w *bufio.Writer, om bool, s *seriesSet, p int) {
	var out []sample
	for fi, f := range families {
		name := f.name
		if om && f.kind == counter {
			name = strings.TrimSuffix(name, "_total")
		}
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, f.help, name, [...]string{"counter", "gauge", "histogram"}[f.kind])
		for _, c := range s.children {
			if c.fam != fi {
				continue
			}
			out = s.samples(c, p, out[:0])
			for _, sm := range out {
				w.WriteString(sm.name)
				w.WriteByte('{')
				for i, l := range c.labels {
					if i > 0 {
						w.WriteByte(',')
					}
					fmt.Fprintf(w, "%s=%q", l.name, l.value)
				}
				if sm.withLe {
					fmt.Fprintf(w, ",le=%q", sm.le)
				}
				w.WriteString("} ")
				w.WriteString(formatFloat(sm.v))
				w.WriteByte('\n')
			}
		}
	}
	if om {
		w.WriteString("# EOF\n")
	}
}
