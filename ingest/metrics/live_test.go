package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline/faultline/ingest/metrics"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

// promServer answers /api/v1/query_range as Prometheus does: a matrix of
// two series with a point every step in [start, end]. It fails the
// queries whose start is in failAt, and counts the queries asked.
type promServer struct {
	mu     sync.Mutex
	starts []string
	failAt map[string]bool
}

func (p *promServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || r.URL.Path != "/api/v1/query_range" {
		http.Error(w, "read-only: GET /api/v1/query_range only", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	p.mu.Lock()
	p.starts = append(p.starts, q.Get("start"))
	fail := p.failAt[q.Get("start")]
	p.mu.Unlock()
	if fail {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"status":"error","errorType":"unavailable","error":"TSDB not ready"}`)
		return
	}
	start, _ := strconv.ParseFloat(q.Get("start"), 64)
	end, _ := strconv.ParseFloat(q.Get("end"), 64)
	step, _ := strconv.ParseFloat(q.Get("step"), 64)
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for i, inst := range []string{"a:9153", "b:9153"} {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metric":{"__name__":"coredns_dns_requests_total","instance":%q,"job":"coredns"},"values":[`, inst)
		for t, n := start, 0; t <= end; t, n = t+step, n+1 {
			if n > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `[%s,"%d"]`, strconv.FormatFloat(t, 'f', -1, 64), n)
		}
		b.WriteString("]}")
	}
	b.WriteString("]}}")
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, b.String())
}

func TestChunks(t *testing.T) {
	t0 := time.Unix(1714557600, 0)
	got := metrics.Chunks(t0, t0.Add(11*time.Minute), time.Minute, 5)
	want := [][2]int{{0, 4}, {5, 9}, {10, 11}}
	if len(got) != len(want) {
		t.Fatalf("%d chunks, want %d: %v", len(got), len(want), got)
	}
	for i, c := range got {
		if int(c[0].Sub(t0)/time.Minute) != want[i][0] || int(c[1].Sub(t0)/time.Minute) != want[i][1] {
			t.Errorf("chunk %d: %v, want minutes %v", i, c, want[i])
		}
	}
}

func TestIngestLiveIsChunkedAndResumable(t *testing.T) {
	ctx := context.Background()
	t0 := time.Unix(1714557600, 0).UTC()
	srv := &promServer{failAt: map[string]bool{strconv.FormatInt(t0.Add(5*time.Minute).Unix(), 10): true}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	s := sqlitetest.New(t)
	l := metrics.Live{URL: ts.URL, Query: "coredns_dns_requests_total", Since: t0, Until: t0.Add(11 * time.Minute),
		Step: time.Minute, Points: 5, Rate: 1000}

	run, err := metrics.IngestLive(ctx, s, l)
	if err == nil || !strings.Contains(err.Error(), `query "coredns_dns_requests_total"`) || !strings.Contains(err.Error(), "TSDB not ready") {
		t.Fatalf("error %v, want the query named and Prometheus's error", err)
	}
	if run.Records != 10 {
		t.Errorf("first run kept %d samples, want the 10 of its first chunk", run.Records)
	}

	srv.failAt = nil
	run, err = metrics.IngestLive(ctx, s, l)
	if err != nil {
		t.Fatal(err)
	}
	if run.Records != 14 || run.Duplicates != 0 {
		t.Errorf("the rerun added %d samples (%d held), want the 14 of the chunks left", run.Records, run.Duplicates)
	}
	want := []string{"1714557600", "1714557900", "1714557900", "1714558200"}
	if fmt.Sprint(srv.starts) != fmt.Sprint(want) {
		t.Errorf("queries started at %v, want %v (the rerun resumes at the chunk that failed)", srv.starts, want)
	}
	n := 0
	for sr, err := range s.Series(ctx, timeline.SeriesQuery{Metric: "coredns_dns_requests_total"}) {
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range s.Samples(ctx, []int64{sr.ID}, time.Time{}, time.Time{}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	if n != 24 {
		t.Errorf("%d samples held, want 2 series x 12 minutes", n)
	}

	if run, err := metrics.IngestLive(ctx, s, l); err != nil || run.Records != 0 || len(srv.starts) != 4 {
		t.Errorf("a third run: %v, %d samples, %d queries in all; want nothing to do", err, run.Records, len(srv.starts))
	}
}

func TestIngestLiveStopsOnCancel(t *testing.T) {
	t0 := time.Unix(1714557600, 0).UTC()
	ts := httptest.NewServer(&promServer{})
	defer ts.Close()
	s := sqlitetest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	l := metrics.Live{URL: ts.URL, Query: "up", Since: t0, Until: t0.Add(time.Hour), Step: time.Minute, Points: 5, Rate: 1000,
		OnChunk: func(metrics.Chunk) { cancel() }}
	run, err := metrics.IngestLive(ctx, s, l)
	if err == nil || ctx.Err() == nil {
		t.Fatalf("error %v after Ctrl-C", err)
	}
	if run.Records != 10 {
		t.Errorf("kept %d samples, want the first chunk's 10", run.Records)
	}
}

// An answer past MaxBytes is refused, with the query named, before it is
// read whole.
func TestQueryRangeTooLarge(t *testing.T) {
	defer func(old int64) { metrics.MaxBytes = old }(metrics.MaxBytes)
	metrics.MaxBytes = 1 << 10
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[` + strings.Repeat(" ", 4<<10) + `]}}`))
	}))
	defer ts.Close()
	now := time.Now()
	_, err := metrics.QueryRange(context.Background(), ts.Client(), ts.URL, "up", now.Add(-time.Hour), now, 15*time.Second)
	var tl *metrics.TooLargeError
	if !errors.As(err, &tl) || !strings.Contains(err.Error(), `the answer to "up" is over`) {
		t.Fatalf("got %v, want a TooLargeError naming the query", err)
	}
}
