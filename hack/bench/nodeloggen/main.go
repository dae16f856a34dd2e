// Command nodeloggen writes a synthetic node log for benchmarks of faultline
// ingest nodelogs: one GPU node's journal as journalctl -o json exports it
// (kubelet, containerd, the kernel and a training job run as a unit), or its
// kernel ring buffer as dmesg --time-format=iso prints it.
//
// Most lines are the benign ones a node writes all day (kubelet's probes and
// volume reconciles, containerd's shims, veth and cni0 churn, AppArmor audit
// lines, NCCL INFO and training-step lines). A share (-hits, default 1 %) is
// what faultline keeps: NVIDIA Xid errors of the documented codes, NVSwitch
// SXids and NVLink errors, EDAC ECC errors, row remapping, OOM kills (the
// summary and the kill), kubelet PLEG stalls and evictions, NCCL watchdog
// timeouts and errors, conntrack "table full" and links going down and up.
// The formats are those docs/nodelogs.md lists and ingest/nodelogs' tests
// read; the output depends only on the flags.
//
// Usage:
//
//	nodeloggen -format journal -lines 1000000 -o gpu-0086.journal.json
//	nodeloggen -format dmesg -lines 1000000 -o gpu-0086.dmesg
//	nodeloggen -format journal -lines 1000 | jq -r .MESSAGE
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/faultline/faultline/hack/bench/internal/gencmd"
)

func main() { gencmd.Main(run) }

const hint = "nodeloggen -format journal -lines 1000000 -seed 1 -o gpu-0086.journal.json"

// options are the flags.
type options struct {
	format string
	lines  int
	seed   uint64
	node   string
	start  time.Time
	rate   float64
	hits   float64
	out    string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("nodeloggen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.format, "format", "journal", "journal (journalctl -o json) or dmesg (dmesg --time-format=iso)")
	fs.IntVar(&o.lines, "lines", 1_000_000, "lines to write")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed: the output depends only on the flags")
	fs.StringVar(&o.node, "node", "gpu-0086", "the node: the journal's _HOSTNAME and the NCCL prefix's host")
	start := fs.String("start", "2026-12-01T00:00:00Z", "time of the first line (RFC 3339)")
	fs.Float64Var(&o.rate, "rate", 50, "lines per second on average (exponential gaps)")
	fs.Float64Var(&o.hits, "hits", 0.01, "share of lines that faultline keeps (0 to 1)")
	fs.StringVar(&o.out, "o", "", "output file (default stdout)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: nodeloggen [flags]\n\nWrites one GPU node's log, journald JSON export or dmesg --time-format=iso,\nmostly benign lines with -hits of them Xid, ECC, NVLink, PLEG, eviction, OOM,\nNCCL, conntrack and link lines.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.format != "journal" && o.format != "dmesg":
		return o, fmt.Errorf("invalid -format %q: want journal or dmesg", o.format)
	case o.lines < 0:
		return o, fmt.Errorf("invalid -lines %d: want 0 or more", o.lines)
	case o.rate <= 0:
		return o, fmt.Errorf("invalid -rate %g: want lines per second above 0", o.rate)
	case o.hits < 0 || o.hits > 1:
		return o, fmt.Errorf("invalid -hits %g: want a share from 0 to 1", o.hits)
	}
	if o.start, err = time.Parse(time.RFC3339Nano, *start); err != nil {
		return o, fmt.Errorf("invalid -start %q: want RFC 3339 (2026-12-01T00:00:00Z)", *start)
	}
	o.start = o.start.UTC()
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return gencmd.UsageCode(err, stderr, hint)
	}
	return gencmd.Code(gencmd.Output(o.out, stdout, func(w io.Writer) error {
		_, err := write(ctx, w, o)
		return err
	}), stderr)
}

// stats count what was written: lines, and the lines meant to be kept.
type stats struct {
	lines, hits int
}

// write writes o.lines lines of the log to w.
func write(ctx context.Context, w io.Writer, o options) (stats, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	g := newGen(o)
	var st stats
	for i := range o.lines {
		if i%100_000 == 0 {
			if err := ctx.Err(); err != nil {
				return st, err
			}
		}
		hit := g.r.Float64() < o.hits
		if o.format == "journal" {
			g.journalLine(bw, hit)
		} else {
			g.dmesgLine(bw, hit)
		}
		st.lines++
		if hit {
			st.hits++
		}
		g.tick()
	}
	return st, bw.Flush()
}

// gen holds the generator's state: its random source and clock.
type gen struct {
	o    options
	r    *rand.Rand
	at   time.Time
	boot time.Time
	buf  []byte
	seq  uint64 // the journal's sequence number
}

func newGen(o options) *gen {
	return &gen{o: o, r: rand.New(rand.NewPCG(o.seed, 0x6e6f64656c6f6773)), at: o.start, boot: o.start.Add(-37 * time.Hour)}
}

// tick moves the clock by an exponential gap of mean 1/rate.
func (g *gen) tick() {
	g.at = g.at.Add(time.Duration(g.r.ExpFloat64() / g.o.rate * float64(time.Second)))
}
