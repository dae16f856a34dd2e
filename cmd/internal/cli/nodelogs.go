package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/ingest/nodelogs"
	"github.com/faultline/faultline/timeline"
)

type ingestNodeLogsOptions struct {
	f        *Factory
	paths    []string
	node     string
	bootTime string
	strict   bool
}

func newIngestNodeLogsCmd(f *Factory) *cobra.Command {
	opts := &ingestNodeLogsOptions{f: f}
	cmd := &cobra.Command{
		Use:   "nodelogs PATH...",
		Short: "Ingest node logs: GPU Xid errors, OOM kills, PLEG stalls, evictions, NCCL failures, link flaps",
		Long: `Ingest what nodes log and the apiserver never sees. Each PATH is a file (.gz and
.xz too), a folder (its files, recursively), or - for standard input. The
format is found per file from its first line:

  journalctl -o json          kernel, kubelet, containerd (one JSON entry a line)
  dmesg --time-format=iso     2026-12-01T15:31:03,878276+00:00 NVRM: Xid ...
  dmesg -T                    [Tue Dec  1 15:31:03 2026] ...   (read as UTC)
  dmesg                       [ 1234.567890] ...   (needs --boot-time)
  kubectl logs --timestamps   2026-12-01T15:31:03.878276Z ... (a job's NCCL output)

The lines that matter become records on their Node (source node): NVIDIA Xid
errors (with NVIDIA's meaning, the usual origin and the action it recommends),
ECC and row remapping, NVLink errors, kubelet PLEG stalls and evictions, OOM
kills, NCCL timeouts and errors, a full conntrack table, links going down and
up. Every other line is counted and dropped. docs/nodelogs.md lists them all.

The node of a file is --node; else, in a journal, each entry's _HOSTNAME;
else, for a file in a folder given as PATH, the folder below it that holds it
(logs/gpu-0086/kern.log: gpu-0086); else the file's name up to its first dot
(gpu-0086.dmesg: gpu-0086). It must be a valid Kubernetes node name.

A line that matches but has no usable time or node is reported as
FILE:LINE: field: problem and skipped; --strict stops at the first. A line
that matches nothing is never a bad line.`,
		Example: `  # one node's kernel log and journal, named by their files
  faultline ingest nodelogs gpu-0086.dmesg gpu-0086.journal.json.gz

  # a folder of folders, one per node: logs/gpu-0086/..., logs/gpu-0087/...
  faultline ingest nodelogs logs/

  # straight from a node, raw dmesg placed by its boot time
  ssh gpu-0086 'journalctl -k -o json --since -2h' | faultline ingest nodelogs --node gpu-0086 -
  faultline ingest nodelogs --node gpu-0086 --boot-time 2026-12-01T09:12:44Z dmesg.txt

  # a job's NCCL output
  kubectl logs -n ml train-0 --timestamps > gpu-0086.train-0.log
  faultline ingest nodelogs gpu-0086.train-0.log`,
		Args: argsAtLeast(1, "faultline ingest nodelogs gpu-0086.dmesg"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.paths = args
			return ingestNodeLogsRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.node, "node", "", "the node of every PATH (default: from each file)")
	cmd.Flags().StringVar(&opts.bootTime, "boot-time", "", "when the node booted (RFC 3339), to place raw dmesg's [seconds since boot]")
	cmd.Flags().BoolVar(&opts.strict, "strict", false, "stop at the first bad line (exit 1)")
	return cmd
}

// bootTimeHint says where a node's boot time is found.
const bootTimeHint = `faultline ingest nodelogs --boot-time "$(ssh NODE 'date -u -d "$(uptime -s)" +%FT%TZ')" dmesg.txt`

// options checks the flags and makes the ingester's options.
func (opts *ingestNodeLogsOptions) options() (nodelogs.Options, error) {
	o := nodelogs.Options{Node: opts.node, Strict: opts.strict, Logger: opts.f.Logger()}
	if opts.node != "" {
		if p := nodelogs.CheckNodeName(opts.node); p != "" {
			return o, usagef("faultline ingest nodelogs --node gpu-0086 PATH", "invalid --node %q: %s", opts.node, p)
		}
	}
	if opts.bootTime != "" {
		t, err := time.Parse(time.RFC3339Nano, opts.bootTime)
		if err != nil {
			return o, usagef(bootTimeHint, "invalid --boot-time %q: want RFC 3339 (2026-12-01T09:12:44Z)", opts.bootTime)
		}
		o.BootTime = t
	}
	return o, nil
}

func ingestNodeLogsRun(ctx context.Context, opts *ingestNodeLogsOptions) error {
	f := opts.f
	o, err := opts.options()
	if err != nil {
		return err
	}
	noBoot := 0
	o.OnSkip = func(b *input.Skip) {
		if errors.Is(b, nodelogs.ErrNoBootTime) {
			noBoot++
			f.warnf("%s (pass --boot-time)", b)
			return
		}
		f.warnf("%s", b)
	}
	err = ingestFilesRun(ctx, f, func(ctx context.Context, store timeline.Appender) ([]timeline.IngestRun, error) {
		return nodelogs.IngestPaths(ctx, store, opts.paths, o)
	})
	if noBoot > 0 {
		fmt.Fprintf(f.IO.ErrOut, "%d raw dmesg line(s) were not placed: their time counts from the node's boot; give it:\n  %s\n", noBoot, bootTimeHint)
	}
	if ne := (*nodelogs.NodeNameError)(nil); errors.As(err, &ne) {
		return usagef("faultline ingest nodelogs --node gpu-0086 FILE, or put each node's files in a folder named after it: logs/gpu-0086/",
			"%s", ne.Error())
	}
	return err
}
