package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/internal/termsafe"
	"github.com/faultline/faultline/timeline"
)

type identityOptions struct {
	f         *Factory
	namespace string
	at, vs    string
	output    string
	rules     string
}

func newIdentityCmd(f *Factory) *cobra.Command {
	opts := &identityOptions{f: f}
	cmd := &cobra.Command{
		Use:   "identity REF",
		Short: "Show exactly what a pod, job, gang job or node ran on at an instant",
		Long: `Show the identity of a unit at an instant: a flat set of dimensions, each
with the object version that says so.

  image.tag/C, image.digest/C   the tag asked for and the digest that ran
  owner/KIND, owner/KIND.generation, owner.podTemplateHash
  configmap/NAME, configmap/NAME/KEY   content hashes at the instant (never values)
  secret/NAME, secret/NAME/KEY         keyed hashes (never values)
  node, node.kernel, node.osImage, node.kubelet, node.containerRuntime,
  node.instanceType, node.zone, node.pool, node.label/nvidia.com/..., node.taints
  schedulerName, priorityClassName, rank
  artifact.*                   dataset, model, checkpoint, code, config versions
                               read by extraction rules (--rules)

REF is KIND/NAMESPACE/NAME (pod, job, mpijob, pytorchjob, jobset, deployment,
statefulset, replicaset), node/NAME, or NAMESPACE/NAME for a pod. A job's
identity folds its pods': a value every pod shares stands alone, several are
listed with their counts.

--rules takes a YAML map of dimension: CEL expression over the pod, e.g.
  dataset: pod.metadata.annotations["example.com/dataset"]
  shard:   pod.spec.containers[0].env.filter(e, e.name == "SHARD")[0].value`,
		Example: `  faultline identity pod/vision-train/trainer-3
  faultline identity mpijob/llm/pretrain --at 2026-05-01T10:04:00Z -o json
  faultline identity node/gpu-0042 --at 30m
  faultline identity diff pod/ml/worker-0 pod/ml/worker-7
  faultline identity diff job/ml/train --at 2026-05-01T09:50:00Z --vs 2026-05-01T10:10:00Z`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("faultline identity pod/NAMESPACE/NAME", "identity takes one REF, got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return identityRun(cmd.Context(), opts, args[0])
		},
		ValidArgsFunction: completeRef(f, 1),
	}
	addIdentityFlags(cmd, opts)
	diff := &cobra.Command{
		Use:   "diff REF1 [REF2]",
		Short: "Diff two identities: two units, or one unit at two instants",
		Long: `Print the dimensions that differ, each with from, to, when and the object
version that holds the new value. Either two units at one instant (--at), or
one unit at two instants (--at and --vs). Between two units, the dimensions
that differ by design (node, rank) are left out.`,
		Example: `  faultline identity diff pod/ml/worker-0 pod/ml/worker-7
  faultline identity diff deployment/web/api --at 2026-05-01T09:00:00Z --vs 2026-05-01T10:00:00Z -o json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 || (len(args) == 1) == (opts.vs == "") {
				return usagef("faultline identity diff REF1 REF2  or  faultline identity diff REF --at T1 --vs T2",
					"identity diff takes two REFs, or one REF with --vs")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return identityDiffRun(cmd.Context(), opts, args)
		},
		ValidArgsFunction: completeRef(f, 2),
	}
	addIdentityFlags(diff, opts)
	diff.Flags().StringVar(&opts.vs, "vs", "", "the second instant, to diff one REF across time")
	cmd.AddCommand(diff)
	return cmd
}

func addIdentityFlags(cmd *cobra.Command, opts *identityOptions) {
	cmd.Flags().StringVarP(&opts.namespace, "namespace", "n", "", "namespace for REFs written KIND/NAME")
	cmd.Flags().StringVar(&opts.at, "at", "", "instant: RFC 3339, or a duration back from the end of the data (default: latest)")
	cmd.Flags().StringVarP(&opts.output, "output", "o", "table", "output format: table, json or yaml")
	cmd.Flags().StringVar(&opts.rules, "rules", "", "YAML file of artifact extraction rules (dimension: CEL over the pod)")
	addNoHeaders(cmd, opts.f)
}

// resolver opens the store and builds a resolver for an instant flag.
func (o *identityOptions) resolver(ctx context.Context, store timeline.Reader, when string) (*identity.Resolver, time.Time, error) {
	_, last, err := store.Bounds(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	at, err := parseWhen("at", when, last)
	if err != nil {
		return nil, time.Time{}, err
	}
	var rules []identity.Rule
	if o.rules != "" {
		b, err := os.ReadFile(o.rules)
		if err != nil {
			return nil, time.Time{}, err
		}
		if rules, err = identity.ParseRules(b); err != nil {
			return nil, time.Time{}, fmt.Errorf("%s: %w", o.rules, err)
		}
	}
	return identity.NewResolver(store, at, rules), at, nil
}

func (o *identityOptions) ref(s string) (identity.Ref, error) {
	r, err := identity.ParseRef(s, o.namespace)
	if err != nil {
		return r, usagef("faultline identity pod/NAMESPACE/NAME", "%v", err)
	}
	return r, nil
}

func identityRun(ctx context.Context, o *identityOptions, refArg string) error {
	if err := checkOutput(o.output, "table", "json", "yaml"); err != nil {
		return err
	}
	ref, err := o.ref(refArg)
	if err != nil {
		return err
	}
	store, err := o.f.OpenStoreReadOnly(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	r, _, err := o.resolver(ctx, store, o.at)
	if err != nil {
		return err
	}
	id, err := r.Of(ctx, ref)
	if err != nil {
		return notFound(err)
	}
	if structured(o.output) {
		return o.f.writeData(o.output, id)
	}
	tw := tabwriter.NewWriter(o.f.IO.Out, 0, 8, 2, ' ', 0)
	termsafe.Fprintf(tw, "%s", id.Ref)
	if id.Pods > 1 {
		termsafe.Fprintf(tw, " (%d pods)", id.Pods)
	}
	if !id.At.IsZero() {
		termsafe.Fprintf(tw, " at %s", id.At.UTC().Format(time.RFC3339))
	}
	fmt.Fprint(tw, "\n\n")
	o.f.header(tw, "DIMENSION\tVALUE\tEVIDENCE")
	for _, d := range id.Dimensions {
		value := d.Value
		if d.Admission != "" {
			value += " (set at admission: " + d.Admission + ")"
		}
		termsafe.Fprintf(tw, "%s\t%s\t%s\n", d.Name, value, evidenceString(d.Evidence))
	}
	return tw.Flush()
}

func evidenceString(e identity.Evidence) string {
	s := e.Ref
	if e.ResourceVersion != "" {
		s += "@" + e.ResourceVersion
	}
	return fmt.Sprintf("%s %s (run %d line %d)", s, e.Time.UTC().Format(time.RFC3339), e.Run, e.Line)
}

func notFound(err error) error {
	var nf *identity.ErrNotFound
	if errors.As(err, &nf) {
		return fmt.Errorf("%w; try faultline sources to see what evidence the timeline holds", err)
	}
	return err
}

func identityDiffRun(ctx context.Context, o *identityOptions, args []string) error {
	if err := checkOutput(o.output, "table", "json", "yaml"); err != nil {
		return err
	}
	store, err := o.f.OpenStoreReadOnly(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	refA, err := o.ref(args[0])
	if err != nil {
		return err
	}
	refB, whenB := refA, o.vs
	if len(args) == 2 {
		if refB, err = o.ref(args[1]); err != nil {
			return err
		}
		whenB = o.at
	}
	ra, _, err := o.resolver(ctx, store, o.at)
	if err != nil {
		return err
	}
	rb, _, err := o.resolver(ctx, store, whenB)
	if err != nil {
		return err
	}
	a, err := ra.Of(ctx, refA)
	if err != nil {
		return notFound(err)
	}
	b, err := rb.Of(ctx, refB)
	if err != nil {
		return notFound(err)
	}
	changes := identity.Diff(a, b)
	if structured(o.output) {
		if changes == nil {
			changes = []identity.Change{}
		}
		return o.f.writeData(o.output, map[string]any{"from": a.Ref, "to": b.Ref, "fromAt": a.At, "toAt": b.At, "changes": changes})
	}
	if len(changes) == 0 {
		fmt.Fprintln(o.f.IO.Out, "No dimension differs.")
		return nil
	}
	tw := tabwriter.NewWriter(o.f.IO.Out, 0, 8, 2, ' ', 0)
	o.f.header(tw, "DIMENSION\tFROM\tTO\tWHEN\tEVIDENCE")
	for _, c := range changes {
		termsafe.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Dimension, dash(c.From), dash(c.To), fmtTime(c.When, rfc3339Sec), evidenceString(c.Evidence))
	}
	return tw.Flush()
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(termsafe.Raw(w)) // it escapes control characters itself
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
