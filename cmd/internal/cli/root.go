// Package cli is faultline's command tree: thin cobra commands that parse
// flags, call ingesters, the store and analyzers, and print results.
package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/internal/termsafe"
	"github.com/faultline/faultline/timeline/clickhouse"
)

// version is set at build time with -ldflags "-X ...cli.version=v1.2.3".
var version = "dev"

// Run executes the command line and returns the exit code.
//
// Everything printed is data from strangers (user agents, object names,
// messages, file names), so both streams pass through a termsafe.Writer for
// the whole run: no command can forget it, and no error that quotes its
// input reaches the terminal raw. The text output uses no colour, so the
// writer escapes every ESC. What escapes its own control characters (JSON,
// YAML) or draws its own (the TUI, the progress line) writes to
// termsafe.Raw(stream) instead. Values in table rows and report lines
// still go through termsafe.Fprintf: the writer keeps newlines and tabs, and
// one in a value would fake a row or a column.
func Run(ctx context.Context, args []string, f *Factory) int {
	streams := f.IO
	out, errOut := termsafe.NewWriter(streams.Out), termsafe.NewWriter(streams.ErrOut)
	f.IO.Out, f.IO.ErrOut = out, errOut
	defer func() { f.IO = streams }()
	root := newRootCmd(f)
	root.SetArgs(args)
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	ran, err := root.ExecuteContextC(ctx)
	var ue *usageError
	if err != nil && ran == root && !errors.As(err, &ue) {
		// The root runs nothing of ours and its flag errors are usage
		// errors already, so what cobra returns for it is the one error of
		// its own: an unknown command.
		err = usagef("faultline --help", "%s", err)
	}
	code := exitCode(err, f.IO.ErrOut)
	for _, se := range f.partial {
		// Last, after the answer, where a reader of the output sees it;
		// structured outputs carry a mark of their own (output.go).
		fmt.Fprintf(f.IO.ErrOut, "warning: PARTIAL ANSWER (--allow-partial): %s; every figure above leaves out the records it holds\n", se)
	}
	out.Flush()
	errOut.Flush()
	return code
}

func newRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "faultline",
		Short: "Investigate incidents on large Kubernetes and ML-training clusters",
		Long: `faultline reads the evidence a cluster leaves (apiserver audit logs, events,
object versions, job and artifact versions) into a local SQLite timeline, and
helps you find the earliest known-bad time, what changed across it, and the
smallest slice of the fleet it hurt.

Secret values, env literals, container args and tokens are never stored: a
hash under a key kept outside the timeline remains, so a change still shows.
The key is $XDG_CONFIG_HOME/faultline/key (~/.config/faultline/key), made on
first use; FAULTLINE_KEY names another file. SECURITY.md has the details.`,
		Example: `  # Ingest audit logs (files, rotated directories, .gz, or - for stdin)
  faultline ingest audit /var/log/kube-apiserver/

  # What evidence do we hold, and where are the gaps?
  faultline sources

  # Server errors on LIST from kubelets in the last 30 minutes of the data
  faultline timeline --since 30m --since-data --where 'verb == "list" && code >= 500 && user.startsWith("system:node:")'`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		Version:           f.Version,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: false}, // listed: faultline completion --help
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("db") {
				if env := f.Getenv("FAULTLINE_DB"); env != "" {
					f.dbPath = env
				}
			}
			// A flag beats the environment: --db given on the command line
			// names the timeline even with FAULTLINE_STORE set.
			switch db, store := cmd.Flags().Changed("db"), cmd.Flags().Changed("store"); {
			case db && store:
				return usagef("faultline --store clickhouse://127.0.0.1:19001/faultline sources",
					"--db and --store both name a timeline: give one")
			case !db && !store:
				f.storeDSN = f.Getenv("FAULTLINE_STORE")
			}
			if f.storeDSN != "" && !clickhouse.IsDSN(f.storeDSN) {
				return usagef("faultline --store clickhouse://127.0.0.1:19001/faultline sources",
					"--store %q: want a ClickHouse DSN, clickhouse://HOST:PORT/DATABASE[?cluster=NAME] (a file is --db)", f.storeDSN)
			}
			return nil
		},
	}
	root.PersistentFlags().StringVar(&f.dbPath, "db", "./faultline.db", "timeline database file (env FAULTLINE_DB)")
	root.PersistentFlags().BoolVar(&f.allowPartial, "allow-partial", false, "with --store: answer from the shards that are up when one is down, marked partial: a warning on stderr, a \"partial\" field in -o json|yaml, a last line in -o jsonl, PARTIAL in the TUI's title bar (else refuse)")
	root.PersistentFlags().StringVar(&f.storeDSN, "store", "", "a ClickHouse cluster instead of --db: clickhouse://HOST:PORT/DATABASE[?cluster=NAME], the cluster faultline by default (env FAULTLINE_STORE, which --db overrides; hack/clickhouse/up starts one)")
	root.PersistentFlags().BoolVarP(&f.verbose, "verbose", "v", false, "log diagnostics to stderr")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usagef(c.CommandPath()+" --help", "%s", err)
	})
	root.AddCommand(newIngestCmd(f), newTimelineCmd(f), newSourcesCmd(f), newReplayCmd(f), newEvalCmd(f), newIdentityCmd(f), newHistoryCmd(f))
	root.AddCommand(newBisectCmd(f))
	root.AddCommand(newSliceCmd(f), newInvestigateCmd(f), newDiffCmd(f), newCounterexampleCmd(f), newControlplaneCmd(f), newNodehealthCmd(f),
		newDNSCmd(f), newNetworkCmd(f), newCardinalityCmd(f))
	root.AddCommand(newAlertsCmd(f))
	root.AddCommand(newTUICmd(f))
	root.AddCommand(newVersionCmd(f), newExplainCmd(f))
	if f.Name == "kubectl-faultline" {
		// Run by kubectl as a plugin: say so in usage, as kubectl does.
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl faultline"}
		asPlugin(root)
	}
	return root
}

// argsAtLeast is cobra.MinimumNArgs with a usage error that teaches.
func argsAtLeast(n int, hint string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usagef(hint, "%s needs at least %d argument(s)", cmd.CommandPath(), n)
		}
		return nil
	}
}

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef(cmd.CommandPath()+" --help", "%s takes no arguments, got %q", cmd.CommandPath(), args[0])
	}
	return nil
}

// asPlugin rewrites the examples of every command for kubectl's plugin
// form: "faultline diff" becomes "kubectl faultline diff".
func asPlugin(c *cobra.Command) {
	c.Example = strings.ReplaceAll(c.Example, "  faultline ", "  kubectl faultline ")
	for _, sub := range c.Commands() {
		asPlugin(sub)
	}
}
