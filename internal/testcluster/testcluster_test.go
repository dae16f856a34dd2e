package testcluster

// Tests against the real Prometheus and CoreDNS that hack/test starts beside
// the control plane (hack/prometheus, hack/coredns): the Prometheus scrapes
// every part, and the DNS load generator's storm shows in CoreDNS's own
// metrics.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline/faultline/internal/testenv"
)

// scraped are the jobs hack/prometheus/up configures when the control
// plane gives every part a metrics port, as hack/test does.
var scraped = []string{"coredns", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "prometheus"}

func TestPrometheusScrapesEveryPart(t *testing.T) {
	prom := Prometheus(t)
	ctx := t.Context()

	jobs := targetJobs(t, ctx, prom)
	for _, job := range scraped {
		if !jobs[job] {
			testenv.Missing(t, "Prometheus at %s does not scrape %s (it scrapes %v): start the control plane with "+
				"SCHEDULER_PORT and CONTROLLER_MANAGER_PORT set, and hack/coredns/up, before hack/prometheus/up", prom, job, keys(jobs))
		}
	}

	// Every target has been up for two scrapes or more; a fresh Prometheus
	// needs a few 5 s intervals.
	poll(t, 2*time.Minute, func() error {
		series := queryRange(t, ctx, prom, `up`)
		up := map[string]int{}
		for _, s := range series {
			for _, v := range s.values {
				if v == 1 {
					up[s.metric["job"]]++
				}
			}
		}
		for _, job := range scraped {
			if up[job] < 2 {
				return fmt.Errorf("up{job=%q}: %d samples at 1, want 2 or more (all: %v)", job, up[job], up)
			}
		}
		return nil
	})

	// The apiserver's request counter, from its own /metrics.
	series := queryRange(t, ctx, prom, `sum by (job) (apiserver_request_total)`)
	if len(series) != 1 || series[0].metric["job"] != "kube-apiserver" {
		t.Fatalf("sum by (job) (apiserver_request_total): %d series %v, want one, of job kube-apiserver", len(series), series)
	}
	vs := series[0].values
	if len(vs) < 2 {
		t.Fatalf("apiserver_request_total: %d samples, want 2 or more", len(vs))
	}
	// A counter falls only when its process restarts, and the suite shares
	// this apiserver with ingest/kube's restart test: count growth the way
	// Prometheus's increase() does, a fall being a reset to zero.
	if grew, resets := counterIncrease(vs); vs[len(vs)-1] <= 0 || grew <= 0 {
		t.Errorf("apiserver_request_total went from %v to %v (%v growth across %d resets): want a positive, growing counter", vs[0], vs[len(vs)-1], grew, resets)
	}
}

// counterIncrease is how much a counter's samples grew, a fall counting as a
// reset after which the counter starts again from zero.
func counterIncrease(vs []float64) (grew float64, resets int) {
	for i := 1; i < len(vs); i++ {
		if vs[i] < vs[i-1] {
			resets++
			grew += vs[i]
			continue
		}
		grew += vs[i] - vs[i-1]
	}
	return grew, resets
}

func TestDNSLoadShowsInCoreDNSMetrics(t *testing.T) {
	addr, metrics := CoreDNS(t)
	dir := ClusterDir(t)
	ctx := t.Context()

	// Two Services in a namespace of the test's own.
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("dnsload-%d", time.Now().UnixNano()%1_000_000)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	var names []string
	for _, svc := range []string{"web", "db"} {
		s := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: svc},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": svc},
				Ports:    []corev1.ServicePort{{Name: "main", Port: 8080}},
			},
		}
		if _, err := kube.CoreV1().Services(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, svc+"."+ns+".svc.cluster.local")
	}
	// CoreDNS learns of them through its watch.
	r := Resolver(addr)
	poll(t, 30*time.Second, func() error {
		for _, n := range names {
			if _, err := r.LookupHost(ctx, n+"."); err != nil {
				return err
			}
		}
		return nil
	})

	before := settled(t, ctx, metrics)
	s := DNSLoad(t, ctx, "-server", addr, "-name", strings.Join(names, ","), "-workers", "20", "-rate", "5",
		"-duration", "10s", "-client-namespace", "default")
	after := settled(t, ctx, metrics)
	t.Logf("dnsload: %d lookups, %d queries, %d answered, rcodes %v, %d timeouts", s.Lookups, s.Queries, s.Answered, s.Rcodes, s.Timeouts)

	// Each lookup of NAME.NS.svc.cluster.local (four dots, fewer than
	// ndots:5) tries the three search domains first: 3 x (A, AAAA)
	// NXDOMAIN, then A and AAAA of the name itself, which is found.
	if s.Errors > 0 || s.Lookups < 100 || s.Found < s.Lookups-s.Timeouts {
		t.Fatalf("dnsload: %d lookups, %d found, %d errors (first %q), %d timeouts: want 100 or more, all found", s.Lookups, s.Found, s.Errors, s.FirstError, s.Timeouts)
	}
	if math.Abs(s.NXDOMAINShare-0.75) > 0.01 {
		t.Errorf("dnsload's NXDOMAIN share = %.3f, want 0.75 (6 of every 8 queries)", s.NXDOMAINShare)
	}

	// CoreDNS saw them: its request counter grew by what was sent (less
	// what got lost on the way), and its NXDOMAIN answers by what came back.
	requests := after.sum("coredns_dns_requests_total", nil) - before.sum("coredns_dns_requests_total", nil)
	responses := after.sum("coredns_dns_responses_total", nil) - before.sum("coredns_dns_responses_total", nil)
	nx := map[string]string{"rcode": "NXDOMAIN"}
	nxdomain := after.sum("coredns_dns_responses_total", nx) - before.sum("coredns_dns_responses_total", nx)
	if requests < float64(s.Answered) || requests > float64(s.Queries) {
		t.Errorf("coredns_dns_requests_total grew by %v, want between the %d queries answered and the %d sent", requests, s.Answered, s.Queries)
	}
	if nxdomain < float64(s.Rcodes["NXDOMAIN"]) || nxdomain > float64(s.Queries) {
		t.Errorf("coredns_dns_responses_total{rcode=\"NXDOMAIN\"} grew by %v, want at least the %d dnsload counted", nxdomain, s.Rcodes["NXDOMAIN"])
	}
	if responses == 0 || math.Abs(nxdomain/responses-0.75) > 0.02 {
		t.Errorf("CoreDNS's NXDOMAIN share = %v/%v, want 0.75", nxdomain, responses)
	}
}

type series struct {
	metric map[string]string
	values []float64
}

// queryRange asks Prometheus for expr over the last five minutes at its
// scrape interval.
func queryRange(t *testing.T, ctx context.Context, prom, expr string) []series {
	t.Helper()
	end := time.Now()
	q := url.Values{
		"query": {expr},
		"start": {strconv.FormatInt(end.Add(-5*time.Minute).Unix(), 10)},
		"end":   {strconv.FormatInt(end.Unix(), 10)},
		"step":  {"5s"},
	}
	var resp struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	getJSON(t, ctx, prom+"/api/v1/query_range?"+q.Encode(), &resp)
	if resp.Status != "success" || resp.Data.ResultType != "matrix" {
		t.Fatalf("query_range %s: status %q, result %q, error %q", expr, resp.Status, resp.Data.ResultType, resp.Error)
	}
	var out []series
	for _, r := range resp.Data.Result {
		s := series{metric: r.Metric}
		for _, v := range r.Values {
			str, _ := v[1].(string)
			f, err := strconv.ParseFloat(str, 64)
			if err != nil {
				t.Fatalf("query_range %s: sample %v: %v", expr, v, err)
			}
			s.values = append(s.values, f)
		}
		out = append(out, s)
	}
	return out
}

// targetJobs are the jobs of Prometheus's active targets.
func targetJobs(t *testing.T, ctx context.Context, prom string) map[string]bool {
	t.Helper()
	var resp struct {
		Data struct {
			ActiveTargets []struct {
				Labels map[string]string `json:"labels"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	getJSON(t, ctx, prom+"/api/v1/targets?state=active", &resp)
	jobs := map[string]bool{}
	for _, tg := range resp.Data.ActiveTargets {
		jobs[tg.Labels["job"]] = true
	}
	return jobs
}

func getJSON(t *testing.T, ctx context.Context, u string, v any) {
	t.Helper()
	body := get(t, ctx, u)
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v\n%.500s", u, err, body)
	}
}

func get(t *testing.T, ctx context.Context, u string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%.500s", u, resp.Status, body)
	}
	return body
}

// exposition is a /metrics page in the text format: one sample a line.
type exposition []sample

type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// sum adds the samples of metric whose labels include want.
func (e exposition) sum(metric string, want map[string]string) float64 {
	total := 0.0
next:
	for _, s := range e {
		if s.name != metric {
			continue
		}
		for k, v := range want {
			if s.labels[k] != v {
				continue next
			}
		}
		total += s.value
	}
	return total
}

// settled scrapes CoreDNS's coredns_dns_* samples once its request and
// response counters stop moving. Its prometheus plugin counts a query
// after the answer is written, so a client can hold the answer to its
// last query before the counter has moved: a scrape taken at once can
// miss it, and the next one count it in the wrong interval. The counters
// are taken as settled when two scrapes 200 ms apart agree.
func settled(t *testing.T, ctx context.Context, u string) exposition {
	t.Helper()
	last := scrape(t, ctx, u, "coredns_dns_")
	for range 50 {
		time.Sleep(200 * time.Millisecond)
		e := scrape(t, ctx, u, "coredns_dns_")
		if e.sum("coredns_dns_requests_total", nil) == last.sum("coredns_dns_requests_total", nil) &&
			e.sum("coredns_dns_responses_total", nil) == last.sum("coredns_dns_responses_total", nil) {
			return e
		}
		last = e
	}
	t.Fatalf("%s: CoreDNS's request counters still moved after 10 s", u)
	return nil
}

// scrape reads the samples of the metrics named prefix* from a /metrics
// page. Only what CoreDNS writes for them needs to parse: NAME{k="v",...}
// VALUE, with no comma, brace or escaped quote in a value.
func scrape(t *testing.T, ctx context.Context, u, prefix string) exposition {
	t.Helper()
	var out exposition
	sc := bufio.NewScanner(strings.NewReader(string(get(t, ctx, u))))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if !strings.HasPrefix(text, prefix) {
			continue
		}
		s, err := parseSample(text)
		if err != nil {
			t.Fatalf("%s:%d: %v: %q", u, line, err, text)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func parseSample(line string) (sample, error) {
	s := sample{labels: map[string]string{}}
	rest := line
	if i := strings.IndexAny(line, "{ "); i < 0 {
		return s, fmt.Errorf("no value")
	} else {
		s.name, rest = line[:i], line[i:]
	}
	if strings.HasPrefix(rest, "{") {
		end := strings.Index(rest, "}")
		if end < 0 {
			return s, fmt.Errorf("unclosed labels")
		}
		for _, kv := range strings.Split(rest[1:end], ",") {
			if kv == "" {
				continue
			}
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return s, fmt.Errorf("label %q: no =", kv)
			}
			s.labels[k] = strings.Trim(v, `"`)
		}
		rest = rest[end+1:]
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return s, fmt.Errorf("no value")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, err
	}
	s.value = v
	return s, nil
}

// poll calls f until it returns nil, failing with its last error after
// limit.
func poll(t *testing.T, limit time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %v", limit, err)
		}
		time.Sleep(time.Second)
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestCounterIncrease(t *testing.T) {
	for _, tc := range []struct {
		vs     []float64
		grew   float64
		resets int
	}{
		{[]float64{5}, 0, 0},
		{[]float64{5, 5, 5}, 0, 0},
		{[]float64{1, 3, 10}, 9, 0},
		// The CI run that failed: 1917 before a restart, 478 after.
		{[]float64{1900, 1917, 40, 478}, 17 + 40 + 438, 1},
		{[]float64{10, 0, 0}, 0, 1},
	} {
		grew, resets := counterIncrease(tc.vs)
		if grew != tc.grew || resets != tc.resets {
			t.Errorf("counterIncrease(%v) = %v, %d; want %v, %d", tc.vs, grew, resets, tc.grew, tc.resets)
		}
	}
}
