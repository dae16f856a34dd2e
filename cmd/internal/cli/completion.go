package cli

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/timeline"
)

// Dynamic completion of the REFs history and identity take: the kind, then
// the objects of that kind the timeline holds, read through the store.

// refKinds are offered before a kind is typed.
var refKinds = []string{"pod", "job", "node", "configmap", "secret", "deployment", "statefulset", "daemonset", "replicaset", "mpijob", "jobset"}

// maxCompletions bounds what a shell is offered; completion must stay fast
// on a timeline of a 10,000-node fleet.
const maxCompletions = 200

// refsOfKind is the part of the store completion reads.
type refsOfKind interface {
	Versions(ctx context.Context, q timeline.VersionQuery) ([]timeline.ObjectVersion, error)
}

// completeRef completes KIND/NAMESPACE/NAME (node/NAME for nodes) from the
// timeline named by --db or FAULTLINE_DB, for the first n arguments. A
// missing or unreadable timeline offers the kinds only.
func completeRef(f *Factory, n int) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) >= n {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		kind, _, typed := strings.Cut(toComplete, "/")
		if !typed {
			var out []cobra.Completion
			for _, k := range refKinds {
				if strings.HasPrefix(k, strings.ToLower(kind)) {
					out = append(out, k+"/")
				}
			}
			return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
		}
		if !cmd.Flags().Changed("db") {
			if env := f.Getenv("FAULTLINE_DB"); env != "" {
				f.dbPath = env
			}
		}
		ctx, cancel := context.WithTimeout(orBackground(cmd.Context()), 2*time.Second)
		defer cancel()
		store, err := f.OpenStoreReadOnly(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer store.Close()
		refs, err := refCandidates(ctx, store, kind, toComplete)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return refs, cobra.ShellCompDirectiveNoFileComp
	}
}

func orBackground(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}

// refCandidates lists the refs of kind held in the store that start with
// prefix, sorted, at most maxCompletions.
func refCandidates(ctx context.Context, store refsOfKind, kind, prefix string) ([]string, error) {
	vs, err := store.Versions(ctx, timeline.VersionQuery{Resource: resourceOf(kind)})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, v := range vs {
		ref := kind + "/" + v.Object.Name
		if v.Object.Namespace != "" {
			ref = kind + "/" + v.Object.Namespace + "/" + v.Object.Name
		}
		if !strings.HasPrefix(ref, prefix) || seen[ref] {
			continue
		}
		seen[ref] = true
		out = append(out, ref)
	}
	slices.Sort(out)
	if len(out) > maxCompletions {
		out = out[:maxCompletions]
	}
	return out, nil
}
