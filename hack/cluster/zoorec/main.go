// Command zoorec records one incident of the zoo on the running control
// plane (hack/cluster/up): it lays out a fleet of kwok nodes, runs the
// family's workload with background noise and routine changes, makes the
// decoy changes and the injected fault, and writes expected.json from the
// injection itself and a README.md that tells the incident symptoms-first.
//
//	zoorec -family config-key -seed 3 -out fixtures/zoo/config-key/seed-3
//	zoorec -list                       # the families
//	zoorec -family list-storm -seed 3 -apiserver-flags   # flags the family sizes the apiserver with
//
// hack/cluster/zoo wraps it: a fresh control plane per incident, the
// evidence dumped afterwards. A seed draws every parameter (scale, which
// namespace, pool, zone, rack, key, image or client, how many consumers,
// timings, noise and decoys), so the same seed gives the same scenario.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Family is a parameterized scenario: a general cause, drawn by the seed.
type Family struct {
	Name    string
	Summary string
	// APIServerFlags sizes the apiserver for the family (control-plane
	// families shed load at a size many clusters have).
	APIServerFlags string
	// Needs names the parts the zoo script starts beside the control
	// plane: "dns" is a CoreDNS watching it (its address in
	// $FAULTLINE_COREDNS_ADDR) and a Prometheus scraping it every second,
	// whose series of the recording are saved into metrics/.
	Needs string
	// Run drives the incident and fills in the truth; it returns the
	// README's story (what on-call saw), symptoms first, no answer.
	Run func(ctx context.Context, c *Cluster, e *Expected) (story string, err error)
}

var families = map[string]*Family{}

func register(f *Family) { families[f.Name] = f }

// familyOrder is the catalogue's order; the scale rule reads it.
var familyOrder = []string{
	"config-key", "secret-rotation", "digest-drift", "node-change", "taint-evict", "node-failure",
	"gang-rank-death", "list-storm", "watch-restart-storm", "get-fanout", "rbac-break",
	"scheduling-break", "canary-partial", "overlap", "control", "gpu-xid-rank-death", "dns-storm", "admission-break",
	"preemption", "netpol-break", "registry-outage", "limits-oom", "config-deleted", "disk-pressure", "probe-break", "agent-rollout", "sa-deleted", "quota-exhausted", "limitrange-default", "env-flag", "storageclass-deleted", "affinity-break", "init-break", "apf-misconfig", "service-break", "job-deadline", "backend-scaled-down", "psa-enforce", "pull-secret-rotated", "etcd-stall", "crd-tightened", "config-hot-reload", "crd-deleted", "priorityclass-deleted", "scheduler-hang", "scheduler-name", "controller-hang", "pdb-drain-stall", "eviction-webhook",
}

// Scale draws the fleet's size: 200 to 600 nodes, and 1,000 to 1,200 for
// seed 2 of every fourth family and seed 102 of every eighth (six
// incidents of the corpus: large recordings are what fills the zoo's
// size budget).
func Scale(c *Cluster, family string) int {
	idx := 0
	for i, f := range familyOrder {
		if f == family {
			idx = i
		}
	}
	if (c.seed == 2 && idx%4 == 0) || (c.seed == 102 && idx%8 == 0) {
		return c.Between(1000, 1200)
	}
	return c.Between(200, 600)
}

func main() {
	family := flag.String("family", "", "the family to record (-list shows them)")
	seed := flag.Int64("seed", 1, "the seed: draws every parameter")
	out := flag.String("out", "", "the incident folder to write expected.json and README.md into")
	list := flag.Bool("list", false, "list the families")
	apiFlags := flag.Bool("apiserver-flags", false, "print the kube-apiserver flags the family needs, then exit")
	needs := flag.Bool("needs", false, "print the parts the family needs beside the control plane (dns or nothing), then exit")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("family", *family, "seed", *seed)
	if *list {
		keys := make([]string, 0, len(families))
		for k := range families {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Printf("%-20s %s\n", k, families[k].Summary)
		}
		return
	}
	f, ok := families[*family]
	if !ok {
		fmt.Fprintf(os.Stderr, "zoorec: unknown family %q (zoorec -list)\n", *family)
		os.Exit(2)
	}
	if *apiFlags {
		fmt.Println(f.APIServerFlags)
		return
	}
	if *needs {
		fmt.Println(f.Needs)
		return
	}
	if *out == "" {
		fmt.Fprintln(os.Stderr, "zoorec: -out is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := record(ctx, f, *seed, *out, log); err != nil {
		log.Error("recording failed", "err", err)
		os.Exit(1)
	}
}

func record(ctx context.Context, f *Family, seed int64, out string, log *slog.Logger) error {
	c, err := newCluster(f.Name, seed, log)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 12*time.Minute)
	defer cancel()
	c.Out = out
	e := &Expected{SchemaVersion: 1, Incident: f.Name, Family: f.Name, Seed: seed}
	start := time.Now()
	story, err := f.Run(ctx, c, e)
	if err != nil {
		return err
	}
	if e.Changes == nil {
		e.Changes = []Change{}
	}
	if err := writeJSON(filepath.Join(out, "expected.json"), e); err != nil {
		return err
	}
	log.Info("recorded", "took", time.Since(start).Round(time.Second))
	_, err = os.Stat(filepath.Join(out, "nodelogs"))
	return os.WriteFile(filepath.Join(out, "README.md"), []byte(readme(f, seed, story, err == nil)), 0o644)
}

func readme(f *Family, seed int64, story string, nodeLogs bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s, seed %d\n\n%s\n\n", f.Name, seed, strings.TrimSpace(story))
	b.WriteString("## The evidence\n`audit.log.gz` (kube-apiserver audit log) and `objects/` (nodes, pods,\n" +
		"ConfigMaps, Jobs, Deployments, ReplicaSets, events, dumped after the fact).\n")
	if nodeLogs {
		b.WriteString("`nodelogs/NODE/` holds node logs: a journald JSON export (journal.json), dmesg\n" +
			"text (dmesg.log) and ranks' output (POD.log, as kubectl logs --timestamps gives it).\n" +
			"**They are generated**, not recorded: kwok nodes have no kernel, kubelet or GPU.\n" +
			"The recorder writes them in those formats (NVIDIA's Xid lines as the driver logs\n" +
			"them) at the instants of the recording, with everyday lines and decoy faults.\n")
	}
	if f.Needs == "dns" {
		b.WriteString("`metrics/coredns.json.gz` holds CoreDNS's own series (requests, responses by rcode,\n" +
			"latency histogram, cache hits and misses) as Prometheus's `/api/v1/query_range` answered\n" +
			"them: a real CoreDNS (hack/coredns) watched the control plane and answered the pods'\n" +
			"queries, played by the recorder from this machine, and a real Prometheus scraped it every second.\n")
	}
	fmt.Fprintf(&b, "Recorded from a real control plane by `hack/cluster/zoo record %s %d`;\nthe answer is in `expected.json`.\n", f.Name, seed)
	return b.String()
}
