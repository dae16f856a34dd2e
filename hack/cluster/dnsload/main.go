// Command dnsload plays the pods of a job resolving Service names the way a
// pod's C library does, against a DNS server such as hack/coredns: each
// worker has its own UDP socket, asks for A and AAAA, and walks the pod's
// search path with ndots:5 first, so that a name with fewer than five dots
// (every NAME.NS.svc.cluster.local has four) is tried with each search
// domain appended, and answered NXDOMAIN, before it is asked as it is.
//
//	dnsload -server 127.0.0.1:10053 -name web.shop -name db.shop -workers 200 -rate 5 -duration 30s
//
// The workers start at once, as a job's pods do, unless -jitter spreads the
// starts over a window. It prints one JSON summary on stdout: the lookups
// and queries sent, the answers by rcode, timeouts, the NXDOMAIN share and
// latency quantiles. It sends nothing but to -server, which must be on this
// machine's loopback.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"strings"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the command's flag values.
type options struct {
	server   string
	names    []string
	clientNS string
	domain   string
	ndots    int
	aaaa     bool
	workers  int
	rate     float64
	duration time.Duration
	jitter   time.Duration
	timeout  time.Duration
	seed     uint64
}

type nameList []string

func (l *nameList) String() string { return strings.Join(*l, ",") }
func (l *nameList) Set(v string) error {
	for _, n := range strings.Split(v, ",") {
		if n = strings.TrimSpace(n); n != "" {
			*l = append(*l, n)
		}
	}
	return nil
}

const usage = `Usage: dnsload -server HOST:PORT -name NAME.NS [-name ...] [flags]

Resolves Service names as the pods of a job would: -workers workers, each
with its own socket, each doing -rate lookups a second for -duration. A
lookup of a name with fewer dots than -ndots first tries the pod's search
path (CLIENT_NS.svc.DOMAIN, svc.DOMAIN, DOMAIN), each try an A and an AAAA
query, and stops at the first name that has an address; so with the
defaults, a lookup of web.shop.svc.cluster.local sends 3 x 2 queries that are
answered NXDOMAIN before the 2 that find it.

Examples:
  dnsload -server 127.0.0.1:10053 -name web.shop -workers 100 -duration 10s
  dnsload -server 127.0.0.1:10053 -name web.shop.svc.cluster.local -workers 1000 -rate 2 -jitter 20s
  dnsload ... -ndots 1     # what lowering ndots in the pods' dnsConfig would do

Flags:
`

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("dnsload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	fs.StringVar(&o.server, "server", os.Getenv("FAULTLINE_COREDNS_ADDR"), "DNS server `HOST:PORT` on loopback (default $FAULTLINE_COREDNS_ADDR)")
	fs.Var((*nameList)(&o.names), "name", "a Service `NAME.NS` (or NAME.NS.svc.DOMAIN) to resolve; repeat or separate with commas; each lookup picks one at random")
	fs.StringVar(&o.clientNS, "client-namespace", "default", "the `namespace` of the resolving pods: the first domain of their search path")
	fs.StringVar(&o.domain, "domain", "cluster.local", "the cluster `domain`")
	fs.IntVar(&o.ndots, "ndots", 5, "a name with fewer dots than `N` tries the search path first (Kubernetes sets 5)")
	fs.BoolVar(&o.aaaa, "aaaa", true, "ask for AAAA beside A, as getaddrinfo does for an unspecified family")
	fs.IntVar(&o.workers, "workers", 10, "`N` workers (pods), each with its own socket")
	fs.Float64Var(&o.rate, "rate", 10, "`R` lookups a second per worker; 0 is as fast as the answers come")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "how long each worker runs, from its start")
	fs.DurationVar(&o.jitter, "jitter", 0, "spread the workers' starts uniformly over this `window` (0: all at once, a job start)")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Second, "wait this long for each answer before counting a timeout")
	fs.Uint64Var(&o.seed, "seed", 1, "seed for the starts and the names picked")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var problems []string
	if fs.NArg() > 0 {
		problems = append(problems, fmt.Sprintf("unexpected arguments %q", fs.Args()))
	}
	if o.server == "" {
		problems = append(problems, "no -server (nor FAULTLINE_COREDNS_ADDR): give the address hack/coredns/up printed")
	} else if err := loopback(o.server); err != nil {
		problems = append(problems, err.Error())
	}
	if len(o.names) == 0 {
		problems = append(problems, "no -name: give the Services to resolve as NAME.NS")
	}
	if o.workers < 1 || o.rate < 0 || o.duration <= 0 || o.jitter < 0 || o.timeout <= 0 || o.ndots < 0 {
		problems = append(problems, "want -workers >= 1, -rate >= 0, -duration > 0, -jitter >= 0, -timeout > 0, -ndots >= 0")
	}
	if len(problems) > 0 {
		err := errors.New(strings.Join(problems, "; "))
		fmt.Fprintf(stderr, "dnsload: %v\nTry: dnsload -server 127.0.0.1:10053 -name web.shop -workers 100 -duration 10s\n", err)
		return o, err
	}
	return o, nil
}

// loopback refuses a server that is not on this machine: a storm is only
// ever sent to a server of our own.
func loopback(server string) error {
	host, _, err := net.SplitHostPort(server)
	if err != nil {
		return fmt.Errorf("-server %q: %v", server, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-server %q: want a loopback address such as 127.0.0.1:10053", server)
	}
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	s, err := load(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "dnsload:", err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		fmt.Fprintln(stderr, "dnsload:", err)
		return 1
	}
	if ctx.Err() != nil {
		return 130
	}
	return 0
}

// plan draws each worker's start offset from -jitter and -seed.
func plan(o options) []time.Duration {
	r := rand.New(rand.NewPCG(o.seed, 0x646e736c6f6164))
	starts := make([]time.Duration, o.workers)
	if o.jitter > 0 {
		for i := range starts {
			starts[i] = time.Duration(r.Int64N(int64(o.jitter)))
		}
	}
	return starts
}
